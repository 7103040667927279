// What a branch still holds for the pruner to do, read from its entries alone: the batches no entry
// covers yet and the requests made so far by task, as a reload finds them.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { emptyIndex, type IndexedCall, type PruneIndex } from "../../../core/src/prune/prune-index.ts";
import { isCovered, requestHistoryOf, unflushedBatches } from "../../../core/src/prune/pending-batches.ts";
import { occurrenceKey, type AgentMessage } from "../../../core/src/shapes/messages.ts";
import type { Batch } from "../../../core/src/prune/flush.ts";

/** The timestamp of the result of `toolCallId` on the branch. */
function resultTime(b: SessionBuilder, toolCallId: string): number {
  for (const e of b.entries) {
    const m = (e as { message?: AgentMessage }).message;
    if (m?.role === "toolResult" && m.toolCallId === toolCallId) return m.timestamp;
  }
  throw new Error(`no result for ${toolCallId}`);
}

/** An index that holds the result of `toolCallId` at `timestamp` as a pruned call. */
function indexHolding(...calls: [toolCallId: string, timestamp: number][]): PruneIndex {
  const index = emptyIndex();
  calls.forEach(([toolCallId, timestamp], i) => {
    const key = occurrenceKey(toolCallId, timestamp);
    index.calls.set(key, { record: { toolCallId, toolName: "read", args: {}, resultText: "", isError: false, resultTimestamp: timestamp }, key, shortRef: `t${i + 1}` } as IndexedCall);
  });
  return index;
}

const ids = (batches: readonly Batch[]) => batches.map((b) => [b.turnIndex, b.calls.map((c) => c.toolCallId)]);

/** One task: two tool-using turns (c1 and c2, then c3) and a final reply. */
function twoTurns() {
  const b = new SessionBuilder().user("fix the build");
  b.assistant({ toolCalls: [{ id: "c1", name: "read", args: { path: "a.ts" } }, { id: "c2", name: "read", args: { path: "b.ts" } }] });
  b.toolResult("c1", "read", "A").toolResult("c2", "read", "B");
  b.assistant({ toolCalls: [{ id: "c3", name: "bash", args: { command: "npm test" } }] }).toolResult("c3", "bash", "ok");
  return b;
}

describe("isCovered", () => {
  it("a result the index holds as a call is covered; the same id at another time is not", () => {
    const index = indexHolding(["c1", 100]);
    expect(isCovered(index, "c1", 100)).toBe(true);
    expect(isCovered(index, "c1", 200)).toBe(false);
  });

  it("a duplicate the index aliases to an original is covered", () => {
    const index = emptyIndex();
    const newKey = occurrenceKey("c9", 300);
    index.aliases.set(newKey, { entryId: "e1", newKey, originalKey: occurrenceKey("c1", 100), data: { newToolCallId: "c9", originalToolCallId: "c1", newResultTimestamp: 300, originalResultTimestamp: 100 } });
    expect(isCovered(index, "c9", 300)).toBe(true);
  });

  it("the frontier covers every result up to its timestamp, and none after it", () => {
    const index = emptyIndex();
    index.frontier = { lastAttemptedTimestamp: 500 };
    expect(isCovered(index, "c1", 499)).toBe(true);
    expect(isCovered(index, "c1", 500)).toBe(true);
    expect(isCovered(index, "c1", 501)).toBe(false);
  });

  it("a frontier without a timestamp covers nothing", () => {
    const index = emptyIndex();
    index.frontier = { outcome: "summarized" };
    expect(isCovered(index, "c1", 1)).toBe(false);
  });
});

describe("unflushedBatches", () => {
  it("each tool-using turn is one batch, numbered by the assistant messages up to it", () => {
    const b = twoTurns().assistant("done");
    expect(ids(unflushedBatches(b.entries, emptyIndex(), DEFAULT_CONFIG))).toEqual([
      [1, ["c1", "c2"]],
      [2, ["c3"]],
    ]);
  });

  it("a batch keeps what capture keeps of each call: its arguments, its text, its times", () => {
    const b = twoTurns();
    const [first] = unflushedBatches(b.entries, emptyIndex(), DEFAULT_CONFIG);
    expect(first!.calls[0]).toMatchObject({ toolCallId: "c1", toolName: "read", args: { path: "a.ts" }, resultText: "A", isError: false, turnIndex: 1, resultTimestamp: resultTime(b, "c1") });
  });

  it("results the index holds leave their batch; a batch left with none is gone", () => {
    const b = twoTurns();
    const index = indexHolding(["c1", resultTime(b, "c1")], ["c3", resultTime(b, "c3")]);
    expect(ids(unflushedBatches(b.entries, index, DEFAULT_CONFIG))).toEqual([[1, ["c2"]]]);
  });

  it("results at or before the frontier are not pending; later ones are", () => {
    const b = twoTurns();
    const index = emptyIndex();
    index.frontier = { lastAttemptedTimestamp: resultTime(b, "c2") };
    expect(ids(unflushedBatches(b.entries, index, DEFAULT_CONFIG))).toEqual([[2, ["c3"]]]);
  });

  it("protected calls never enter a batch", () => {
    const b = twoTurns();
    const batches = unflushedBatches(b.entries, emptyIndex(), { ...DEFAULT_CONFIG, protectedTools: ["bash"], protectedPaths: ["b.ts"] });
    expect(ids(batches)).toEqual([[1, ["c1"]]]);
  });

  it("a user message closes a turn: results after it belong to no batch", () => {
    const b = new SessionBuilder().user("go");
    b.assistant({ toolCalls: [{ id: "c1", name: "read", args: { path: "a.ts" } }, { id: "c2", name: "read", args: { path: "b.ts" } }] });
    b.toolResult("c1", "read", "A").user("stop").toolResult("c2", "read", "B");
    expect(ids(unflushedBatches(b.entries, emptyIndex(), DEFAULT_CONFIG))).toEqual([[1, ["c1"]]]);
  });

  it("entries that are not messages are passed over; a branch without tool calls has nothing pending", () => {
    const b = new SessionBuilder().user("hi").custom("anything", { x: 1 }).assistant("hello");
    expect(unflushedBatches(b.entries, emptyIndex(), DEFAULT_CONFIG)).toEqual([]);
  });
});

describe("requestHistoryOf", () => {
  it("counts each assistant message as a request; a final reply ends its task", () => {
    const b = twoTurns().assistant("done").user("next").assistant({ toolCalls: [{ name: "read", args: { path: "c.ts" } }] });
    expect(requestHistoryOf(b.entries)).toEqual({ inCurrentTask: 1, completedTasks: 1, inCompletedTasks: 3 });
  });

  it("a task in progress is all current; an empty branch has no requests", () => {
    expect(requestHistoryOf(twoTurns().entries)).toEqual({ inCurrentTask: 2, completedTasks: 0, inCompletedTasks: 0 });
    expect(requestHistoryOf([])).toEqual({ inCurrentTask: 0, completedTasks: 0, inCompletedTasks: 0 });
  });

  it("two one-request tasks are two completed tasks of one request each", () => {
    const b = new SessionBuilder().user("a").assistant("A").user("b").assistant("B");
    expect(requestHistoryOf(b.entries)).toEqual({ inCurrentTask: 0, completedTasks: 2, inCompletedTasks: 2 });
  });
});
