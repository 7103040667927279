// The index of a growing branch taken in entry by entry (IndexBuilder) is the index rebuilt from
// the whole prefix, at every point where it is asked: random pruner entries over a small pool of
// ids, refs and timestamps, so that later entries often reach back (a summary covering a record an
// earlier flush left raw, a ref renamed, a backfilled record an earlier summary names, a repeated
// occurrence, a malformed payload).
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { IndexBuilder, rebuildIndex, type PruneIndex } from "../../../core/src/prune/prune-index.ts";
import type { AnyEntry } from "../../../core/src/shapes/entries.ts";

const IDS = ["c1", "c2", "c3", "c4", "c5"];
const TIMES = [undefined, 101, 102, 103];
const SHORT = [undefined, "t1", "t2", "t3", "t9"];

const idArb = fc.constantFrom(...IDS);
const timeArb = fc.constantFrom(...TIMES);
const refArb = fc.record({ toolCallId: idArb, resultTimestamp: timeArb, shortId: fc.constantFrom(...SHORT) }).map((r) => {
  const ref: Record<string, unknown> = { toolCallId: r.toolCallId };
  if (r.shortId) ref.shortId = r.shortId;
  if (r.resultTimestamp !== undefined) ref.resultTimestamp = r.resultTimestamp;
  return ref;
});
const recordArb = fc.record({ toolCallId: idArb, resultTimestamp: timeArb, spilled: fc.boolean(), hashed: fc.boolean(), broken: fc.integer({ min: 0, max: 9 }) }).map((r) => {
  if (r.broken === 0) return { toolName: "read" };
  const record: Record<string, unknown> = { toolCallId: r.toolCallId, toolName: "read", args: { path: `src/${r.toolCallId}.ts` }, resultText: `${r.toolCallId} output` };
  if (r.resultTimestamp !== undefined) record.resultTimestamp = r.resultTimestamp;
  if (r.spilled) record.spillPath = `/spill/${r.toolCallId}`;
  if (r.hashed) record.contentHash = `h-${r.toolCallId}`;
  return record;
});

type Step =
  | { kind: "message"; timestamp: number }
  | { kind: "index"; records: unknown[]; refs: unknown[] | undefined }
  | { kind: "summary"; refs: unknown[]; bare: boolean }
  | { kind: "chain"; blockId: string; keys: string[]; toolRefs: string[]; broken: boolean }
  | { kind: "alias"; newId: string; originalId: string; newTs: number | undefined; broken: boolean }
  | { kind: "frontier"; keepsEpoch: boolean }
  | { kind: "stats"; calls: number }
  | { kind: "settings" };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("message" as const), timestamp: fc.integer({ min: 100, max: 110 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("index" as const), records: fc.array(recordArb, { maxLength: 3 }), refs: fc.option(fc.array(refArb, { maxLength: 3 }), { nil: undefined }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("summary" as const), refs: fc.array(refArb, { maxLength: 3 }), bare: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("chain" as const),
      blockId: fc.constantFrom("b1", "b2", "b5"),
      keys: fc.array(fc.tuple(idArb, timeArb).map(([id, ts]) => (ts === undefined ? id : `${id}@${ts}`)), { maxLength: 2 }),
      toolRefs: fc.array(fc.constantFrom("t2", "t4", "t12"), { maxLength: 2 }),
      broken: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("alias" as const), newId: idArb, originalId: idArb, newTs: timeArb, broken: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("frontier" as const), keepsEpoch: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("stats" as const), calls: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "settings" as const }) },
);

function entryOf(step: Step, n: number): AnyEntry {
  const base = { id: `e${n}`, parentId: n === 0 ? null : `e${n - 1}`, timestamp: new Date(1_700_000_000_000 + n).toISOString() };
  const custom = (customType: string, data: unknown) => ({ ...base, type: "custom", customType, data }) as unknown as AnyEntry;
  switch (step.kind) {
    case "message":
      return { ...base, type: "message", message: { role: "user", content: "go", timestamp: step.timestamp } } as unknown as AnyEntry;
    case "index":
      return custom("context-prune-index", step.refs ? { toolCalls: step.records, refs: step.refs } : { toolCalls: step.records });
    case "summary": {
      const details = step.bare ? { toolCallIds: step.refs.map((r) => (r as { toolCallId: string }).toolCallId) } : { toolCallRefs: step.refs, toolNames: ["read"] };
      return { ...base, type: "custom_message", customType: "context-prune-summary", content: "- summary", display: false, details } as unknown as AnyEntry;
    }
    case "chain":
      return custom("context-prune-chain", step.broken ? { droppedOccurrenceKeys: step.keys } : { blockId: step.blockId, startUserTimestamp: 100, droppedOccurrenceKeys: step.keys, toolRefs: step.toolRefs });
    case "alias":
      return custom("context-prune-dedup-alias", step.broken ? { newToolCallId: step.newId } : { newToolCallId: step.newId, originalToolCallId: step.originalId, ...(step.newTs === undefined ? {} : { newResultTimestamp: step.newTs }) });
    case "frontier":
      return custom("context-prune-frontier", { outcome: "summarized", attemptedToolCallCount: 1, ...(step.keepsEpoch ? { keepsEpoch: true } : {}) });
    case "stats":
      return custom("context-prune-stats", { callCount: step.calls, totalCost: step.calls / 10 });
    case "settings":
      return custom("context-prune-settings", { version: "0.1.0", config: {} });
  }
}

/** Everything an index holds, in the order it holds it (Maps by insertion, calls by what they are). */
function snapshot(index: PruneIndex): unknown {
  const call = (c: { key: string; shortRef: string; record: unknown; indexEntryId?: string; summaryEntryId?: string }) => [c.key, c.shortRef, c.record, c.indexEntryId, c.summaryEntryId];
  return {
    calls: [...index.calls].map(([k, c]) => [k, call(c)]),
    byToolCallId: [...index.byToolCallId].map(([k, cs]) => [k, cs.map(call)]),
    byShortRef: [...index.byShortRef].map(([k, c]) => [k, call(c)]),
    byContentHash: [...index.byContentHash].map(([k, c]) => [k, call(c)]),
    unhashed: index.unhashed.map(call),
    aliases: [...index.aliases],
    aliasIdCounts: [...index.aliasIdCounts],
    summaries: index.summaries,
    chains: index.chains,
    frontier: index.frontier,
    frontierEntryId: index.frontierEntryId,
    stats: index.stats,
    lastRefNumber: index.lastRefNumber,
    lastBlockNumber: index.lastBlockNumber,
    epoch: index.epoch,
  };
}

describe("IndexBuilder", () => {
  it("asked after any entries, its index and problems are rebuildIndex's of the entries added so far", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 30 }), fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }), (steps, asks) => {
        const entries = steps.map(entryOf);
        const builder = new IndexBuilder();
        entries.forEach((entry, i) => {
          builder.add(entry);
          if (!asks[i] && i < entries.length - 1) return;
          const expected = rebuildIndex(entries.slice(0, i + 1));
          expect(snapshot(builder.index())).toEqual(snapshot(expected.index));
          expect(builder.problems()).toEqual(expected.problems);
        });
      }),
      { numRuns: 400 },
    );
  });

  it("keeps the calls already indexed when a flush only adds (the same objects), and gives a new index object each time", () => {
    const builder = new IndexBuilder();
    const flush = (n: number) => {
      const ts = 200 + n;
      builder.add(entryOf({ kind: "message", timestamp: ts }, 3 * n));
      builder.add(entryOf({ kind: "index", records: [{ toolCallId: `x${n}`, toolName: "read", resultTimestamp: ts }], refs: [{ shortId: `t${n}`, toolCallId: `x${n}`, resultTimestamp: ts }] }, 3 * n + 1));
      builder.add(entryOf({ kind: "summary", refs: [{ shortId: `t${n}`, toolCallId: `x${n}`, resultTimestamp: ts }], bare: false }, 3 * n + 2));
    };
    flush(1);
    const first = builder.index();
    flush(2);
    const second = builder.index();
    expect(second).not.toBe(first);
    expect(second.calls.get("x1@201")).toBe(first.calls.get("x1@201"));
    expect([...second.calls.values()].map((c) => [c.shortRef, c.summaryEntryId])).toEqual([
      ["t1", "e5"],
      ["t2", "e8"],
    ]);
  });
});
