// Why a request cost what it did. For each request of a branch: the tokens read from the cache,
// written to it and sent uncached (the provider's `usage` where Pi recorded it, else the cache
// meter's estimate the timeline already makes), and where the request wrote more than it added
// since the one before, what made it rewrite: the entries between the two requests (a flush, a
// chain compressed, Pi's compaction, a rewind or shrink, a settings record, a model change), the
// time between them (an idle gap past the cache's lifetime) and the two requests' messages (the
// first one that changed; an unchanged prefix that grew past the provider's lookback). Per flush:
// what the rewrite after it and its summarizer calls cost, and what its stubs saved.
import type { AnyEntry } from "../shapes/entries.ts";
import { isCompactionEntry, isCustomEntry, isCustomEntryOf, isMessageEntry, PRUNE_CHAIN, PRUNE_FRONTIER, PRUNE_INDEX, PRUNE_STATS } from "../shapes/entries.ts";
import { REWIND_ENTRY, SHRINK_ENTRY } from "../control/control-entries.ts";
import type { AgentMessage } from "../shapes/messages.ts";
import { readFrontierData, readIndexData, readStatsData } from "../shapes/read-payloads.ts";
import { estimateTokens } from "../shapes/size.ts";
import { jsonText } from "../shapes/deep-json.ts";
import { ANTHROPIC_LOOKBACK_BLOCKS, priceRulesFor } from "../cost/price-rules.ts";
import { settingsEntryData } from "./recorded-settings.ts";
import { TimelineBuilder, type SummarizerCalls, type TimelineOptions, type TimelinePoint } from "./timeline.ts";

/** How long a provider keeps a cache entry that nothing reads (Anthropic's default, and OpenAI's usual). */
const CACHE_LIFETIME_MS = 5 * 60_000;

/**
 * Tokens a request may leave unread beyond what it added without counting as a rewrite: OpenAI
 * reads its cache in steps of 128 tokens, so up to 127 of the old prefix are sent again every time.
 */
const REWRITE_SLACK = 128;

export type RewriteCauseKind = "flush" | "chain" | "compaction" | "rewind" | "shrink" | "settings" | "model" | "idle" | "lookback";

export interface RewriteCause {
  kind: RewriteCauseKind;
  /** A person's words for it, e.g. "a flush stubbed t3, t4". */
  label: string;
  /** The entry that caused it, where one did. */
  entryId?: string;
  /** What a flush stubbed (short refs where recorded, else tool call ids). */
  refs?: string[];
}

export interface RequestCost {
  n: number;
  entryId: string;
  /** Tokens read from the cache. */
  read: number;
  /** Tokens written to the cache. */
  written: number;
  /** Tokens sent uncached. */
  uncached: number;
  /** The three figures are the meter's estimate (the answer carries no usage), not the provider's. */
  estimated: boolean;
  /** Tokens new since the previous request (its input subtracted from this one's, in the same figures). */
  added: number;
  /** Tokens of the old prefix sent again (written or uncached beyond what was added); 0 when none. */
  rewritten: number;
  /** The first message (0-based) of this request that differs from the previous one's; absent when they share every earlier message. */
  firstChange?: number;
  /** What made it rewrite (empty when it did not, or when nothing found explains it). */
  causes: RewriteCause[];
}

export interface FlushCost {
  entryId: string;
  /** The first request that was sent after it (requests + 1 when none was). */
  beforeRequest: number;
  refs: string[];
  /** Tokens the first request after it sent again (its `rewritten`): the cost of rewriting the cache. */
  rewriteTokens: number;
  /** The summarizer's calls the session recorded for it. */
  summarizer: SummarizerCalls;
  /** Characters the flushed results no longer send, per request (raw − sent, before and after it). */
  savedCharsPerRequest: number;
  /** Requests sent after it. */
  laterRequests: number;
  /** savedCharsPerRequest × laterRequests, in tokens (characters / 4): a measure, not a bill. */
  savedTokens: number;
}

export interface BranchCost {
  requests: RequestCost[];
  flushes: FlushCost[];
}

/** A message's content blocks as the provider receives them (a string is one). */
function blocksOf(message: AgentMessage): number {
  const content: unknown = (message as { content?: unknown }).content;
  return Array.isArray(content) ? Math.max(1, content.length) : 1;
}

/** The first message at which `next` stops repeating `previous`; undefined when it repeats all of it. */
function firstChangeOf(previous: readonly AgentMessage[], next: readonly AgentMessage[]): number | undefined {
  const shared = Math.min(previous.length, next.length);
  for (let i = 0; i < shared; i++) {
    const a = previous[i]!;
    const b = next[i]!;
    if (a !== b && jsonText(a) !== jsonText(b)) return i;
  }
  return next.length < previous.length ? next.length : undefined;
}

/** What a flush's index entries name: short refs where recorded, else the tool call ids. */
function refsOf(entry: AnyEntry): string[] {
  if (!isCustomEntryOf(entry, PRUNE_INDEX)) return [];
  const index = readIndexData(entry.data);
  if (typeof index === "string") return [];
  if (index.refs?.length) return index.refs.map((r) => r.shortId ?? r.toolCallId);
  return (index.toolCalls ?? []).map((r) => r.toolCallId);
}

/** Causes an entry between two requests can be. */
function entryCause(entry: AnyEntry): RewriteCause | undefined {
  if (isCompactionEntry(entry)) return { kind: "compaction", label: "Pi compacted the context", entryId: entry.id };
  if (entry.type === "model_change") return { kind: "model", label: "the model changed", entryId: entry.id };
  if (settingsEntryData(entry)) return { kind: "settings", label: "the settings changed", entryId: entry.id };
  if (!isCustomEntry(entry)) return undefined;
  switch (entry.customType) {
    case PRUNE_CHAIN:
      return { kind: "chain", label: "a chain was compressed", entryId: entry.id };
    case REWIND_ENTRY:
      return { kind: "rewind", label: "the agent rewound", entryId: entry.id };
    case SHRINK_ENTRY:
      return { kind: "shrink", label: "the agent shrank a result", entryId: entry.id };
  }
  return undefined;
}

/** The three figures of a point: the provider's where it reported them, else the estimate. */
function figuresOf(point: TimelinePoint, provider = true): { read: number; written: number; uncached: number; estimated: boolean } {
  if (provider && point.usage) return { read: point.usage.cacheRead, written: point.usage.cacheWrite, uncached: point.usage.input, estimated: false };
  return { read: point.estimate.cacheRead, written: point.estimate.cacheWrite, uncached: point.estimate.input, estimated: true };
}

const totalOf = (f: { read: number; written: number; uncached: number }) => f.read + f.written + f.uncached;

function answerOf(entry: AnyEntry | undefined): { model: string; minCached: number } | undefined {
  if (!entry || !isMessageEntry(entry) || entry.message.role !== "assistant") return undefined;
  const a = entry.message as { api?: unknown; provider?: unknown; model?: unknown };
  const text = (value: unknown) => (typeof value === "string" ? value : undefined);
  const info = { api: text(a.api), provider: text(a.provider), id: text(a.model) };
  return { model: `${info.provider ?? ""}/${info.id ?? ""}`, minCached: priceRulesFor(info).minCachedTokens };
}

const subtract = (a: SummarizerCalls, b: SummarizerCalls): SummarizerCalls => ({
  calls: a.calls - b.calls,
  inputTokens: a.inputTokens - b.inputTokens,
  outputTokens: a.outputTokens - b.outputTokens,
  cost: a.cost - b.cost,
});

/** What each request of a branch (root → leaf, long bodies read in) cost and why, and what each flush cost and saved. */
export function branchCost(branch: readonly AnyEntry[], options: TimelineOptions): BranchCost {
  const costs = new BranchCostBuilder(branch);
  new TimelineBuilder(branch, options, (point, request, messages) => costs.add(point, request, messages)).step();
  return costs.result();
}

/**
 * The cost of a branch's requests as a timeline builds them, one request at a time (give it to a
 * TimelineBuilder as its listener): each request is rendered once, for both. `carryOn` takes the
 * branch after Pi appended to it, as the builder's `extend` does.
 */
export class BranchCostBuilder {
  private branch: readonly AnyEntry[];
  private readonly requests: RequestCost[] = [];
  private readonly points: TimelinePoint[] = [];
  private readonly flushes: FlushCost[] = [];
  private readonly flushStats: SummarizerCalls[] = [];
  private stats: SummarizerCalls = { calls: 0, inputTokens: 0, outputTokens: 0, cost: 0 };
  /** Entries collected so far. */
  private next = 0;
  /** Causes and stubbed refs collected since the last request. */
  private causes: RewriteCause[] = [];
  private refs: string[] = [];
  private previous: { position: number; messages: readonly AgentMessage[] } | undefined;

  constructor(branch: readonly AnyEntry[]) {
    this.branch = branch;
  }

  carryOn(branch: readonly AnyEntry[]): void {
    this.branch = branch;
  }

  /** Collects the entries up to `end`: their causes, the flushes among them and the summarizer's running totals. */
  private collect(end: number, beforeRequest: number): void {
    for (; this.next < end; this.next++) {
      const entry = this.branch[this.next]!;
      this.refs.push(...refsOf(entry));
      if (isCustomEntryOf(entry, PRUNE_STATS)) {
        const read = readStatsData(entry.data);
        if (typeof read !== "string") this.stats = { calls: read.callCount ?? 0, inputTokens: read.totalInputTokens ?? 0, outputTokens: read.totalOutputTokens ?? 0, cost: read.totalCost ?? 0 };
        if (this.flushes.length > 0) this.flushStats[this.flushes.length - 1] = this.stats;
      }
      if (isCustomEntryOf(entry, PRUNE_FRONTIER)) {
        const frontier = readFrontierData(entry.data);
        const outcome = typeof frontier === "string" ? "flush" : (frontier.outcome ?? "flush");
        const refs = this.refs;
        this.causes.push({ kind: "flush", label: `a flush (${outcome})${refs.length ? ` stubbed ${refs.join(", ")}` : ""}`, entryId: entry.id, refs });
        // The summarizer's totals up to the flush are the earlier flushes'; the next stats entry adds this one's.
        this.flushes.push({ entryId: entry.id, beforeRequest, refs, rewriteTokens: 0, summarizer: { ...this.stats }, savedCharsPerRequest: 0, laterRequests: 0, savedTokens: 0 });
        this.flushStats.push(this.stats);
        this.refs = [];
        continue;
      }
      const cause = entryCause(entry);
      if (cause) this.causes.push(cause);
    }
  }

  /** The next request of the branch: its point, where it lies, and the messages it sent. */
  add(point: TimelinePoint, request: { n: number; position: number; end: number }, messages: readonly AgentMessage[]): RequestCost {
    this.collect(request.end, request.n);
    const entryCauses = this.causes;
    this.causes = [];
    this.refs = [];
    const figures = figuresOf(point);
    const previous = this.points.at(-1);
    const cost: RequestCost = { n: point.n, entryId: point.entryId, ...figures, added: totalOf(figures), rewritten: 0, causes: [] };
    if (previous && this.previous) {
      // Both requests in the same figures: the provider's where both carry them, else both estimated.
      const provider = !figures.estimated && previous.usage !== undefined;
      const before = figuresOf(previous, provider);
      const now = figuresOf(point, provider);
      cost.added = Math.max(0, totalOf(now) - totalOf(before));
      const over = now.written + now.uncached - cost.added;
      // Only a cache that held the previous request can be lost: the provider reported reading or
      // writing it, or (estimated) its caching keeps a prompt of that size.
      const minCached = answerOf(this.branch[this.previous.position])?.minCached ?? 0;
      const cached = provider ? before.read + before.written > 0 : previous.rules !== "none" && totalOf(before) >= minCached;
      cost.rewritten = cached && over >= REWRITE_SLACK ? over : 0;
      const firstChange = firstChangeOf(this.previous.messages, messages);
      if (firstChange !== undefined) cost.firstChange = firstChange;
      if (cost.rewritten > 0) cost.causes = rewriteCauses(this.branch, this.previous.position, request.position, entryCauses, this.previous.messages, messages, firstChange, point);
    }
    this.requests.push(cost);
    this.points.push(point);
    this.previous = { position: request.position, messages };
    return cost;
  }

  /** The requests added so far, and every flush on the branch with what it cost and saved. */
  result(): BranchCost {
    const { requests, points } = this;
    // Entries after the last request: its flushes were sent with none yet (their causes wait for the next request).
    this.collect(this.branch.length, requests.length + 1);
    const pruned = (p: TimelinePoint | undefined) => (p ? p.rawChars - p.sentChars : 0);
    return {
      requests: requests.slice(),
      flushes: this.flushes.map((flush, k) => {
        const after = requests[flush.beforeRequest - 1];
        const later = requests.length - flush.beforeRequest + 1;
        const saved = Math.max(0, pruned(points[flush.beforeRequest - 1]) - pruned(points[flush.beforeRequest - 2]));
        return {
          ...flush,
          // Several flushes before one request share its rewrite: the last of them is charged with it.
          rewriteTokens: after?.causes.filter((c) => c.kind === "flush").at(-1)?.entryId === flush.entryId ? after.rewritten : 0,
          summarizer: subtract(this.flushStats[k]!, flush.summarizer),
          savedCharsPerRequest: after ? saved : 0,
          laterRequests: Math.max(0, later),
          savedTokens: after ? estimateTokens(saved * later) : 0,
        };
      }),
    };
  }
}

/** The causes of a rewrite found between the request answered at `previousAt` and the one at `at`. */
function rewriteCauses(
  branch: readonly AnyEntry[],
  previousAt: number,
  at: number,
  entryCauses: RewriteCause[],
  previousMessages: readonly AgentMessage[],
  messages: readonly AgentMessage[],
  firstChange: number | undefined,
  point: TimelinePoint,
): RewriteCause[] {
  const causes = [...entryCauses];
  const before = answerOf(branch[previousAt]);
  const now = answerOf(branch[at]);
  if (before && now && before.model !== now.model && !causes.some((c) => c.kind === "model")) causes.push({ kind: "model", label: `the model changed (${before.model} → ${now.model})` });
  const sentAt = (branch[at] as { message?: { timestamp?: unknown } }).message?.timestamp;
  const previousSentAt = (branch[previousAt] as { message?: { timestamp?: unknown } }).message?.timestamp;
  if (typeof sentAt === "number" && typeof previousSentAt === "number" && sentAt - previousSentAt > CACHE_LIFETIME_MS) {
    causes.push({ kind: "idle", label: `an idle gap of ${Math.round((sentAt - previousSentAt) / 60_000)} min, past the cache's ${CACHE_LIFETIME_MS / 60_000} min lifetime` });
  }
  if (causes.length > 0) return causes;
  // The prefix stayed: the new blocks may have lain beyond the provider's lookback.
  if (firstChange === undefined && point.rules === "anthropic") {
    let blocks = 0;
    for (let i = previousMessages.length; i < messages.length; i++) blocks += blocksOf(messages[i]!);
    if (blocks > ANTHROPIC_LOOKBACK_BLOCKS) return [{ kind: "lookback", label: `${blocks} blocks were added, past the provider's ${ANTHROPIC_LOOKBACK_BLOCKS}-block lookback` }];
  }
  return [];
}

/** A request's figures and its cause on one line, e.g. "read 1,200 · written 300 · uncached 5 (estimate) · rewrote 280: a chain was compressed". */
export function requestCostLine(cost: RequestCost, format: (n: number) => string): string {
  let line = `read ${format(cost.read)} · written ${format(cost.written)} · uncached ${format(cost.uncached)} tokens${cost.estimated ? " (estimate)" : ""}`;
  if (cost.rewritten > 0) line += ` · rewrote ${format(cost.rewritten)} beyond the ${format(cost.added)} added: ${causeText(cost)}`;
  return line;
}

/** The causes of a request's rewrite in a person's words, with the first changed message (1-based, as the model view numbers them). */
export function causeText(cost: RequestCost): string {
  if (cost.rewritten === 0) return "";
  const causes = cost.causes.length ? cost.causes.map((c) => c.label).join("; ") : "no cause found";
  return cost.firstChange !== undefined ? `${causes} (first changed message: ${cost.firstChange + 1})` : causes;
}
