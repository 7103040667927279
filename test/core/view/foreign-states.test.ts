// States as they were, on a session in pi-condense 2.9.1's own entry formats: chains Pi's
// compaction removed are not shown as compressed, the writer's diagnostics and flush records are
// tied to what they concern, chains built without a summarizer say so, results sent raw are not
// shown as stubs, outputs that cannot come back say why, and nothing gets a ref nobody sent.
import { describe, expect, it } from "vitest";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { buildSessionView, type CallView, type SessionView } from "../../../core/src/view/session-view.ts";
import { buildModelView } from "../../../core/src/view/model-view.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { condenseSession } from "../../helpers/condense-sessions.ts";

const story = condenseSession();
const data = parseSessionText(story.builder.toJsonl());
const view = buildSessionView(data, { config: DEFAULT_CONFIG });
const call = (v: SessionView, id: string): CallView => {
  const found = v.calls.find((c) => c.toolCallId === id);
  if (!found) throw new Error(`no call ${id}`);
  return found;
};
const diagnostic = (entryId: string) => view.diagnostics.find((d) => d.entryId === entryId)!;

describe("chains, as the render left them", () => {
  it("a chain compressed before Pi's compaction removed it was sent until then; one compressed after was never sent", () => {
    expect(view.chains.map((c) => [c.blockId, c.state, c.stateText, c.compactionEntryId])).toEqual([
      ["b1", "removed-by-compaction", "sent as a block until Pi's compaction removed it", story.ids.compaction],
      ["b2", "removed-by-compaction", "removed by compaction, never sent", story.ids.compaction],
    ]);
  });

  it("which chains were built without a summarizer, and the writer's own text for each block", () => {
    expect(view.chains.map((c) => [c.blockId, c.withoutSummarizer, c.bodyText])).toEqual([
      ["b1", false, "one fused summary (a summarizer call)"],
      ["b2", true, "built without a summarizer: a list of its calls (the writer's deterministic body)"],
    ]);
    expect(view.chains[0]!.writerText).toBe("Read the parser and the README; the test log (spilled) shows every rule failing because the rule table is empty.");
    expect(view.chains[1]!.writerText).toBe("- `t5` read src/rules.ts\n- `t6` edit src/rules.ts");
  });

  it("a chain whose range is in the context is sent as a block; one whose final reply is missing is not applied, with the reason", () => {
    const b = new SessionBuilder();
    b.user("task one");
    const start = (b.entry(b.lastId) as unknown as { message: { timestamp: number } }).message.timestamp;
    b.toolUse("read", { path: "a.ts" }, "A".repeat(3000), { id: "r1" });
    b.assistant("done one");
    const final = (b.entry(b.lastId) as unknown as { message: { timestamp: number } }).message.timestamp;
    b.custom("context-prune-chain", { blockId: "b1", startUserTimestamp: start, finalAssistantTimestamp: final, droppedToolCallIds: ["r1"], toolRefs: [], compressedAt: 1, bodySource: "call-list" });
    b.custom("context-prune-chain", { blockId: "b2", startUserTimestamp: start + 1, finalAssistantTimestamp: final + 99, droppedToolCallIds: [], toolRefs: [], compressedAt: 2, bodySource: "call-list" });
    b.user("task two");
    const v = buildSessionView(parseSessionText(b.toJsonl()), { config: DEFAULT_CONFIG });
    expect(v.chains.map((c) => [c.blockId, c.state, c.stateText, c.withoutSummarizer])).toEqual([
      ["b1", "compressed", "sent as one compressed block", true],
      ["b2", "not-applied", "not applied: its start message is not in the context", true],
    ]);
    // Our own chain: no other writer's text to set beside it.
    expect(v.chains[0]!.writerText).toBeUndefined();
  });
});

describe("the writer's diagnostics", () => {
  it("its unresolved ranges are listed under the session and in the chain each names", () => {
    expect(diagnostic(story.ids.unresolvedB1)).toMatchObject({ kind: "unresolved-range", severity: "warning", blockIds: ["b1"], text: "chain b1 was not found in the context it was rendered for (unresolved range): nothing was compressed for it" });
    expect(view.chains.find((c) => c.blockId === "b1")!.diagnostics).toEqual([story.ids.unresolvedB1]);
    expect(view.chains.find((c) => c.blockId === "b2")!.diagnostics).toEqual([story.ids.unresolvedB2]);
  });

  it("a failed flush (the summarizer's HTTP 500) is a warning on the calls it left raw; the budget flush says what triggered it and what it summarized", () => {
    expect(diagnostic(story.ids.failedFlush)).toMatchObject({
      kind: "flush",
      severity: "warning",
      text: "flush on the agent's final reply failed: 1 batch stayed raw (a summarizer call or a write failed)",
      callKeys: [call(view, "call_suite").occurrenceKey],
    });
    expect(diagnostic(story.ids.budgetFlush)).toMatchObject({
      severity: "info",
      text: "budget flush (the context reached autoBudgetThreshold): 2 batches summarized",
      callKeys: [call(view, "call_suite").occurrenceKey, call(view, "call_recover").occurrenceKey],
    });
    expect(call(view, "call_suite").diagnostics).toEqual([story.ids.failedFlush, story.ids.budgetFlush]);
  });

  it("the ordinary end of a reply with nothing to do is not listed; the others are, oldest first", () => {
    expect(view.diagnostics.map((d) => d.text)).toEqual([
      "flush on the agent's final reply: 2 batches summarized",
      "flush on the agent's final reply: nothing summarized: the batches were below minBatchChars",
      "flush on the agent's final reply failed: 1 batch stayed raw (a summarizer call or a write failed)",
      "budget flush (the context reached autoBudgetThreshold): 2 batches summarized",
      "chain b1 was not found in the context it was rendered for (unresolved range): nothing was compressed for it",
      "chain b2 was not found in the context it was rendered for (unresolved range): nothing was compressed for it",
    ]);
  });

  it("a sweep names the results it dropped: tied to those calls", () => {
    const b = new SessionBuilder();
    b.user("go").toolUse("read", { path: "a.ts" }, "a", { id: "stray_1" }).toolUse("read", { path: "b.ts" }, "b", { id: "kept_1" });
    b.custom("context-prune-diagnostic", { kind: "orphan-sweep", detail: "swept 1 orphan toolResult(s): stray_1" });
    const v = buildSessionView(parseSessionText(b.toJsonl()), { config: DEFAULT_CONFIG });
    expect(v.diagnostics).toEqual([expect.objectContaining({ kind: "orphan-sweep", text: "the render dropped 1 tool result that did not follow their call" })]);
    expect(call(v, "stray_1").diagnostics).toEqual([b.lastId]);
    expect(call(v, "kept_1").diagnostics).toBeUndefined();
  });
});

describe("calls, as they were sent", () => {
  it("the results Pi's compaction removed say so instead of claiming a compressed chain sent them", () => {
    for (const id of ["call_read_parser", "call_npm_test", "call_read_readme", "call_read_rules", "call_edit_rules"]) {
      expect(call(view, id).sent, id).toEqual({ as: "not-in-context", text: "removed by Pi's compaction: not sent since" });
    }
  });

  it("a recovered output Pi sent raw after the compaction is not shown as a stub, though a summary covers it", () => {
    const recovered = call(view, "call_recover");
    expect(recovered.state).toBe("summarized");
    expect(recovered.sent).toEqual({ as: "raw", text: "sent raw: recovered output in its grace window" });
    const model = buildModelView(data, { config: DEFAULT_CONFIG });
    const sentResult = model.messages.find((m) => m.role === "toolResult" && m.toolCallId === "call_recover")!;
    expect(JSON.stringify(sentResult)).toContain("export function parse(input: string)");
    // The suite's log is stubbed and says nothing else.
    expect(call(view, "call_suite").sent).toBeUndefined();
  });

  it("a spill the writer gave no short ref is named by its tool-call id, in the view and in its stub: no tN is made up", () => {
    const spilled = call(view, "call_npm_test");
    expect(spilled.shortRef).toBeUndefined();
    const b = new SessionBuilder();
    b.user("run it");
    b.toolUse("bash", { command: "npm test" }, "x".repeat(70_000), { id: "call_big" });
    const ts = (b.entry(b.lastId) as unknown as { message: { timestamp: number } }).message.timestamp;
    b.custom("context-prune-index", { toolCalls: [{ toolCallId: "call_big", toolName: "bash", args: { command: "npm test" }, resultText: "", resultTimestamp: ts, spillPath: "/old/s-blobs/call_big_1.txt", spillBytes: 70_000, resultPreview: "xxx" }] });
    b.assistant("done");
    const data2 = parseSessionText(b.toJsonl());
    const v = buildSessionView(data2, { config: DEFAULT_CONFIG });
    expect(v.calls[0]).toMatchObject({ state: "spilled", shortRef: undefined });
    const stub = buildModelView(data2, { config: DEFAULT_CONFIG }).messages.find((m) => m.role === "toolResult")!;
    expect(JSON.stringify(stub)).toContain("ref `call_big`");
    expect(JSON.stringify(stub)).not.toMatch(/`t\d+`/);
  });

  it("an output no record holds, or whose record kept no text, says it cannot be recovered and why", () => {
    const b = new SessionBuilder();
    b.user("task");
    const start = (b.entry(b.lastId) as unknown as { message: { timestamp: number } }).message.timestamp;
    b.toolUse("read", { path: "a.ts" }, "A".repeat(3000), { id: "unindexed" });
    b.toolUse("read", { path: "b.ts" }, "B".repeat(3000), { id: "emptied" });
    const ts = (b.entry(b.lastId) as unknown as { message: { timestamp: number } }).message.timestamp;
    b.assistant("done");
    const final = (b.entry(b.lastId) as unknown as { message: { timestamp: number } }).message.timestamp;
    b.customMessage("context-prune-summary", "- `t1` read b.ts", { toolCallRefs: [{ shortId: "t1", toolCallId: "emptied", resultTimestamp: ts }] });
    b.custom("context-prune-index", { toolCalls: [{ toolCallId: "emptied", toolName: "read", args: { path: "b.ts" }, resultText: "", resultTimestamp: ts }] });
    b.custom("context-prune-chain", { blockId: "b1", startUserTimestamp: start, finalAssistantTimestamp: final, droppedToolCallIds: ["unindexed", "emptied"], toolRefs: ["t1"], compressedAt: 1, bodySource: "batch-summaries" });
    b.user("next");
    const v = buildSessionView(parseSessionText(b.toJsonl()), { config: DEFAULT_CONFIG });
    expect(call(v, "unindexed")).toMatchObject({ state: "compressed", unrecoverable: "no record of its output was kept: context_tree_query cannot return it" });
    expect(call(v, "emptied")).toMatchObject({ state: "compressed", unrecoverable: "its record holds no copy of the output: context_tree_query returns nothing" });
  });
});
