// When a flush pays back: the pending outputs' removal saves their cached reads on every request
// until the next flush, and costs one rewrite of history from the flush's first change plus the
// summarizer's calls. The decision is pure; the Pi runtime gathers its inputs from the session.
import { rewriteCost, savingPerRequest, summarizerCost, type RewriteSpan } from "../cost/flush-economics.ts";
import type { Pricing } from "../cost/price-rules.ts";

/** Where the decision is taken: after a tool-using turn (mid-task) or on the agent's final reply. */
export type FlushMoment = "mid-task" | "final-reply";

/** What the pending batches would become, in estimated tokens. */
export interface PendingEstimate {
  /** The raw outputs the flush would replace. */
  rawTokens: number;
  /** Their stubs and the summaries the model sees in their place. */
  replacementTokens: number;
  /** What the summarizer is sent, and what it is expected to answer. */
  summarizerInputTokens: number;
  summarizerOutputTokens: number;
}

/** Requests counted so far in the session (one per `context` event). */
export interface RequestHistory {
  inCurrentTask: number;
  completedTasks: number;
  inCompletedTasks: number;
}

/** The history after one more request in the current task. */
export function afterRequest(history: RequestHistory): RequestHistory {
  return { ...history, inCurrentTask: history.inCurrentTask + 1 };
}

/** The history once a final reply ends the current task: its requests join the finished tasks'. A task without requests leaves it as it was. */
export function afterTask(history: RequestHistory): RequestHistory {
  if (history.inCurrentTask === 0) return history;
  return { inCurrentTask: 0, completedTasks: history.completedTasks + 1, inCompletedTasks: history.inCompletedTasks + history.inCurrentTask };
}

export interface FlushInputs {
  /** The active model's price rules (or a named price model). */
  rules: Pricing;
  moment: FlushMoment;
  pending: PendingEstimate;
  /** The last request, from the first message the flush would change. */
  span: RewriteSpan;
  history: RequestHistory;
  /** Pi's context usage; tokens are null right after a compaction, when Pi does not know yet. */
  context: { tokens: number | null; contextWindow: number } | undefined;
  /** Requests over which the saving counts, when the caller knows better than `requestsAhead(history, moment)`. */
  requestsAhead?: number;
}

/** Why a flush happens or not; "summarizer-busy" is the runtime's: it would pay back, but the last flush's summaries are still being written, and these batches join the next flush. */
type FlushReasonCode = "nothing-pending" | "window-cap" | "pays-back" | "cannot-pay-back" | "summarizer-busy";

export interface FlushDecision {
  flush: boolean;
  reason: FlushReasonCode;
  /** Input-token equivalents saved over the requests expected before the next flush. */
  saving: number;
  /** Input-token equivalents the rewrite and the summarizer cost. */
  cost: number;
  requestsAhead: number;
}

/** The default cap: three quarters of the window. */
const WINDOW_CAP_FRACTION = 0.75;
/** Pi's default compaction reserve: Pi compacts once the context passes the window minus this. */
const PI_COMPACTION_RESERVE_TOKENS = 16_384;

/**
 * The context size at which a flush happens whatever it costs: three quarters of the window, and
 * never later than Pi's own compaction would start (with its default reserve), so the pruner
 * frees the window before Pi summarizes the whole conversation away.
 */
export function windowCapTokens(contextWindow: number): number {
  const cap = WINDOW_CAP_FRACTION * contextWindow;
  const beforeCompaction = contextWindow - PI_COMPACTION_RESERVE_TOKENS;
  return beforeCompaction > 0 ? Math.min(cap, beforeCompaction) : cap;
}

/**
 * Requests over which a flush's saving is counted. Removed tokens stay out of every later request.
 * On a final reply a flush put off to a later reply costs no less (the history it rewrites only
 * grows), so the saving counts over the rest of the session, expected to last as long again as it
 * has so far, and at least one more task. Mid-task a flush changes only stubs near the end, and
 * the task's own final reply comes next: the rest of this task (the average task beyond the
 * requests made so far, or in the first task as many again as it took so far). Always at least one.
 */
export function requestsAhead(history: RequestHistory, moment: FlushMoment): number {
  const perTask = history.completedTasks > 0 ? history.inCompletedTasks / history.completedTasks : undefined;
  const total = history.inCompletedTasks + history.inCurrentTask;
  if (moment === "final-reply") return Math.max(1, perTask ?? history.inCurrentTask, total);
  if (perTask === undefined) return Math.max(1, history.inCurrentTask);
  return Math.max(1, perTask - history.inCurrentTask);
}

/** Flush when the saving over the requests ahead pays for the rewrite and the summarizer, or when the window is nearly full. */
export function decideFlush(inputs: FlushInputs): FlushDecision {
  const { rules, pending, span, history, context, moment } = inputs;
  const ahead = inputs.requestsAhead ?? requestsAhead(history, moment);
  if (pending.rawTokens <= 0) return { flush: false, reason: "nothing-pending", saving: 0, cost: 0, requestsAhead: ahead };
  const removed = Math.max(0, pending.rawTokens - pending.replacementTokens);
  const saving = savingPerRequest(removed, rules) * ahead;
  const cost = rewriteCost(span, removed, rules) + summarizerCost(pending.summarizerInputTokens, pending.summarizerOutputTokens, rules);
  const tokens = context?.tokens;
  if (context && typeof tokens === "number" && context.contextWindow > 0 && tokens >= windowCapTokens(context.contextWindow)) {
    return { flush: true, reason: "window-cap", saving, cost, requestsAhead: ahead };
  }
  if (removed > 0 && saving > cost) return { flush: true, reason: "pays-back", saving, cost, requestsAhead: ahead };
  return { flush: false, reason: "cannot-pay-back", saving, cost, requestsAhead: ahead };
}
