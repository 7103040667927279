// The chain range prune step of the render: every persisted chain that resolves by position
// becomes its start user message, one `<compressed-chain>` message, any foreign custom messages
// of the range, and its final reply. Middle turns and results are dropped, the chain's batch
// summaries are suppressed, and protected outputs are relocated verbatim into the block.
import type { AgentMessage, AssistantMessage, CustomMessage, ToolResultMessage } from "../shapes/messages.ts";
import { contentText } from "../shapes/messages.ts";
import type { ChainData } from "../shapes/entries.ts";
import { readSummaryDetails } from "../shapes/read-payloads.ts";
import { PRUNE_CHAIN, PRUNE_SUMMARY } from "../shapes/entries.ts";
import type { PruneConfig } from "../settings/config.ts";
import { pathMatcherFor, toolCallPath } from "../settings/protection.ts";
import { findCallForResult, recordKey, type ChainInfo, type PruneIndex, type SummaryInfo } from "../prune/prune-index.ts";
import { callsInRange, indexTimestamps, resolveChain, type ChainCall, type ChainRange } from "../prune/chains.ts";
import { withoutThinking } from "./thinking-strip.ts";
import { describeTarget, stripFooter, TARGET_ARG_KEYS } from "../prune/summarizer-prompts.ts";
import { escapeAttribute, escapePrunerTags } from "../shapes/text.ts";

export type ChainRenderConfig = Pick<PruneConfig, "chainCompression" | "protectedTools" | "protectedPaths">;

interface UnresolvedChain {
  blockId: string;
  startUserTimestamp: number;
  reason: string;
  /** Neither boundary is in the context (Pi's compaction removed the chain): nothing to report. */
  absent: boolean;
}

export interface ChainRenderStats {
  chainsCompressed: number;
  summariesSuppressed: number;
  protectedRelocated: number;
  unresolvedChains: UnresolvedChain[];
}

interface ResolvedChain {
  chain: ChainInfo;
  range: ChainRange;
  /** Non-protected results of the range, dropped with it. */
  dropped: ChainCall[];
  /** Protected results of the range, relocated into the block. */
  relocated: ChainCall[];
  keys: Set<string>;
  ids: Set<string>;
}

/**
 * isProtected, for a loop over many calls: the pattern list's one matcher, and one answer per
 * distinct path within a render (a long session repeats the same few paths).
 */
function protectionCheck(config: ChainRenderConfig): (toolName: string, args: unknown) => boolean {
  const matcher = pathMatcherFor(config.protectedPaths);
  const byPath = new Map<string, boolean>();
  return (toolName, args) => {
    if (config.protectedTools.includes(toolName)) return true;
    const path = toolCallPath(args);
    if (path === undefined) return false;
    let value = byPath.get(path);
    if (value === undefined) byPath.set(path, (value = matcher(path) !== undefined));
    return value;
  };
}

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : undefined;
}

// Every request brings a fresh copy of the same history, and a chain's range never changes once it
// closed: what a chain drops and relocates, and its block's body, are worked out once per chain
// entry (the index's ChainInfo object, so nothing is shared across sessions or rebuilds) and reused
// while the range still looks the same. Relocated text is always read from the current messages.
interface CachedRange {
  fingerprint: string;
  tools: readonly string[];
  paths: readonly string[];
  resolved: ResolvedChain;
}
const rangeCache = new WeakMap<ChainInfo, CachedRange>();
const bodyCache = new WeakMap<ChainInfo, { signature: string; body: string; toolRefs: string[] }>();

/** What a cached call holds in place of its result: nobody reads it (relocated text is read from the current messages). */
const NO_RESULT: ToolResultMessage = { role: "toolResult", toolCallId: "", toolName: "", content: [], isError: false, timestamp: 0 };

/** A chain call without its message and with only the arguments a block's call line shows. */
function slimCall(call: ChainCall): ChainCall {
  const args: Record<string, unknown> = {};
  for (const key of TARGET_ARG_KEYS) if (typeof call.args[key] === "string") args[key] = call.args[key];
  return { ...call, args, result: NO_RESULT };
}

/** Positions and the ids and timestamps of the range's results: equal only for the same range. */
function rangeFingerprint(messages: readonly AgentMessage[], range: ChainRange): string {
  let fp = `${range.start}:${range.end}`;
  for (let i = range.start + 1; i < range.end; i++) {
    const m = messages[i]!;
    if (m.role === "toolResult") fp += `|${m.toolCallId}@${m.timestamp}`;
  }
  return fp;
}

/**
 * Resolves the index's chains against the messages: by position, the first entry for a start
 * wins, ranges never overlap. Calls are read from `source`, the render's input at the same
 * positions, so relocated text is the original and purged arguments still show their path.
 */
function resolveChains(messages: readonly AgentMessage[], source: readonly AgentMessage[], index: PruneIndex, config: ChainRenderConfig, stats: ChainRenderStats): ResolvedChain[] {
  const lookup = indexTimestamps(messages);
  const isProtected = protectionCheck(config);
  const resolved: ResolvedChain[] = [];
  const starts = new Set<number>();
  for (const chain of index.chains) {
    if (starts.has(chain.startUserTimestamp)) continue;
    starts.add(chain.startUserTimestamp);
    const found = resolveChain(messages, lookup, chain);
    if (!found.ok) {
      stats.unresolvedChains.push({ blockId: chain.blockId, startUserTimestamp: chain.startUserTimestamp, reason: found.reason, absent: found.absent });
      continue;
    }
    const fingerprint = rangeFingerprint(source, found.range);
    const cached = rangeCache.get(chain);
    if (cached && cached.fingerprint === fingerprint && cached.tools === config.protectedTools && cached.paths === config.protectedPaths) {
      resolved.push({ ...cached.resolved, range: found.range });
      continue;
    }
    const protectedIds = new Set(stringList(chain.protectedToolCallIds) ?? []);
    const dropped: ChainCall[] = [];
    const relocated: ChainCall[] = [];
    for (const call of callsInRange(source, found.range)) {
      // Stored ids say what was protected at compression; the re-check covers patterns added since.
      if (protectedIds.has(call.toolCallId) || isProtected(call.toolName, call.args)) relocated.push(call);
      else dropped.push(call);
    }
    const entry: ResolvedChain = {
      chain,
      range: found.range,
      dropped,
      relocated,
      keys: new Set(dropped.map((c) => c.key)),
      ids: new Set(dropped.map((c) => c.toolCallId)),
    };
    // The cached copy keeps no message of this request alive: only what later renders read.
    rangeCache.set(chain, {
      fingerprint,
      tools: config.protectedTools,
      paths: config.protectedPaths,
      resolved: { ...entry, dropped: dropped.map(slimCall), relocated: relocated.map(slimCall) },
    });
    resolved.push(entry);
  }
  resolved.sort((a, b) => a.range.start - b.range.start);
  const kept: ResolvedChain[] = [];
  for (const r of resolved) {
    const previous = kept[kept.length - 1];
    if (previous && r.range.start <= previous.range.end) {
      stats.unresolvedChains.push({ blockId: r.chain.blockId, startUserTimestamp: r.chain.startUserTimestamp, reason: `its range overlaps ${previous.chain.blockId}`, absent: false });
      continue;
    }
    kept.push(r);
  }
  return kept;
}

/** A dropped call's line: its own ref, or for a repeated output the ref of the original it repeats (never both). */
function callLine(ref: string | undefined, call: ChainCall, aliasOf?: string): string {
  const head = ref ? `- \`${ref}\` ${call.toolName}` : `- ${call.toolName}`;
  const notes = [call.isError ? "failed" : "", aliasOf ? `same output as \`${aliasOf}\`` : "", ref || aliasOf ? "" : "not indexed"].filter(Boolean);
  return `${head} ${describeTarget(call.args)}${notes.length ? `(${notes.join(", ")})` : ""}`.trimEnd();
}

/**
 * The block's body: the fused range summary, else the chain's batch summaries, then one line per
 * dropped call that no summary of the chain covers (spilled, trivial, duplicate or unindexed).
 */
function chainBody(chain: ChainData, dropped: readonly ChainCall[], summaries: readonly SummaryInfo[], index: PruneIndex): string {
  const parts: string[] = [];
  if (typeof chain.rangeSummaryText === "string" && chain.rangeSummaryText.trim()) parts.push(chain.rangeSummaryText.trim());
  else if (summaries.length === 1) parts.push(summaries[0]!.text.trim());
  else if (summaries.length > 1) parts.push(summaries.map((s) => stripFooter(s.text).trim()).join("\n"));
  const covered = new Set<string>();
  for (const s of summaries) for (const key of s.keys) covered.add(key);
  const lines: string[] = [];
  for (const call of dropped) {
    const found = findCallForResult(index, call.toolCallId, call.resultTimestamp);
    if (found && !found.aliased && (covered.has(found.call.key) || covered.has(call.toolCallId))) continue;
    lines.push(found?.aliased ? callLine(undefined, call, found.call.shortRef) : callLine(found?.call.shortRef, call));
  }
  if (lines.length) parts.push(lines.join("\n"));
  return parts.length ? parts.join("\n") : "(no tool output besides the protected output below)";
}

function toolRefsOf(chain: ChainData, dropped: readonly ChainCall[], index: PruneIndex): string[] {
  const stored = stringList(chain.toolRefs);
  if (stored) return stored;
  const refs: string[] = [];
  for (const call of dropped) {
    const found = findCallForResult(index, call.toolCallId, call.resultTimestamp);
    const ref = found && !found.aliased ? found.call.shortRef : undefined;
    if (ref && !refs.includes(ref)) refs.push(ref);
  }
  return refs;
}

/** How a chain's block begins: the one spelling of its opening tag up to the id, shared by the render and whoever looks for the block. */
export function chainBlockMarker(blockId: string): string {
  return `<compressed-chain id="${escapeAttribute(blockId)}"`;
}

/** Index of the chain's block (the render's message, not a user's text that quotes the tag) in `messages`, or -1. */
export function findChainBlock(messages: readonly AgentMessage[], blockId: string): number {
  const marker = chainBlockMarker(blockId);
  return messages.findIndex((m) => m.role === "custom" && m.customType === PRUNE_CHAIN && contentText(m.content).startsWith(marker));
}

function compressedChainText(chain: ChainData, body: string, toolRefs: readonly string[], relocated: readonly { toolName: string; text: string }[]): string {
  const lines = [`${chainBlockMarker(chain.blockId)} tools="${escapeAttribute(toolRefs.join(","))}">`, body];
  for (const p of relocated) lines.push(`<protected-output tool="${escapeAttribute(p.toolName)}">${escapePrunerTags(p.text)}</protected-output>`);
  lines.push("</compressed-chain>");
  return lines.join("\n");
}

/** Keys of the results a pruner summary message covers (bare ids on old sessions). */
function summaryMessageKeys(message: CustomMessage): string[] {
  const details = readSummaryDetails(message.details);
  if (typeof details === "string") return [];
  if (details.toolCallRefs) return details.toolCallRefs.map(recordKey);
  return details.toolCallIds ?? [];
}

function coveredBy(key: string, chain: ResolvedChain): boolean {
  return chain.keys.has(key) || (!key.includes("@") && chain.ids.has(key));
}

/** A summary message is suppressed when every result it covers was dropped by one and the same chain. */
function isSuppressed(message: CustomMessage, chains: readonly ResolvedChain[], byKey: Map<string, ResolvedChain>): boolean {
  const keys = summaryMessageKeys(message);
  if (!keys.length) return false;
  const first = byKey.get(keys[0]!) ?? chains.find((c) => coveredBy(keys[0]!, c));
  return !!first && keys.every((k) => coveredBy(k, first));
}

/** Step 3: closed chains with a persisted chain entry are compressed in place. */
export function pruneChainRanges(messages: AgentMessage[], source: readonly AgentMessage[], index: PruneIndex, config: ChainRenderConfig, stats: ChainRenderStats): AgentMessage[] {
  if (!config.chainCompression.enabled || index.chains.length === 0) return messages;
  // Stubs and error purge replace messages in place, so positions in the input still line up.
  const original = source.length === messages.length ? source : messages;
  const chains = resolveChains(messages, original, index, config, stats);
  if (!chains.length) return messages;

  const byKey = new Map<string, ResolvedChain>();
  for (const c of chains) for (const key of c.keys) byKey.set(key, c);
  const byStart = new Map(chains.map((c) => [c.range.start, c]));
  const summariesOf = summariesByChain(index, chains);

  const out: AgentMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const chain = byStart.get(i);
    if (chain) {
      out.push(m, blockMessage(chain, original, index, summariesOf.get(chain) ?? []));
      stats.chainsCompressed++;
      stats.protectedRelocated += chain.relocated.length;
      for (let j = chain.range.start + 1; j < chain.range.end; j++) {
        const inner = messages[j]!;
        if (inner.role !== "custom") continue;
        if (inner.customType === PRUNE_SUMMARY && isSuppressed(inner, chains, byKey)) stats.summariesSuppressed++;
        else out.push(inner);
      }
      const final = messages[chain.range.end] as AssistantMessage;
      out.push(config.chainCompression.stripFinalAssistantThinking ? withoutThinking(final) : final);
      i = chain.range.end;
      continue;
    }
    if (m.role === "custom" && m.customType === PRUNE_SUMMARY && isSuppressed(m, chains, byKey)) {
      stats.summariesSuppressed++;
      continue;
    }
    out.push(m);
  }
  return out;
}

/**
 * For each chain, the batch summaries whose every call it dropped (what `summariesWithin` gives for
 * one chain), for all chains in one pass over the summaries: a summary can only belong to a chain
 * that holds its first key, so each summary is checked against those chains alone instead of every
 * chain (a bare-id first key, from old sessions, is checked against all of them). Index order is kept.
 */
function summariesByChain(index: PruneIndex, chains: readonly ResolvedChain[]): Map<ResolvedChain, SummaryInfo[]> {
  const holders = new Map<string, ResolvedChain[]>();
  for (const c of chains) {
    for (const key of c.keys) {
      const list = holders.get(key);
      if (list) list.push(c);
      else holders.set(key, [c]);
    }
  }
  const out = new Map<ResolvedChain, SummaryInfo[]>();
  for (const s of index.summaries) {
    const first = s.keys[0];
    if (first === undefined) continue;
    const candidates = first.includes("@") ? holders.get(first) : chains;
    if (!candidates) continue;
    for (const c of candidates) {
      if (!s.keys.every((k) => c.keys.has(k) || (!k.includes("@") && c.ids.has(k)))) continue;
      const list = out.get(c);
      if (list) list.push(s);
      else out.set(c, [s]);
    }
  }
  return out;
}

function blockMessage(chain: ResolvedChain, source: readonly AgentMessage[], index: PruneIndex, summaries: readonly SummaryInfo[]): CustomMessage {
  // The body changes only when the index does (a new summary, record or alias).
  const signature = `${index.calls.size}:${index.aliases.size}:${summaries.map((s) => s.entryId || s.keys.length).join(",")}`;
  let cached = bodyCache.get(chain.chain);
  if (!cached || cached.signature !== signature) {
    // The summaries and the call lines are text others wrote: it stays inside the block.
    cached = { signature, body: escapePrunerTags(chainBody(chain.chain, chain.dropped, summaries, index)), toolRefs: toolRefsOf(chain.chain, chain.dropped, index) };
    bodyCache.set(chain.chain, cached);
  }
  const relocated = chain.relocated.map((call) => {
    const current = source[call.resultIndex];
    const result = current && current.role === "toolResult" ? current : call.result;
    return { toolName: call.toolName, text: contentText(result.content) };
  });
  const text = compressedChainText(chain.chain, cached.body, cached.toolRefs, relocated);
  return { role: "custom", customType: PRUNE_CHAIN, content: text, display: false, details: { blockId: chain.chain.blockId }, timestamp: chain.chain.startUserTimestamp };
}

