// The pruner's live state inside one Pi session, and what each Pi event does to it.
// Pure decisions live in core; this file keeps state and turns them into Pi entries.
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "@pi-pruner/core";
import type { AnyEntry } from "@pi-pruner/core";
import type { PruneConfig, ConfigWarning } from "@pi-pruner/core";
import { emptyIndex, rebuildIndex, type PruneIndex } from "@pi-pruner/core";
import { captureBatch, flushBatches, spillOversized, type Batch, type FlushResult, type PersistEntry, type SpillIO } from "@pi-pruner/core";
import { renderModelView } from "@pi-pruner/core";
import { messageChars } from "@pi-pruner/core";
import type { Summarizer, SummarizerUsage } from "@pi-pruner/core";
import { compressChains, type ChainCompressionResult } from "@pi-pruner/core";
import { PRUNE_STATS, type StatsData } from "@pi-pruner/core";
import { occurrenceKey, toolCallsOf } from "@pi-pruner/core";

/** Reports each distinct problem once per session, so a broken summarizer cannot flood the screen. */
export class OnceReporter {
  private seen = new Set<string>();
  private readonly sink: (message: string, level: "info" | "warning" | "error") => void;
  constructor(sink: (message: string, level: "info" | "warning" | "error") => void) {
    this.sink = sink;
  }
  report(key: string, message: string, level: "info" | "warning" | "error" = "warning"): void {
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.sink(message, level);
  }
  info(message: string): void {
    this.sink(message, "info");
  }
  reset(): void {
    this.seen.clear();
  }
}

export interface Reclaim {
  rawChars: number;
  sentChars: number;
}

/** What identifies a message's size cheaply: no serialisation, only lengths of its strings. */
interface SizeKey {
  role: string;
  timestamp: number;
  toolCallId: string | undefined;
  blocks: number;
  textLength: number;
}

function sizeKey(message: AgentMessage): SizeKey {
  const content = (message as { content?: unknown }).content;
  let blocks = 0;
  let textLength = 0;
  if (typeof content === "string") textLength = content.length;
  else if (Array.isArray(content)) {
    for (const block of content as { type?: string; text?: string; thinking?: string; id?: string; data?: string }[]) {
      blocks++;
      if (!block) continue;
      textLength += (block.text?.length ?? 0) + (block.thinking?.length ?? 0) + (block.id?.length ?? 0) + (block.data?.length ?? 0);
    }
  }
  return { role: message.role, timestamp: message.timestamp, toolCallId: (message as { toolCallId?: string }).toolCallId, blocks, textLength };
}

function sameKey(a: SizeKey | undefined, b: SizeKey): boolean {
  return !!a && a.role === b.role && a.timestamp === b.timestamp && a.toolCallId === b.toolCallId && a.blocks === b.blocks && a.textLength === b.textLength;
}

/**
 * The status line's size measure without re-serialising the conversation on every request. A
 * message's size (core's `messageChars`, which serialises tool-call arguments) is remembered by
 * position and reused while the message at that position looks the same (role, timestamp, call id,
 * block count, string lengths); Pi hands over a fresh copy each time, so identity cannot be used
 * across requests. Within one request, the rendered array reuses the sizes of the messages the
 * render passed through unchanged (the same objects) and measures only the ones it made.
 */
export class RequestSizes {
  private keys: SizeKey[] = [];
  private chars: number[] = [];

  measure(raw: readonly AgentMessage[], sent: readonly AgentMessage[]): Reclaim {
    const keys = new Array<SizeKey>(raw.length);
    const chars = new Array<number>(raw.length);
    const known = new Map<AgentMessage, number>();
    let rawChars = 0;
    for (let i = 0; i < raw.length; i++) {
      const message = raw[i]!;
      const key = sizeKey(message);
      const size = sameKey(this.keys[i], key) ? this.chars[i]! : messageChars(message);
      keys[i] = key;
      chars[i] = size;
      known.set(message, size);
      rawChars += size;
    }
    this.keys = keys;
    this.chars = chars;
    let sentChars = 0;
    for (const message of sent) sentChars += known.get(message) ?? messageChars(message);
    return { rawChars, sentChars };
  }
}

export type FlushReason = "final-reply" | "command" | "budget" | "budget-delta";

export class PrunerRuntime {
  index: PruneIndex = emptyIndex();
  pending: Batch[] = [];
  reclaim: Reclaim | undefined;
  private readonly sizes = new RequestSizes();
  private previousFraction: number | null = null;
  private flushing: Promise<FlushResult | undefined> | undefined;

  config: PruneConfig;
  readonly reporter: OnceReporter;

  constructor(config: PruneConfig, reporter: OnceReporter) {
    this.config = config;
    this.reporter = reporter;
  }

  applyWarnings(warnings: readonly ConfigWarning[]): void {
    for (const w of warnings) this.reporter.report(`config:${w.key}:${w.message}`, `pi-pruner: ${w.message}`);
  }

  /**
   * Rebuilds everything from the branch: the index from the pruner's entries, and the pending
   * queue from tool results after the frontier that no entry covers yet (so a reload loses nothing).
   */
  rebuild(branch: readonly AnyEntry[]): void {
    const { index, problems } = rebuildIndex(branch);
    this.index = index;
    for (const p of problems) this.reporter.report(`rebuild:${p}`, `pi-pruner: skipped a damaged entry (${p})`);
    this.pending = this.unflushedBatches(branch);
    this.previousFraction = null;
  }

  private unflushedBatches(branch: readonly AnyEntry[]): Batch[] {
    const batches: Batch[] = [];
    let assistant: AssistantMessage | undefined;
    let results: ToolResultMessage[] = [];
    let turn = 0;
    const close = () => {
      if (assistant && results.length) {
        const { batch } = captureBatch(assistant, results, turn, this.config);
        if (batch) {
          const fresh = batch.calls.filter((c) => !this.isCovered(c.toolCallId, c.resultTimestamp));
          if (fresh.length) batches.push({ turnIndex: turn, calls: fresh });
        }
      }
      assistant = undefined;
      results = [];
    };
    for (const entry of branch) {
      if (entry.type !== "message") continue;
      const message = (entry as { message: AgentMessage }).message;
      if (message.role === "assistant") {
        close();
        turn++;
        if (toolCallsOf(message).length) assistant = message;
      } else if (message.role === "toolResult" && assistant) {
        results.push(message);
      } else if (message.role === "user") close();
    }
    close();
    return batches;
  }

  private isCovered(toolCallId: string, resultTimestamp: number): boolean {
    const key = occurrenceKey(toolCallId, resultTimestamp);
    if (this.index.calls.has(key) || this.index.aliases.has(key)) return true;
    const frontier = this.index.frontier?.lastAttemptedTimestamp;
    return typeof frontier === "number" && resultTimestamp <= frontier;
  }

  /** A finished tool-using turn: capture the batch and spill oversized results at once. */
  captureTurn(message: AssistantMessage, results: readonly ToolResultMessage[], turnIndex: number, spill: SpillIO): PersistEntry[] {
    if (!this.config.enabled) return [];
    const { batch } = captureBatch(message, results, turnIndex, this.config);
    if (!batch) return [];
    const spilled = spillOversized(batch, this.index, this.config, spill);
    for (const f of spilled.failures) {
      this.reporter.report(`spill:${f.error}`, `pi-pruner: could not write a spill file (${f.error}); the output stays inline`);
    }
    if (spilled.rest) this.pending.push(spilled.rest);
    return spilled.entries;
  }

  /**
   * After a rebuild: results still pending that are large enough to spill (a crash between a spill
   * file and its index entry leaves them so) are spilled now instead of going to the summarizer.
   */
  spillPending(spill: SpillIO): PersistEntry[] {
    if (!this.config.enabled) return [];
    const entries: PersistEntry[] = [];
    const rest: Batch[] = [];
    for (const batch of this.pending) {
      if (!batch.calls.some((c) => c.resultText.length >= this.config.spillThreshold)) {
        rest.push(batch);
        continue;
      }
      const spilled = spillOversized(batch, this.index, this.config, spill);
      for (const f of spilled.failures) {
        this.reporter.report(`spill:${f.error}`, `pi-pruner: could not write a spill file (${f.error}); the output stays inline`);
      }
      entries.push(...spilled.entries);
      if (spilled.rest) rest.push(spilled.rest);
    }
    this.pending = rest;
    return entries;
  }

  /** The budget triggers: the context share reached autoBudgetThreshold, or jumped by budgetTurnDelta in one turn. */
  budgetTrigger(tokens: number | null | undefined, contextWindow: number | undefined): FlushReason | undefined {
    if (tokens === null || tokens === undefined || !contextWindow) return undefined;
    const fraction = tokens / contextWindow;
    const previous = this.previousFraction;
    this.previousFraction = fraction;
    const { autoBudgetThreshold, budgetTurnDelta } = this.config;
    if (autoBudgetThreshold !== null && fraction >= autoBudgetThreshold) return "budget";
    if (budgetTurnDelta !== null && previous !== null && fraction - previous >= budgetTurnDelta) return "budget-delta";
    return undefined;
  }

  hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** Runs the pre-flush pipeline over everything pending. Concurrent calls share one flush. */
  async flush(summarize: Summarizer): Promise<FlushResult | undefined> {
    if (this.flushing) return this.flushing;
    if (!this.pending.length) return undefined;
    const batches = this.pending;
    this.pending = [];
    this.flushing = (async () => {
      try {
        const result = await flushBatches(batches, this.index, this.config, summarize);
        this.pending = [...result.retry, ...this.pending];
        for (const o of result.outcomes) {
          if (o.outcome === "failed") {
            this.reporter.report(`summarizer:${o.error}`, `pi-pruner: summarizer failed (${o.error}); raw outputs stay in context and the batch will be retried`);
          } else if (o.outcome === "skipped-oversized" && !this.config.quietOversizedSkips) {
            this.reporter.info(`pi-pruner: summary (${o.summaryChars} chars) was not smaller than the outputs (${o.rawChars} chars); kept them raw`);
          }
        }
        if (result.summarizerCalls > 0 && (result.usage.input || result.usage.output || result.usage.cost)) {
          result.entries.push(this.statsEntry(result));
        }
        return result;
      } catch (error) {
        this.pending = [...batches, ...this.pending];
        this.reporter.report(`flush:${(error as Error).message}`, `pi-pruner: flush failed (${(error as Error).message}); nothing was changed`);
        return undefined;
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  private statsEntry(delta: { usage: SummarizerUsage; summarizerCalls: number; chainsCompressed?: number; rangesSummarized?: number }): PersistEntry {
    const previous = this.index.stats;
    const stats: StatsData = {
      totalInputTokens: (previous.totalInputTokens ?? 0) + delta.usage.input,
      totalOutputTokens: (previous.totalOutputTokens ?? 0) + delta.usage.output,
      totalCost: (previous.totalCost ?? 0) + delta.usage.cost,
      callCount: (previous.callCount ?? 0) + delta.summarizerCalls,
      chainsCompressed: (previous.chainsCompressed ?? 0) + (delta.chainsCompressed ?? 0),
      rangesSummarized: (previous.rangesSummarized ?? 0) + (delta.rangesSummarized ?? 0),
    };
    this.index.stats = stats;
    return { kind: "custom", customType: PRUNE_STATS, data: stats };
  }

  /**
   * Compresses the closed chains beyond the rolling window (all of them with `all`), fusing batch
   * summaries where a chain has two or more. `messages` is the context Pi builds for the branch.
   * A failed fusion is reported once and the chain is compressed anyway.
   */
  async compressChains(messages: readonly AgentMessage[], summarize: Summarizer | undefined, options: { all?: boolean } = {}): Promise<ChainCompressionResult | undefined> {
    if (!this.config.enabled || !this.config.chainCompression.enabled) return undefined;
    try {
      const result = await compressChains(messages, this.index, this.config, summarize, options);
      for (const failure of result.fusionFailures) {
        this.reporter.report(`fusion:${failure}`, `pi-pruner: range summary failed (${failure}); the chain was compressed with its batch summaries`);
      }
      if (result.chains.length) {
        result.entries.push(this.statsEntry({ usage: result.usage, summarizerCalls: result.summarizerCalls, chainsCompressed: result.chains.length, rangesSummarized: result.rangesSummarized }));
      }
      return result;
    } catch (error) {
      this.reporter.report(`chains:${(error as Error).message}`, `pi-pruner: chain compression failed (${(error as Error).message}); nothing was compressed`);
      return undefined;
    }
  }

  /** The `context` transform. Fails open: any error gives the messages back untouched. */
  render(messages: AgentMessage[]): AgentMessage[] {
    try {
      const result = renderModelView(messages, this.index, this.config);
      for (const chain of result.stats.unresolvedChains) {
        // A chain Pi's compaction removed whole is simply gone; anything else is worth one note.
        if (chain.absent) continue;
        this.reporter.report(
          `chain:${chain.blockId}@${chain.startUserTimestamp}`,
          `pi-pruner: compressed chain ${chain.blockId} was left as it is (${chain.reason})`,
        );
      }
      if (result.messages !== messages) {
        this.reclaim = this.sizes.measure(messages, result.messages);
      }
      return result.messages;
    } catch (error) {
      this.reporter.report(`render:${(error as Error).message}`, `pi-pruner: could not prune this request (${(error as Error).message}); sent it unchanged`, "error");
      return messages;
    }
  }
}
