// The money estimate of one session: each request billed twice under the active model's price
// rules, once as Pi would send it without pruning and once as the pruner sent it. The system prompt
// and the tools are the same in both and are left out. Billing serialises every message, so it is
// queued on the request and settled later, off the request's path. Each request is billed under the
// rules in force when it was recorded, so a session that switches models is priced per request.
import type { AgentMessage } from "../shapes/messages.ts";
import { cacheMeter, WireCache, type CacheMeter, type ReadAfterChange } from "./cache-rules.ts";
import { PRICE_MODELS, pricesOf, sameRules, type CacheRules, type PriceRules, type Pricing } from "./price-rules.ts";

export interface BillTotals {
  /** How the current model caches (the name the status line shows; `SessionBill.prices` has its prices). */
  rules: CacheRules;
  /** The current model's price rules (what the summarizer's calls are priced by too). */
  prices: PriceRules;
  requests: number;
  /** Billed input-token equivalents of the requests without pruning. */
  raw: number;
  /** The same of the requests as sent. */
  sent: number;
}

/** Requests held for billing at most; more are billed at once. */
const MAX_QUEUED = 8;

export class SessionBill {
  private rules: PriceRules = PRICE_MODELS.anthropic;
  /** The raw and the sent side share most messages: each is converted once for both meters. */
  private readonly wires = new WireCache();
  private rawMeter: CacheMeter = cacheMeter(this.rules, this.wires);
  private sentMeter: CacheMeter = cacheMeter(this.rules, this.wires);
  private queue: { raw: readonly AgentMessage[]; sent: readonly AgentMessage[] }[] = [];
  private requests = 0;
  private raw = 0;
  private sent = 0;

  /** Later requests are billed under `pricing`; another model starts with an empty cache. */
  useRules(pricing: Pricing): void {
    const rules = pricesOf(pricing);
    if (sameRules(rules, this.rules)) return;
    this.settle();
    this.rules = rules;
    this.rawMeter = cacheMeter(rules, this.wires);
    this.sentMeter = cacheMeter(rules, this.wires);
  }

  /** The price rules later requests are billed under. */
  get prices(): PriceRules {
    return this.rules;
  }

  /** One request: what Pi would have sent and what was sent (the same array when nothing was pruned). */
  record(raw: readonly AgentMessage[], sent: readonly AgentMessage[]): void {
    this.queue.push({ raw, sent });
    // A queue that is not settled (a caller that never yields to the event loop) must not hold
    // every request's messages.
    if (this.queue.length >= MAX_QUEUED) this.settle();
  }

  /** Bills what is queued, in order, and gives the totals so far. */
  settle(): BillTotals {
    const queue = this.queue;
    this.queue = [];
    for (const { raw, sent } of queue) {
      this.requests++;
      this.raw += this.rawMeter.bill({ system: "", tools: "", messages: raw }).billed;
      this.sent += this.sentMeter.bill({ system: "", tools: "", messages: sent }).billed;
    }
    return this.totals();
  }

  /**
   * For `sent`, the request recorded last: what the next request reads from the cache if history
   * changes from message `changedFrom` on (see CacheMeter.readAfterChange). Settles the queue first.
   */
  readAfterChange(sent: readonly AgentMessage[], changedFrom: number, nextBlocks: number, cachedBefore?: number): ReadAfterChange {
    this.settle();
    return this.sentMeter.readAfterChange({ system: "", tools: "", messages: sent }, changedFrom, nextBlocks, cachedBefore);
  }

  /** The totals of the requests billed so far, without billing the queued ones. */
  totals(): BillTotals {
    return { rules: this.rules.caching, prices: this.rules, requests: this.requests, raw: this.raw, sent: this.sent };
  }
}
