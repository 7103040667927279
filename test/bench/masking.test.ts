// Observation masking, the bench's baseline peer: what it sends the model, through the same host
// as the pruners.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MASKING_WINDOW, maskObservations, maskedPlaceholder, observationMasking } from "../../bench/lib/masking.ts";
import { ReplayHost } from "../../bench/lib/pi-host.ts";
import type { ScriptStep } from "../../bench/lib/gen.ts";
import type { AgentMessage, ToolResultMessage } from "../../core/src/shapes/messages.ts";

/** A user prompt, then `turns` assistant turns with one read each, whose output names its turn. */
function conversation(turns: number): AgentMessage[] {
  const messages: AgentMessage[] = [{ role: "user", content: "fix the build", timestamp: 1 }];
  for (let t = 1; t <= turns; t++) {
    messages.push({ role: "assistant", content: [{ type: "toolCall", id: `call-${t}`, name: "read", arguments: { path: `src/f${t}.ts` } }], timestamp: t * 10 });
    messages.push({ role: "toolResult", toolCallId: `call-${t}`, toolName: "read", content: [{ type: "text", text: `contents of f${t}` }], isError: false, timestamp: t * 10 + 1 });
  }
  return messages;
}

const resultTexts = (messages: readonly AgentMessage[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === "toolResult").map((m) => (m.content[0] as { text: string }).text);

describe("observation masking", () => {
  it("keeps the tool results of the last ten turns and replaces every older one by a placeholder", () => {
    const masked = maskObservations(conversation(14));
    const texts = resultTexts(masked);
    expect(texts.slice(0, 4)).toEqual(Array(4).fill(maskedPlaceholder("read")));
    expect(texts.slice(4)).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14].map((t) => `contents of f${t}`));
    // The model still sees which call it made: arguments, ids and order are untouched.
    const calls = masked.filter((m) => m.role === "assistant").map((m) => (m.content[0] as { arguments: unknown }).arguments);
    expect(calls).toEqual([...Array(14).keys()].map((i) => ({ path: `src/f${i + 1}.ts` })));
    expect(masked.length).toBe(conversation(14).length);
  });

  it("sends Pi's own array when no result is older than the window", () => {
    const messages = conversation(MASKING_WINDOW);
    expect(maskObservations(messages)).toBe(messages);
  });

  it("leaves the messages it was given unchanged", () => {
    const messages = conversation(12);
    const copy = structuredClone(messages);
    maskObservations(messages);
    expect(messages).toEqual(copy);
  });
});

describe("observation masking in the replay host", () => {
  let root: string | undefined;
  afterEach(() => {
    if (root) rmSync(root, { recursive: true, force: true });
    root = undefined;
  });

  it("runs as an extension: its context handler masks what each request sends, one turn more per request", async () => {
    root = mkdtempSync(join(tmpdir(), "pprb-masking-"));
    const host = await ReplayHost.create({ root, extension: { factory: observationMasking, settings: {} } });
    await host.user("fix the build");
    const maskedPerRequest: number[] = [];
    for (let t = 1; t <= 13; t++) {
      const sent = await host.request();
      maskedPerRequest.push(resultTexts(sent).filter((x) => x === maskedPlaceholder("read")).length);
      const step: Extract<ScriptStep, { kind: "assistant" }> = { kind: "assistant", calls: [{ name: "read", args: { path: `src/f${t}.ts` }, result: `contents of f${t}`, isError: false, kind: "read" }] };
      await host.assistantTurn(step);
    }
    // Request n sees n - 1 earlier turns; those beyond the last ten are masked.
    expect(maskedPerRequest).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]);
    // The session itself keeps every output.
    expect(resultTexts(host.contextMessages())).toEqual([...Array(13).keys()].map((i) => `contents of f${i + 1}`));
    expect(host.unsupported.size).toBe(0);
  });
});
