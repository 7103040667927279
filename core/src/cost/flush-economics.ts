// What a flush costs and what it saves under a provider's cache rules, in input-token equivalents
// (multiples of the model's base input price). A flush removes tokens from history, so every
// later request reads less from the cache; but the first request after it finds history changed
// from the flush's first change on, and that part is written (or sent uncached) again.
import type { AgentMessage } from "../shapes/messages.ts";
import { messageChars, estimateTokens } from "../shapes/size.ts";
import { CACHE_PRICE, OUTPUT_PRICE, type CacheRules } from "./cache-rules.ts";

/** How many blocks before its breakpoint Anthropic looks for an earlier cache entry. */
export const ANTHROPIC_LOOKBACK_BLOCKS = 20;

/**
 * What a flush would make the next request write again. The newest cache entry the change leaves
 * intact is the one an earlier request left at its end, just before the assistant message whose
 * call the first changed result answers; everything from there to the next request's breakpoint
 * (the last request's tail and the turn that follows it) is written instead of read.
 */
export interface RewriteSpan {
  /** Estimated tokens from the newest intact cache entry to the end of the last request. */
  tokensFromFirstChange: number;
  /** Content blocks from that entry to the next request's breakpoint (Anthropic's lookback counts blocks). */
  blocksFromFirstChange: number;
  /** Estimated tokens of all the request's messages (system prompt and tools excluded: they are cached apart). */
  messageTokens: number;
}

/** Each later request no longer reads the removed tokens from the cache. */
export function savingPerRequest(removedTokens: number): number {
  return Math.max(0, removedTokens) * CACHE_PRICE.read;
}

/**
 * The extra cost of the first request after the flush: what lies after the first change, as it
 * will be once the flush removed its tokens, is written again instead of read. Anthropic (and the
 * simple model, which prices an Anthropic-style cache) writes at 1.25×; a change more than
 * `ANTHROPIC_LOOKBACK_BLOCKS` blocks before the end leaves no earlier cache entry within reach,
 * so all the messages are written. OpenAI sends that part uncached once (1×), with no write premium.
 */
export function rewriteCost(span: RewriteSpan, removedTokens: number, rules: CacheRules): number {
  const beyondLookback = rules !== "openai" && span.blocksFromFirstChange > ANTHROPIC_LOOKBACK_BLOCKS;
  const rewritten = Math.max(0, (beyondLookback ? span.messageTokens : span.tokensFromFirstChange) - removedTokens);
  const price = rules === "openai" ? CACHE_PRICE.uncached : CACHE_PRICE.write;
  return rewritten * (price - CACHE_PRICE.read);
}

/** The summarizer's calls: their input at 1× (sent uncached), their output at the output price. */
export function summarizerCost(inputTokens: number, outputTokens: number, rules: CacheRules): number {
  return inputTokens * CACHE_PRICE.uncached + outputTokens * OUTPUT_PRICE[rules];
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
