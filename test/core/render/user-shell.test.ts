// The person's own shell commands (`!cmd`): Pi sends each output as a user message on every later
// request. A large one becomes a stub once prompts have followed it; small ones and `!!` ones stay.
import { describe, expect, it } from "vitest";
import { convertToLlm } from "@earendil-works/pi-coding-agent";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { freshIndex, piContext } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { createRenderMemo, renderModelView } from "../../../core/src/render/render.ts";
import { isUserShellId, userShellOutputsById } from "../../../core/src/render/user-shell.ts";
import { PRUNE_FRONTIER } from "../../../core/src/shapes/entries.ts";
import type { AgentMessage, BashExecutionMessage } from "../../../core/src/shapes/messages.ts";
import { messageChars } from "../../../core/src/shapes/size.ts";

// Prompts counted as they pass (cacheAware off); the epoch case below counts them by flushes.
const live: PruneConfig = { ...DEFAULT_CONFIG, cacheAware: false };

const output = Array.from({ length: 400 }, (_, i) => `build log line ${i + 1}: compiled module ${i + 1}`).join("\n");

/** A session with a large `!` output, a small one and a large `!!` one, then `prompts` exchanges. */
function session(prompts: number): SessionBuilder {
  const b = new SessionBuilder().user("look at the build").shell("cat build.log", output).shell("git status", "nothing to commit").shell("cat secrets.log", output, { excludeFromContext: true });
  for (let i = 0; i < prompts; i++) b.user(`question ${i + 1}`).assistant(`answer ${i + 1}`);
  return b;
}

const shells = (messages: readonly AgentMessage[]) => messages.filter((m): m is BashExecutionMessage => m.role === "bashExecution");

/** The user text Pi sends for the messages: its own conversion. */
const piText = (messages: readonly AgentMessage[]) =>
  convertToLlm(messages as unknown as Parameters<typeof convertToLlm>[0]).map((m) => (typeof m.content === "string" ? m.content : m.content.map((c) => ("text" in c ? c.text : "")).join("")));

describe("the person's shell output", () => {
  it("a large output becomes a stub once three prompts follow it; a small one and a !! one stay as they were", () => {
    // Two prompts after it: nothing to change, the same array back.
    const before = session(2);
    const two = piContext(before);
    expect(renderModelView(two, freshIndex(before), live).messages).toBe(two);

    const b = session(3);
    const raw = piContext(b);
    const out = renderModelView(raw, freshIndex(b), live);
    const [big, small, excluded] = shells(out.messages);
    const id = `shell@${shells(raw)[0]!.timestamp}`;
    expect(big!.output).toBe(`[Output pruned: ${output.length.toLocaleString("en-US")} characters, 400 lines; context_tree_query with ["${id}"] returns it. Its first lines:\n${output.split("\n").slice(0, 8).join("\n")}\n…]`);
    // The whole lines within its first 300 characters: eight of these.
    expect(output.split("\n").slice(0, 8).join("\n").length).toBeLessThanOrEqual(300);
    expect(output.split("\n").slice(0, 9).join("\n").length).toBeGreaterThan(300);
    expect(big!.command).toBe("cat build.log");
    expect(small).toBe(shells(raw)[1]);
    expect(excluded).toBe(shells(raw)[2]);
    expect(out.stats.shellOutputsStubbed).toBe(1);
    // What Pi sends of it: the command and the stub in Pi's own wording; of the !! one, nothing.
    const sent = piText(out.messages);
    expect(sent[1]).toBe(`Ran \`cat build.log\`\n\`\`\`\n${big!.output}\n\`\`\``);
    expect(sent.join("\n")).not.toContain("cat secrets.log");
  });

  it("the stub is the same bytes on every request, and the rendered prefix does not move as prompts are added", () => {
    const b = session(3);
    const first = renderModelView(piContext(b), freshIndex(b), live).messages;
    b.user("one more").assistant("sure");
    const second = renderModelView(piContext(b), freshIndex(b), live).messages;
    expect(JSON.stringify(second.slice(0, first.length))).toBe(JSON.stringify(first));
  });

  it("a render that remembers the last request stubs the output on the same request as a whole render", () => {
    const memo = createRenderMemo({ prefix: "sampled" });
    const b = session(0);
    for (let i = 0; i < 5; i++) {
      b.user(`question ${i + 1}`);
      const remembered = renderModelView(piContext(b), freshIndex(b), live, undefined, memo).messages;
      const whole = renderModelView(piContext(b), freshIndex(b), live).messages;
      expect(JSON.stringify(remembered)).toBe(JSON.stringify(whole));
      b.assistant(`answer ${i + 1}`);
    }
    expect(shells(renderModelView(piContext(b), freshIndex(b), live, undefined, memo).messages)[0]!.output).toMatch(/^\[Output pruned: /);
  });

  it("under cacheAware the prompts are counted up to the newest flush, so the stub lands at a flush", () => {
    // Five prompts and no flush yet: as Pi sends it.
    const b = session(5);
    const raw = piContext(b);
    expect(renderModelView(raw, freshIndex(b), DEFAULT_CONFIG).messages).toBe(raw);
    b.custom(PRUNE_FRONTIER, { lastAttemptedToolCallId: "call_x", outcome: "summarized" });
    b.user("after the flush");
    expect(shells(renderModelView(piContext(b), freshIndex(b), DEFAULT_CONFIG).messages)[0]!.output).toMatch(/^\[Output pruned: /);
  });

  it("is off with userShell.enabled false, and minChars and afterPrompts move its bounds", () => {
    const b = session(3);
    const raw = piContext(b);
    expect(renderModelView(raw, freshIndex(b), { ...live, userShell: { ...live.userShell, enabled: false } }).messages).toBe(raw);
    expect(renderModelView(raw, freshIndex(b), { ...live, userShell: { ...live.userShell, minChars: output.length + 1 } }).messages).toBe(raw);
    expect(renderModelView(raw, freshIndex(b), { ...live, userShell: { ...live.userShell, afterPrompts: 4 } }).messages).toBe(raw);
    const all = shells(renderModelView(raw, freshIndex(b), { ...live, userShell: { ...live.userShell, minChars: 1 } }).messages);
    expect(all.map((m) => m.output.startsWith("[Output pruned: "))).toEqual([true, true, false]);
  });

  it("a shell message from a damaged session (no string output, no timestamp) passes through", () => {
    const b = new SessionBuilder().user("go").shell("ls", output, { output: 42 }).shell("ls", output, { timestamp: "soon" });
    for (let i = 0; i < 4; i++) b.user(`q${i}`).assistant(`a${i}`);
    const raw = piContext(b);
    expect(renderModelView(raw, freshIndex(b), live).messages).toBe(raw);
  });

  it("context_tree_query's lookup returns the output as Pi showed it, never a !! output or an unknown id", () => {
    const b = session(3);
    const [big, , excluded] = shells(piContext(b));
    const found = userShellOutputsById(b.entries, `shell@${big!.timestamp}`);
    expect(found.map((c) => [c.shortRef, c.record.args, c.record.resultText])).toEqual([[`shell@${big!.timestamp}`, { command: "cat build.log" }, output]]);
    expect(userShellOutputsById(b.entries, `shell@${excluded!.timestamp}`)).toEqual([]);
    expect(userShellOutputsById(b.entries, "shell@1")).toEqual([]);
    expect(isUserShellId(`shell@${big!.timestamp}`)).toBe(true);
    expect(isUserShellId("t3")).toBe(false);
    expect(isUserShellId("shell@../x")).toBe(false);
  });
});

describe("the size of a shell message", () => {
  it("is what Pi sends of it: its command and output in Pi's wording, and nothing for a !! one", () => {
    const messages = shells(piContext(session(0)));
    const cancelled: BashExecutionMessage = { role: "bashExecution", command: "sleep 9", output: "", exitCode: undefined, cancelled: true, truncated: true, fullOutputPath: "/tmp/pi-bash-1.log", timestamp: 9 };
    const failed: BashExecutionMessage = { role: "bashExecution", command: "make", output: "error", exitCode: 2, cancelled: false, truncated: true, fullOutputPath: "/tmp/pi-bash-2.log", timestamp: 10 };
    for (const m of [...messages.slice(0, 2), cancelled, failed]) expect(messageChars(m)).toBe(piText([m])[0]!.length);
    expect(piText([messages[2]!])).toEqual([]);
    expect(messageChars(messages[2]!)).toBe(0);
  });
});
