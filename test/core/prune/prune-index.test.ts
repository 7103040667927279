// The index rebuilt from a branch, and its two lookups: the render's (which indexed call covers
// this tool result?) and the query tool's (which outputs did the model ask for?). What an
// interrupted or hostile writer leaves behind is in hostile-records.test.ts.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { messagesOf } from "../../helpers/prune-session.ts";
import { findCallForResult, nextBlockId, nextShortRef, rebuildIndex, resolveRequest } from "../../../core/src/prune/prune-index.ts";
import type { ToolResultMessage } from "../../../core/src/shapes/messages.ts";

const record = (id: string, ts: number | undefined, path: string, text: string) => ({
  toolCallId: id,
  toolName: "read",
  args: { path },
  resultText: text,
  isError: false,
  ...(ts === undefined ? {} : { resultTimestamp: ts }),
});
const ref = (shortId: string, id: string, ts?: number) => (ts === undefined ? { shortId, toolCallId: id } : { shortId, toolCallId: id, resultTimestamp: ts });

/** Timestamps of the session's tool results, in order. */
function resultTimes(b: SessionBuilder): number[] {
  return messagesOf(b)
    .filter((m): m is ToolResultMessage => m.role === "toolResult")
    .map((m) => m.timestamp);
}

/**
 * Three reads that all got the id `c1` from the provider (ids repeat across responses): a.ts and
 * b.ts summarized as t1 and t2, then c.ts left raw.
 */
function reusedIdSession() {
  const b = new SessionBuilder();
  for (const path of ["a.ts", "b.ts", "c.ts"]) b.user(`read ${path}`).toolUse("read", { path }, `${path} `.repeat(400), { id: "c1" });
  const [ta, tb, tc] = resultTimes(b) as [number, number, number];
  b.custom("context-prune-index", { toolCalls: [record("c1", ta, "a.ts", "a.ts output"), record("c1", tb, "b.ts", "b.ts output")], refs: [ref("t1", "c1", ta), ref("t2", "c1", tb)] });
  b.customMessage("context-prune-summary", "- `t1` a.ts\n- `t2` b.ts", { toolCallRefs: [ref("t1", "c1", ta), ref("t2", "c1", tb)] });
  return { b, ta, tb, tc };
}

describe("rebuildIndex", () => {
  it("gives each summarized result its ref and the summary that covers it", () => {
    const { b, ta, tb } = reusedIdSession();
    const { index, problems } = rebuildIndex(b.entries);
    expect(problems).toEqual([]);
    const summary = b.entries.find((e) => e.type === "custom_message")!.id;
    expect([...index.calls.values()].map((c) => [c.key, c.shortRef, c.record.args?.path, c.summaryEntryId])).toEqual([
      [`c1@${ta}`, "t1", "a.ts", summary],
      [`c1@${tb}`, "t2", "b.ts", summary],
    ]);
    expect(index.summaries.map((s) => s.keys)).toEqual([[`c1@${ta}`, `c1@${tb}`]]);
  });

  it("new refs and block ids continue after the highest in use, also one only a chain entry names", () => {
    const { b } = reusedIdSession();
    b.custom("context-prune-chain", { blockId: "b4", startUserTimestamp: 1, droppedToolCallIds: [], toolRefs: ["t7"] });
    const { index } = rebuildIndex(b.entries);
    expect(nextShortRef(index)).toBe("t8");
    expect(nextBlockId(index)).toBe("b5");
  });

  it("the newest frontier and stats entries on the branch are the current ones", () => {
    const { b } = reusedIdSession();
    b.custom("context-prune-frontier", { attemptedBatchCount: 1, outcome: "summarized" });
    b.custom("context-prune-stats", { callCount: 1, totalCost: 0.01 });
    b.custom("context-prune-frontier", { attemptedBatchCount: 2, outcome: "skipped-trivial" });
    b.custom("context-prune-stats", { callCount: 2, totalCost: 0.02 });
    const { index } = rebuildIndex(b.entries);
    expect(index.frontier).toEqual({ attemptedBatchCount: 2, outcome: "skipped-trivial" });
    expect(index.frontierEntryId).toBe(b.entries.at(-2)!.id);
    expect(index.stats).toEqual({ callCount: 2, totalCost: 0.02 });
  });
});

describe("findCallForResult", () => {
  it("a reused tool-call id: each result finds its own occurrence by timestamp; the raw one finds none", () => {
    const { b, ta, tb, tc } = reusedIdSession();
    const { index } = rebuildIndex(b.entries);
    expect(findCallForResult(index, "c1", ta)).toEqual({ call: expect.objectContaining({ shortRef: "t1" }), aliased: false });
    expect(findCallForResult(index, "c1", tb)).toEqual({ call: expect.objectContaining({ shortRef: "t2" }), aliased: false });
    expect(findCallForResult(index, "c1", tc)).toBeUndefined();
  });

  it("a duplicate result follows its alias to the original and says so", () => {
    const { b, ta, tc } = reusedIdSession();
    b.custom("context-prune-dedup-alias", { newToolCallId: "c1", originalToolCallId: "c1", newResultTimestamp: tc, originalResultTimestamp: ta });
    const { index } = rebuildIndex(b.entries);
    expect(findCallForResult(index, "c1", tc)).toEqual({ call: expect.objectContaining({ shortRef: "t1" }), aliased: true });
  });

  it("a record written before occurrence keys covers results of its id that no keyed record covers", () => {
    const b = new SessionBuilder().user("read").toolUse("read", { path: "old.ts" }, "old", { id: "c9" }).toolUse("read", { path: "new.ts" }, "new", { id: "c9" });
    const [, tNew] = resultTimes(b) as [number, number];
    b.custom("context-prune-index", { toolCalls: [record("c9", undefined, "old.ts", "old"), record("c9", tNew, "new.ts", "new")], refs: [ref("t1", "c9"), ref("t2", "c9", tNew)] });
    b.customMessage("context-prune-summary", "- `t1` old\n- `t2` new", { toolCallRefs: [ref("t1", "c9"), ref("t2", "c9", tNew)] });
    const { index } = rebuildIndex(b.entries);
    expect(findCallForResult(index, "c9", tNew)?.call.shortRef).toBe("t2");
    expect(findCallForResult(index, "c9", 12345)?.call.shortRef).toBe("t1");
  });
});

describe("resolveRequest", () => {
  it("a short ref or an occurrence key names one output; a raw id names every indexed occurrence", () => {
    const { b, tb } = reusedIdSession();
    const { index } = rebuildIndex(b.entries);
    const texts = (idOrRef: string) => resolveRequest(index, idOrRef).map((c) => c.record.resultText);
    expect(texts("t2")).toEqual(["b.ts output"]);
    expect(texts(`c1@${tb}`)).toEqual(["b.ts output"]);
    expect(texts("c1")).toEqual(["a.ts output", "b.ts output"]);
  });

  it("the id of a result that was only aliased gives the original's output", () => {
    const b = new SessionBuilder().user("read").toolUse("read", { path: "a.ts" }, "same", { id: "c1" }).toolUse("read", { path: "a.ts" }, "same", { id: "c2" });
    const [t1, t2] = resultTimes(b) as [number, number];
    b.custom("context-prune-index", { toolCalls: [record("c1", t1, "a.ts", "same")], refs: [ref("t1", "c1", t1)] });
    b.customMessage("context-prune-summary", "- `t1` a.ts", { toolCallRefs: [ref("t1", "c1", t1)] });
    b.custom("context-prune-dedup-alias", { newToolCallId: "c2", originalToolCallId: "c1", newResultTimestamp: t2, originalResultTimestamp: t1 });
    const { index } = rebuildIndex(b.entries);
    expect(resolveRequest(index, "c2").map((c) => c.shortRef)).toEqual(["t1"]);
  });

  it("an id or ref the index does not know resolves to nothing", () => {
    const { b } = reusedIdSession();
    const { index } = rebuildIndex(b.entries);
    expect(resolveRequest(index, "t9")).toEqual([]);
    expect(resolveRequest(index, "c7")).toEqual([]);
  });
});
