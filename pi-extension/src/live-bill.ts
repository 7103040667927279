// The session's bill as the live pruner keeps it: each request is queued as it is sent and billed
// off the request's path, on a timer that does not keep Pi's process alive, or as soon as someone
// asks for the totals. Billing is fail-open: a failure is reported once and nothing else changes.
import { PRICE_MODELS, SessionBill, type AgentMessage, type BillTotals, type CacheReadMeter, type PriceRules, type Pricing, type ReadAfterChange } from "@pi-pruner/core";
import type { OnceReporter } from "./once-reporter.ts";

export class LiveBill implements CacheReadMeter {
  private bill = new SessionBill();
  private rules: Pricing = PRICE_MODELS.anthropic;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly reporter: OnceReporter;

  constructor(reporter: OnceReporter) {
    this.reporter = reporter;
  }

  /** A new session: nothing billed yet, priced by the rules in use. */
  reset(): void {
    this.bill = new SessionBill();
    this.bill.useRules(this.rules);
  }

  /** Later requests are billed under `rules` (a model's, or a named price model). */
  useRules(rules: Pricing): void {
    this.rules = rules;
    this.bill.useRules(rules);
  }

  /** One request as Pi would send it and as it was sent; billed on the next tick at the latest. */
  record(raw: readonly AgentMessage[], sent: readonly AgentMessage[]): void {
    this.bill.record(raw, sent);
    this.timer ??= unref(setTimeout(() => this.settle(), 0));
  }

  /** Bills the requests not billed yet and gives the session's totals. */
  settle(): BillTotals | undefined {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    try {
      return this.bill.settle();
    } catch (error) {
      this.reporter.report(`bill:${(error as Error).message}`, `pi-pruner: could not estimate the bill (${(error as Error).message})`);
      return undefined;
    }
  }

  /** The price rules later requests are billed under. */
  get prices(): PriceRules {
    return this.bill.prices;
  }

  /** The totals billed so far, without billing what is queued. */
  totals(): BillTotals {
    return this.bill.totals();
  }

  readAfterChange(sent: readonly AgentMessage[], changedFrom: number, nextBlocks: number, cachedBefore?: number): ReadAfterChange {
    return this.bill.readAfterChange(sent, changedFrom, nextBlocks, cachedBefore);
  }
}

/** A timer that does not keep Pi's process alive on its own. */
function unref<T>(timer: T): T {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}
