// The pruner's index rebuilt from what an interrupted or hostile writer can leave behind:
// an index entry whose summary never made it to disk, a retry after it, chain records, legacy
// refs, and payload fields of the wrong type.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { rebuildIndex, nextShortRef } from "../../../core/src/prune/prune-index.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import { contentText, type AgentMessage, type ToolResultMessage } from "../../../core/src/shapes/messages.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { buildModelView } from "../../../core/src/view/model-view.ts";
import { PrunerRuntime } from "../../../pi-extension/src/runtime.ts";
import { OnceReporter } from "../../../pi-extension/src/once-reporter.ts";

const config = DEFAULT_CONFIG;

/** user → assistant calls c1, c2 → results; returns the builder and each result's timestamp. */
function turn() {
  const b = new SessionBuilder().user("read both");
  b.assistant({ toolCalls: [{ id: "c1", name: "read", args: { path: "a.ts" } }, { id: "c2", name: "read", args: { path: "b.ts" } }] });
  b.toolResult("c1", "read", "A".repeat(2000)).toolResult("c2", "read", "B".repeat(2000));
  const ts = (id: string) => (b.entries.find((e) => e.type === "message" && (e as { message: { toolCallId?: string } }).message.toolCallId === id) as unknown as { message: { timestamp: number } }).message.timestamp;
  return { b, t1: ts("c1"), t2: ts("c2") };
}

const record = (id: string, ts: number, extra: Record<string, unknown> = {}) => ({ toolCallId: id, toolName: "read", args: {}, resultText: "x".repeat(2000), isError: false, resultTimestamp: ts, ...extra });
const ref = (shortId: string, id: string, ts?: number) => (ts === undefined ? { shortId, toolCallId: id } : { shortId, toolCallId: id, resultTimestamp: ts });

function resultsSent(b: SessionBuilder): string[] {
  const view = buildModelView(parseSessionText(b.toJsonl()), { config });
  return view.messages.filter((m): m is ToolResultMessage => m.role === "toolResult").map((m) => contentText(m.content));
}

describe("rebuildIndex after an interrupted flush", () => {
  it("an index entry without its summary is left out: the results stay raw, it is reported, and its refs are free again", () => {
    const { b, t1, t2 } = turn();
    b.custom("context-prune-index", { toolCalls: [record("c1", t1), record("c2", t2)], refs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] });
    const { index, problems } = rebuildIndex(b.entries);
    expect(index.calls.size).toBe(0);
    expect(problems).toEqual([expect.stringContaining(`c1@${t1} was indexed but no summary covers it`), expect.stringContaining(`c2@${t2}`)]);
    expect(nextShortRef(index)).toBe("t1");
    // No orphan stub: the model sees both outputs.
    expect(resultsSent(b)).toEqual(["A".repeat(2000), "B".repeat(2000)]);
  });

  it("an index entry with its summary is kept, and the stubs render", () => {
    const { b, t1, t2 } = turn();
    b.custom("context-prune-index", { toolCalls: [record("c1", t1), record("c2", t2)], refs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] });
    b.customMessage("context-prune-summary", "- `t1` a\n- `t2` b", { toolCallRefs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] });
    const { index, problems } = rebuildIndex(b.entries);
    expect(problems).toEqual([]);
    expect([...index.byShortRef.keys()]).toEqual(["t1", "t2"]);
    expect(resultsSent(b).every((t) => t.includes("pruned: see ref"))).toBe(true);
  });

  it("a summary that covers only part of an index entry keeps only that part", () => {
    const { b, t1, t2 } = turn();
    b.custom("context-prune-index", { toolCalls: [record("c1", t1), record("c2", t2)], refs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] });
    b.customMessage("context-prune-summary", "- `t1` a", { toolCallRefs: [ref("t1", "c1", t1)] });
    const { index, problems } = rebuildIndex(b.entries);
    expect([...index.calls.keys()]).toEqual([`c1@${t1}`]);
    expect(problems).toHaveLength(1);
    expect(resultsSent(b)[1]).toBe("B".repeat(2000));
  });

  it("a spill record needs no summary", () => {
    const { b, t1 } = turn();
    b.custom("context-prune-index", { toolCalls: [record("c1", t1, { resultText: "", spillPath: "/blobs/c1.txt", spillBytes: 2000, resultPreview: "AAA" })], refs: [ref("t1", "c1", t1)] });
    const { index, problems } = rebuildIndex(b.entries);
    expect(problems).toEqual([]);
    expect(index.byShortRef.get("t1")?.record.spillPath).toBe("/blobs/c1.txt");
    expect(resultsSent(b)[0]).toContain("spilled to disk");
  });

  it("the retry after an interruption indexes each result once, under the refs of the retry", () => {
    const { b, t1, t2 } = turn();
    b.custom("context-prune-index", { toolCalls: [record("c1", t1), record("c2", t2)], refs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] }); // killed here
    b.user("after the restart");
    b.custom("context-prune-index", { toolCalls: [record("c1", t1), record("c2", t2)], refs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] });
    b.customMessage("context-prune-summary", "- `t1` a\n- `t2` b", { toolCallRefs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] });
    const { index, problems } = rebuildIndex(b.entries);
    expect(index.calls.size).toBe(2);
    expect(index.byToolCallId.get("c1")).toHaveLength(1);
    expect(index.calls.get(`c1@${t1}`)?.indexEntryId).toBe(b.entries.filter((e) => (e as { customType?: string }).customType === "context-prune-index")[1]!.id);
    expect(problems).toHaveLength(2); // the interrupted attempt is still reported
  });

  it("records a compressed chain added are covered by the chain entry; without it they are left out", () => {
    const { b, t1, t2 } = turn();
    b.custom("context-prune-index", { toolCalls: [record("c1", t1), record("c2", t2)], refs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] });
    const withoutChain = rebuildIndex(b.entries).index;
    expect(withoutChain.calls.size).toBe(0);
    b.custom("context-prune-chain", { blockId: "b1", startUserTimestamp: 1, droppedToolCallIds: ["c1", "c2"], droppedOccurrenceKeys: [`c1@${t1}`, `c2@${t2}`], toolRefs: ["t1", "t2"] });
    const { index, problems } = rebuildIndex(b.entries);
    expect(problems).toEqual([]);
    expect([...index.byShortRef.keys()]).toEqual(["t1", "t2"]);
  });

  it("a chain entry that cannot be read (no block id) vouches for nothing: the records it names stay raw", () => {
    const { b, t1, t2 } = turn();
    b.custom("context-prune-index", { toolCalls: [record("c1", t1), record("c2", t2)], refs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] });
    b.custom("context-prune-chain", { startUserTimestamp: 1, droppedOccurrenceKeys: [`c1@${t1}`, `c2@${t2}`], toolRefs: ["t1", "t2"] });
    const { index, problems } = rebuildIndex(b.entries);
    expect(index.calls.size).toBe(0);
    expect(index.chains).toEqual([]);
    expect(problems).toEqual([expect.stringContaining(`c1@${t1} was indexed but no summary covers it`), expect.stringContaining(`c2@${t2}`), expect.stringContaining("context-prune-chain without blockId/startUserTimestamp")]);
    expect(resultsSent(b)).toEqual(["A".repeat(2000), "B".repeat(2000)]);
  });

  it("older sessions: a summary naming bare ids covers keyed records, also when the index comes after it", () => {
    const { b, t1, t2 } = turn();
    b.customMessage("context-prune-summary", "- c1 and c2", { toolCallIds: ["c1", "c2"] });
    b.custom("context-prune-index", { toolCalls: [record("c1", t1), record("c2", t2)], backfilled: true });
    const { index, problems } = rebuildIndex(b.entries);
    expect(problems).toEqual([]);
    expect(index.calls.size).toBe(2);
  });

  it("the live runtime puts the results of an interrupted flush back in the queue", () => {
    const { b, t1, t2 } = turn();
    b.assistant("done");
    b.custom("context-prune-index", { toolCalls: [record("c1", t1), record("c2", t2)], refs: [ref("t1", "c1", t1), ref("t2", "c2", t2)] });
    const runtime = new PrunerRuntime(config, new OnceReporter(() => {}));
    runtime.rebuild(b.entries);
    expect(runtime.pending.flatMap((batch) => batch.calls.map((c) => c.toolCallId))).toEqual(["c1", "c2"]);
    const context = b.entries.filter((e) => e.type === "message").map((e) => (e as { message: AgentMessage }).message);
    expect(renderModelView(context, runtime.index, config).messages).toBe(context); // nothing stubbed
  });
});

describe("rebuildIndex on payloads of the wrong type", () => {
  it("short refs are always strings, stats and frontier keep only typed fields, record fields of the wrong type are dropped", () => {
    const { b, t1, t2 } = turn();
    b.custom("context-prune-index", {
      toolCalls: [record("c1", t1, { spillPath: { toString: 1 }, resultText: 5 }), record("c2", t2, { args: "not an object" })],
      refs: [{ shortId: 7, toolCallId: "c1", resultTimestamp: t1 }, { shortId: "t9", toolCallId: "c2", resultTimestamp: { x: 1 } }],
    });
    b.customMessage("context-prune-summary", "s", { toolCallRefs: [{ shortId: { toString: 1 }, toolCallId: "c1", resultTimestamp: t1 }, ref("t2", "c2", t2), { toolCallId: 5 }] });
    b.custom("context-prune-frontier", { lastAttemptedTimestamp: "9", attemptedBatchCount: 3, outcome: 4 });
    b.custom("context-prune-stats", { totalCost: "1.5", callCount: 2, totalInputTokens: Number.NaN });
    const { index } = rebuildIndex(b.entries);
    for (const call of index.calls.values()) expect(typeof call.shortRef).toBe("string");
    expect(index.calls.get(`c1@${t1}`)?.record.spillPath).toBeUndefined();
    expect(index.calls.get(`c1@${t1}`)?.record.resultText).toBeUndefined();
    expect(index.calls.get(`c2@${t2}`)?.record.args).toBeUndefined();
    expect(index.frontier).toEqual({ attemptedBatchCount: 3 });
    expect(index.stats).toEqual({ callCount: 2 });
    expect(() => renderModelView(b.entries.filter((e) => e.type === "message").map((e) => (e as { message: AgentMessage }).message), index, config)).not.toThrow();
  });
});
