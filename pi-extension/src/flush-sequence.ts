// The one flush-then-compress sequence that `turn_end`, the next prompt's start, `/pruner now` and
// `/pruner compact` share: the queue's flush (waited for, or its summaries asked in the background
// and applied at a later flush point), then chain compression, each failure reported once, each
// spend told to Pi and recorded in the session's stats. The runtime decides when and with what;
// this runs it.
import type { AgentMessage, ChainCompressionResult, ControlState, FlushResult, FrontierData, PersistEntry, PruneConfig, PruneIndex, Summarizer, SummarizerUsage } from "@pi-pruner/core";
import { PRUNE_CHAIN, PRUNE_FRONTIER, compressChains, type Batch } from "@pi-pruner/core";
import type { OnceReporter } from "./once-reporter.ts";
import { joinResults, statsEntry, type PendingQueue } from "./pending-queue.ts";
import type { CompactOutcome, FlushNowOutcome } from "./commands.ts";

/** A summarizer spend as Pi's `cost:external` event carries it; `totalCost` is the session's running total. */
export interface SummarizerCost {
  source: "pi-pruner";
  cost: number;
  inputTokens: number;
  outputTokens: number;
  totalCost: number;
}

/** What a flush asks of Pi, each only when needed. */
export interface FlushHost {
  summarizer(): Summarizer;
  /** The messages Pi builds for the current branch (after its own compaction), the agent's rewinds and shrinks applied: what chains are found in. */
  contextMessages(): readonly AgentMessage[];
  /** The branch's self-control markers now. */
  controls(): ControlState;
}

/** Which closed chains the sequence compresses after flushing: those beyond the rolling window, all of them, or none. */
export type CompressScope = "window" | "all" | "none";

export interface FlushAndCompressResult {
  /** Everything to persist, in order: the flush's entries before the compression's. */
  entries: PersistEntry[];
  flushed?: FlushResult;
  compressed?: ChainCompressionResult;
}

/** A command's result: the entries to persist and what it did (commands.ts words it). */
export interface CommandResult<Outcome> {
  entries: PersistEntry[];
  outcome: Outcome;
}

/** The session's index and settings as they are now (both are replaced as the session goes on). */
export interface FlushSession {
  readonly index: PruneIndex;
  readonly config: PruneConfig;
}

export class FlushSequence {
  private readonly queue: PendingQueue;
  private readonly session: FlushSession;
  private readonly reporter: OnceReporter;
  private readonly onCost: ((cost: SummarizerCost) => void) | undefined;
  /** Chains a final reply's flush would have compressed, waiting for the batch summaries still asked in the background. */
  private compressLater: CompressScope = "none";

  constructor(queue: PendingQueue, session: FlushSession, reporter: OnceReporter, onCost?: (cost: SummarizerCost) => void) {
    this.queue = queue;
    this.session = session;
    this.reporter = reporter;
    this.onCost = onCost;
  }

  /**
   * What is waiting (but `keep`) is flushed first, so the chains about to be compressed have their
   * batch summaries, then closed chains are compressed. With `background`, summaries that
   * background requests have brought since the last flush point are applied (unless
   * `holdLanded`: they wait for the next flush point) and the new summary jobs are asked in the
   * background without waiting; chains wait while summaries asked up to their final reply are not
   * applied, and are compressed at the flush point that applies the last of them. Without it,
   * everything in flight is waited for first. The context is asked for
   * only after the flush. A flush already under way (another caller's) is not joined: its
   * entries are that caller's to persist. When something was flushed or compressed (but only
   * stubs near the end, with `keepEpoch`), `epoch()` (the newest message's timestamp) becomes
   * the index's epoch, as a rebuild from the branch would find it.
   */
  async flushAndCompress(
    summarize: Summarizer,
    contextMessages: () => readonly AgentMessage[],
    options: { compress: CompressScope; keep?: readonly Batch[]; epoch?: () => number | undefined; keepEpoch?: boolean; background?: boolean; holdLanded?: boolean },
  ): Promise<FlushAndCompressResult> {
    const result: FlushAndCompressResult = { entries: [] };
    const { index, config } = this.session;
    const started = { keepsEpoch: options.keepEpoch === true };
    // Whether summaries asked before this flush are still not applied: chains closed earlier wait for them, not for this flush's.
    let askedBefore = false;
    if (options.background) {
      const landed = options.holdLanded ? undefined : this.queue.applyLanded(index, config);
      askedBefore = this.queue.hasUnapplied();
      result.flushed = joinResults(landed, this.queue.start(summarize, index, config, options.keep, started));
    } else if (this.queue.batches.length > 0) {
      result.flushed = await this.queue.flush(summarize, index, config, options.keep, started);
    }
    if (result.flushed) result.entries.push(...result.flushed.entries);
    this.emitCost(result.flushed);
    let scope = options.compress;
    if (scope !== "none" && this.queue.hasUnapplied()) {
      this.compressLater = widerScope(this.compressLater, scope);
      scope = "none";
    } else if (this.compressLater !== "none" && !askedBefore) {
      scope = widerScope(scope, this.compressLater);
      this.compressLater = "none";
    }
    if (scope !== "none") {
      result.compressed = await this.compressChains(contextMessages(), summarize, { all: scope === "all" });
      if (result.compressed) result.entries.push(...result.compressed.entries);
      this.emitCost(result.compressed);
    }
    const opensEpoch = result.entries.some((e) => e.kind === "custom" && (e.customType === PRUNE_CHAIN || (e.customType === PRUNE_FRONTIER && (e.data as FrontierData).keepsEpoch !== true)));
    const epoch = opensEpoch ? options.epoch?.() : undefined;
    if (epoch !== undefined) this.session.index.epoch = epoch;
    return result;
  }

  /**
   * At a flush point that flushes nothing new (a turn's end the policy lets pass, the next
   * prompt's start): the summaries background requests have brought since the last one, and the
   * chains that waited for them. Nothing when no request has answered.
   */
  async applyLanded(summarize: () => Summarizer, contextMessages: () => readonly AgentMessage[], epoch: () => number | undefined): Promise<PersistEntry[]> {
    if (!this.queue.hasLanded()) return [];
    const done = await this.flushAndCompress(summarize(), contextMessages, { compress: "none", keep: this.queue.batches, epoch, background: true });
    return done.entries;
  }

  /** `/pruner now`: summarizes every pending batch. */
  async flushCommand(host: FlushHost): Promise<CommandResult<FlushNowOutcome>> {
    this.queue.dropControlled(host.controls());
    if (this.queue.batches.length === 0) return { entries: [], outcome: { kind: "nothing-pending" } };
    const { flushed } = await this.flushAndCompress(host.summarizer(), () => [], { compress: "none", epoch: () => newestTimestamp(host.contextMessages(), true) });
    if (!flushed) return { entries: [], outcome: { kind: "not-run" } };
    return { entries: flushed.entries, outcome: { kind: "flushed", flushed } };
  }

  /** `/pruner compact`: summarizes what is pending, then compresses every closed chain not compressed yet. */
  async compactCommand(host: FlushHost): Promise<CommandResult<CompactOutcome>> {
    const { config } = this.session;
    if (!config.enabled) return { entries: [], outcome: { kind: "pruning-off" } };
    this.queue.dropControlled(host.controls());
    if (!config.chainCompression.enabled) return { entries: [], outcome: { kind: "compression-off" } };
    const { entries, compressed } = await this.flushAndCompress(host.summarizer(), () => host.contextMessages(), {
      compress: "all",
      epoch: () => newestTimestamp(host.contextMessages(), true),
    });
    return { entries, outcome: { kind: "ran", compressed } };
  }

  /**
   * Compresses the closed chains beyond the rolling window (all of them with `all`), fusing batch
   * summaries where a chain has two or more. `messages` is the context Pi builds for the branch.
   * A failed fusion is reported once and the chain is compressed anyway.
   */
  private async compressChains(messages: readonly AgentMessage[], summarize: Summarizer | undefined, options: { all?: boolean }): Promise<ChainCompressionResult | undefined> {
    const { index, config } = this.session;
    if (!config.enabled || !config.chainCompression.enabled) return undefined;
    try {
      const result = await compressChains(messages, index, config, summarize, options);
      for (const failure of result.fusionFailures) {
        this.reporter.report(`fusion:${failure}`, `pi-pruner: range summary failed (${failure}); the chain was compressed with its batch summaries`);
      }
      if (result.chains.length) {
        result.entries.push(statsEntry(index, { usage: result.usage, summarizerCalls: result.summarizerCalls, chainsCompressed: result.chains.length, rangesSummarized: result.rangesSummarized }));
      }
      return result;
    } catch (error) {
      this.reporter.report(`chains:${(error as Error).message}`, `pi-pruner: chain compression failed (${(error as Error).message}); nothing was compressed`);
      return undefined;
    }
  }

  private emitCost(result: { usage: SummarizerUsage } | undefined): void {
    if (!this.onCost || !result || !(result.usage.cost || result.usage.input || result.usage.output)) return;
    this.onCost({
      source: "pi-pruner",
      cost: result.usage.cost,
      inputTokens: result.usage.input,
      outputTokens: result.usage.output,
      totalCost: this.session.index.stats.totalCost ?? result.usage.cost,
    });
  }
}

/**
 * The newest message's timestamp. Over a branch's context (`fromContext`), only messages that
 * come from message entries count, as in the index's rebuild: the pruner's summaries and Pi's
 * summaries come from other entries.
 */
export function newestTimestamp(messages: readonly AgentMessage[], fromContext: boolean): number | undefined {
  let newest: number | undefined;
  for (const m of messages) {
    if (fromContext && (m.role === "custom" || m.role === "branchSummary" || m.role === "compactionSummary")) continue;
    if (typeof m.timestamp === "number" && (newest === undefined || m.timestamp > newest)) newest = m.timestamp;
  }
  return newest;
}

/** The wider of two compression scopes: all closed chains over those beyond the window over none. */
function widerScope(a: CompressScope, b: CompressScope): CompressScope {
  return a === "all" || b === "all" ? "all" : a === "window" || b === "window" ? "window" : "none";
}
