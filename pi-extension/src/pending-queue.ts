// The batches waiting for the summarizer, and what happens to them: captured at a turn's end (their
// oversized results spilled at once), spilled after a crash left them pending, dropped where the
// agent rewound or shrank them, and flushed: settled at once where no summary is needed, the rest
// asked about in a background request whose answer is applied at a later flush point (or waited
// for), a failed batch going back to waiting. Each problem is reported once. The runtime decides
// when; this keeps the queue.
import type { AgentMessage, AssistantMessage, ControlState, ToolResultMessage } from "@pi-pruner/core";
import { PRUNE_FRONTIER, PRUNE_STATS, activeRewinds, activeShrinks, applySummaries, captureBatch, copyIndex, isMessageEntry, messageKey, planFlush, sessionCallsOf, spillOversized, summarizeJobs, unflushedBatches } from "@pi-pruner/core";
import type { AnyEntry, Batch, FlushResult, FrontierData, JobAnswers, PersistEntry, PruneConfig, PruneIndex, SessionCall, SpillStorage, StatsData, Summarizer, SummarizerUsage, SummaryJob } from "@pi-pruner/core";
import type { OnceReporter } from "./once-reporter.ts";

/** How a flush was started. */
interface StartOptions {
  /** The flush changes only stubs near the end of history: neither it nor its later summaries open an epoch. */
  keepsEpoch?: boolean;
}

/**
 * A background summarizer request: the batches its flush took, the jobs a trial plan asked about,
 * and their answers once it answered. Nothing of the flush changes history before its answers are
 * applied: the flush is planned again then, so history changes once.
 */
interface Flight {
  batches: Batch[];
  jobs: SummaryJob[];
  answers?: JobAnswers;
  /** Settles when the request has answered; never rejects. */
  landed: Promise<void>;
  keepsEpoch: boolean;
}

export class PendingQueue {
  /**
   * Oldest first, those in a background request included: the oldest is where the frontier (and
   * the cache breakpoint placed there) stays until its summary is applied.
   */
  batches: Batch[] = [];
  /** Every tool call of the branch with its result, protected ones too, in order: what may make a pending output stale. */
  calls: SessionCall[] = [];
  private flushing: Promise<FlushResult | undefined> | undefined;
  private readonly reporter: OnceReporter;
  /** Background requests not applied yet, oldest first. */
  private flights: Flight[] = [];
  /** The queued batches a background request is asking about: never sent again meanwhile. */
  private readonly inFlight = new Set<Batch>();
  /** The newest result any flush settled: where the frontier may go once nothing older is outstanding. */
  private settledThrough = -Infinity;

  constructor(reporter: OnceReporter) {
    this.reporter = reporter;
  }

  get callCount(): number {
    return this.batches.reduce((n, b) => n + b.calls.length, 0);
  }

  /** The queued batches no background request is asking about, oldest first: what a flush may take. */
  get waiting(): Batch[] {
    return this.batches.filter((b) => !this.inFlight.has(b));
  }

  /** After a rebuild: the queue as the branch leaves it. Background requests still asking are forgotten: their batches are waiting again. */
  restore(branch: readonly AnyEntry[], index: PruneIndex, config: PruneConfig): void {
    this.flights = [];
    this.inFlight.clear();
    this.settledThrough = index.frontier?.lastAttemptedTimestamp ?? -Infinity;
    this.batches = unflushedBatches(branch, index, config);
    this.calls = sessionCallsOf(branch.filter(isMessageEntry).map((e) => e.message));
  }

  /** A finished tool-using turn: its batch joins the queue, its oversized results spilled at once. Returns the entries to persist. */
  capture(message: AssistantMessage, results: readonly ToolResultMessage[], turnIndex: number, index: PruneIndex, config: PruneConfig, spill: SpillStorage): PersistEntry[] {
    const turn = (this.calls.at(-1)?.turn ?? 0) + 1;
    for (const call of sessionCallsOf([message, ...results])) this.calls.push({ ...call, turn });
    const { batch } = captureBatch(message, results, turnIndex, config);
    if (!batch) return [];
    const { entries, rest } = this.spill(batch, index, config, spill);
    if (rest) this.batches.push(rest);
    return entries;
  }

  /**
   * After a rebuild: results still pending that are large enough to spill (a crash between a spill
   * file and its index entry leaves them so) are spilled now instead of going to the summarizer.
   */
  spillOversized(index: PruneIndex, config: PruneConfig, spill: SpillStorage): PersistEntry[] {
    const entries: PersistEntry[] = [];
    const rest: Batch[] = [];
    for (const batch of this.batches) {
      if (!batch.calls.some((c) => c.resultText.length >= config.spillThreshold)) {
        rest.push(batch);
        continue;
      }
      const spilled = this.spill(batch, index, config, spill);
      entries.push(...spilled.entries);
      if (spilled.rest) rest.push(spilled.rest);
    }
    this.batches = rest;
    return entries;
  }

  /**
   * Calls a rewind hides or a shrink replaces leave the queue: summarizing them would bring back
   * what the agent chose to shed, or pay for output the agent already condensed.
   */
  dropControlled(controls: ControlState): void {
    const rewinds = activeRewinds(controls);
    const shrinks = activeShrinks(controls);
    if (rewinds.length === 0 && shrinks.length === 0) return;
    const gone = new Set<string>();
    for (const r of rewinds) for (const key of r.hidden) gone.add(key);
    for (const s of shrinks) if (s.targetKey) gone.add(s.targetKey);
    const keyOf = (c: { toolCallId: string; resultTimestamp: number }) => messageKey({ role: "toolResult", toolCallId: c.toolCallId, timestamp: c.resultTimestamp } as AgentMessage);
    this.batches = this.batches
      .map((b) => (b.calls.some((c) => gone.has(keyOf(c))) ? { ...b, calls: b.calls.filter((c) => !gone.has(keyOf(c))) } : b))
      .filter((b) => b.calls.length > 0);
    // A batch asked about in the background and changed here is waiting again; the answer about it is dropped.
    for (const b of this.inFlight) if (!this.batches.includes(b)) this.inFlight.delete(b);
  }

  /**
   * Runs the pre-flush pipeline over everything waiting but `keep`, and waits for the summarizer:
   * what background requests are still asking about is waited for and applied first. Concurrent
   * calls share one flush.
   */
  async flush(summarize: Summarizer, index: PruneIndex, config: PruneConfig, keep: readonly Batch[] = [], options: StartOptions = {}): Promise<FlushResult | undefined> {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      try {
        await this.landAll();
        let result = this.applyLanded(index, config);
        result = joinResults(result, this.start(summarize, index, config, keep, options));
        if (this.hasOutstanding()) {
          await this.landAll();
          result = joinResults(result, this.applyLanded(index, config));
        }
        return result;
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  /**
   * Starts a flush of everything waiting but `keep` without waiting for the summarizer. A flush
   * that needs no summary (duplicates, superseded outputs, batches too small) is settled now and
   * returned. Otherwise a trial plan on a copy of the index says what to ask, and one background
   * request asks it; the batches stay queued (the frontier stays below them) and nothing changes
   * until `applyLanded` plans the flush again with the answers, so its stubs and its summaries
   * change history together. Undefined when nothing was settled now.
   */
  start(summarize: Summarizer, index: PruneIndex, config: PruneConfig, keep: readonly Batch[] = [], options: StartOptions = {}): FlushResult | undefined {
    const batches = this.waiting.filter((b) => !keep.includes(b));
    if (!batches.length) return undefined;
    try {
      // Whatever stays queued (kept, or asked about in the background) keeps the frontier below it.
      const planning = { frontierCeiling: ceilingBelow(this.batches.filter((b) => !batches.includes(b))), sessionCalls: this.calls };
      const trial = planFlush(batches, copyIndex(index), config, planning);
      if (trial.jobs.length) {
        this.ask(batches, trial.jobs, summarize, config, options.keepsEpoch === true);
        return undefined;
      }
      const plan = planFlush(batches, index, config, planning);
      if (options.keepsEpoch) markKeepsEpoch(plan.entries);
      this.settledThrough = Math.max(this.settledThrough, plan.settledThrough ?? -Infinity);
      this.batches = this.batches.filter((b) => !batches.includes(b));
      return { entries: plan.entries, outcomes: plan.outcomes, retry: [], usage: { input: 0, output: 0, cost: 0 }, summarizerCalls: 0 };
    } catch (error) {
      this.reporter.report(`flush:${(error as Error).message}`, `pi-pruner: flush failed (${(error as Error).message}); nothing was changed`);
      return undefined;
    }
  }

  /** Whether a background request has answered and waits to be applied. */
  hasLanded(): boolean {
    return this.flights.some((f) => f.answers !== undefined);
  }

  /** Whether a background request is still asking. */
  hasOutstanding(): boolean {
    return this.flights.some((f) => f.answers === undefined);
  }

  /** Whether a background request has been started and its answer not applied yet (answered or not). */
  hasUnapplied(): boolean {
    return this.flights.length > 0;
  }

  /**
   * Settles when every background request started so far has answered, or after `withinMs`:
   * true when they all answered.
   */
  async landAll(withinMs?: number): Promise<boolean> {
    const all = Promise.all(this.flights.map((f) => f.landed)).then(() => true);
    if (withinMs === undefined) return all;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), withinMs)));
    try {
      return await Promise.race([all, bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The answers of the background requests that have answered, applied oldest first: each batch's
   * index entry, summary and frontier; a batch whose summary failed waits again for a later flush
   * (reported once). A batch that left the queue meanwhile (a rewind or shrink took some of its
   * calls) gets nothing: its answer is dropped. Undefined when nothing had answered.
   */
  applyLanded(index: PruneIndex, config: PruneConfig): FlushResult | undefined {
    const landed = this.flights.filter((f) => f.answers !== undefined);
    if (!landed.length) return undefined;
    this.flights = this.flights.filter((f) => f.answers === undefined);
    let result: FlushResult | undefined;
    for (const flight of landed) {
      const answers = flight.answers!;
      // The flush's batches still queued as they were asked about (a rewind or shrink may have taken some).
      const live = flight.batches.filter((b) => this.inFlight.has(b) && this.batches.includes(b));
      for (const b of flight.batches) this.inFlight.delete(b);
      if (!live.length) continue;
      const others = this.batches.filter((b) => !live.includes(b));
      const plan = planFlush(live, index, config, { frontierCeiling: ceilingBelow(others), sessionCalls: this.calls });
      this.settledThrough = Math.max(this.settledThrough, plan.settledThrough ?? -Infinity);
      // Each job the plan makes now takes the answer about the same calls, in the refs it was asked by.
      const asked = new Map(flight.jobs.map((job, i) => [job.from, { job, answer: answers.answers[i]! }]));
      const matched = plan.jobs.map((job) => {
        const was = asked.get(job.from);
        return was && sameCalls(was.job, job) ? { job: { ...job, labels: was.job.labels }, answer: was.answer } : undefined;
      });
      const jobs = matched.flatMap((m) => (m ? [m.job] : []));
      // A job the request did not ask about as it stands now waits for a later flush.
      const unasked = new Set(plan.jobs.filter((_, i) => !matched[i]).map((job) => job.from));
      const applied = joinResults(
        { entries: plan.entries, outcomes: plan.outcomes, retry: [], usage: { input: 0, output: 0, cost: 0 }, summarizerCalls: 0 },
        applySummaries(jobs, { ...answers, answers: matched.flatMap((m) => (m ? [m.answer] : [])) }, index, {
          frontierCeiling: ceilingBelow([...others, ...unasked]),
          settledThrough: this.settledThrough,
        }),
      )!;
      applied.usage = answers.usage;
      applied.summarizerCalls = answers.summarizerCalls;
      const from = new Set(live);
      if (flight.keepsEpoch) markKeepsEpoch(applied.entries);
      for (const job of jobs) {
        if (!applied.retry.includes(job.batch)) this.settledThrough = Math.max(this.settledThrough, ...job.batch.calls.map((c) => c.resultTimestamp));
      }
      // A failed batch, or one asked about as it no longer is, stays queued, waiting for a later flush; the others are done.
      const failed = new Set(jobs.filter((job) => applied.retry.includes(job.batch)).map((job) => job.from));
      this.batches = this.batches.filter((b) => !from.has(b) || failed.has(b) || unasked.has(b));
      for (const o of applied.outcomes) {
        if (o.outcome === "failed") {
          this.reporter.report(`summarizer:${o.error}`, `pi-pruner: summarizer failed (${o.error}); raw outputs stay in context and the batch will be retried`);
        } else if (o.outcome === "skipped-oversized" && !config.quietOversizedSkips) {
          this.reporter.info(`pi-pruner: summary (${o.summaryChars} chars) was not smaller than the outputs (${o.rawChars} chars); kept them raw`);
        }
      }
      if (applied.summarizerCalls > 0 && (applied.usage.input || applied.usage.output || applied.usage.cost)) {
        applied.entries.push(statsEntry(index, applied));
      }
      result = joinResults(result, applied);
    }
    return result;
  }

  /** One background request for `jobs`; it never rejects, and a queue restored meanwhile forgets it. */
  private ask(batches: Batch[], jobs: SummaryJob[], summarize: Summarizer, config: PruneConfig, keepsEpoch: boolean): void {
    for (const batch of batches) this.inFlight.add(batch);
    const flight: Flight = { batches, jobs, keepsEpoch, landed: Promise.resolve() };
    flight.landed = summarizeJobs(jobs, config, summarize).then(
      (answers) => {
        flight.answers = answers;
      },
      (error: unknown) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        flight.answers = { answers: jobs.map(() => failure), usage: { input: 0, output: 0, cost: 0 }, summarizerCalls: 0 };
      },
    );
    this.flights.push(flight);
  }

  /** Spills a batch's oversized results; a spill file that cannot be written is told once and its output stays inline. */
  private spill(batch: Batch, index: PruneIndex, config: PruneConfig, spill: SpillStorage): { entries: PersistEntry[]; rest?: Batch } {
    const spilled = spillOversized(batch, index, config, spill);
    for (const f of spilled.failures) this.reporter.report(`spill:${f.error}`, `pi-pruner: could not write a spill file (${f.error}); the output stays inline`);
    return spilled;
  }
}

/** The session's summarizer spending with `delta` added: kept on the index and returned as the entry that records it. */
export function statsEntry(index: PruneIndex, delta: { usage: SummarizerUsage; summarizerCalls: number; chainsCompressed?: number; rangesSummarized?: number }): PersistEntry {
  const previous = index.stats;
  const stats: StatsData = {
    totalInputTokens: (previous.totalInputTokens ?? 0) + delta.usage.input,
    totalOutputTokens: (previous.totalOutputTokens ?? 0) + delta.usage.output,
    totalCost: (previous.totalCost ?? 0) + delta.usage.cost,
    callCount: (previous.callCount ?? 0) + delta.summarizerCalls,
    chainsCompressed: (previous.chainsCompressed ?? 0) + (delta.chainsCompressed ?? 0),
    rangesSummarized: (previous.rangesSummarized ?? 0) + (delta.rangesSummarized ?? 0),
  };
  index.stats = stats;
  return { kind: "custom", customType: PRUNE_STATS, data: stats };
}

/** Whether two jobs ask about the same calls (the same results, in order). */
function sameCalls(a: SummaryJob, b: SummaryJob): boolean {
  return a.calls.length === b.calls.length && a.calls.every((c, i) => c.toolCallId === b.calls[i]!.toolCallId && c.resultTimestamp === b.calls[i]!.resultTimestamp);
}

/** Just below the oldest result of `batches`: the highest the frontier may go while they are queued. */
function ceilingBelow(batches: readonly Batch[]): number | undefined {
  const oldest = Math.min(...batches.flatMap((b) => b.calls.map((c) => c.resultTimestamp)));
  return Number.isFinite(oldest) ? oldest - 1 : undefined;
}

/** Marks the frontier entries in the file, so a rebuild keeps the epoch where this flush left it. */
function markKeepsEpoch(entries: readonly PersistEntry[]): void {
  for (const e of entries) if (e.kind === "custom" && e.customType === PRUNE_FRONTIER) (e.data as FrontierData).keepsEpoch = true;
}

/** Two flushes' results as one: entries and outcomes in order, spending added up. */
export function joinResults(first: FlushResult | undefined, second: FlushResult | undefined): FlushResult | undefined {
  if (!first || !second) return first ?? second;
  return {
    entries: [...first.entries, ...second.entries],
    outcomes: [...first.outcomes, ...second.outcomes],
    retry: [...first.retry, ...second.retry],
    usage: { input: first.usage.input + second.usage.input, output: first.usage.output + second.usage.output, cost: first.usage.cost + second.usage.cost },
    summarizerCalls: first.summarizerCalls + second.summarizerCalls,
  };
}
