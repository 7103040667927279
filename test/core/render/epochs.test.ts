// Epochs: under cacheAware (the default) everything the pruner changes in history changes at the
// same flush. Between two flushes each request's rendered history is the previous request's,
// byte for byte, so the provider's cached prefix is rewritten once per flush, not once per expiry.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, echoSummarizer, freshIndex, lastBatch, persist, piContext, resultTexts } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { flushBatches, type Batch } from "../../../core/src/prune/flush.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import { epochEnd } from "../../../core/src/render/epoch.ts";
import { QUERY_TOOL } from "../../../core/src/shapes/entries.ts";
import type { AgentMessage, AssistantMessage, ToolCallBlock } from "../../../core/src/shapes/messages.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, thinkingStrip: { enabled: true, keepLastTurns: 2 } };
const body = "y".repeat(800);

async function flush(b: SessionBuilder, batches: Batch[]): Promise<void> {
  persist(b, (await flushBatches(batches, freshIndex(b), config, echoSummarizer)).entries);
}

/** What the model is sent now: the session's context through the render, the index rebuilt from the file. */
function request(b: SessionBuilder, settings: PruneConfig = config): AgentMessage[] {
  return renderModelView(piContext(b), freshIndex(b), settings).messages;
}

const writeArgs = (messages: readonly AgentMessage[]) =>
  messages.flatMap((m) => (m.role === "assistant" ? m.content.filter((c): c is ToolCallBlock => c.type === "toolCall" && c.name === "write") : []))[0]!.arguments;
const thinkingTurns = (messages: readonly AgentMessage[]) => messages.filter((m): m is AssistantMessage => m.role === "assistant" && m.content.some((c) => c.type === "thinking")).length;
const queryText = (messages: readonly AgentMessage[]) => resultTexts(messages)[1]!;
const readBText = (messages: readonly AgentMessage[]) => resultTexts(messages)[3]!;

/**
 * Two flushes (a read of a.ts, then the recovery of its output), then a stretch in which the
 * recovery's grace, a failed write's cool-down and the thinking window all run out while a read
 * of b.ts waits for the next flush. Each step of the stretch is one request.
 */
async function sessionBetweenFlushes() {
  const b = new SessionBuilder().user("fix the build");
  b.assistant({ thinking: "plan", toolCalls: [{ name: "read", args: { path: "src/a.ts" } }] }).toolResult(b.lastToolCallIds[0]!, "read", big("A"));
  const readA = lastBatch(b, config);
  b.assistant({ thinking: "read it", text: "done" });
  await flush(b, [readA]);
  b.user("show me t1 again");
  b.assistant({ thinking: "recover", toolCalls: [{ name: QUERY_TOOL, args: { toolCallIds: ["t1"] } }] }).toolResult(b.lastToolCallIds[0]!, QUERY_TOOL, big("recovered A"));
  const query = lastBatch(b, config);
  b.assistant({ thinking: "shown", text: "here it is" });
  await flush(b, [query]);

  const requests: AgentMessage[][] = [];
  const steps: (() => void)[] = [
    () => b.user("write it"),
    () => b.assistant({ thinking: "write", toolCalls: [{ name: "write", args: { path: "a.ts", content: body } }] }).toolResult(b.lastToolCallIds[0]!, "write", "Error: EACCES", { isError: true }),
    () => b.user("read b"),
    () => b.assistant({ thinking: "read b", toolCalls: [{ name: "read", args: { path: "src/b.ts" } }] }).toolResult(b.lastToolCallIds[0]!, "read", big("B")),
  ];
  for (const step of steps) {
    step();
    requests.push(request(b));
  }
  const readB = lastBatch(b, config);
  for (const word of ["one", "two", "three", "four"]) {
    b.assistant({ thinking: `on ${word}`, text: `answer ${word}` });
    requests.push(request(b));
    b.user(word);
    requests.push(request(b));
  }
  return { b, requests, readB };
}

describe("epochs", () => {
  it("an epoch changes everything at once: nothing in history changes between flushes, and the next flush brings the purge, the grace expiry and the stubs together", async () => {
    const { b, requests, readB } = await sessionBetweenFlushes();

    // Between the flushes every request starts with the previous request, byte for byte.
    for (let n = 1; n < requests.length; n++) {
      const previous = requests[n - 1]!;
      expect(JSON.stringify(requests[n]!.slice(0, previous.length)), `request ${n}`).toBe(JSON.stringify(previous));
    }
    // Though every expiry is due by now: four user turns after the recovery, four assistant turns
    // after the failed write, and eight thinking turns where two are kept (the two oldest of all
    // lost theirs at the second flush).
    const before = requests[requests.length - 1]!;
    expect(queryText(before)).toContain("recovered A");
    expect(writeArgs(before)).toEqual({ path: "a.ts", content: body });
    expect(readBText(before)).toContain("B\nxxx");
    expect(thinkingTurns(before)).toBe(8);

    // The next flush: each of them arrives in the same request.
    await flush(b, [readB]);
    const after = request(b);
    expect(queryText(after)).toContain("pruned: see ref `t2`");
    expect(writeArgs(after)).toEqual({ path: "a.ts", content: `${body.slice(0, 64)}…<purged-errored-args cut="${body.length - 64}"/>` });
    expect(readBText(after)).toContain("pruned: see ref `t3`");
    expect(thinkingTurns(after)).toBe(2);
    // And from then on history stays as that flush left it.
    b.assistant({ thinking: "after", text: "b summarized" }).user("five");
    const next = request(b);
    expect(JSON.stringify(next.slice(0, after.length))).toBe(JSON.stringify(after));
  });

  it("with cacheAware off the same session changes history between the flushes, request by request", async () => {
    const { b } = await sessionBetweenFlushes();
    const turnByTurn = request(b, { ...config, cacheAware: false });
    expect(queryText(turnByTurn)).toContain("pruned: see ref `t2`");
    expect(writeArgs(turnByTurn)).toEqual({ path: "a.ts", content: `${body.slice(0, 64)}…<purged-errored-args cut="${body.length - 64}"/>` });
    expect(thinkingTurns(turnByTurn)).toBe(2);
  });

  it("before the first flush nothing time-dependent happens: a short session is sent as it is", () => {
    const b = new SessionBuilder().user("write it");
    b.assistant({ thinking: "w", toolCalls: [{ name: "write", args: { path: "a.ts", content: body } }] }).toolResult(b.lastToolCallIds[0]!, "write", "Error", { isError: true });
    for (const word of ["a", "b", "c", "d"]) b.assistant({ thinking: word, text: word }).user(word);
    const input = piContext(b);
    expect(renderModelView(input, freshIndex(b), config).messages).toBe(input);
  });

  it("the epoch ends at the last message no newer than the flush, wherever a newer message (a compaction summary) stands before it", () => {
    const at = (timestamp: number): AgentMessage => ({ role: "user", content: "x", timestamp });
    expect(epochEnd([at(50), at(10), at(20), at(30)], 20)).toBe(3);
    expect(epochEnd([at(10), at(20)], 5)).toBe(0);
    expect(epochEnd([at(10), at(20)], undefined)).toBe(0);
    expect(epochEnd([at(10), at(20)], 20)).toBe(2);
  });
});
