// What a flush costs and what it saves under a provider's cache rules, in input-token equivalents
// (multiples of the model's base input price). A flush removes tokens from history, so every
// later request reads less from the cache; but the first request after it finds history changed
// from the flush's first change on, and that part is written (or sent uncached) again.
import type { AgentMessage } from "../shapes/messages.ts";
import { messageChars, estimateTokens } from "../shapes/size.ts";
import { ANTHROPIC_LOOKBACK_BLOCKS, pricesOf, type Pricing } from "./price-rules.ts";

/**
 * What a flush would make the next request write again. The newest cache entry the change leaves
 * intact is the one an earlier request left at its end, just before the assistant message whose
 * call the first changed result answers; everything from there to the next request's breakpoint
 * (the last request's tail and the turn that follows it) is written instead of read.
 */
export interface RewriteSpan {
  /** Estimated tokens from the newest intact cache entry to the end of the last request. */
  tokensFromFirstChange: number;
  /** Content blocks from that entry to the next request's breakpoint (Anthropic's lookback counts blocks); 0 when the entry surely exists (the meter read it, or the pruner's breakpoint holds it). */
  blocksFromFirstChange: number;
  /** Estimated tokens of all the request's messages (system prompt and tools excluded: they are cached apart). */
  messageTokens: number;
}

/** Each later request no longer sends the removed tokens: read from the cache, or uncached where nothing is cached. */
export function savingPerRequest(removedTokens: number, pricing: Pricing): number {
  const rules = pricesOf(pricing);
  return Math.max(0, removedTokens) * (rules.caching === "none" ? rules.uncached : rules.read);
}

/**
 * The extra cost of the first request after the flush: what lies after the first change, as it
 * will be once the flush removed its tokens, is written again instead of read. Anthropic-style
 * caching (and the simple model) writes it at the write price; a change more than
 * `ANTHROPIC_LOOKBACK_BLOCKS` blocks before the end leaves no earlier cache entry within reach,
 * so all the messages are written. Automatic caching sends that part uncached once (or writes it
 * where the model has a write price). Without a cache nothing is read anyway: no extra cost.
 */
export function rewriteCost(span: RewriteSpan, removedTokens: number, pricing: Pricing): number {
  const rules = pricesOf(pricing);
  if (rules.caching === "none") return 0;
  const beyondLookback = rules.caching !== "openai" && span.blocksFromFirstChange > ANTHROPIC_LOOKBACK_BLOCKS;
  const rewritten = Math.max(0, (beyondLookback ? span.messageTokens : span.tokensFromFirstChange) - removedTokens);
  const price = rules.caching === "openai" ? Math.max(rules.write, rules.uncached) : rules.write;
  return rewritten * (price - rules.read);
}

/** The summarizer's calls: their input uncached, their output at the output price. */
export function summarizerCost(inputTokens: number, outputTokens: number, pricing: Pricing): number {
  const rules = pricesOf(pricing);
  return inputTokens * rules.uncached + outputTokens * rules.output;
}

/** Blocks of a message as the provider receives them (text, thinking, tool calls; one per result). */
export function blockCount(message: AgentMessage): number {
  const content = (message as { content?: unknown }).content;
  if (message.role === "toolResult" || !Array.isArray(content)) return 1;
  return Math.max(1, content.length);
}

/**
 * The span of `messages` (the last request) a change at position `first` rewrites (`first` past
 * the end: nothing changes in them). An earlier request's cache entry ends before an assistant
 * message, so the span starts at the assistant message before `first`; `nextBlocks` are the
 * blocks the next request adds after the last one (the turn in between), which Anthropic's
 * lookback from the next breakpoint must cross too.
 */
export function rewriteSpan(messages: readonly AgentMessage[], first: number, nextBlocks = 0): RewriteSpan {
  if (first >= messages.length) return { tokensFromFirstChange: 0, blocksFromFirstChange: 0, messageTokens: 0 };
  let from = Math.max(0, first);
  while (from > 0 && messages[from]!.role !== "assistant") from--;
  let tailChars = 0;
  let blocks = nextBlocks;
  for (let i = from; i < messages.length; i++) {
    tailChars += messageChars(messages[i]!);
    blocks += blockCount(messages[i]!);
  }
  const tokensFromFirstChange = estimateTokens(tailChars);
  // All the messages are needed only when the change lies beyond the lookback.
  let messageTokens = tokensFromFirstChange;
  if (blocks > ANTHROPIC_LOOKBACK_BLOCKS && from > 0) {
    let headChars = 0;
    for (let i = 0; i < from; i++) headChars += messageChars(messages[i]!);
    messageTokens = estimateTokens(headChars + tailChars);
  }
  return { tokensFromFirstChange, blocksFromFirstChange: blocks, messageTokens };
}
