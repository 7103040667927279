// Capture of finished tool-call batches and the pre-flush pipeline:
// protected filter → eager spill → frontier trim → content-hash dedup → trivial skip → summarizer → oversized check.
// Everything here is pure or takes its I/O as an argument; the Pi extension wires it.
import type { AssistantMessage, ToolResultMessage } from "../shapes/messages.ts";
import { contentText, occurrenceKey, toolCallsOf } from "../shapes/messages.ts";
import type { DedupAliasData, FrontierData, FrontierOutcome, IndexData, SummaryDetails, ToolCallRecord, ToolCallRef } from "../shapes/entries.ts";
import { PRUNE_DEDUP_ALIAS, PRUNE_FRONTIER, PRUNE_INDEX, PRUNE_SUMMARY } from "../shapes/entries.ts";
import type { PersistEntry, SpillStorage } from "../shapes/entries.ts";
import type { PruneConfig } from "../settings/config.ts";
import { isProtected } from "../settings/protection.ts";
import { addAlias, addIndexedCall, callWithContentHash, contentHash, nextShortRef, recordKey, removeAlias, type IndexedCall, type PruneIndex } from "./prune-index.ts";
import { buildBatchRequest, finishSummary, type Summarizer, type SummarizerUsage } from "./summarizer-prompts.ts";

interface CapturedCall {
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  resultText: string;
  isError: boolean;
  turnIndex: number;
  /** The assistant message's timestamp. */
  timestamp: number;
  resultTimestamp: number;
}

export interface Batch {
  turnIndex: number;
  calls: CapturedCall[];
}

export interface CaptureResult {
  batch?: Batch;
  protectedCalls: CapturedCall[];
}

/** Step 1: one assistant turn's calls with their results; protected calls never enter the batch. */
export function captureBatch(
  assistant: AssistantMessage,
  results: readonly ToolResultMessage[],
  turnIndex: number,
  config: Pick<PruneConfig, "protectedTools" | "protectedPaths">,
): CaptureResult {
  const calls = new Map(toolCallsOf(assistant).map((c) => [c.id, c]));
  const batch: CapturedCall[] = [];
  const protectedCalls: CapturedCall[] = [];
  for (const result of results) {
    const call = calls.get(result.toolCallId);
    const args = (call?.arguments && typeof call.arguments === "object" ? call.arguments : {}) as Record<string, unknown>;
    const captured: CapturedCall = {
      toolCallId: result.toolCallId,
      toolName: result.toolName,
      args,
      resultText: contentText(result.content),
      isError: result.isError === true,
      turnIndex,
      timestamp: assistant.timestamp,
      resultTimestamp: result.timestamp,
    };
    if (isProtected(result.toolName, args, config)) protectedCalls.push(captured);
    else batch.push(captured);
  }
  return { batch: batch.length ? { turnIndex, calls: batch } : undefined, protectedCalls };
}

function toRecord(call: CapturedCall): ToolCallRecord {
  return {
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    args: call.args,
    resultText: call.resultText,
    isError: call.isError,
    turnIndex: call.turnIndex,
    timestamp: call.timestamp,
    resultTimestamp: call.resultTimestamp,
    contentHash: contentHash(call.toolName, call.resultText),
  };
}

// ---- eager spill ----

export interface SpillOutcome {
  entries: PersistEntry[];
  /** Calls now indexed as spilled (to be applied to the index once persisted). */
  indexed: IndexedCall[];
  /** Calls whose spill file could not be written: they stay inline. */
  failures: { call: CapturedCall; error: string }[];
  /** The batch without the spilled calls. */
  rest?: Batch;
}

function headPreview(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, "utf8");
  if (buf.length <= maxBytes) return text;
  // Cut on a character boundary.
  return buf.subarray(0, maxBytes).toString("utf8").replace(/\uFFFD+$/, "");
}

/** Step 2: any single result of spillThreshold chars or more is spilled at once (the spill file first, then the record). */
export function spillOversized(
  batch: Batch,
  index: PruneIndex,
  config: Pick<PruneConfig, "spillThreshold" | "spillPreviewBytes" | "dedupByContentHash">,
  storage: Pick<SpillStorage, "write">,
): SpillOutcome {
  const outcome: SpillOutcome = { entries: [], indexed: [], failures: [] };
  const keep: CapturedCall[] = [];
  const records: ToolCallRecord[] = [];
  const refs: ToolCallRef[] = [];
  for (const call of batch.calls) {
    if (call.resultText.length < config.spillThreshold) {
      keep.push(call);
      continue;
    }
    // A duplicate of something already indexed becomes an alias in the dedup step, not a second file.
    if (config.dedupByContentHash && callWithContentHash(index, contentHash(call.toolName, call.resultText))) {
      keep.push(call);
      continue;
    }
    let spillPath: string;
    try {
      spillPath = storage.write(call);
    } catch (error) {
      outcome.failures.push({ call, error: (error as Error).message });
      keep.push(call);
      continue;
    }
    const record: ToolCallRecord = {
      ...toRecord(call),
      resultText: "",
      spillPath,
      spillBytes: Buffer.byteLength(call.resultText, "utf8"),
      resultPreview: headPreview(call.resultText, config.spillPreviewBytes),
    };
    const shortRef = nextShortRef(index);
    const indexed: IndexedCall = { record, key: recordKey(record), shortRef };
    addIndexedCall(index, indexed);
    outcome.indexed.push(indexed);
    records.push(record);
    refs.push({ shortId: shortRef, toolCallId: record.toolCallId, resultTimestamp: record.resultTimestamp });
  }
  if (records.length) {
    const data: IndexData = { toolCalls: records, refs };
    outcome.entries.push({ kind: "custom", customType: PRUNE_INDEX, data });
  }
  outcome.rest = keep.length ? { turnIndex: batch.turnIndex, calls: keep } : undefined;
  return outcome;
}


// ---- flush ----

interface FlushOutcome {
  batchTurnIndex: number;
  outcome: FrontierOutcome | "failed";
  rawChars: number;
  summaryChars: number;
  refs: string[];
  error?: string;
}

export interface FlushResult {
  /** Entries to persist, in order. Nothing of a failed batch is among them. */
  entries: PersistEntry[];
  outcomes: FlushOutcome[];
  /** Batches that failed (summarizer error/timeout): they stay pending for the next flush. */
  retry: Batch[];
  usage: SummarizerUsage;
  summarizerCalls: number;
}

export type FlushConfig = Pick<PruneConfig, "dedupByContentHash" | "minBatchChars" | "summarizerInputChars">;

/** Step 3: drops calls the index already covers or that lie at or behind the frontier. */
function trimToFrontier(batch: Batch, index: PruneIndex): Batch | undefined {
  const frontierTs = index.frontier?.lastAttemptedTimestamp;
  const calls = batch.calls.filter((c) => {
    const key = occurrenceKey(c.toolCallId, c.resultTimestamp);
    if (index.calls.has(key) || index.aliases.has(key)) return false;
    if (typeof frontierTs === "number" && c.resultTimestamp <= frontierTs) return false;
    return true;
  });
  return calls.length ? { turnIndex: batch.turnIndex, calls } : undefined;
}

function frontierEntry(batch: Batch, index: PruneIndex, outcome: FrontierOutcome, rawChars: number, summaryChars: number, ceiling?: number): PersistEntry {
  const last = batch.calls[batch.calls.length - 1]!;
  const previous = index.frontier;
  const attempted = Math.max(...batch.calls.map((c) => c.resultTimestamp));
  const data: FrontierData = {
    lastAttemptedToolCallId: last.toolCallId,
    lastAttemptedToolName: last.toolName,
    lastAttemptedTurnIndex: last.turnIndex,
    lastAttemptedTimestamp: ceiling === undefined ? attempted : Math.min(attempted, ceiling),
    attemptedBatchCount: (previous?.attemptedBatchCount ?? 0) + 1,
    attemptedToolCallCount: (previous?.attemptedToolCallCount ?? 0) + batch.calls.length,
    rawCharCount: rawChars,
    summaryCharCount: summaryChars,
    outcome,
  };
  index.frontier = data;
  return { kind: "custom", customType: PRUNE_FRONTIER, data };
}

/**
 * Runs steps 3–7 over the pending batches. The index is updated in memory as entries are
 * planned; the caller persists `entries` in order (and rebuilds from the branch if that fails).
 * Summarizer calls run in parallel, one per batch.
 */
/**
 * `frontierCeiling`: the frontier never passes this timestamp. A flush of only the newest batches
 * leaves older ones pending; a frontier past them would make them look attempted (here, and to
 * a rebuild from the file), so it stops just below the oldest of them.
 */
export async function flushBatches(batches: readonly Batch[], index: PruneIndex, config: FlushConfig, summarize: Summarizer, frontierCeiling?: number): Promise<FlushResult> {
  const result: FlushResult = { entries: [], outcomes: [], retry: [], usage: { input: 0, output: 0, cost: 0 }, summarizerCalls: 0 };

  type Planned = { batch: Batch; rawChars: number; refs: string[]; calls: CapturedCall[]; aliasEntries: PersistEntry[]; aliasKeys: string[] };
  const toSummarize: Planned[] = [];
  const ordered: ({ kind: "done"; entries: PersistEntry[] } | { kind: "summarize"; plan: Planned })[] = [];

  for (const original of batches) {
    const batch = trimToFrontier(original, index);
    if (!batch) continue;
    const aliasEntries: PersistEntry[] = [];
    /** The occurrence keys of the aliases made for this batch: taken back if its summary fails. */
    const aliasKeys: string[] = [];
    const remaining: CapturedCall[] = [];
    for (const call of batch.calls) {
      const hash = contentHash(call.toolName, call.resultText);
      const original = config.dedupByContentHash ? callWithContentHash(index, hash) : undefined;
      if (original && call.resultText.trim()) {
        const data: DedupAliasData = {
          newToolCallId: call.toolCallId,
          originalToolCallId: original.record.toolCallId,
          newResultTimestamp: call.resultTimestamp,
          originalResultTimestamp: original.record.resultTimestamp,
        };
        const newKey = occurrenceKey(call.toolCallId, call.resultTimestamp);
        addAlias(index, { entryId: "", newKey, originalKey: original.key, data });
        aliasEntries.push({ kind: "custom", customType: PRUNE_DEDUP_ALIAS, data });
        aliasKeys.push(newKey);
      } else remaining.push(call);
    }
    const rawChars = remaining.reduce((n, c) => n + c.resultText.length, 0);
    if (remaining.length === 0) {
      const entries = [...aliasEntries, frontierEntry(batch, index, "skipped-deduped", 0, 0, frontierCeiling)];
      ordered.push({ kind: "done", entries });
      result.outcomes.push({ batchTurnIndex: batch.turnIndex, outcome: "skipped-deduped", rawChars: 0, summaryChars: 0, refs: [] });
      continue;
    }
    if (rawChars < config.minBatchChars) {
      const entries = [...aliasEntries, frontierEntry(batch, index, "skipped-trivial", rawChars, 0, frontierCeiling)];
      ordered.push({ kind: "done", entries });
      result.outcomes.push({ batchTurnIndex: batch.turnIndex, outcome: "skipped-trivial", rawChars, summaryChars: 0, refs: [] });
      continue;
    }
    const plan: Planned = { batch, rawChars, refs: [], calls: remaining, aliasEntries, aliasKeys };
    toSummarize.push(plan);
    ordered.push({ kind: "summarize", plan });
  }

  // Refs are reserved before the calls so numbering follows batch order whatever finishes first.
  for (const plan of toSummarize) plan.refs = plan.calls.map(() => nextShortRef(index));
  const answers = await Promise.allSettled(
    toSummarize.map((plan) =>
      summarize(
        buildBatchRequest(
          plan.calls.map((c, i) => ({ shortRef: plan.refs[i]!, toolName: c.toolName, args: c.args, resultText: c.resultText, isError: c.isError })),
          config.summarizerInputChars,
        ),
      ),
    ),
  );
  const answerOf = new Map(toSummarize.map((plan, i) => [plan, answers[i]!]));

  for (const step of ordered) {
    if (step.kind === "done") {
      result.entries.push(...step.entries);
      continue;
    }
    const { plan } = step;
    const answer = answerOf.get(plan)!;
    result.summarizerCalls++;
    if (answer.status === "rejected") {
      // Nothing of this batch is persisted, not even its aliases: it is retried whole next time.
      for (const key of plan.aliasKeys) removeAlias(index, key);
      result.retry.push(plan.batch);
      result.outcomes.push({ batchTurnIndex: plan.batch.turnIndex, outcome: "failed", rawChars: plan.rawChars, summaryChars: 0, refs: [], error: String((answer.reason as Error)?.message ?? answer.reason) });
      continue;
    }
    if (answer.value.usage) {
      result.usage.input += answer.value.usage.input;
      result.usage.output += answer.value.usage.output;
      result.usage.cost += answer.value.usage.cost;
    }
    let summary: string;
    try {
      summary = finishSummary(
        answer.value.text,
        plan.calls.map((c, i) => ({ shortRef: plan.refs[i]!, toolName: c.toolName, args: c.args })),
      );
    } catch (error) {
      for (const key of plan.aliasKeys) removeAlias(index, key);
      result.retry.push(plan.batch);
      result.outcomes.push({ batchTurnIndex: plan.batch.turnIndex, outcome: "failed", rawChars: plan.rawChars, summaryChars: 0, refs: [], error: (error as Error).message });
      continue;
    }
    if (summary.length >= plan.rawChars) {
      result.entries.push(...plan.aliasEntries, frontierEntry(plan.batch, index, "skipped-oversized", plan.rawChars, summary.length, frontierCeiling));
      result.outcomes.push({ batchTurnIndex: plan.batch.turnIndex, outcome: "skipped-oversized", rawChars: plan.rawChars, summaryChars: summary.length, refs: [] });
      continue;
    }
    const records = plan.calls.map(toRecord);
    const refs: ToolCallRef[] = records.map((r, i) => ({ shortId: plan.refs[i]!, toolCallId: r.toolCallId, resultTimestamp: r.resultTimestamp }));
    records.forEach((record, i) => addIndexedCall(index, { record, key: recordKey(record), shortRef: plan.refs[i]! }));
    const indexData: IndexData = { toolCalls: records, refs };
    const details: SummaryDetails = {
      toolCallRefs: refs,
      toolNames: [...new Set(records.map((r) => r.toolName))],
      turnIndex: plan.batch.turnIndex,
      timestamp: Math.max(...records.map((r) => r.resultTimestamp ?? 0)),
    };
    result.entries.push(
      ...plan.aliasEntries,
      { kind: "custom", customType: PRUNE_INDEX, data: indexData },
      { kind: "message", customType: PRUNE_SUMMARY, content: summary, details },
      frontierEntry(plan.batch, index, "summarized", plan.rawChars, summary.length, frontierCeiling),
    );
    index.summaries.push({ entryId: "", text: summary, refs: refs.map((r) => ({ ...r, shortId: r.shortId! })), keys: records.map(recordKey), toolNames: details.toolNames ?? [], turnIndex: plan.batch.turnIndex, timestamp: details.timestamp });
    result.outcomes.push({ batchTurnIndex: plan.batch.turnIndex, outcome: "summarized", rawChars: plan.rawChars, summaryChars: summary.length, refs: plan.refs });
  }
  // Refs reserved for batches that failed are given back when nothing after them was kept,
  // so a retried batch gets the numbers it would have had.
  let highest = 0;
  for (const call of index.calls.values()) highest = Math.max(highest, Number(call.shortRef.slice(1)) || 0);
  index.lastRefNumber = highest;
  return result;
}
