// The agent's shrink, audit and nudges in the real `pi`, against the scripted model server: what
// the model is sent after each call (the server's log of request bodies), what the person is shown
// (RPC notifications) and what the session file keeps.
import { afterEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import type { ChatRequestBody, Reply } from "../helpers/model-server.ts";
import type { MockModelOptions } from "../helpers/pi-workspace.ts";
import { runPi } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, isSummarizerRequest, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { DRIFT_NOTE, HIGH_WATER_NOTE, expectRequestViewsMatch } from "../helpers/request-equality.ts";

const shrunk = (replacement: string) => `<context-shrunk>\n${replacement}\n</context-shrunk>`;
const numbered = (label: string, chars: number) => {
  let out = "";
  for (let i = 1; out.length < chars; i++) out += `${label} line ${i}: some output worth keeping for a while\n`;
  return out.slice(0, chars);
};

const pi = scriptedPi();
afterEach(pi.stop);

async function setup(replies: Reply[], opts: { selfControl?: Record<string, unknown>; files?: Record<string, string>; model?: MockModelOptions; settings?: Record<string, unknown> } = {}) {
  return pi.start(replies, {
    files: opts.files ?? {},
    model: opts.model,
    // The pruner summarizes only when asked: what the model is sent here is self-control's doing alone.
    settings: { contextPrune: { pruneOn: "on-demand", selfControl: opts.selfControl ?? {} }, ...(opts.settings ?? {}) },
  });
}

const shrinkCall = (id: string, target: unknown, replacement: string) => ({ id, name: "context_shrink", arguments: { target, replacement } });
const customs = (entries: JsonRecord[], customType: string) => entries.filter((e) => e.type === "custom" && e.customType === customType);
const toolText = (body: ChatRequestBody, id: string) => toolMessages(body).find((m) => m.id === id)?.text;

/** The assistant message that carries the call `id` comes right before its result, and the result follows it at once. */
function pairedInPlace(body: ChatRequestBody, id: string): boolean {
  const messages = body.messages ?? [];
  const result = messages.findIndex((m) => m.role === "tool" && m.tool_call_id === id);
  if (result < 1) return false;
  for (let i = result - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "tool") continue;
    return m.role === "assistant" && (m.tool_calls ?? []).some((c) => c.id === id);
  }
  return false;
}

describe("context_shrink in real Pi", () => {
  it("by tool-call id: the next request shows the replacement in the result's place, the tool says matched yes without echoing it, the person is shown it capped", async () => {
    const replacement = "The log says the build failed in server.ts line 12 (missing export). Nothing else matters.";
    const { server, ws } = await setup(
      [
        { toolCalls: [{ id: "call_log", name: "read", arguments: { path: "build.log" } }] },
        { toolCalls: [shrinkCall("call_shrink", { by_tool_call_id: "call_log" }, replacement)] },
        { text: "done" },
      ],
      { selfControl: { notifyMaxChars: 30 }, files: { "build.log": numbered("build", 6000) } },
    );
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await rpc.prompt("look at the build log");
      const [, beforeShrink, afterShrink] = agentRequests(server.requests);
      expect(toolText(beforeShrink!.body, "call_log")).toContain("build line 1:");
      expect(toolText(afterShrink!.body, "call_log")).toBe(shrunk(replacement));
      expect(pairedInPlace(afterShrink!.body, "call_log")).toBe(true);
      const result = toolText(afterShrink!.body, "call_shrink")!;
      expect(result).toMatch(/^matched: yes — marker [0-9a-f-]{36}/);
      expect(result).not.toContain(replacement.slice(0, 20));

      const shown = rpc.notifications().filter((n) => n.message.startsWith("pi-pruner: the agent shrank"));
      expect(shown).toHaveLength(1);
      expect(shown[0]!.message).toContain(`${replacement.slice(0, 30)}… (${replacement.length} characters in all)`);
      expect(shown[0]!.message).not.toContain(replacement.slice(0, 31));

      const entries = await rpc.getEntries();
      const [marker] = customs(entries, "mulligan:shrink");
      expect(marker!.data).toMatchObject({ schema: "pi-mulligan", v: 1, kind: "shrink", target: { by_tool_call_id: "call_log" }, replacement, seq: expect.any(Number) });
      const pinned = entries.find((e) => e.id === marker!.data.pinnedEntryId);
      expect(pinned?.message).toMatchObject({ role: "toolResult", toolCallId: "call_log" });
      expect(result).toContain(marker!.data.id);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });

  it("by tool name, first and last, and by content; an empty substring matches nothing; a target sent as a JSON string works; the task and protected output are refused", async () => {
    const { server, ws } = await setup(
      [
        {
          toolCalls: [
            { id: "call_one", name: "bash", arguments: { command: "echo apple one" } },
            { id: "call_two", name: "bash", arguments: { command: "echo banana two" } },
            { id: "call_skill", name: "read", arguments: { path: "skills/deploy/SKILL.md" } },
            { id: "call_fruit", name: "read", arguments: { path: "fruit.txt" } },
          ],
        },
        {
          toolCalls: [
            shrinkCall("call_s1", { by_tool_name: "bash", occurrence: "first" }, "FIRST-SUMMARY"),
            shrinkCall("call_s2", JSON.stringify({ by_tool_name: "bash", occurrence: "last" }), "LAST-SUMMARY"),
            shrinkCall("call_s3", { by_content_includes: "cherry" }, "CONTENT-SUMMARY"),
            shrinkCall("call_s4", { by_content_includes: "" }, "EMPTY-SUMMARY"),
            shrinkCall("call_s5", { by_content_includes: "shrink things" }, "TASK-SUMMARY"),
            shrinkCall("call_s6", { by_tool_name: "read", occurrence: "first" }, "SKILL-SUMMARY"),
          ],
        },
        { text: "done" },
      ],
      { files: { "fruit.txt": "a cherry on top\n", "skills/deploy/SKILL.md": "1. Run the gate.\n" } },
    );
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["shrink things"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const last = agentRequests(server.requests).at(-1)!.body;
    expect(toolText(last, "call_one")).toBe(shrunk("FIRST-SUMMARY"));
    expect(toolText(last, "call_two")).toBe(shrunk("LAST-SUMMARY"));
    expect(toolText(last, "call_fruit")).toBe(shrunk("CONTENT-SUMMARY"));
    for (const id of ["call_one", "call_two", "call_fruit"]) expect(pairedInPlace(last, id)).toBe(true);
    for (const [id, replacement] of [["call_s1", "FIRST"], ["call_s2", "LAST"], ["call_s3", "CONTENT"]] as const) {
      expect(toolText(last, id)).toMatch(/^matched: yes/);
      expect(toolText(last, id)).not.toContain(replacement);
    }
    expect(toolText(last, "call_s4")).toMatch(/^matched: no/);
    // The person's task and protected output (skill files, by default) stay as they are.
    expect(toolText(last, "call_s5")).toMatch(/^pi-pruner: refused: the person's first message/);
    expect(toolText(last, "call_s6")).toMatch(/^pi-pruner: refused: the read result is protected/);
    expect(toolText(last, "call_skill")).toBe("1. Run the gate.\n");
    // Three markers: none for the target that matched nothing, none for a refusal.
    expect(customs(run.entries, "mulligan:shrink").map((e) => e.data.replacement)).toEqual(["FIRST-SUMMARY", "LAST-SUMMARY", "CONTENT-SUMMARY"]);
    await expectRequestViewsMatch(run.sessionFile!, agentRequests(server.requests));
  });

  it("past maxActiveShrinks the oldest shrink is retired (a cancel for the cap) and its result is sent whole again", async () => {
    const { server, ws } = await setup(
      [
        {
          toolCalls: [
            { id: "call_a", name: "bash", arguments: { command: "echo alpha output" } },
            { id: "call_b", name: "bash", arguments: { command: "echo beta output" } },
            { id: "call_c", name: "bash", arguments: { command: "echo gamma output" } },
          ],
        },
        { toolCalls: [shrinkCall("call_sa", { by_tool_call_id: "call_a" }, "A-SUMMARY"), shrinkCall("call_sb", { by_tool_call_id: "call_b" }, "B-SUMMARY")] },
        { toolCalls: [shrinkCall("call_sc", { by_tool_call_id: "call_c" }, "C-SUMMARY")] },
        { text: "done" },
      ],
      { selfControl: { maxActiveShrinks: 2 } },
    );
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["shrink all three"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(toolText(requests[2]!.body, "call_a")).toBe(shrunk("A-SUMMARY"));
    const last = requests.at(-1)!.body;
    expect(toolText(last, "call_a")).toBe("alpha output\n");
    expect(toolText(last, "call_b")).toBe(shrunk("B-SUMMARY"));
    expect(toolText(last, "call_c")).toBe(shrunk("C-SUMMARY"));
    const [first] = customs(run.entries, "mulligan:shrink");
    const cancels = customs(run.entries, "mulligan:cancel");
    expect(cancels.map((c) => c.data)).toEqual([expect.objectContaining({ schema: "pi-mulligan", kind: "cancel", targetId: first!.data.id, reason: "cap" })]);
    expect(toolText(last, "call_sc")).toContain(`the oldest shrink (${first!.data.id}) no longer applies`);
    await expectRequestViewsMatch(run.sessionFile!, requests);
  });

  it("a shrink whose target a compaction cut away is retired as stale after shrinkStaleAfterRenders requests", async () => {
    const { server, ws } = await setup(
      [
        { toolCalls: [{ id: "call_old", name: "read", arguments: { path: "old.txt" } }] },
        { toolCalls: [shrinkCall("call_s", { by_tool_call_id: "call_old" }, "OLD-SUMMARY")] },
        { text: "shrunk it" },
        { text: "second answer" },
        { toolCalls: [{ id: "call_new", name: "bash", arguments: { command: "echo fresh" } }] },
        { text: "done" },
      ],
      { selfControl: { shrinkStaleAfterRenders: 2 }, files: { "old.txt": numbered("old", 2000) }, settings: { compaction: { keepRecentTokens: 1 } } },
    );
    // Pi's compaction summary request is the only one offered no tools.
    server.respond = (req) => (req.toolNames.length === 0 && !isSummarizerRequest(req) ? { text: "## Goal\nEarlier work was summarized." } : undefined);
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await rpc.prompt("read the old file and shrink it");
      await rpc.prompt("second question");
      expect(toolText(agentRequests(server.requests).at(-1)!.body, "call_old")).toBe(shrunk("OLD-SUMMARY"));
      const compacted = await rpc.send({ type: "compact" }, 15_000);
      expect(compacted.success, JSON.stringify(compacted)).toBe(true);
      await rpc.prompt("after the compaction");
      const entries = await rpc.getEntries();
      const shrinkId = customs(entries, "mulligan:shrink")[0]!.data.id;
      const at = (pred: (e: JsonRecord) => boolean) => entries.findIndex(pred);
      const compaction = at((e) => e.type === "compaction");
      const cancel = at((e) => e.type === "custom" && e.customType === "mulligan:cancel");
      const freshResult = at((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolCallId === "call_new");
      const finalReply = at((e) => e.type === "message" && e.message.role === "assistant" && e.message.content.some((b: { text?: string }) => b.text === "done"));
      expect(compaction).toBeGreaterThan(0);
      expect(entries[cancel]?.data).toMatchObject({ targetId: shrinkId, reason: "stale" });
      // The first request after the compaction counted one absence; the second retired it.
      expect(cancel).toBeGreaterThan(freshResult);
      expect(cancel).toBeLessThan(finalReply);
      expect(agentRequests(server.requests).at(-1)!.allText).not.toContain("old line 1:");
      // Pi's own compaction calls are no requests of the session's agent.
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests).filter((r) => r.toolNames.length > 0));
    } finally {
      await rpc.close();
    }
  });

  it("selfControl.enabled false: the shrink and the audit refuse, /pruner audit too, and nothing is written", async () => {
    const { server, ws } = await setup(
      [
        { toolCalls: [{ id: "call_x", name: "bash", arguments: { command: "echo x" } }] },
        { toolCalls: [shrinkCall("call_s", { by_tool_call_id: "call_x" }, "X-SUMMARY"), { id: "call_audit", name: "context_audit", arguments: {} }] },
        { text: "done" },
      ],
      { selfControl: { enabled: false } },
    );
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await rpc.prompt("try");
      const last = agentRequests(server.requests).at(-1)!.body;
      const refusal = "pi-pruner: refused: self-control is off (contextPrune.selfControl.enabled is false).";
      expect(toolText(last, "call_s")).toBe(refusal);
      expect(toolText(last, "call_audit")).toBe(refusal);
      expect(toolText(last, "call_x")).toBe("x\n");
      await rpc.prompt("/pruner audit");
      expect(rpc.notifications().at(-1)!.message).toBe(refusal);
      const entries = await rpc.getEntries();
      expect(entries.filter((e) => typeof e.customType === "string" && e.customType.startsWith("mulligan:"))).toEqual([]);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });
});

describe("context_audit and /pruner audit in real Pi", () => {
  it("the tool returns the breakdown by render step with the active shrink; /pruner audit shows it to the person only", async () => {
    const { server, ws } = await setup(
      [
        { toolCalls: [{ id: "call_big", name: "read", arguments: { path: "big.txt" } }] },
        { toolCalls: [shrinkCall("call_s", { by_tool_call_id: "call_big" }, "BIG-SUMMARY")] },
        { toolCalls: [{ id: "call_audit", name: "context_audit", arguments: { top: 3 } }] },
        { text: "done" },
        { text: "again" },
      ],
      { files: { "big.txt": numbered("big", 8000) } },
    );
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await rpc.prompt("audit");
      const requests = agentRequests(server.requests);
      const audit = toolText(requests.at(-1)!.body, "call_audit")!;
      for (const step of ["self-control", "stubs", "error-purge", "chains", "orphan-sweep", "thinking-strip"]) expect(audit).toContain(`after ${step}:`);
      expect(audit).toMatch(/Pi would send: [\d,]+ tokens/);
      expect(audit).toContain("Largest 3 messages:");
      expect(audit).toContain("Active markers: 0 rewinds, 1 shrink");
      expect(audit).toMatch(/shrink [0-9a-f-]{36}: the result of tool call call_big/);
      // The 8,000-character read is the self-control step's saving.
      const saved = Number(/after self-control: [\d,]+ \(-([\d,]+)\)/.exec(audit)![1]!.replace(/,/g, ""));
      expect(saved).toBeGreaterThan(1900);

      const before = requests.length;
      await rpc.prompt("/pruner audit");
      expect(agentRequests(server.requests)).toHaveLength(before);
      const shown = rpc.notifications().at(-1)!.message;
      expect(shown).toContain("after thinking-strip:");
      expect(shown).toContain("Active markers: 0 rewinds, 1 shrink");
      await rpc.prompt("next");
      const next = agentRequests(server.requests).at(-1)!;
      // Only the agent's own audit call is in its context, not the person's.
      expect(next.allText.split("Context audit").length - 1).toBe(1);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });
});

describe("the nudges in real Pi", () => {
  it("a bash output over the threshold carries the one-line reminder; a small one does not", async () => {
    const { server, ws } = await setup(
      [
        {
          toolCalls: [
            { id: "call_big", name: "bash", arguments: { command: "cat big.txt" } },
            { id: "call_small", name: "bash", arguments: { command: "echo small" } },
          ],
        },
        { text: "done" },
      ],
      { files: { "big.txt": numbered("big", 20_000) } },
    );
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["cat it"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const last = agentRequests(server.requests).at(-1)!.body;
    const big = toolText(last, "call_big")!;
    const reminder = big.slice(big.lastIndexOf("[pi-pruner]"));
    expect(big.startsWith("big line 1:")).toBe(true);
    expect(reminder).toMatch(/^\[pi-pruner\] This bash result is 20,\d{3} bytes/);
    expect(reminder).not.toContain("\n");
    expect(reminder).toContain('"by_tool_call_id":"call_big"');
    expect(reminder).toContain("context_shrink");
    expect(reminder).toContain("context_rewind");
    expect(toolText(last, "call_small")).toBe("small\n");
    // The reminder is part of the result as the tool returned it, so the session keeps it: no difference.
    await expectRequestViewsMatch(run.sessionFile!, agentRequests(server.requests));
  });

  const reads = (n: number, prefix = "f") => Array.from({ length: n }, (_, i): Reply => ({ toolCalls: [{ id: `call_${prefix}${i + 1}`, name: "read", arguments: { path: `${prefix}${i + 1}.txt` } }] }));
  const files = (n: number, chars: number, prefix = "f") => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i + 1}.txt`, numbered(`${prefix}${i + 1}`, chars)]));
  const DRIFT = "grew the context by";

  it("the drift note rides the request after a window of sustained growth, once, and never reaches the session file", async () => {
    // Four reads of ~500 tokens each: the first turn has no baseline, turns 2–4 fill the window of 3.
    const { server, ws } = await setup([...reads(4), { toolCalls: [{ id: "call_echo", name: "bash", arguments: { command: "echo ok" } }] }, { text: "done" }], {
      selfControl: { driftThresholdTokens: 400, driftWindowTurns: 3 },
      files: files(4, 2000),
    });
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read them all"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    const carrying = requests.map((r, i) => (r.allText.includes(DRIFT) ? i : -1)).filter((i) => i >= 0);
    expect(carrying).toEqual([4]);
    // It rides the newest message: the fourth read's result.
    expect(toolText(requests[4]!.body, "call_f4")).toMatch(/f4 line 1:[\s\S]*\[pi-pruner\] Your own messages and tool output grew the context by ~\d{3},?\d* tokens over each of the last 3 turns/);
    const metrics = customs(run.entries, "mulligan:turn-metric").map((e) => e.data.deltaTokens);
    expect(metrics[0]).toBeNull();
    expect(metrics.slice(1, 4).every((d: number) => d >= 400)).toBe(true);
    expect(readFileSync(run.sessionFile!, "utf8")).not.toContain(DRIFT);
    // The one request the note rode differs from its view by the note alone.
    await expectRequestViewsMatch(run.sessionFile!, requests, { nudged: [{ n: 5, note: DRIFT_NOTE }] });
  });

  it("one heavy turn among small ones does not bring the drift note", async () => {
    const echo = (id: string): Reply => ({ toolCalls: [{ id, name: "bash", arguments: { command: `echo ${id}` } }] });
    const { server, ws } = await setup([echo("e1"), echo("e2"), echo("e3"), ...reads(1, "heavy"), echo("e4"), echo("e5"), { text: "done" }], {
      selfControl: { driftThresholdTokens: 400, driftWindowTurns: 3 },
      files: files(1, 3600, "heavy"),
    });
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["work"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(7);
    const metrics = customs(run.entries, "mulligan:turn-metric").map((e) => e.data.deltaTokens as number | null);
    expect(Math.max(...metrics.filter((d): d is number => d !== null))).toBeGreaterThan(800);
    expect(requests.some((r) => r.allText.includes(DRIFT))).toBe(false);
    await expectRequestViewsMatch(run.sessionFile!, requests);
  });

  it("the high-water note rides the request that first crosses the mark, not the next one, and never reaches the session file", async () => {
    const HIGH = "of the model's window";
    const { server, ws } = await setup([...reads(1, "big"), { toolCalls: [{ id: "call_echo", name: "bash", arguments: { command: "echo ok" } }] }, { text: "done" }], {
      selfControl: { highWaterFraction: 0.5 },
      model: { contextWindow: 8000 },
      files: files(1, 18_000, "big"),
    });
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read the big file"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(requests.map((r) => r.allText.includes(HIGH))).toEqual([false, true, false]);
    expect(toolText(requests[1]!.body, "call_big1")).toMatch(/\[pi-pruner\] The context is at ~\d+% of the model's window \(~[\d,]+ of 8,000 tokens, estimated\)/);
    expect(readFileSync(run.sessionFile!, "utf8")).not.toContain(HIGH);
    await expectRequestViewsMatch(run.sessionFile!, requests, { nudged: [{ n: 2, note: HIGH_WATER_NOTE }] });
  });
});
