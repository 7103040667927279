// Which pending batches to flush now, if any: the cache-aware decision (`decideFlush`) asked about
// everything pending and, mid-task, about the newest batches alone, with its inputs gathered from
// what the last request sent. Pure: everything it reads is passed in, the meter that billed the
// session included; the Pi runtime keeps the queue and the last request.
import type { AgentMessage } from "../shapes/messages.ts";
import { occurrenceKey } from "../shapes/messages.ts";
import { estimateTokens, messagesChars } from "../shapes/size.ts";
import type { PruneConfig } from "../settings/config.ts";
import type { ReadAfterChange } from "../cost/cache-rules.ts";
import { pricesOf, type Pricing } from "../cost/price-rules.ts";
import { blockCount, rewriteSpan, type RewriteSpan } from "../cost/flush-economics.ts";
import { JOINED_CALLS_MAX, type Batch } from "./flush.ts";
import type { IndexedCall, PruneIndex } from "./prune-index.ts";
import { estimateChainCompression, type ChainPlanConfig } from "./chain-plan.ts";
import { buildBatchRequest } from "./summarizer-prompts.ts";
import { decideFlush, requestsAhead, type FlushDecision, type FlushMoment, type PendingEstimate, type RequestHistory } from "./flush-policy.ts";

type FlushChoiceConfig = ChainPlanConfig & Pick<PruneConfig, "minBatchChars" | "summarizerInputChars">;

/** The meter that billed the session's requests: what the next request still reads from the cache after a change. */
export interface CacheReadMeter {
  /** For `sent`, the request billed last: what the next one reads from the cache if history changes from message `changedFrom` on; `cachedBefore`: a breakpoint caches everything before that message. */
  readAfterChange(sent: readonly AgentMessage[], changedFrom: number, nextBlocks: number, cachedBefore?: number): ReadAfterChange;
}

export interface FlushChoiceInputs {
  moment: FlushMoment;
  /** Every pending batch a flush may take, oldest first. */
  pending: readonly Batch[];
  /** Every queued batch, oldest first, those whose summaries are still being written included: the frontier (the pruner's breakpoint) sits before the oldest. Default `pending`. */
  queued?: readonly Batch[];
  /** The batch captured this turn, which the model has not seen yet: never flushed by the choice, always kept. */
  hold?: Batch;
  index: PruneIndex;
  config: FlushChoiceConfig;
  /** The active model's price rules (or a named price model). */
  rules: Pricing;
  history: RequestHistory;
  /** Pi's context usage; tokens are null right after a compaction. */
  context: { tokens: number | null; contextWindow: number } | undefined;
  /** What the last request sent (after the render). */
  lastSent: readonly AgentMessage[];
  /** Where in `lastSent` the agent's rewinds, shrinks and cancels since then first change what is sent (`lastSent.length`: nowhere). */
  controlChange: number;
  /** Blocks the next request adds after the last one (the turn in between). */
  nextBlocks: number;
  meter: CacheReadMeter;
  /** What a summarized call's result becomes in the render (the render's `summarizedStub`; prune may not import the render). */
  summarizedStub(call: IndexedCall): string;
  /** Summarizer input per batch, kept by the caller across choices: outputs are long. */
  summarizerInputMemo?: WeakMap<Batch, number>;
  /** Whether a pending call's output is superseded by a later call: the flush stubs it without the summarizer. */
  isStale?: (call: Batch["calls"][number]) => boolean;
}

/** The decision taken and the batches a flush leaves pending. */
export interface FlushChoice {
  decision: FlushDecision;
  keep: Batch[];
}

/** The newest pending batches a mid-task flush of the history's end may take alone, at most. */
export const MAX_TAIL_BATCHES = 8;

/** What a summary is expected to take per pruned call before the session has any summary to go by. */
export const DEFAULT_SUMMARY_TOKENS_PER_CALL = 60;

/**
 * Whether flushing what is pending (all but `hold`) pays back now. Mid-task, when flushing
 * everything over the rest of the task does not, a flush of the newest batches may: what they
 * remove stays out of every later request, so it counts over the rest of the session, and recent
 * stubs change history near its end, which the provider's cache keeps most of. Of those, the
 * newest `k` with the best net saving win.
 */
export function chooseFlush(inputs: FlushChoiceInputs): FlushChoice {
  const { moment, hold, index, config, lastSent } = inputs;
  const held = hold ? [hold] : [];
  const candidates = inputs.pending.filter((b) => b !== hold);
  // A final reply's flush also compresses the closed chains that left the rolling window: what
  // that removes counts with the flush, and its first change may come earlier.
  const chains = moment === "final-reply" ? estimateChainCompression(lastSent, index, config) : undefined;
  const positions = positionsIn(lastSent, candidates);
  // Where Anthropic-style caching holds the pruner's own breakpoint: the entry there surely exists.
  const frontier = pricesOf(inputs.rules).caching === "anthropic" ? frontierIn(lastSent, frontierQueue(inputs.queued ?? inputs.pending, config.minBatchChars)) : undefined;
  const evaluate = (batches: readonly Batch[], ahead?: number) => {
    const pending = estimatePending(batches, index, config, inputs.summarizedStub, inputs.summarizerInputMemo, inputs.isStale);
    // A rewind, shrink or cancel since the last request rewrites history from where it applies:
    // a flush whose change lies after that point rewrites nothing more.
    let first = inputs.controlChange;
    for (const b of batches) first = Math.min(first, positions.get(b) ?? lastSent.length);
    if (chains && chains.removedTokens > 0) {
      pending.rawTokens += chains.removedTokens;
      if (config.chainCompression.fuseRangeSummary) {
        pending.summarizerInputTokens += chains.summaryTokens;
        pending.summarizerOutputTokens += chains.summaryTokens / 2;
      }
      first = Math.min(first, chains.firstChange);
    }
    // Each batch summarized adds its summary message after the turn: blocks the provider's lookback must cross too.
    const summaries = batches.filter((b) => batchChars(b) >= config.minBatchChars).length;
    const span = rewriteSpanOf(lastSent, first, inputs.nextBlocks + summaries, inputs.meter, frontier);
    return decideFlush({ rules: inputs.rules, moment, pending, span, history: inputs.history, context: inputs.context, requestsAhead: ahead });
  };
  let choice: FlushChoice = { decision: evaluate(candidates), keep: held };
  if (moment === "mid-task" && !choice.decision.flush) {
    const restOfSession = requestsAhead(inputs.history, "final-reply");
    let best = 0;
    // With the pruner's breakpoint at the frontier every candidate's rewrite is priced from an
    // entry that surely exists, so any number of the newest batches may be weighed; without it a
    // long tail reaches back where the price is a guess.
    const most = frontier !== undefined ? candidates.length : MAX_TAIL_BATCHES;
    for (let k = 1; k <= candidates.length && k <= most; k++) {
      const decision = evaluate(candidates.slice(-k), restOfSession);
      const net = decision.saving - decision.cost;
      if (decision.flush && net > best) {
        best = net;
        choice = { decision, keep: [...candidates.slice(0, -k), ...held] };
      }
    }
  }
  return choice;
}

/**
 * What a change from message `first` of `lastSent` on would make the next request write again:
 * the meter knows which of its prefixes are cached; if it cannot tell, the estimate from the
 * messages' sizes and blocks. A change at or after `frontier` (the pruner's breakpoint, which
 * caches everything before that message on every request) rewrites at most what follows it,
 * however far back it lies.
 */
export function rewriteSpanOf(lastSent: readonly AgentMessage[], first: number, nextBlocks: number, meter: CacheReadMeter, frontier?: number): RewriteSpan {
  if (first >= lastSent.length) return rewriteSpan(lastSent, first, nextBlocks);
  try {
    const after = meter.readAfterChange(lastSent, first, nextBlocks, frontier);
    const rewritten = Math.max(0, after.totalTokens - after.readTokens);
    return { tokensFromFirstChange: rewritten, blocksFromFirstChange: 0, messageTokens: rewritten };
  } catch {
    const span = rewriteSpan(lastSent, first, nextBlocks);
    if (frontier === undefined || first < frontier) return span;
    // The breakpoint's entry holds everything before the frontier: at most what follows is written.
    const fromFrontier = Math.min(estimateTokens(messagesChars(lastSent.slice(frontier))), span.tokensFromFirstChange);
    return { tokensFromFirstChange: fromFrontier, blocksFromFirstChange: 0, messageTokens: fromFrontier };
  }
}

/**
 * Where the pruner's cache breakpoint sits in `sent`: before the first tool result of the oldest
 * pending batch (`pending[0]`, the held batch included when it is the only one). The breakpoint is
 * on the message before that position; everything before the position stays cached through a
 * flush that changes only what follows. Undefined when nothing pending was sent.
 */
/**
 * The queued batches from the oldest one a flush would summarize on. A batch below
 * `minBatchChars` ahead of it is never sent to the summarizer and stays as it was: it must not
 * hold the frontier (and the pruner's breakpoint) back at the start of a long history.
 */
export function frontierQueue(queued: readonly Batch[], minBatchChars: number): readonly Batch[] {
  const at = queued.findIndex((b) => batchChars(b) >= minBatchChars);
  return at < 0 ? [] : at === 0 ? queued : queued.slice(at);
}

export function frontierIn(sent: readonly AgentMessage[], pending: readonly Batch[]): number | undefined {
  const oldest = pending[0];
  return oldest ? positionsIn(sent, [oldest]).get(oldest) : undefined;
}

/** What flushing `batches` would replace and what its summarizer calls would cost, in estimated tokens. A batch below minBatchChars gets no summarizer call and stays raw. */
export function estimatePending(
  batches: readonly Batch[],
  index: PruneIndex,
  config: Pick<PruneConfig, "minBatchChars" | "summarizerInputChars">,
  summarizedStub: (call: IndexedCall) => string,
  memo?: WeakMap<Batch, number>,
  isStale?: (call: PendingCall) => boolean,
): PendingEstimate {
  const perCall = summaryTokensPerCall(index);
  const estimate: PendingEstimate = { rawTokens: 0, replacementTokens: 0, summarizerInputTokens: 0, summarizerOutputTokens: 0 };
  let summarized = 0;
  for (const batch of batches) {
    const chars = batchChars(batch);
    if (chars < config.minBatchChars) continue;
    estimate.rawTokens += estimateTokens(chars);
    for (const c of batch.calls) {
      const stub = summarizedStub({ record: { toolCallId: c.toolCallId, toolName: c.toolName }, key: "", shortRef: `t${index.lastRefNumber + 1}` } as IndexedCall);
      estimate.replacementTokens += estimateTokens(stub.length);
    }
    // An output a later call superseded becomes its stub alone: no summary, no summarizer input.
    // The batch itself when none is stale, so its summarizer input is taken from the memo.
    const live = isStale && batch.calls.some(isStale) ? batch.calls.filter((c) => !isStale(c)) : batch.calls;
    if (live.length === 0) continue;
    const summary = live.length * perCall;
    estimate.replacementTokens += summary;
    estimate.summarizerInputTokens += live === batch.calls ? batchPromptTokens(batch, config.summarizerInputChars, memo) : batchPromptTokens({ ...batch, calls: live }, config.summarizerInputChars);
    estimate.summarizerOutputTokens += summary;
    summarized += live.length;
  }
  // One joined request per flush (per JOINED_CALLS_MAX calls) carries the instructions once.
  estimate.summarizerInputTokens += Math.ceil(summarized / JOINED_CALLS_MAX) * SUMMARIZER_SYSTEM_TOKENS;
  return estimate;
}

type PendingCall = Batch["calls"][number];

/** The summarizer's instructions, sent once per joined request. */
const SUMMARIZER_SYSTEM_TOKENS = estimateTokens(buildBatchRequest([], 0).systemPrompt.length);

/** What one batch adds to a joined summarizer request (its calls, without the instructions); remembered in `memo` when one is given. */
function batchPromptTokens(batch: Batch, inputChars: number, memo?: WeakMap<Batch, number>): number {
  let tokens = memo?.get(batch);
  if (tokens === undefined) {
    const request = buildBatchRequest(
      batch.calls.map((c, i) => ({ shortRef: `t${i + 1}`, toolName: c.toolName, args: c.args, resultText: c.resultText, isError: c.isError })),
      inputChars,
    );
    tokens = estimateTokens(request.prompt.length);
    memo?.set(batch, tokens);
  }
  return tokens;
}

/** Summary tokens per pruned call so far in the session; a short bullet each before the first summary. */
export function summaryTokensPerCall(index: PruneIndex): number {
  let chars = 0;
  let refs = 0;
  for (const s of index.summaries) {
    chars += s.text.length;
    refs += s.refs.length;
  }
  return refs > 0 ? estimateTokens(chars / refs) : DEFAULT_SUMMARY_TOKENS_PER_CALL;
}

/** Where in `sent` each batch begins: the position of the first of its results sent, found in one pass (a batch not sent yet has none). */
export function positionsIn(sent: readonly AgentMessage[], batches: readonly Batch[]): Map<Batch, number> {
  const batchOf = new Map<string, Batch>();
  for (const batch of batches) for (const c of batch.calls) batchOf.set(occurrenceKey(c.toolCallId, c.resultTimestamp), batch);
  const positions = new Map<Batch, number>();
  for (let i = 0; i < sent.length && positions.size < batches.length; i++) {
    const m = sent[i]!;
    if (m.role !== "toolResult") continue;
    const batch = batchOf.get(occurrenceKey(m.toolCallId, m.timestamp));
    if (batch && !positions.has(batch)) positions.set(batch, i);
  }
  return positions;
}

/** Content blocks of messages as the provider receives them. */
export function turnBlocks(messages: readonly AgentMessage[]): number {
  let n = 0;
  for (const m of messages) n += blockCount(m);
  return n;
}

function batchChars(batch: Batch): number {
  return batch.calls.reduce((n, c) => n + c.resultText.length, 0);
}
