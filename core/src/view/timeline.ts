// The context timeline of a branch: one point per model request with the context as Pi would have
// sent it without the pruner (raw) and as the pruner sent it, the provider's usage and cost where
// the assistant message carries them and an estimate under the provider's price model where it
// does not; marks for what reshaped the context between requests; and the totals a person asks
// for: what the session cost with pruning, what it would have cost without, and what the
// summarizer's own calls cost. One pass over the branch: the requests are rendered in order, a
// piece at a time if the caller wants, and a branch Pi appended to is carried on, not rebuilt.
import type { AnyEntry } from "../shapes/entries.ts";
import { isCompactionEntry, isCustomEntry, isCustomEntryOf, isMessageEntry, PRUNE_CHAIN, PRUNE_FRONTIER, PRUNE_STATS } from "../shapes/entries.ts";
import { REWIND_ENTRY, SHRINK_ENTRY } from "../control/control-entries.ts";
import type { AgentMessage, AssistantMessage } from "../shapes/messages.ts";
import { isRecord } from "../shapes/json.ts";
import { readFrontierData, readStatsData } from "../shapes/read-payloads.ts";
import { estimateTokens } from "../shapes/size.ts";
import { jsonText } from "../shapes/deep-json.ts";
import { cacheMeter, WireCache, type CacheMeter, type RequestBill } from "../cost/cache-rules.ts";
import { PRICE_MODELS, priceRulesFor, sameRules, type CacheRules, type PriceModelName, type PriceRules } from "../cost/price-rules.ts";
import { RequestRenderer, type RequestViewOptions } from "./request-views.ts";

/** What the provider reported for one request (Pi's `usage` on the assistant message). */
interface RequestUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Dollars, when the message carries a cost. */
  cost?: number;
}

export interface TimelinePoint {
  /** The request's number on the branch (1-based): the model view's request. */
  n: number;
  entryId: string;
  timestamp?: number;
  prompt?: string;
  rawChars: number;
  rawTokens: number;
  sentChars: number;
  sentTokens: number;
  rules: CacheRules;
  /** The provider's figures; absent when the message has none (or only zeros). */
  usage?: RequestUsage;
  /** Our estimate of the request as sent, under `rules` (always computed, shown where `usage` is absent). */
  estimate: { input: number; cacheRead: number; cacheWrite: number; output: number };
  /** Dollars with pruning: the provider's cost where known, else the estimate. */
  cost: number;
  /** The cost is our estimate, not the provider's. */
  costEstimated: boolean;
  /** Dollars the request would have cost without pruning (always an estimate). */
  costWithoutPruning: number;
}

type TimelineMarkKind = "flush" | "chain" | "compaction" | "branch" | "rewind" | "shrink";

export interface TimelineMark {
  kind: TimelineMarkKind;
  entryId: string;
  /** The first request that saw it (requestCount + 1 when none has yet). */
  beforeRequest: number;
  label: string;
}

export interface SummarizerCalls {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cost: number;
}

interface TimelineTotals {
  requests: number;
  /** Dollars with pruning (the provider's cost where known). */
  cost: number;
  /** Requests whose cost is our estimate. */
  estimatedRequests: number;
  /** Dollars without pruning (an estimate). */
  costWithoutPruning: number;
  /** costWithoutPruning − cost − the summarizer's cost. */
  saving: number;
  summarizer: SummarizerCalls;
}

export interface Timeline {
  points: TimelinePoint[];
  marks: TimelineMark[];
  totals: TimelineTotals;
}

export interface TimelineOptions extends RequestViewOptions {
  /** Entries with more than one child in the session: where the branch forks. */
  branchPoints?: ReadonlySet<string>;
}

/**
 * Dollars per input token of the price models' stand-ins (claude-sonnet-4-6 $3 per million, gpt-5
 * $1.25): what an answer whose model core does not know is priced at.
 */
export const DEFAULT_INPUT_PRICE: Readonly<Record<PriceModelName, number>> = {
  anthropic: PRICE_MODELS.anthropic.inputPerMillion / 1e6,
  openai: PRICE_MODELS.openai.inputPerMillion / 1e6,
  simple: PRICE_MODELS.simple.inputPerMillion / 1e6,
};

const finite = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) ? value : undefined);

/** Pi's `usage` of an assistant message, narrowed; undefined when absent or all zero (mock providers, aborted requests). */
function usageOf(message: AssistantMessage): RequestUsage | undefined {
  const usage = message.usage;
  if (!isRecord(usage)) return undefined;
  const input = finite(usage.input) ?? 0;
  const output = finite(usage.output) ?? 0;
  const cacheRead = finite(usage.cacheRead) ?? 0;
  const cacheWrite = finite(usage.cacheWrite) ?? 0;
  if (input + output + cacheRead + cacheWrite === 0) return undefined;
  const result: RequestUsage = { input, output, cacheRead, cacheWrite };
  const cost = isRecord(usage.cost) ? finite(usage.cost.total) : undefined;
  // Pi reports $0 for a model its registry has no prices for (a local or scripted one): no cost, not a free request.
  if (cost !== undefined && cost > 0) result.cost = cost;
  return result;
}

/** Dollars per input token for a message: its own cost over its tokens when it has both, else its model's registry price. */
function inputPriceOf(message: AssistantMessage, rules: PriceRules): number {
  const usage = message.usage;
  if (isRecord(usage) && isRecord(usage.cost)) {
    const cost = finite(usage.cost.input);
    const tokens = finite(usage.input);
    if (cost !== undefined && tokens !== undefined && cost > 0 && tokens > 0) return cost / tokens;
  }
  return rules.inputPerMillion / 1e6;
}

/** The price rules of the model that answered: its api, provider and id as the session file records them. */
function rulesOf(answer: AssistantMessage): PriceRules {
  const text = (value: unknown) => (typeof value === "string" ? value : undefined);
  return priceRulesFor({ api: text(answer.api), provider: text(answer.provider), id: text(answer.model) });
}

function markOf(entry: AnyEntry, options: TimelineOptions): { kind: TimelineMarkKind; label: string } | undefined {
  if (isCompactionEntry(entry)) return { kind: "compaction", label: "Pi compacted the context" };
  if (isCustomEntry(entry)) {
    const { customType } = entry;
    if (customType === PRUNE_FRONTIER) {
      const frontier = readFrontierData(entry.data);
      const read = typeof frontier === "string" ? {} : frontier;
      const outcome = read.outcome ?? "flush";
      const calls = read.attemptedToolCallCount;
      return { kind: "flush", label: `flush: ${outcome}${calls !== undefined ? ` (${calls} call${calls === 1 ? "" : "s"})` : ""}` };
    }
    if (customType === PRUNE_CHAIN) return { kind: "chain", label: "a chain compressed" };
    if (customType === REWIND_ENTRY) return { kind: "rewind", label: "the agent rewound" };
    if (customType === SHRINK_ENTRY) return { kind: "shrink", label: "the agent shrank a result" };
  }
  if (options.branchPoints?.has(entry.id)) return { kind: "branch", label: "the session branches here" };
  return undefined;
}

function summarizerOf(entry: AnyEntry): SummarizerCalls | undefined {
  if (!isCustomEntryOf(entry, PRUNE_STATS)) return undefined;
  const stats = readStatsData(entry.data);
  if (typeof stats === "string") return undefined;
  // Each stats entry holds the session's running totals: the newest one counts.
  return { calls: stats.callCount ?? 0, inputTokens: stats.totalInputTokens ?? 0, outputTokens: stats.totalOutputTokens ?? 0, cost: stats.totalCost ?? 0 };
}

/** The timeline of a branch (root → leaf), its long bodies read in. */
export function buildTimeline(branch: readonly AnyEntry[], options: TimelineOptions): Timeline {
  const builder = new TimelineBuilder(branch, options);
  builder.step();
  return builder.timeline();
}

/** Hears each request as the builder renders it: its point, where it lies on the branch, and the messages the model was sent. */
export type RequestListener = (point: TimelinePoint, request: { n: number; position: number; end: number }, messages: readonly AgentMessage[]) => void;

/**
 * Builds a branch's timeline a piece at a time: `step` renders requests in order until its time
 * budget is spent, so a caller can yield between pieces and draw the points built so far; `extend`
 * takes the branch after Pi appended to it and keeps every point already built (the price models'
 * caches carry on), so a live session costs only its new requests.
 */
export class TimelineBuilder {
  private branch: readonly AnyEntry[];
  private readonly renderer: RequestRenderer;
  private readonly options: TimelineOptions;
  private readonly listener: RequestListener | undefined;
  private readonly points: TimelinePoint[] = [];
  private readonly marks: TimelineMark[] = [];
  private summarizer: SummarizerCalls = { calls: 0, inputTokens: 0, outputTokens: 0, cost: 0 };
  private meters: { rules: PriceRules; raw: CacheMeter; sent: CacheMeter } | undefined;
  /** The raw and the sent side share most messages: each is converted once for both meters. */
  private readonly wires = new WireCache();
  /** Entries whose marks and stats are collected. */
  private next = 0;

  /** `listener` hears every request once, in order (whoever needs the views as sent renders none again). */
  constructor(branch: readonly AnyEntry[], options: TimelineOptions, listener?: RequestListener) {
    this.branch = branch;
    this.options = options;
    this.listener = listener;
    this.renderer = new RequestRenderer(branch, options);
  }

  /** Requests on the branch. */
  get total(): number {
    return this.renderer.count;
  }

  /** Requests built so far. */
  get built(): number {
    return this.points.length;
  }

  get complete(): boolean {
    return this.points.length === this.renderer.count;
  }

  /**
   * Takes `branch` if it is this builder's branch with entries appended (the same ids first):
   * what is built stays. False when it is another branch or the file was rewritten (build anew).
   */
  extend(branch: readonly AnyEntry[], branchPoints?: ReadonlySet<string>): boolean {
    if (branch.length < this.branch.length) return false;
    for (let i = 0; i < this.branch.length; i++) if (branch[i]!.id !== this.branch[i]!.id) return false;
    // A fork after the end of what was read is a new mark only once its entry is collected again.
    if (branchPoints && branchPoints.size !== this.options.branchPoints?.size) return false;
    if (branch.length === this.branch.length) return true;
    this.branch = branch;
    this.renderer.carryOn(branch);
    return true;
  }

  /** Builds requests until `budgetMs` has passed (all of them by default); true once every request is built. */
  step(budgetMs = Infinity): boolean {
    const started = performance.now();
    const requests = this.renderer.requests;
    while (this.points.length < requests.length) {
      this.points.push(this.point(requests[this.points.length]!.n));
      if (performance.now() - started >= budgetMs) break;
    }
    return this.complete;
  }

  /** The points built so far, the marks before them (all of them once complete) and the totals of those points. */
  timeline(): Timeline {
    if (this.complete) this.collect(this.branch.length, this.renderer.count + 1);
    let cost = 0;
    let costWithoutPruning = 0;
    let estimatedRequests = 0;
    for (const point of this.points) {
      cost += point.cost;
      costWithoutPruning += point.costWithoutPruning;
      if (point.costEstimated) estimatedRequests++;
    }
    const summarizer = { ...this.summarizer };
    return {
      points: this.points.slice(),
      marks: this.marks.slice(),
      totals: { requests: this.points.length, cost, estimatedRequests, costWithoutPruning, saving: costWithoutPruning - cost - summarizer.cost, summarizer },
    };
  }

  private collect(end: number, beforeRequest: number): void {
    for (; this.next < end; this.next++) {
      const entry = this.branch[this.next]!;
      const mark = markOf(entry, this.options);
      if (mark) this.marks.push({ ...mark, entryId: entry.id, beforeRequest });
      this.summarizer = summarizerOf(entry) ?? this.summarizer;
    }
  }

  private point(n: number): TimelinePoint {
    const request = this.renderer.requests[n - 1]!;
    this.collect(request.end, request.n);
    const view = this.renderer.render(request.n);
    const entry = this.branch[request.position]!;
    // modelRequests keeps only assistant messages.
    const answer = isMessageEntry(entry) && entry.message.role === "assistant" ? entry.message : undefined;
    if (!answer) throw new Error(`request ${request.n} is not an assistant message`);
    const rules = rulesOf(answer);
    // Another model starts with an empty cache.
    if (!this.meters || !sameRules(this.meters.rules, rules)) this.meters = { rules, raw: cacheMeter(rules, this.wires), sent: cacheMeter(rules, this.wires) };
    const sentBill: RequestBill = this.meters.sent.bill({ system: "", tools: "", messages: view.messages });
    const rawBill: RequestBill = this.meters.raw.bill({ system: "", tools: "", messages: view.rawMessages });
    const usage = usageOf(answer);
    const outputTokens = usage?.output ?? estimateTokens(jsonText(answer.content ?? "")?.length ?? 0);
    const price = inputPriceOf(answer, rules);
    const estimatedCost = (sentBill.billed + outputTokens * rules.output) * price;
    const estimatedRawCost = (rawBill.billed + outputTokens * rules.output) * price;
    const cost = usage?.cost ?? estimatedCost;
    const point: TimelinePoint = {
      n: request.n,
      entryId: request.entryId,
      rawChars: view.rawChars,
      rawTokens: estimateTokens(view.rawChars),
      sentChars: view.modelChars,
      sentTokens: estimateTokens(view.modelChars),
      rules: rules.caching,
      estimate: { input: sentBill.uncachedTokens, cacheRead: sentBill.cacheReadTokens, cacheWrite: sentBill.cacheWriteTokens, output: outputTokens },
      cost,
      costEstimated: usage?.cost === undefined,
      // Both sides billed under the same rules; the provider's cost, where known, scaled by their
      // ratio. Adding their difference instead went below zero wherever the provider billed less
      // than our estimate of a request that pruning made dearer (a rewrite written to the cache).
      costWithoutPruning: estimatedCost > 0 ? cost * (estimatedRawCost / estimatedCost) : estimatedRawCost,
    };
    if (request.timestamp !== undefined) point.timestamp = request.timestamp;
    if (request.prompt !== undefined) point.prompt = request.prompt;
    if (usage) point.usage = usage;
    this.listener?.(point, request, view.messages);
    return point;
  }
}

/** Entries of a session that more than one entry continues. */
export function branchPointsOf(entries: readonly AnyEntry[]): Set<string> {
  const children = new Map<string, number>();
  const points = new Set<string>();
  for (const entry of entries) {
    const parent: unknown = entry.parentId;
    if (typeof parent !== "string") continue;
    const count = (children.get(parent) ?? 0) + 1;
    children.set(parent, count);
    if (count === 2) points.add(parent);
  }
  return points;
}
