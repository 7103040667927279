// Capture of finished tool-call batches and the pre-flush pipeline:
// protected filter → eager spill → frontier trim → content-hash dedup → stale stubs → trivial skip
// → summarizer (one joined request per flush) → oversized check.
// Everything here is pure or takes its I/O as an argument; the Pi extension wires it.
import type { AssistantMessage, ToolResultMessage } from "../shapes/messages.ts";
import { contentText, occurrenceKey, toolCallsOf } from "../shapes/messages.ts";
import type { DedupAliasData, FrontierData, FrontierOutcome, IndexData, SummaryDetails, ToolCallRecord, ToolCallRef } from "../shapes/entries.ts";
import { PRUNE_DEDUP_ALIAS, PRUNE_FRONTIER, PRUNE_INDEX, PRUNE_SUMMARY } from "../shapes/entries.ts";
import type { PersistEntry, SpillStorage } from "../shapes/entries.ts";
import type { PruneConfig } from "../settings/config.ts";
import { isProtected } from "../settings/protection.ts";
import { addAlias, addIndexedCall, callWithContentHash, contentHash, nextShortRef, recordKey, type IndexedCall, type PruneIndex } from "./prune-index.ts";
import { buildBatchRequest, finishSummary, type CallForSummary, type Summarizer, type SummarizerUsage } from "./summarizer-prompts.ts";
import { supersededBy, type SessionCall } from "./stale-outputs.ts";

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
  /** Entries to persist, in order. Nothing of a failed batch's summary is among them. */
  entries: PersistEntry[];
  outcomes: FlushOutcome[];
  /** Batches that failed (summarizer error/timeout): they stay pending for the next flush. */
  retry: Batch[];
  usage: SummarizerUsage;
  summarizerCalls: number;
}

export type FlushConfig = Pick<PruneConfig, "dedupByContentHash" | "minBatchChars" | "summarizerInputChars"> & Partial<Pick<PruneConfig, "protectedTools" | "protectedPaths">>;

export interface FlushOptions {
  /**
   * The frontier never passes this timestamp. A flush of only the newest batches leaves older ones
   * pending; a frontier past them would make them look attempted (here, and to a rebuild from the
   * file), so it stops just below the oldest of them.
   */
  frontierCeiling?: number;
  /** Every tool call of the session in order: what may make a pending output stale. Without it nothing is. */
  sessionCalls?: readonly SessionCall[];
}

/** A batch whose outputs go to the summarizer: its calls left after dedup and stale stubs. */
export interface SummaryJob {
  batch: Batch;
  /** The batch as the caller handed it to the plan (`batch` is what of it lies past the frontier). */
  from: Batch;
  calls: CapturedCall[];
  rawChars: number;
  /**
   * The refs the request names the calls by: those they would get if indexed when planned. The
   * summaries are applied later, perhaps after other calls took those numbers: the answer's refs
   * are then renamed to the ones the calls get.
   */
  labels: string[];
}

/** What a flush settles without the summarizer, and what it leaves for it. */
export interface FlushPlan {
  /** Aliases, superseded outputs and skipped batches, in batch order: to persist now. */
  entries: PersistEntry[];
  outcomes: FlushOutcome[];
  jobs: SummaryJob[];
  /** The newest result the plan settled, which a later frontier may reach once the jobs before it are done. */
  settledThrough?: number;
}

/** Each job's answer in its request's refs, or why there is none. */
export interface JobAnswers {
  answers: (string | Error)[];
  usage: SummarizerUsage;
  summarizerCalls: number;
}

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

function newestResult(batch: Batch): number {
  return Math.max(...batch.calls.map((c) => c.resultTimestamp));
}

function oldestResult(batch: Batch): number {
  return Math.min(...batch.calls.map((c) => c.resultTimestamp));
}

/** `through`: the newest result the frontier may cover, everything older being settled or below the ceiling. */
function frontierEntry(batch: Batch, index: PruneIndex, outcome: FrontierOutcome, rawChars: number, summaryChars: number, through: number): PersistEntry {
  const last = batch.calls[batch.calls.length - 1]!;
  const previous = index.frontier;
  const data: FrontierData = {
    lastAttemptedToolCallId: last.toolCallId,
    lastAttemptedToolName: last.toolName,
    lastAttemptedTurnIndex: last.turnIndex,
    lastAttemptedTimestamp: through,
    attemptedBatchCount: (previous?.attemptedBatchCount ?? 0) + 1,
    attemptedToolCallCount: (previous?.attemptedToolCallCount ?? 0) + batch.calls.length,
    rawCharCount: rawChars,
    summaryCharCount: summaryChars,
    outcome,
  };
  index.frontier = data;
  return { kind: "custom", customType: PRUNE_FRONTIER, data };
}

/** The frontier's timestamp: the newest settled result, but below anything still outstanding. */
function frontierThrough(settled: number, outstanding: number, ceiling: number | undefined): number {
  return Math.min(settled, outstanding - 1, ceiling ?? Infinity);
}

/**
 * Steps 3–5 and the stale stubs over the pending batches, without the summarizer: duplicates
 * become aliases, outputs a later call superseded are indexed with a stub of their own, and
 * batches with nothing left (or too little) are settled. What remains becomes summary jobs. The
 * index is updated as entries are planned; the caller persists `entries` in order.
 */
export function planFlush(batches: readonly Batch[], index: PruneIndex, config: FlushConfig, options: FlushOptions = {}): FlushPlan {
  const plan: FlushPlan = { entries: [], outcomes: [], jobs: [] };
  const protection = { protectedTools: config.protectedTools ?? [], protectedPaths: config.protectedPaths ?? [] };
  let oldestJob = Infinity;
  const settle = (batch: Batch, outcome: FrontierOutcome, rawChars: number) => {
    plan.settledThrough = Math.max(plan.settledThrough ?? -Infinity, newestResult(batch));
    plan.entries.push(frontierEntry(batch, index, outcome, rawChars, 0, frontierThrough(plan.settledThrough, oldestJob, options.frontierCeiling)));
    plan.outcomes.push({ batchTurnIndex: batch.turnIndex, outcome, rawChars, summaryChars: 0, refs: [] });
  };
  for (const queued of batches) {
    const batch = trimToFrontier(queued, index);
    if (!batch) continue;
    const remaining: CapturedCall[] = [];
    const superseded: ToolCallRecord[] = [];
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
        addAlias(index, { entryId: "", newKey: occurrenceKey(call.toolCallId, call.resultTimestamp), originalKey: original.key, data });
        plan.entries.push({ kind: "custom", customType: PRUNE_DEDUP_ALIAS, data });
        continue;
      }
      const stale = options.sessionCalls ? supersededBy(call, options.sessionCalls, index, protection) : undefined;
      if (stale) superseded.push({ ...toRecord(call), supersededBy: stale });
      else remaining.push(call);
    }
    if (superseded.length) plan.entries.push(indexRecords(index, superseded).entry);
    const rawChars = remaining.reduce((n, c) => n + c.resultText.length, 0);
    if (remaining.length === 0) settle(batch, superseded.length ? "superseded" : "skipped-deduped", 0);
    else if (rawChars < config.minBatchChars) settle(batch, "skipped-trivial", rawChars);
    else {
      plan.jobs.push({ batch, from: queued, calls: remaining, rawChars, labels: [] });
      oldestJob = Math.min(oldestJob, oldestResult(batch));
    }
  }
  let next = index.lastRefNumber;
  for (const job of plan.jobs) job.labels = job.calls.map(() => `t${++next}`);
  return plan;
}

/** Indexes `records` under the next refs; returns the entry that persists them and their refs. */
function indexRecords(index: PruneIndex, records: ToolCallRecord[]): { entry: PersistEntry; refs: ToolCallRef[] } {
  const refs: ToolCallRef[] = records.map((record) => {
    const shortRef = nextShortRef(index);
    addIndexedCall(index, { record, key: recordKey(record), shortRef });
    return { shortId: shortRef, toolCallId: record.toolCallId, resultTimestamp: record.resultTimestamp };
  });
  const data: IndexData = { toolCalls: records, refs };
  return { entry: { kind: "custom", customType: PRUNE_INDEX, data }, refs };
}

function callsForRequest(job: SummaryJob): CallForSummary[] {
  return job.calls.map((c, i) => ({ shortRef: job.labels[i]!, toolName: c.toolName, args: c.args, resultText: c.resultText, isError: c.isError }));
}

/**
 * Step 6: the summarizer, one call for all the jobs (up to JOINED_CALLS_MAX calls in one request),
 * its answer split back by ref. A job whose refs the joined answer leaves out gets a call of its
 * own; a request that fails fails every job in it.
 */
export async function summarizeJobs(jobs: readonly SummaryJob[], config: Pick<FlushConfig, "summarizerInputChars">, summarize: Summarizer): Promise<JobAnswers> {
  const result: JobAnswers = { answers: jobs.map(() => new Error("not summarized")), usage: { input: 0, output: 0, cost: 0 }, summarizerCalls: 0 };
  const ask = async (calls: CallForSummary[]): Promise<string | Error> => {
    result.summarizerCalls++;
    try {
      const answer = await summarize(buildBatchRequest(calls, config.summarizerInputChars));
      if (answer.usage) {
        result.usage.input += answer.usage.input;
        result.usage.output += answer.usage.output;
        result.usage.cost += answer.usage.cost;
      }
      return answer.text;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  };
  await Promise.all(
    joinedGroups(jobs).map(async (group) => {
      if (group.length === 1) {
        result.answers[group[0]!] = await ask(callsForRequest(jobs[group[0]!]!));
        return;
      }
      const joined = await ask(group.flatMap((i) => callsForRequest(jobs[i]!)));
      const parts = typeof joined === "string" ? splitJoinedAnswer(joined, group.map((i) => jobs[i]!.labels)) : group.map(() => joined);
      await Promise.all(
        group.map(async (jobAt, k) => {
          const part = parts[k];
          result.answers[jobAt] = part instanceof Error || typeof part === "string" ? part : await ask(callsForRequest(jobs[jobAt]!));
        }),
      );
    }),
  );
  return result;
}

/**
 * Calls per joined request at most: the answer must fit the summarizer's output limit (a bullet or
 * two per call), and one request's failure should not hold back a whole long session's work.
 */
export const JOINED_CALLS_MAX = 24;

/** The jobs, by position, in groups of consecutive ones that share a request. */
function joinedGroups(jobs: readonly SummaryJob[]): number[][] {
  const groups: number[][] = [];
  let calls = 0;
  jobs.forEach((job, i) => {
    const last = groups[groups.length - 1];
    if (last && calls + job.calls.length <= JOINED_CALLS_MAX) {
      last.push(i);
      calls += job.calls.length;
    } else {
      groups.push([i]);
      calls = job.calls.length;
    }
  });
  return groups;
}

const BULLET = /^\s*(?:[-*•+]|\d+[.)])\s+/;
const REF_IN_TICKS = /`(t\d+)`/g;

/**
 * A joined answer split back into each job's part: every bullet goes to the job of the first ref
 * it names (lines under a bullet go with it; anything before the first bullet is dropped). A job
 * whose part does not name each of its refs gets undefined: it is asked again on its own.
 */
export function splitJoinedAnswer(answer: string, labelsByJob: readonly (readonly string[])[]): (string | undefined)[] {
  const owner = new Map<string, number>();
  labelsByJob.forEach((labels, job) => labels.forEach((label) => owner.set(label, job)));
  const parts: string[][] = labelsByJob.map(() => []);
  let current: string[] | undefined;
  for (const line of answer.replace(/\r\n/g, "\n").split("\n")) {
    if (BULLET.test(line)) {
      const first = [...line.matchAll(REF_IN_TICKS)].map((m) => m[1]!).find((ref) => owner.has(ref));
      current = first === undefined ? undefined : parts[owner.get(first)!];
      current?.push(line);
    } else if (/^\s*#/.test(line)) current = undefined;
    else if (line.trim()) current?.push(line);
  }
  return parts.map((lines, job) => {
    const text = lines.join("\n");
    const named = new Set([...text.matchAll(REF_IN_TICKS)].map((m) => m[1]!));
    return lines.length && labelsByJob[job]!.every((label) => named.has(label)) ? text : undefined;
  });
}

/** The answer with its request's refs renamed to the refs the calls get now (one pass, so renames never chain). */
function renameRefs(text: string, renames: ReadonlyMap<string, string>): string {
  if ([...renames].every(([from, to]) => from === to)) return text;
  return text.replace(REF_IN_TICKS, (whole, ref: string) => (renames.has(ref) ? `\`${renames.get(ref)}\`` : whole));
}

/**
 * Step 7 and the entries of the summarized jobs: each answer becomes its batch's index entry,
 * summary and frontier, unless it is not smaller than the outputs (skipped-oversized) or failed
 * (the batch goes back to pending). `frontierCeiling` stands for what else is still outstanding.
 */
export function applySummaries(jobs: readonly SummaryJob[], summarized: JobAnswers, index: PruneIndex, options: { frontierCeiling?: number; settledThrough?: number } = {}): FlushResult {
  const result: FlushResult = { entries: [], outcomes: [], retry: [], usage: summarized.usage, summarizerCalls: summarized.summarizerCalls };
  let settled = options.settledThrough ?? -Infinity;
  let failedFrom = Infinity;
  jobs.forEach((job, i) => {
    const answer = summarized.answers[i]!;
    const { batch, rawChars } = job;
    const fail = (error: string) => {
      result.retry.push(batch);
      failedFrom = Math.min(failedFrom, oldestResult(batch));
      result.outcomes.push({ batchTurnIndex: batch.turnIndex, outcome: "failed", rawChars, summaryChars: 0, refs: [], error });
    };
    if (answer instanceof Error) return fail(answer.message);
    const refs = job.calls.map((_, k) => `t${index.lastRefNumber + 1 + k}`);
    let summary: string;
    try {
      const text = renameRefs(answer, new Map(job.labels.map((label, k) => [label, refs[k]!])));
      summary = finishSummary(text, job.calls.map((c, k) => ({ shortRef: refs[k]!, toolName: c.toolName, args: c.args })));
    } catch (error) {
      return fail((error as Error).message);
    }
    settled = Math.max(settled, newestResult(batch));
    const later = jobs.slice(i + 1).map(({ batch: b }) => oldestResult(b));
    const through = frontierThrough(settled, Math.min(failedFrom, ...later), options.frontierCeiling);
    if (summary.length >= rawChars) {
      result.entries.push(frontierEntry(batch, index, "skipped-oversized", rawChars, summary.length, through));
      result.outcomes.push({ batchTurnIndex: batch.turnIndex, outcome: "skipped-oversized", rawChars, summaryChars: summary.length, refs: [] });
      return;
    }
    // The refs the summary was written with are the next ones: indexing now hands them out.
    const records = job.calls.map(toRecord);
    const indexed = indexRecords(index, records);
    const details: SummaryDetails = {
      toolCallRefs: indexed.refs,
      toolNames: [...new Set(records.map((r) => r.toolName))],
      turnIndex: batch.turnIndex,
      timestamp: Math.max(...records.map((r) => r.resultTimestamp ?? 0)),
    };
    result.entries.push(indexed.entry, { kind: "message", customType: PRUNE_SUMMARY, content: summary, details }, frontierEntry(batch, index, "summarized", rawChars, summary.length, through));
    index.summaries.push({ entryId: "", text: summary, refs: details.toolCallRefs!.map((r) => ({ ...r, shortId: r.shortId! })), keys: records.map(recordKey), toolNames: details.toolNames ?? [], turnIndex: batch.turnIndex, timestamp: details.timestamp });
    result.outcomes.push({ batchTurnIndex: batch.turnIndex, outcome: "summarized", rawChars, summaryChars: summary.length, refs });
  });
  return result;
}

/**
 * Runs steps 3–7 over the pending batches and waits for the summarizer: what needs no summary is
 * settled first, then the rest goes to the summarizer in one joined request. The index is updated
 * in memory as entries are planned; the caller persists `entries` in order (and rebuilds from the
 * branch if that fails).
 */
export async function flushBatches(batches: readonly Batch[], index: PruneIndex, config: FlushConfig, summarize: Summarizer, options: FlushOptions = {}): Promise<FlushResult> {
  const plan = planFlush(batches, index, config, options);
  const summarized = plan.jobs.length ? await summarizeJobs(plan.jobs, config, summarize) : { answers: [], usage: { input: 0, output: 0, cost: 0 }, summarizerCalls: 0 };
  const applied = applySummaries(plan.jobs, summarized, index, { frontierCeiling: options.frontierCeiling, settledThrough: plan.settledThrough });
  return { ...applied, entries: [...plan.entries, ...applied.entries], outcomes: [...plan.outcomes, ...applied.outcomes] };
}
