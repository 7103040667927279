// The pruner's live state inside one Pi session and what each of Pi's events does to it: one entry
// point per event (index.ts only registers them), the hosts the commands and tools are given, and
// the turn's end that captures and decides when to flush. Pure decisions live in core; the queue
// and the flush-then-compress sequence in their own files; this one keeps state and orchestrates.
import type { BeforeProviderRequestEvent, ContextEvent, ContextEventResult, ExtensionAPI, ExtensionContext, InputEvent, MessageEndEvent, SessionBeforeCompactEvent, SessionBeforeCompactResult, SessionBeforeTreeEvent, SessionBeforeTreeResult, TurnEndEvent, TurnEndEventResult } from "@earendil-works/pi-coding-agent";
import type { AgentMessage, AnyEntry, AssistantMessage, Batch, CacheRules, CompactionResend, ConfigWarning, ControlState, FlushDecision, FlushMoment, ModelInfo, PersistEntry, PriceRules, PruneConfig, PruneIndex, SpillStorage, ToolResultMessage } from "@pi-pruner/core";
import { DEFAULT_CONFIG, EMPTY_CONTROLS, buildPiContext, PRICE_MODELS, priceRulesFor, CompactionResendReader, ControlsReader, chooseFlush, createRenderMemo, frontierQueue, emptyIndex, estimateTokens, fileSpillStorage, rebuildIndex, renderModelView, protectedOutputsById, isUserShellId, userShellOutputsById, requestHistoryOf, resendBudget, spillCopyOnBranch, summarizedStub, supersededBy, turnBlocks } from "@pi-pruner/core";
import { OnceReporter, showReport, type ReportSurface } from "./once-reporter.ts";
import { FrontierBreakpoint } from "./cache-breakpoint.ts";
import { LiveBill } from "./live-bill.ts";
import { RequestLedger } from "./request-ledger.ts";
import { branchOf, contextMessagesOf, contextWindowOf, controlChangeIn } from "./branch-context.ts";
import { persistEntries, withEntryDrafts } from "./entry-drafts.ts";
import { createSummarizer } from "./summarizer.ts";
import { changedSettings, loadPrunerSettings, SettingsWatch, settingsTarget, writePrunerSetting, type LoadedSettings } from "./settings.ts";
import { recordSettings } from "./settings-record.ts";
import { STATUS_KEY, statsReport, statusReport, statusText } from "./status.ts";
import { treeNodes, treeReport } from "./tree.ts";
import type { CommandHost } from "./commands.ts";
import type { OtherBranches, QueryHost } from "./query-tool.ts";
import { createSelfControlHost, type SelfControlHost } from "./self-control/host.ts";
import { createSelfControlLive, type SelfControlLive } from "./self-control/live.ts";
import { PendingQueue } from "./pending-queue.ts";
import { compactPrunedHistory, type CompactionHost } from "./compaction.ts";
import { summarizePrunedBranch } from "./branch-summary.ts";
import { FlushSequence, newestTimestamp, type CommandResult, type CompressScope, type FlushHost, type SummarizerCost } from "./flush-sequence.ts";
;

export type FlushReason = "final-reply" | "command" | "budget" | "budget-delta" | "pays-back" | "window-cap";

/** What the runtime writes through Pi outside a turn's answer: entries, and what self-control records. */
export type PiOperations = Pick<ExtensionAPI, "appendEntry" | "sendMessage">;

export interface RuntimeOptions {
  /** Told of every summarizer spend, for extensions that total a session's cost. */
  onCost?: (cost: SummarizerCost) => void;
  /** Pi's own writes; without them (unit tests, benchmarks) what the events would append goes nowhere. */
  pi?: PiOperations;
  /** Pi's `branchSummary.reserveTokens` setting, read when a branch summary is written. */
  branchSummaryReserve?: () => number | undefined;
}

/** What `turn_end` hands over, narrowed to what the policy reads. */
export interface TurnEnd {
  message: AgentMessage;
  toolResults: readonly ToolResultMessage[];
  turnIndex: number;
  /** "completed" when the agent run ended normally (not aborted, no error). */
  outcome: string;
}

/** What the runtime asks of Pi at a turn's end; each is called only when needed. */
export interface RuntimeHost extends FlushHost {
  contextUsage(): { tokens: number | null; contextWindow: number } | undefined;
}

const NO_PI: PiOperations = { appendEntry: () => {}, sendMessage: () => {} };

/** The runtime the extension runs with: its reports go to the UI of the newest event (stderr where Pi has none), its spending to Pi's `cost:external` event. */
export function createPrunerRuntime(pi: PiOperations & Pick<ExtensionAPI, "events" | "getSettings">): PrunerRuntime {
  const runtime: PrunerRuntime = new PrunerRuntime(DEFAULT_CONFIG, new OnceReporter((message, level) => runtime.ui && showReport(runtime.ui, message, level)), {
    pi,
    onCost: (cost) => pi.events.emit("cost:external", cost),
    branchSummaryReserve: () => {
      try {
        return reserveTokensOf(pi.getSettings().branchSummary);
      } catch {
        return undefined;
      }
    },
  });
  return runtime;
}

export class PrunerRuntime {
  index: PruneIndex = emptyIndex();
  /** Where this session's oversized outputs go; a session without a file on disk has none to write to. */
  spill: SpillStorage = fileSpillStorage(undefined, undefined);
  /** How the session model's provider caches requests (what the status line names). */
  rules: CacheRules = "anthropic";
  /** The session model's price rules: what the policy and the money estimate price by. */
  prices: PriceRules = PRICE_MODELS.anthropic;
  /** Every request of the session billed with and without pruning. */
  readonly bill: LiveBill;
  /** What the requests sent, recorded after each render. */
  readonly requests: RequestLedger;
  /** The policy's latest decision, for /pruner status. */
  lastDecision: (FlushDecision & { moment: FlushMoment }) | undefined;
  /** Reads the branch's self-control markers, again only when they change. */
  readonly controls = new ControlsReader();
  /** What Pi's newest compaction removed of protected output, worked out again only when the compaction or the protection changes. */
  private readonly resends = new CompactionResendReader();
  /** The UI of the newest event's context, and whether Pi has one: where reports go. */
  ui: ReportSurface | undefined;
  config: PruneConfig;
  readonly reporter: OnceReporter;
  private settings: LoadedSettings | undefined;
  /** Tells a request whether the settings files need a look (events on their folders). */
  private readonly settingsWatch = new SettingsWatch();
  private previousFraction: number | null = null;
  /** The context window the settings were last recorded with. */
  private recordedWindow: number | undefined;
  private readonly summarizerInput = new WeakMap<Batch, number>();
  /**
   * The render of the last request, which the next one reuses when it only appends to it. Pi hands
   * over a fresh copy each time: the copy is compared with it at a few places, not message by message.
   */
  readonly renderMemo = createRenderMemo({ prefix: "sampled" });
  /** The model `prices` were last worked out for. */
  private pricedModel: ModelInfo | string | undefined;
  private readonly pi: PiOperations;
  private readonly branchSummaryReserve: () => number | undefined;
  private readonly live: SelfControlLive;
  private readonly queue: PendingQueue;
  /** The cache breakpoint at the frontier, and what the last request marked. */
  private readonly breakpoint = new FrontierBreakpoint();
  /** The one flush-then-compress sequence, which `/pruner now` and `/pruner compact` run too. */
  readonly flushes: FlushSequence;

  constructor(config: PruneConfig, reporter: OnceReporter, options: RuntimeOptions = {}) {
    this.config = config;
    this.reporter = reporter;
    this.pi = options.pi ?? NO_PI;
    this.branchSummaryReserve = options.branchSummaryReserve ?? (() => undefined);
    this.bill = new LiveBill(reporter);
    this.requests = new RequestLedger(this.bill);
    this.queue = new PendingQueue(reporter);
    this.flushes = new FlushSequence(this.queue, this, reporter, options.onCost);
    this.live = createSelfControlLive(this.pi, this.selfControl);
  }

  // ---- Pi's events, one call each ----

  /** `session_start`: the UI first (a bad setting is reported while the settings load), then the settings, then the branch. */
  onSessionStart(ctx: ExtensionContext): void {
    this.ui = reportSurface(ctx);
    this.reporter.reset();
    this.useModel(ctx.model);
    this.loadSettings(ctx);
    persistEntries(this.pi, this.startSession(branchOf(ctx), spillOf(ctx)));
    this.showStatus(ctx);
  }

  /** `session_tree`: another branch; the settings it records are the ones in use. */
  onSessionTree(ctx: ExtensionContext): void {
    this.ui = reportSurface(ctx);
    this.rebuild(branchOf(ctx), spillOf(ctx));
    this.recordSettings(ctx);
    this.showStatus(ctx);
  }

  /**
   * `context`, before every model call: settings edited since are taken up, then the render, the
   * request's bookkeeping, and self-control's nudges on what is sent. Only new settings are written
   * to the session here (their record, before this request's answer). Returns nothing when nothing changed.
   */
  onContext(event: ContextEvent, ctx: ExtensionContext): ContextEventResult | undefined {
    this.ui = reportSurface(ctx);
    this.useModel(ctx.model);
    this.followSettings(ctx);
    const contextWindow = this.failOpen("context window", () => contextWindowOf(ctx), this.recordedWindow);
    // Another window (a model switch) bounds the re-sent protected output anew: recorded first, so the request's view is bounded alike.
    if (contextWindow !== this.recordedWindow) this.recordSettings(ctx);
    const messages = event.messages as unknown as AgentMessage[];
    const branch = branchOf(ctx);
    const controls = this.controls.read(branch);
    const budget = resendBudget(this.config, contextWindow);
    const resend = this.config.enabled ? this.failOpen("compaction protection", () => this.resends.read(branch, this.config, budget), undefined) : undefined;
    const rendered = this.render(messages, controls, resend);
    const request = { controls, raw: messages, rendered, sentTokens: () => this.sentTokens(ctx) };
    const sent = this.failOpen("nudges", () => this.live.onContext(ctx, request), rendered);
    if (sent === messages) return undefined;
    this.showStatus(ctx);
    return { messages: sent as unknown as ContextEvent["messages"] };
  }

  /** `message_end`: an assistant message is the answer to the request just sent; what that request decided to write is written now, before Pi persists the answer. */
  onMessageEnd(event: MessageEndEvent, ctx: ExtensionContext): void {
    if (event.message.role !== "assistant") return;
    this.ui = reportSurface(ctx);
    try {
      this.live.onAnswer(ctx);
    } catch (error) {
      this.reporter.report(`retire:${(error as Error).message}`, `pi-pruner: could not retire a stale shrink (${(error as Error).message})`, "error");
    }
  }

  /**
   * `before_provider_request`: on a provider that caches at markers, a breakpoint at the frontier,
   * so a flush (which changes only what follows it) leaves the prefix before it readable. Only the
   * agent's own requests come here (the summarizer's, through the model registry, do not), so the
   * session model says the payload's wire. Fails open: the payload goes as Pi built it. Returns
   * nothing when nothing changed.
   */
  onProviderRequest(event: BeforeProviderRequestEvent, ctx: ExtensionContext): unknown {
    this.ui = reportSurface(ctx);
    if (!this.config.enabled) return undefined;
    const pending = frontierQueue(this.queue.batches, this.config.minBatchChars);
    const sent = this.failOpen("cache breakpoint", () => this.breakpoint.place(event.payload, pending, ctx.model), event.payload);
    return sent === event.payload ? undefined : sent;
  }

  /**
   * `input`: a prompt arriving while the agent is idle since its final reply. What that reply's
   * flush asked is waited for (a person's typing usually covers it) and applied now, ahead of the
   * prompt: Pi is idle, so each entry is appended at once and in order, a batch's index entry,
   * summary and frontier together. Its summaries, stubs and chains then change history at once,
   * before the prompt's first request. Fails open.
   */
  async onInput(event: InputEvent, ctx: ExtensionContext): Promise<undefined> {
    if (event.streamingBehavior === undefined && ctx.isIdle()) await this.applyAsked(ctx);
    return undefined;
  }

  /**
   * `before_agent_start`: what is still asked when a run starts without a prompt through `input`
   * (a message an extension sends to start one) is applied before its first request (Pi counts as
   * busy here: the summary messages are held until the run starts, ahead of its first message).
   */
  async onBeforeAgentStart(ctx: ExtensionContext): Promise<void> {
    await this.applyAsked(ctx);
  }

  /**
   * `session_shutdown`: summaries asked in the background and not applied yet (a final reply's
   * flush asks as the process ends: `pi -p`, an RPC client closing its input) are waited for, at
   * most the summarizer's own ceiling, and applied, so the next process does not ask for the same
   * batches again. The wait is told (on stderr where Pi has no UI). Fails open.
   */
  async onSessionShutdown(ctx: ExtensionContext): Promise<void> {
    this.ui = reportSurface(ctx);
    if (!this.config.enabled || !this.queue.hasUnapplied()) return;
    try {
      const seconds = Math.ceil(this.config.summarizerTimeoutMs / 1000);
      // Said only when the wait is one a person notices: most answers are in by then.
      const told = this.queue.hasOutstanding() ? setTimeout(() => tellAtExit(ctx, `pi-pruner: waiting for the summarizer's answer before the session closes (at most ${seconds} s)`), TELL_WAIT_AFTER_MS) : undefined;
      const { entries, answered } = await this.settleAsked(this.hostOf(ctx), this.config.summarizerTimeoutMs).finally(() => clearTimeout(told));
      if (!answered) tellAtExit(ctx, `pi-pruner: the summarizer did not answer within ${seconds} s; those outputs stay raw and are summarized in a later session`);
      persistEntries(this.pi, entries);
    } catch (error) {
      this.reporter.report(`shutdown:${(error as Error).message}`, `pi-pruner: ${(error as Error).message}`, "error");
    }
  }

  /** `turn_end`: self-control's turn metric, then the flush policy; the pruner's entries follow the drafts Pi already holds. */
  async onTurnEnd(event: TurnEndEvent, ctx: ExtensionContext): Promise<TurnEndEventResult | undefined> {
    this.ui = reportSurface(ctx);
    const turn = event as unknown as TurnEnd;
    this.failOpen("turn metric", () => this.live.onTurnEnd(ctx, turn), undefined);
    const drafts = withEntryDrafts(event.entries, await this.turnEnd(turn, this.hostOf(ctx)));
    // The model has answered: the requests so far can be billed now, for the status line.
    this.bill.settle();
    this.showStatus(ctx);
    return drafts;
  }

  /**
   * `session_before_compact`: Pi's compaction is sent the history as the model last saw it (the
   * render of the context now); nothing when the pruner is off or that fails, so Pi's own runs.
   */
  onBeforeCompact(event: SessionBeforeCompactEvent, ctx: ExtensionContext): Promise<SessionBeforeCompactResult | undefined> {
    this.ui = reportSurface(ctx);
    return compactPrunedHistory(event, ctx, this.summaryHost());
  }

  /** What Pi's own summaries (its compaction, its branch summary) are given: the render as the model saw it, the summarizer's limits. */
  private summaryHost(): CompactionHost {
    return {
      enabled: this.config.enabled,
      idleTimeoutMs: this.config.summarizerIdleTimeoutMs,
      timeoutMs: this.config.summarizerTimeoutMs,
      render: (messages, branch) => renderModelView(messages, this.index, this.config, this.controls.read(branch)).messages,
      report: (key, message) => this.reporter.report(key, message, "error"),
    };
  }

  /**
   * `session_before_tree`: Pi's branch summary is sent the branch left as the model last saw it,
   * its refs named by that branch; nothing when the pruner is off or that fails, so Pi's own runs.
   */
  onBeforeTree(event: SessionBeforeTreeEvent, ctx: ExtensionContext): Promise<SessionBeforeTreeResult | undefined> {
    this.ui = reportSurface(ctx);
    return summarizePrunedBranch(event, ctx, {
      ...this.summaryHost(),
      index: this.index,
      reserveTokens: this.branchSummaryReserve(),
    });
  }

  /** What `/pruner` is given. */
  readonly commands: CommandHost = {
    config: () => this.config,
    reloadSettings: (ctx) => {
      this.loadSettings(ctx);
      this.showStatus(ctx);
    },
    settingsFile: (ctx) => settingsTarget(this.settings ?? loadPrunerSettings(ctx.cwd, ctx.isProjectTrusted())),
    writeSetting: writePrunerSetting,
    statusReport: () => statusReport(this.config, this.index, this.pendingCallCount(), this.requests.reclaim, { rules: this.rules, decision: this.lastDecision }),
    statsReport: () => statsReport(this.index, this.bill.settle()),
    treeReport: () => treeReport(this.index),
    treeNodes: () => treeNodes(this.index),
    flushNow: async (ctx) => this.persistFor(ctx, await this.flushes.flushCommand(this.hostOf(ctx))),
    compactNow: async (ctx) => this.persistFor(ctx, await this.flushes.compactCommand(this.hostOf(ctx))),
  };

  /** What `context_tree_query` is given. */
  readonly queryTool: QueryHost = {
    index: () => this.index,
    spill: () => this.spill,
    unindexedOutputs: (ctx, id) => (isUserShellId(id) ? userShellOutputsById(branchOf(ctx), id) : protectedOutputsById(branchOf(ctx), id, this.config)),
    otherBranches: (ctx) => otherBranchesOf(ctx),
    spillCopy: (ctx, record) => spillCopyOnBranch(branchOf(ctx), record),
  };

  /** What the self-control tools, subcommands and hooks are given. */
  readonly selfControl: SelfControlHost = createSelfControlHost({
    config: () => this.config,
    index: () => this.index,
    controls: this.controls,
    sentTokens: (ctx) => this.sentTokens(ctx),
  });

  private loadSettings(ctx: ExtensionContext): void {
    this.useSettings(ctx, loadPrunerSettings(ctx.cwd, ctx.isProjectTrusted()));
  }

  private useSettings(ctx: ExtensionContext, settings: LoadedSettings): void {
    this.settings = settings;
    this.config = settings.config;
    this.applyWarnings(settings.warnings);
    this.recordSettings(ctx);
    this.settingsWatch.follow(settings, ctx.isProjectTrusted(), true);
  }

  /**
   * Before a request: a settings file changed since it was read applies from this request on,
   * recorded in the session first so its view is rendered with it. The files are looked at (a stat
   * each, a read only when one changed) when their folders saw an event since the last look, or on
   * every request where they cannot be watched (SettingsWatch). New settings with a problem (a
   * file that stopped parsing, an invalid value) keep the settings in use, reported once; a file
   * that turned empty (a save between its truncate and its write) keeps them until the next
   * request looks again. Fails open: the request goes on.
   */
  private followSettings(ctx: ExtensionContext): void {
    if (!this.settings) return;
    try {
      const trusted = ctx.isProjectTrusted();
      if (!this.settingsWatch.due(trusted)) return;
      const change = changedSettings(this.settings, ctx.cwd, trusted);
      if (change?.kind === "refused") {
        this.settings = change.settings;
        for (const problem of change.problems) this.reporter.report(`settings-unreadable:${problem}`, `pi-pruner: ${problem}; kept the settings in use until it is fixed`);
      } else if (change?.kind === "held") {
        this.settings = change.settings;
        this.settingsWatch.lookAgain();
      } else if (change) {
        this.useSettings(ctx, change.settings);
        this.showStatus(ctx);
      }
      this.settingsWatch.follow(this.settings, trusted, false);
    } catch (error) {
      this.reporter.report(`settings-follow:${(error as Error).message}`, `pi-pruner: could not read the changed settings (${(error as Error).message}); kept the settings in use`);
    }
  }

  /** The branch records the settings its requests are rendered with, and the model's window (hidden from the model). */
  private recordSettings(ctx: ExtensionContext): void {
    this.recordedWindow = contextWindowOf(ctx);
    recordSettings(this.pi, () => branchOf(ctx), this.config, this.reporter, this.recordedWindow);
  }

  private showStatus(ctx: ExtensionContext): void {
    ctx.ui.setStatus(STATUS_KEY, statusText(this.config, this.requests.reclaim, this.bill.totals()));
  }

  /** A command's entries are appended at once (outside a turn); the status line follows. */
  private persistFor<Outcome>(ctx: ExtensionContext, result: CommandResult<Outcome>): Outcome {
    persistEntries(this.pi, result.entries);
    this.showStatus(ctx);
    return result.outcome;
  }

  private hostOf(ctx: ExtensionContext): RuntimeHost {
    return {
      contextUsage: () => ctx.getContextUsage(),
      summarizer: () => createSummarizer(ctx, this.config),
      contextMessages: () => contextMessagesOf(branchOf(ctx), this.controls.read(branchOf(ctx)), this.config),
      controls: () => this.controls.read(branchOf(ctx)),
    };
  }

  /** Estimated tokens of what the last request sent; unchanged by the render, it is what Pi itself counts. */
  private sentTokens(ctx: ExtensionContext): number | undefined {
    const chars = this.requests.sentChars;
    return chars === undefined ? (ctx.getContextUsage()?.tokens ?? undefined) : estimateTokens(chars);
  }

  // ---- state ----

  applyWarnings(warnings: readonly ConfigWarning[]): void {
    for (const w of warnings) this.reporter.report(`config:${w.key}:${w.message}`, `pi-pruner: ${w.message}`);
  }

  /**
   * A session opened (start, reload, switch): rebuild from its branch with its spill storage, then
   * spill what a crash left pending. Returns the entries to persist.
   */
  startSession(branch: readonly AnyEntry[], spill: SpillStorage): PersistEntry[] {
    this.bill.reset();
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
   * Summaries still being asked in the background are dropped: their batches are pending again.
   */
  rebuild(branch: readonly AnyEntry[], spill?: SpillStorage): void {
    if (spill) this.spill = spill;
    const { index, problems } = rebuildIndex(branch);
    this.index = index;
    this.resends.reset();
    for (const p of problems) this.reporter.report(`rebuild:${p}`, `pi-pruner: skipped a damaged entry (${p})`);
    this.queue.restore(branch, this.index, this.config);
    this.requests.reset(requestHistoryOf(branch));
    this.lastDecision = undefined;
    this.previousFraction = null;
    this.breakpoint.reset();
  }

  /**
   * The session's model (Pi's `ctx.model`, or only its `api` string): its provider's caching and
   * its registry prices; an unknown or absent one is priced by the strictest rules. Called on every
   * request, so a model switched mid-session is followed.
   */
  useModel(model: ModelInfo | string | undefined): void {
    // Pi hands over the same model object until the model changes: its prices are worked out once.
    if (model !== undefined && model === this.pricedModel) return;
    this.pricedModel = model;
    this.prices = priceRulesFor(typeof model === "string" ? { api: model } : model);
    this.rules = this.prices.caching;
    this.bill.useRules(this.prices);
  }

  /** The batches waiting for the summarizer, oldest first. */
  get pending(): Batch[] {
    return this.queue.batches;
  }

  hasPending(): boolean {
    return this.queue.batches.length > 0;
  }

  pendingCallCount(): number {
    return this.queue.callCount;
  }

  // ---- the request ----

  /** The `context` transform without self-control: the render, then the request's bookkeeping. Fails open: any error gives the messages back untouched. */
  render(messages: AgentMessage[], controls: ControlState = EMPTY_CONTROLS, resend?: CompactionResend): AgentMessage[] {
    try {
      const sent = this.renderRequest(messages, controls, resend);
      this.requests.record(messages, sent, controls);
      return sent;
    } catch (error) {
      this.reporter.report(`render:${(error as Error).message}`, `pi-pruner: could not prune this request (${(error as Error).message}); sent it unchanged`, "error");
      return messages;
    }
  }

  /** What the model is sent of `messages`; of the runtime's state it changes only the render's own memo. */
  private renderRequest(messages: AgentMessage[], controls: ControlState, resend: CompactionResend | undefined): AgentMessage[] {
    const result = renderModelView(messages, this.index, this.config, controls, this.renderMemo, resend);
    for (const chain of result.stats.unresolvedChains) {
      // A chain Pi's compaction removed whole is simply gone; anything else is worth one note.
      if (chain.absent) continue;
      this.reporter.report(`chain:${chain.blockId}@${chain.startUserTimestamp}`, `pi-pruner: compressed chain ${chain.blockId} was left as it is (${chain.reason})`);
    }
    return result.messages;
  }

  // ---- the turn's end ----

  /**
   * The `turn_end` policy. A tool-using turn is captured (oversized results spilled at once). With
   * `cacheAware` (the default) a flush happens, at any turn's end, when the saving pays for
   * rewriting the provider's cached prefix, or when the window nears full; the batch the model
   * has not seen yet waits for a later flush. Without it, a final reply flushes. A budget trigger
   * flushes early either way. A flush on a final reply (or a cache-aware one) then compresses
   * the closed chains beyond the window; `pruneOn: "on-demand"` leaves all this to commands.
   * A final reply's flush, and with backgroundSummaries a cache-aware one that pays back, settle
   * at once what needs no summarizer and ask for the summaries in the background, so the next
   * request does not wait; summaries that came back are applied at the next tool-using turn's end,
   * the next prompt's start or the session's shutdown, whatever the policy decides then: never
   * after a final reply, where a message would follow the answer. A budget or window-cap flush
   * waits for them and for its own. Returns the entries to persist.
   */
  async turnEnd(turn: TurnEnd, host: RuntimeHost): Promise<PersistEntry[]> {
    try {
      if (turn.message.role !== "assistant") return [];
      const finalReply = turn.toolResults.length === 0;
      if (finalReply) this.requests.completeTask();
      if (!this.config.enabled) return [];
      const entries: PersistEntry[] = [];
      const automatic = this.config.pruneOn === "agent-message";
      const controls = host.controls();
      let reason: FlushReason | undefined;
      let keep: readonly Batch[] = [];
      if (!finalReply) {
        const before = this.queue.batches.length;
        entries.push(...this.captureTurn(turn.message, turn.toolResults, turn.turnIndex));
        this.queue.dropControlled(controls);
        // The batch just captured reaches the model only with the next request.
        const hold = this.queue.batches.length > before ? this.queue.batches[this.queue.batches.length - 1] : undefined;
        keep = hold ? [hold] : [];
        const usage = host.contextUsage();
        reason = this.budgetTrigger(usage?.tokens, usage?.contextWindow);
        if (reason) keep = [];
        else if (automatic && this.config.cacheAware) {
          const choice = this.decide("mid-task", usage, hold, controls, turnBlocks([turn.message, ...turn.toolResults]));
          if (choice.decision.reason === "pays-back" && this.queue.hasOutstanding()) {
            // One summarizer request at a time mid-task: while the last flush's is still being
            // answered, these batches wait and join the next flush's request (fewer calls, and one
            // request more carrying them raw). The window cap does not wait.
            this.lastDecision = { ...choice.decision, flush: false, reason: "summarizer-busy", moment: "mid-task" };
          } else if (choice.decision.flush) {
            reason = choice.decision.reason === "window-cap" ? "window-cap" : "pays-back";
            keep = choice.keep;
          }
        }
      } else if (turn.outcome === "completed" && automatic) {
        this.queue.dropControlled(controls);
        // The next request adds the final reply and the person's next prompt.
        if (!this.config.cacheAware || this.decide("final-reply", host.contextUsage(), undefined, controls, turnBlocks([turn.message]) + 1).decision.flush) reason = "final-reply";
      }
      const epoch = () => newestTimestamp([turn.message, ...turn.toolResults], false);
      // Summaries that came back since the last flush point are applied here whatever the policy
      // says, but not after a final reply: a summary message there would follow the answer, and
      // Pi's print mode prints only a last message that is the answer. They are applied at the
      // next prompt's start or, when the session ends first, at its shutdown.
      if (!reason) return finalReply ? entries : [...entries, ...(await this.flushes.applyLanded(() => host.summarizer(), () => host.contextMessages(), epoch))];
      // Pi has already appended a final reply to the branch, so the newest chain reads as closed;
      // mid-task the open chain is not closed and is left alone. A budget flush compresses nothing.
      // A flush that pays back mid-task changes only the stubs of results near the end of history:
      // it opens no epoch and compresses nothing, so what it rewrites is what the decision priced.
      const stubsOnly = reason === "pays-back" && !finalReply;
      const compress: CompressScope = reason === "budget" || reason === "budget-delta" || stubsOnly ? "none" : "window";
      // A final reply's flush does not hold the agent up, and writes no message after the answer: its
      // summaries are asked in the background and applied, with those that came back meanwhile,
      // before the next prompt's first request or at the session's shutdown. Mid-task, a flush that
      // pays back waits for them unless backgroundSummaries (landing a request later costs that
      // request the outputs raw); one that keeps the window from overflowing always waits.
      const background = reason === "final-reply" || (this.config.cacheAware && reason === "pays-back" && this.config.backgroundSummaries);
      const done = await this.flushes.flushAndCompress(host.summarizer(), () => host.contextMessages(), { compress, keep, epoch, keepEpoch: stubsOnly, background, holdLanded: finalReply });
      entries.push(...done.entries);
      return entries;
    } catch (error) {
      this.reporter.report(`turn_end:${(error as Error).message}`, `pi-pruner: ${(error as Error).message}`, "error");
      return [];
    }
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

  /** Core's flush choice over the queue and the last request (all but `hold` is a candidate); remembered for /pruner status. */
  private decide(moment: FlushMoment, usage: { tokens: number | null; contextWindow: number } | undefined, hold: Batch | undefined, controls: ControlState, nextBlocks: number) {
    const { lastSent, sentControls, history } = this.requests;
    const choice = chooseFlush({
      moment, pending: this.queue.waiting, queued: this.queue.batches, hold, index: this.index, config: this.config, rules: this.prices, history, context: usage, lastSent,
      controlChange: controlChangeIn(lastSent, sentControls, controls),
      nextBlocks, meter: this.bill, summarizedStub, summarizerInputMemo: this.summarizerInput,
      isStale: (call) => supersededBy(call, this.queue.calls, this.index, this.config) !== undefined,
    });
    this.lastDecision = { ...choice.decision, moment };
    return choice;
  }

  /** At the next prompt's start: what the final reply's flush asked, waited for and applied. Fails open. */
  private async applyAsked(ctx: ExtensionContext): Promise<void> {
    this.ui = reportSurface(ctx);
    if (!this.config.enabled || !this.queue.hasUnapplied()) return;
    try {
      const { entries } = await this.settleAsked(this.hostOf(ctx));
      if (entries.length) this.persistFor(ctx, { entries, outcome: undefined });
    } catch (error) {
      this.reporter.report(`prompt start:${(error as Error).message}`, `pi-pruner: ${(error as Error).message}`, "error");
    }
  }

  /**
   * The flush point after a final reply (the next prompt's start, the session's shutdown): what
   * background requests asked is waited for, at most `withinMs`, and applied with the chains that
   * waited for it. Returns the entries to persist, and whether every request answered in time.
   */
  async settleAsked(host: FlushHost, withinMs?: number): Promise<{ entries: PersistEntry[]; answered: boolean }> {
    const answered = await this.queue.landAll(withinMs);
    const entries = await this.flushes.applyLanded(() => host.summarizer(), () => host.contextMessages(), () => newestTimestamp(host.contextMessages(), true));
    return { entries, answered };
  }

  /** A finished tool-using turn: capture the batch and spill oversized results at once. */
  captureTurn(message: AssistantMessage, results: readonly ToolResultMessage[], turnIndex: number): PersistEntry[] {
    return this.config.enabled ? this.queue.capture(message, results, turnIndex, this.index, this.config, this.spill) : [];
  }

  /** After a rebuild: what a crash left pending and large enough to spill is spilled now. */
  spillPending(): PersistEntry[] {
    return this.config.enabled ? this.queue.spillOversized(this.index, this.config, this.spill) : [];
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
}

/**
 * The session's other branches for one query: each branch's index rebuilt once, on the first ask
 * (refs are numbered per branch, so no index outlives the query), and the branch summaries the
 * current branch's context holds.
 */
function otherBranchesOf(ctx: ExtensionContext): OtherBranches {
  const indexes = new Map<string, PruneIndex | undefined>();
  const index = (branchId: string): PruneIndex | undefined => {
    if (!indexes.has(branchId)) {
      const known = ctx.sessionManager.getEntry(branchId) !== undefined;
      indexes.set(branchId, known ? rebuildIndex(ctx.sessionManager.getBranch(branchId) as unknown as AnyEntry[]).index : undefined);
    }
    return indexes.get(branchId);
  };
  const summaries: { fromId: string; summary: string }[] = [];
  for (const { message } of buildPiContext(branchOf(ctx))) {
    if (message.role === "branchSummary" && typeof message.fromId === "string" && typeof message.summary === "string") summaries.push({ fromId: message.fromId, summary: message.summary });
  }
  return { index, summaries };
}

/** A `reserveTokens` setting Pi would honour (a project file may hold anything there), else Pi's default. */
function reserveTokensOf(settings: { reserveTokens?: unknown } | undefined): number | undefined {
  const value = settings?.reserveTokens;
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** How long the session's end waits for the summarizer before it says that it does. */
const TELL_WAIT_AFTER_MS = 1_000;

/** A line at the session's end: on Pi's UI, and on stderr where there is none (print and json mode). */
function tellAtExit(ctx: ExtensionContext, message: string): void {
  showReport(reportSurface(ctx), message, "warning");
}

/** What a report needs of an event's context, read while the context is current. */
function reportSurface(ctx: ExtensionContext): ReportSurface {
  return { ui: ctx.ui, hasUI: ctx.hasUI };
}

/** Where the session's oversized outputs go: next to its file, named by its id. */
function spillOf(ctx: ExtensionContext): SpillStorage {
  return fileSpillStorage(ctx.sessionManager.getSessionFile(), ctx.sessionManager.getSessionId());
}
