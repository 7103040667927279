// The pruner's live state inside one Pi session, and what each Pi event does to it: when a turn's
// end captures, flushes and compresses, and the one flush-then-compress sequence that `turn_end`,
// `/pruner now` and `/pruner compact` share. Pure decisions live in core; this file keeps state
// and turns them into Pi entries.
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "@pi-pruner/core";
import type { AnyEntry } from "@pi-pruner/core";
import type { PruneConfig, ConfigWarning } from "@pi-pruner/core";
import { emptyIndex, rebuildIndex, type PruneIndex } from "@pi-pruner/core";
import { captureBatch, flushBatches, spillOversized, type Batch, type FlushResult, type PersistEntry } from "@pi-pruner/core";
import { fileSpillStorage, type SpillStorage } from "@pi-pruner/core";
import { renderModelView } from "@pi-pruner/core";
import type { Summarizer, SummarizerUsage } from "@pi-pruner/core";
import { compressChains, estimateChainCompression, type ChainCompressionResult } from "@pi-pruner/core";
import { PRUNE_STATS, type StatsData } from "@pi-pruner/core";
import { occurrenceKey, toolCallsOf } from "@pi-pruner/core";
import { PRUNE_CHAIN, PRUNE_FRONTIER, buildBatchRequest, estimateTokens, summarizedStub, type FrontierData, type IndexedCall } from "@pi-pruner/core";
import { SessionBill, blockCount, cacheRulesFor, rewriteSpan, type BillTotals, type RewriteSpan, type CacheRules } from "@pi-pruner/core";
import { ControlsReader, EMPTY_CONTROLS, activeRewinds, activeShrinks, messageKey, type ControlState } from "@pi-pruner/core";
import { decideFlush, requestsAhead, type FlushDecision, type FlushMoment, type PendingEstimate, type RequestHistory } from "@pi-pruner/core";
import { OnceReporter } from "./once-reporter.ts";
import { RequestSizes, type Reclaim } from "./request-sizes.ts";
import { controlChangeIn } from "./branch-context.ts";

export type FlushReason = "final-reply" | "command" | "budget" | "budget-delta" | "pays-back" | "window-cap";

/** A summarizer spend as Pi's `cost:external` event carries it; `totalCost` is the session's running total. */
export interface SummarizerCost {
  source: "pi-pruner";
  cost: number;
  inputTokens: number;
  outputTokens: number;
  totalCost: number;
}

export interface RuntimeOptions {
  /** Told of every summarizer spend, for extensions that total a session's cost. */
  onCost?: (cost: SummarizerCost) => void;
}

/** What `turn_end` hands over, narrowed to what the policy reads. */
export interface TurnEnd {
  message: AgentMessage;
  toolResults: readonly ToolResultMessage[];
  turnIndex: number;
  /** "completed" when the agent run ended normally (not aborted, no error). */
  outcome: string;
}

/** What the runtime asks of Pi while flushing; each is called only when needed. */
export interface RuntimeHost {
  contextUsage(): { tokens: number | null; contextWindow: number } | undefined;
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

/** A command's outcome: the entries to persist and the line to show. */
export interface CommandOutcome {
  entries: PersistEntry[];
  message: string;
}

export class PrunerRuntime {
  index: PruneIndex = emptyIndex();
  pending: Batch[] = [];
  reclaim: Reclaim | undefined;
  /** Characters of what the last request sent, when the render changed it (else Pi's own count is right). */
  sentChars: number | undefined;
  /** Where this session's oversized outputs go; a session without a file on disk has none to write to. */
  spill: SpillStorage = fileSpillStorage(undefined, undefined);
  private readonly sizes = new RequestSizes();
  private previousFraction: number | null = null;
  private flushing: Promise<FlushResult | undefined> | undefined;
  /** The provider's cache rules, from the session's model: what the policy and the money estimate price by. */
  rules: CacheRules = "anthropic";
  /** Every request of the session billed with and without pruning. */
  bill = new SessionBill();
  private billing: ReturnType<typeof setTimeout> | undefined;
  /** Requests so far (one per `context` event) by task: the policy's estimate of the requests ahead. */
  history: RequestHistory = { inCurrentTask: 0, completedTasks: 0, inCompletedTasks: 0 };
  /** The policy's latest decision, for /pruner status. */
  lastDecision: (FlushDecision & { moment: FlushMoment }) | undefined;
  /** What the last request sent: where a flush's first change is looked for. */
  private lastSent: readonly AgentMessage[] = [];
  /** The self-control markers that last request was rendered with. */
  private sentControls: ControlState = EMPTY_CONTROLS;
  /** Reads the branch's self-control markers, again only when they change. */
  readonly controls = new ControlsReader();
  private readonly summarizerInput = new WeakMap<Batch, number>();

  config: PruneConfig;
  readonly reporter: OnceReporter;
  private readonly onCost: ((cost: SummarizerCost) => void) | undefined;

  constructor(config: PruneConfig, reporter: OnceReporter, options: RuntimeOptions = {}) {
    this.config = config;
    this.reporter = reporter;
    this.onCost = options.onCost;
  }

  applyWarnings(warnings: readonly ConfigWarning[]): void {
    for (const w of warnings) this.reporter.report(`config:${w.key}:${w.message}`, `pi-pruner: ${w.message}`);
  }

  /**
   * A session opened (start, reload, switch): rebuild from its branch with its spill storage, then
   * spill what a crash left pending. Returns the entries to persist.
   */
  startSession(branch: readonly AnyEntry[], spill: SpillStorage): PersistEntry[] {
    this.bill = new SessionBill();
    this.bill.useRules(this.rules);
    this.rebuild(branch, spill);
    try {
      return this.spillPending();
    } catch (error) {
      this.reporter.report(`respill:${(error as Error).message}`, `pi-pruner: ${(error as Error).message}`, "error");
      return [];
    }
  }

  /**
   * Rebuilds everything from the branch: the index from the pruner's entries, and the pending
   * queue from tool results after the frontier that no entry covers yet (so a reload loses nothing).
   */
  rebuild(branch: readonly AnyEntry[], spill?: SpillStorage): void {
    if (spill) this.spill = spill;
    const { index, problems } = rebuildIndex(branch);
    this.index = index;
    for (const p of problems) this.reporter.report(`rebuild:${p}`, `pi-pruner: skipped a damaged entry (${p})`);
    this.pending = this.unflushedBatches(branch);
    this.history = requestHistoryOf(branch);
    this.lastSent = [];
    this.lastDecision = undefined;
    this.previousFraction = null;
    this.reclaim = undefined;
    this.sentChars = undefined;
  }

  /** The session's model (Pi's `api` string): an unknown or absent one is priced by the Anthropic rules. */
  useModel(api: string | undefined): void {
    this.rules = cacheRulesFor(api);
    this.bill.useRules(this.rules);
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
  captureTurn(message: AssistantMessage, results: readonly ToolResultMessage[], turnIndex: number): PersistEntry[] {
    if (!this.config.enabled) return [];
    const { batch } = captureBatch(message, results, turnIndex, this.config);
    if (!batch) return [];
    const spilled = spillOversized(batch, this.index, this.config, this.spill);
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
  spillPending(): PersistEntry[] {
    if (!this.config.enabled) return [];
    const entries: PersistEntry[] = [];
    const rest: Batch[] = [];
    for (const batch of this.pending) {
      if (!batch.calls.some((c) => c.resultText.length >= this.config.spillThreshold)) {
        rest.push(batch);
        continue;
      }
      const spilled = spillOversized(batch, this.index, this.config, this.spill);
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

  pendingCallCount(): number {
    return this.pending.reduce((n, b) => n + b.calls.length, 0);
  }

  /**
   * The `turn_end` policy. A tool-using turn is captured (oversized results spilled at once). With
   * `cacheAware` (the default) a flush happens, at any turn's end, when the saving pays for
   * rewriting the provider's cached prefix, or when the window nears full; the batch the model
   * has not seen yet waits for a later flush. Without it, a final reply flushes. A budget trigger
   * flushes early either way. A flush on a final reply (or a cache-aware one) then compresses
   * the closed chains beyond the window; `pruneOn: "on-demand"` leaves all this to commands.
   * Returns the entries to persist.
   */
  async turnEnd(turn: TurnEnd, host: RuntimeHost): Promise<PersistEntry[]> {
    try {
      if (turn.message.role !== "assistant") return [];
      const finalReply = turn.toolResults.length === 0;
      if (finalReply) this.completeTask();
      if (!this.config.enabled) return [];
      const entries: PersistEntry[] = [];
      const automatic = this.config.pruneOn === "agent-message";
      const controls = host.controls();
      let reason: FlushReason | undefined;
      let hold: Batch | undefined;
      let keep: readonly Batch[] = [];
      if (!finalReply) {
        const before = this.pending.length;
        entries.push(...this.captureTurn(turn.message, turn.toolResults, turn.turnIndex));
        this.dropControlled(controls);
        // The batch just captured reaches the model only with the next request.
        hold = this.pending.length > before ? this.pending[this.pending.length - 1] : undefined;
        keep = hold ? [hold] : [];
        const usage = host.contextUsage();
        reason = this.budgetTrigger(usage?.tokens, usage?.contextWindow);
        if (reason) keep = [];
        else if (automatic && this.config.cacheAware) {
          const choice = this.decide("mid-task", usage, hold, controls, turnBlocks([turn.message, ...turn.toolResults]));
          if (choice.decision.flush) {
            reason = choice.decision.reason === "window-cap" ? "window-cap" : "pays-back";
            keep = choice.keep;
          }
        }
      } else if (turn.outcome === "completed" && automatic) {
        this.dropControlled(controls);
        // The next request adds the final reply and the person's next prompt.
        if (!this.config.cacheAware || this.decide("final-reply", host.contextUsage(), undefined, controls, turnBlocks([turn.message]) + 1).decision.flush) reason = "final-reply";
      }
      if (!reason) return entries;
      // Pi has already appended a final reply to the branch, so the newest chain reads as closed;
      // mid-task the open chain is not closed and is left alone. A budget flush compresses nothing.
      // A flush that pays back mid-task changes only the stubs of results near the end of history:
      // it opens no epoch and compresses nothing, so what it rewrites is what the decision priced.
      const stubsOnly = reason === "pays-back" && !finalReply;
      const compress: CompressScope = reason === "budget" || reason === "budget-delta" || stubsOnly ? "none" : "window";
      const epoch = () => newestTimestamp([turn.message, ...turn.toolResults], false);
      const done = await this.flushAndCompress(host.summarizer(), () => host.contextMessages(), { compress, keep, epoch, keepEpoch: stubsOnly });
      entries.push(...done.entries);
      return entries;
    } catch (error) {
      this.reporter.report(`turn_end:${(error as Error).message}`, `pi-pruner: ${(error as Error).message}`, "error");
      return [];
    }
  }

  /** The final reply ends a task: its requests join the finished tasks'. */
  private completeTask(): void {
    const h = this.history;
    if (h.inCurrentTask === 0) return;
    this.history = { inCurrentTask: 0, completedTasks: h.completedTasks + 1, inCompletedTasks: h.inCompletedTasks + h.inCurrentTask };
  }

  /**
   * Asks the cache-aware policy whether flushing what is pending (all but `hold`) pays back now.
   * Mid-task, when flushing everything over the rest of the task does not, a flush of the newest
   * batches may: what they remove stays out of every later request, so it counts over the rest of
   * the session, and recent stubs change history near its end, which the provider's cache keeps
   * most of. Returns the decision taken and the batches a flush leaves pending.
   */
  private decide(moment: FlushMoment, usage: { tokens: number | null; contextWindow: number } | undefined, hold: Batch | undefined, controls: ControlState, nextBlocks: number): { decision: FlushDecision; keep: Batch[] } {
    const held = hold ? [hold] : [];
    const candidates = this.pending.filter((b) => b !== hold);
    // A rewind, shrink or cancel since the last request rewrites history from where it applies:
    // a flush whose change lies after that point rewrites nothing more.
    const controlChange = controlChangeIn(this.lastSent, this.sentControls, controls);
    // A final reply's flush also compresses the closed chains that left the rolling window: what
    // that removes counts with the flush, and its first change may come earlier.
    const chains = moment === "final-reply" ? estimateChainCompression(this.lastSent, this.index, this.config) : undefined;
    // Where each candidate's first result sits in the last request, found in one pass.
    const positions = this.positionsInLastSent(candidates);
    const evaluate = (batches: readonly Batch[], requestsAhead?: number) => {
      const pending = this.estimatePending(batches);
      let first = controlChange;
      for (const b of batches) first = Math.min(first, positions.get(b) ?? this.lastSent.length);
      if (chains && chains.removedTokens > 0) {
        pending.rawTokens += chains.removedTokens;
        if (this.config.chainCompression.fuseRangeSummary) {
          pending.summarizerInputTokens += chains.summaryTokens;
          pending.summarizerOutputTokens += chains.summaryTokens / 2;
        }
        first = Math.min(first, chains.firstChange);
      }
      // Each batch summarized adds its summary message after the turn: blocks the provider's lookback must cross too.
      const summaries = batches.filter((b) => b.calls.reduce((n, c) => n + c.resultText.length, 0) >= this.config.minBatchChars).length;
      return decideFlush({ rules: this.rules, moment, pending, span: this.rewriteSpanOf(first, nextBlocks + summaries), history: this.history, context: usage, requestsAhead });
    };
    let choice = { decision: evaluate(candidates), keep: held };
    if (moment === "mid-task" && !choice.decision.flush) {
      const restOfSession = requestsAhead(this.history, "final-reply");
      let best = 0;
      for (let k = 1; k <= candidates.length && k <= MAX_TAIL_BATCHES; k++) {
        const newest = candidates.slice(-k);
        const decision = evaluate(newest, restOfSession);
        const net = decision.saving - decision.cost;
        if (decision.flush && net > best) {
          best = net;
          choice = { decision, keep: [...candidates.slice(0, -k), ...held] };
        }
      }
    }
    this.lastDecision = { ...choice.decision, moment };
    return choice;
  }

  /**
   * What a change from message `first` of the last request on would make the next request write
   * again: the meter that bills the session knows which of its prefixes are cached; if it cannot
   * tell, the estimate from the messages' sizes and blocks.
   */
  private rewriteSpanOf(first: number, nextBlocks: number): RewriteSpan {
    if (first >= this.lastSent.length) return rewriteSpan(this.lastSent, first, nextBlocks);
    try {
      const after = this.bill.readAfterChange(this.lastSent, first, nextBlocks);
      const rewritten = Math.max(0, after.totalTokens - after.readTokens);
      return { tokensFromFirstChange: rewritten, blocksFromFirstChange: 0, messageTokens: rewritten };
    } catch {
      return rewriteSpan(this.lastSent, first, nextBlocks);
    }
  }

  /**
   * Calls a rewind hides or a shrink replaces leave the pending batches: summarizing them would
   * bring back what the agent chose to shed, or pay for output the agent already condensed.
   */
  dropControlled(controls: ControlState): void {
    const rewinds = activeRewinds(controls);
    const shrinks = activeShrinks(controls);
    if (rewinds.length === 0 && shrinks.length === 0) return;
    const gone = new Set<string>();
    for (const r of rewinds) for (const key of r.hidden) gone.add(key);
    for (const s of shrinks) if (s.targetKey) gone.add(s.targetKey);
    const keyOf = (c: { toolCallId: string; resultTimestamp: number }) => messageKey({ role: "toolResult", toolCallId: c.toolCallId, timestamp: c.resultTimestamp } as AgentMessage);
    this.pending = this.pending
      .map((b) => (b.calls.some((c) => gone.has(keyOf(c))) ? { ...b, calls: b.calls.filter((c) => !gone.has(keyOf(c))) } : b))
      .filter((b) => b.calls.length > 0);
  }

  /** What flushing `batches` would replace and what its summarizer calls would cost, in estimated tokens. */
  private estimatePending(batches: readonly Batch[]): PendingEstimate {
    const perCall = this.summaryTokensPerCall();
    const estimate: PendingEstimate = { rawTokens: 0, replacementTokens: 0, summarizerInputTokens: 0, summarizerOutputTokens: 0 };
    for (const batch of batches) {
      const chars = batch.calls.reduce((n, c) => n + c.resultText.length, 0);
      // A batch below minBatchChars gets no summarizer call and stays raw.
      if (chars < this.config.minBatchChars) continue;
      estimate.rawTokens += estimateTokens(chars);
      const summary = batch.calls.length * perCall;
      for (const c of batch.calls) estimate.replacementTokens += estimateTokens(summarizedStub({ record: { toolCallId: c.toolCallId, toolName: c.toolName }, key: "", shortRef: `t${this.index.lastRefNumber + 1}` } as IndexedCall).length);
      estimate.replacementTokens += summary;
      estimate.summarizerInputTokens += this.summarizerInputTokens(batch);
      estimate.summarizerOutputTokens += summary;
    }
    return estimate;
  }

  /** The summarizer's input for one batch, as the flush would build it (kept per batch: outputs are long). */
  private summarizerInputTokens(batch: Batch): number {
    let tokens = this.summarizerInput.get(batch);
    if (tokens === undefined) {
      const request = buildBatchRequest(
        batch.calls.map((c, i) => ({ shortRef: `t${i + 1}`, toolName: c.toolName, args: c.args, resultText: c.resultText, isError: c.isError })),
        this.config.summarizerInputChars,
      );
      tokens = estimateTokens(request.systemPrompt.length + request.prompt.length);
      this.summarizerInput.set(batch, tokens);
    }
    return tokens;
  }

  /** Summary tokens per pruned call so far in the session; a short bullet each before the first summary. */
  private summaryTokensPerCall(): number {
    let chars = 0;
    let refs = 0;
    for (const s of this.index.summaries) {
      chars += s.text.length;
      refs += s.refs.length;
    }
    return refs > 0 ? estimateTokens(chars / refs) : DEFAULT_SUMMARY_TOKENS_PER_CALL;
  }

  /** Where in the last request each batch begins: the position of the first of its results it sent (a batch not sent yet has none). */
  private positionsInLastSent(batches: readonly Batch[]): Map<Batch, number> {
    const batchOf = new Map<string, Batch>();
    for (const batch of batches) for (const c of batch.calls) batchOf.set(occurrenceKey(c.toolCallId, c.resultTimestamp), batch);
    const positions = new Map<Batch, number>();
    const sent = this.lastSent;
    for (let i = 0; i < sent.length && positions.size < batches.length; i++) {
      const m = sent[i]!;
      if (m.role !== "toolResult") continue;
      const batch = batchOf.get(occurrenceKey(m.toolCallId, m.timestamp));
      if (batch && !positions.has(batch)) positions.set(batch, i);
    }
    return positions;
  }

  /**
   * The one flush-then-compress sequence: what is pending (but `keep`) is summarized first, so the
   * chains about to be compressed have their batch summaries, then closed chains are compressed.
   * The context is asked for only after the flush. A flush already under way (another caller's)
   * is not joined: its entries are that caller's to persist. When something was flushed or
   * compressed, `epoch()` (the newest message's timestamp) becomes the index's epoch, as a rebuild
   * from the branch would find it.
   */
  async flushAndCompress(
    summarize: Summarizer,
    contextMessages: () => readonly AgentMessage[],
    options: { compress: CompressScope; keep?: readonly Batch[]; epoch?: () => number | undefined; keepEpoch?: boolean },
  ): Promise<FlushAndCompressResult> {
    const result: FlushAndCompressResult = { entries: [] };
    if (this.hasPending()) {
      result.flushed = await this.flush(summarize, options.keep);
      if (result.flushed) {
        // Marked in the file, so a rebuild keeps the epoch where this flush left it.
        if (options.keepEpoch) for (const e of result.flushed.entries) if (e.kind === "custom" && e.customType === PRUNE_FRONTIER) (e.data as FrontierData).keepsEpoch = true;
        result.entries.push(...result.flushed.entries);
      }
      this.emitCost(result.flushed);
    }
    if (options.compress !== "none") {
      result.compressed = await this.compressChains(contextMessages(), summarize, { all: options.compress === "all" });
      if (result.compressed) result.entries.push(...result.compressed.entries);
      this.emitCost(result.compressed);
    }
    const opensEpoch = !options.keepEpoch && result.entries.some((e) => e.kind === "custom" && (e.customType === PRUNE_FRONTIER || e.customType === PRUNE_CHAIN));
    const epoch = opensEpoch ? options.epoch?.() : undefined;
    if (epoch !== undefined) this.index.epoch = epoch;
    return result;
  }

  /** `/pruner now`: summarizes every pending batch. */
  async flushCommand(host: Pick<RuntimeHost, "summarizer" | "contextMessages" | "controls">): Promise<CommandOutcome> {
    this.dropControlled(host.controls());
    if (!this.hasPending()) return { entries: [], message: "pi-pruner: nothing pending to summarize" };
    const { flushed } = await this.flushAndCompress(host.summarizer(), () => [], { compress: "none", epoch: () => newestTimestamp(host.contextMessages(), true) });
    if (!flushed) return { entries: [], message: "pi-pruner: flush did not run" };
    const counts = flushed.outcomes.map((o) => `${o.outcome}${o.refs.length ? ` ${o.refs.join(",")}` : ""}`);
    return { entries: flushed.entries, message: `pi-pruner: flushed ${flushed.outcomes.length} batch(es): ${counts.join("; ") || "nothing new"}` };
  }

  /** `/pruner compact`: summarizes what is pending, then compresses every closed chain not compressed yet. */
  async compactCommand(host: Pick<RuntimeHost, "summarizer" | "contextMessages" | "controls">): Promise<CommandOutcome> {
    if (!this.config.enabled) return { entries: [], message: "pi-pruner is off (/pruner on)" };
    this.dropControlled(host.controls());
    if (!this.config.chainCompression.enabled) return { entries: [], message: "pi-pruner: chain compression is off (chainCompression.enabled)" };
    const { entries, compressed } = await this.flushAndCompress(host.summarizer(), () => host.contextMessages(), {
      compress: "all",
      epoch: () => newestTimestamp(host.contextMessages(), true),
    });
    if (!compressed?.chains.length) return { entries, message: "pi-pruner: no closed chain left to compress" };
    const fused = compressed.rangesSummarized ? `, ${compressed.rangesSummarized} with a fused range summary` : "";
    return { entries, message: `pi-pruner: compressed ${compressed.chains.length} chain(s): ${compressed.chains.map((c) => c.blockId).join(", ")}${fused}` };
  }

  private emitCost(result: { usage: SummarizerUsage } | undefined): void {
    if (!this.onCost || !result || !(result.usage.cost || result.usage.input || result.usage.output)) return;
    this.onCost({
      source: "pi-pruner",
      cost: result.usage.cost,
      inputTokens: result.usage.input,
      outputTokens: result.usage.output,
      totalCost: this.index.stats.totalCost ?? result.usage.cost,
    });
  }

  /** Runs the pre-flush pipeline over everything pending but `keep`. Concurrent calls share one flush. */
  async flush(summarize: Summarizer, keep: readonly Batch[] = []): Promise<FlushResult | undefined> {
    if (this.flushing) return this.flushing;
    const batches = this.pending.filter((b) => !keep.includes(b));
    if (!batches.length) return undefined;
    this.pending = this.pending.filter((b) => keep.includes(b));
    this.flushing = (async () => {
      try {
        // Batches left pending that are older than what is flushed keep the frontier below them.
        const flushedFrom = Math.min(...batches.flatMap((b) => b.calls.map((c) => c.resultTimestamp)));
        const older = this.pending.flatMap((b) => b.calls.map((c) => c.resultTimestamp)).filter((t) => t < flushedFrom);
        const result = await flushBatches(batches, this.index, this.config, summarize, older.length ? Math.min(...older) - 1 : undefined);
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

  /** Runs `work`; on an error reports it once under `what` and gives `fallback` back. */
  failOpen<T>(what: string, work: () => T, fallback: T): T {
    try {
      return work();
    } catch (error) {
      this.reporter.report(`${what}:${(error as Error).message}`, `pi-pruner: ${what} failed (${(error as Error).message}); left the request as it was`, "error");
      return fallback;
    }
  }

  /** Bills the requests not billed yet and gives the session's totals (the bill is fail-open too). */
  settleBill(): BillTotals | undefined {
    if (this.billing) clearTimeout(this.billing);
    this.billing = undefined;
    try {
      return this.bill.settle();
    } catch (error) {
      this.reporter.report(`bill:${(error as Error).message}`, `pi-pruner: could not estimate the bill (${(error as Error).message})`);
      return undefined;
    }
  }

  /** The `context` transform, with the branch's self-control markers. Fails open: any error gives the messages back untouched. */
  render(messages: AgentMessage[], controls: ControlState = EMPTY_CONTROLS): AgentMessage[] {
    try {
      const result = renderModelView(messages, this.index, this.config, controls);
      for (const chain of result.stats.unresolvedChains) {
        // A chain Pi's compaction removed whole is simply gone; anything else is worth one note.
        if (chain.absent) continue;
        this.reporter.report(
          `chain:${chain.blockId}@${chain.startUserTimestamp}`,
          `pi-pruner: compressed chain ${chain.blockId} was left as it is (${chain.reason})`,
        );
      }
      // When the render changed nothing, what is sent is what Pi counts: there is nothing to measure.
      if (result.messages !== messages) {
        this.reclaim = this.sizes.measure(messages, result.messages);
        this.sentChars = this.reclaim.sentChars;
      } else this.sentChars = undefined;
      this.history.inCurrentTask++;
      this.lastSent = result.messages;
      this.sentControls = controls;
      this.bill.record(messages, result.messages);
      this.billing ??= unref(setTimeout(() => this.settleBill(), 0));
      return result.messages;
    } catch (error) {
      this.reporter.report(`render:${(error as Error).message}`, `pi-pruner: could not prune this request (${(error as Error).message}); sent it unchanged`, "error");
      return messages;
    }
  }
}

/** The newest pending batches a mid-task flush of the history's end may take alone, at most. */
const MAX_TAIL_BATCHES = 8;

/** What a summary is expected to take per pruned call before the session has any summary to go by. */
const DEFAULT_SUMMARY_TOKENS_PER_CALL = 60;

/**
 * The newest message's timestamp. Over a branch's context (`fromContext`), only messages that
 * come from message entries count, as in the index's rebuild: the pruner's summaries and Pi's
 * summaries come from other entries.
 */
function newestTimestamp(messages: readonly AgentMessage[], fromContext: boolean): number | undefined {
  let newest: number | undefined;
  for (const m of messages) {
    if (fromContext && (m.role === "custom" || m.role === "branchSummary" || m.role === "compactionSummary")) continue;
    if (typeof m.timestamp === "number" && (newest === undefined || m.timestamp > newest)) newest = m.timestamp;
  }
  return newest;
}

/** Requests (assistant messages) on a branch by task: a final reply, one without tool calls, ends a task. */
export function requestHistoryOf(branch: readonly AnyEntry[]): RequestHistory {
  const history: RequestHistory = { inCurrentTask: 0, completedTasks: 0, inCompletedTasks: 0 };
  for (const entry of branch) {
    if (entry.type !== "message") continue;
    const message = (entry as { message: AgentMessage }).message;
    if (message?.role !== "assistant") continue;
    history.inCurrentTask++;
    if (toolCallsOf(message).length === 0) {
      history.completedTasks++;
      history.inCompletedTasks += history.inCurrentTask;
      history.inCurrentTask = 0;
    }
  }
  return history;
}

/** A timer that does not keep Pi's process alive on its own. */
function unref<T>(timer: T): T {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

/** Content blocks of messages as the provider receives them. */
function turnBlocks(messages: readonly AgentMessage[]): number {
  let n = 0;
  for (const m of messages) n += blockCount(m);
  return n;
}
