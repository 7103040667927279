// The batches waiting for the summarizer, and what happens to them: captured at a turn's end (their
// oversized results spilled at once), spilled after a crash left them pending, dropped where the
// agent rewound or shrank them, and flushed, one flush at a time, a failed batch going back on the
// queue. Each problem is reported once. The runtime decides when; this keeps the queue.
import type { AgentMessage, AssistantMessage, ControlState, ToolResultMessage } from "@pi-pruner/core";
import { PRUNE_STATS, activeRewinds, activeShrinks, captureBatch, flushBatches, isMessageEntry, messageKey, sessionCallsOf, spillOversized, unflushedBatches } from "@pi-pruner/core";
import type { AnyEntry, Batch, FlushResult, PersistEntry, PruneConfig, PruneIndex, SessionCall, SpillStorage, StatsData, Summarizer, SummarizerUsage } from "@pi-pruner/core";
import type { OnceReporter } from "./once-reporter.ts";

export class PendingQueue {
  /** Oldest first. */
  batches: Batch[] = [];
  /** Every tool call of the branch with its result, protected ones too, in order: what may make a pending output stale. */
  calls: SessionCall[] = [];
  private flushing: Promise<FlushResult | undefined> | undefined;
  private readonly reporter: OnceReporter;

  constructor(reporter: OnceReporter) {
    this.reporter = reporter;
  }

  get callCount(): number {
    return this.batches.reduce((n, b) => n + b.calls.length, 0);
  }

  /** After a rebuild: the queue as the branch leaves it. */
  restore(branch: readonly AnyEntry[], index: PruneIndex, config: PruneConfig): void {
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
  }

  /** Runs the pre-flush pipeline over everything queued but `keep`. Concurrent calls share one flush. */
  async flush(summarize: Summarizer, index: PruneIndex, config: PruneConfig, keep: readonly Batch[] = []): Promise<FlushResult | undefined> {
    if (this.flushing) return this.flushing;
    const batches = this.batches.filter((b) => !keep.includes(b));
    if (!batches.length) return undefined;
    this.batches = this.batches.filter((b) => keep.includes(b));
    this.flushing = (async () => {
      try {
        // Batches left pending that are older than what is flushed keep the frontier below them.
        const flushedFrom = Math.min(...batches.flatMap((b) => b.calls.map((c) => c.resultTimestamp)));
        const older = this.batches.flatMap((b) => b.calls.map((c) => c.resultTimestamp)).filter((t) => t < flushedFrom);
        const result = await flushBatches(batches, index, config, summarize, { frontierCeiling: older.length ? Math.min(...older) - 1 : undefined, sessionCalls: this.calls });
        this.batches = [...result.retry, ...this.batches];
        for (const o of result.outcomes) {
          if (o.outcome === "failed") {
            this.reporter.report(`summarizer:${o.error}`, `pi-pruner: summarizer failed (${o.error}); raw outputs stay in context and the batch will be retried`);
          } else if (o.outcome === "skipped-oversized" && !config.quietOversizedSkips) {
            this.reporter.info(`pi-pruner: summary (${o.summaryChars} chars) was not smaller than the outputs (${o.rawChars} chars); kept them raw`);
          }
        }
        if (result.summarizerCalls > 0 && (result.usage.input || result.usage.output || result.usage.cost)) {
          result.entries.push(statsEntry(index, result));
        }
        return result;
      } catch (error) {
        this.batches = [...batches, ...this.batches];
        this.reporter.report(`flush:${(error as Error).message}`, `pi-pruner: flush failed (${(error as Error).message}); nothing was changed`);
        return undefined;
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
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
