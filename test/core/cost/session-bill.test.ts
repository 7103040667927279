import { describe, expect, it } from "vitest";
import { SessionBill } from "../../../core/src/cost/session-bill.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";

const user = (text: string, timestamp: number): AgentMessage => ({ role: "user", content: text, timestamp });

describe("the session's bill", () => {
  it("bills queued requests when settled, and never holds more than a few requests' messages unsettled", () => {
    const bill = new SessionBill();
    const history: AgentMessage[] = [];
    for (let i = 0; i < 20; i++) {
      history.push(user(`prompt ${i} `.repeat(200), i));
      bill.record(history.slice(), history.slice());
    }
    // Without a settle, at most eight requests wait: the rest are billed already.
    expect(bill.totals().requests).toBeGreaterThanOrEqual(12);
    expect(bill.settle().requests).toBe(20);
    const totals = bill.totals();
    expect(totals.raw).toBeGreaterThan(0);
    // The same messages sent as Pi would send them: the same bill.
    expect(totals.sent).toBe(totals.raw);
  });
});
