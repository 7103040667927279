// The price models of the cost replay live in core (core/src/cost/cache-rules.ts), where the
// pruner's policy uses the same knowledge; this module gives the replay a meter per rules.
//
// A request is the system prompt and tool declarations (the "head", the same on every request of
// one policy) followed by the messages. Tokens ≈ characters / 4. Output tokens are priced at
// OUTPUT_PRICE of the rules; the summarizer's own requests are one-off prompts: their input is
// priced uncached at 1×.
import type { AgentMessage } from "../../core/src/shapes/messages.ts";
import { CACHE_PRICE, cacheMeter, type CacheMeter, type CacheRules } from "../../core/src/cost/cache-rules.ts";

export { CACHE_PRICE, CACHE_RULES, OUTPUT_PRICE, cacheMeter, cacheRulesFor } from "../../core/src/cost/cache-rules.ts";
export type { CacheMeter, CacheRules, ProviderRequest, RequestBill } from "../../core/src/cost/cache-rules.ts";

export const PRICE = { cacheRead: CACHE_PRICE.read, cacheWrite: CACHE_PRICE.write, uncached: CACHE_PRICE.uncached } as const;
export { CHARS_PER_TOKEN } from "../../core/src/shapes/size.ts";

/** How each price model is named in tables and notes. */
export const RULES_LABEL: Record<CacheRules, string> = {
  anthropic: "Anthropic rules",
  openai: "OpenAI rules",
  simple: "simple model",
};

/**
 * A stand-in head for the price models that look at content, not only at size: the replay knows
 * the head's size (measured on a real request) and that it is the same on every request.
 */
export function headOfSize(chars: number): { system: string; tools: string } {
  return { system: "", tools: "h".repeat(Math.max(0, chars)) };
}

export interface RequestPrice {
  /** Input tokens of the request (head included). */
  tokens: number;
  /** Of which read from the cache. */
  cachedTokens: number;
  /** Billed input-token equivalents. */
  billed: number;
}

/** The simple model behind the replay's earlier interface, priced by core's meter. */
export class PrefixCacheMeter {
  private readonly meter: CacheMeter = cacheMeter("simple");
  private head = { system: "", tools: "" };

  price(headChars: number, messages: readonly AgentMessage[]): RequestPrice {
    if (this.head.tools.length !== headChars) this.head = headOfSize(headChars);
    const bill = this.meter.bill({ ...this.head, messages });
    return { tokens: bill.inputTokens, cachedTokens: bill.cacheReadTokens, billed: bill.billed };
  }
}
