// What the runtime keeps of each request after its render, in one step: the sizes, the requests by
// task, the last request and its markers, and the bill, settled off the request's path.
import { describe, expect, it } from "vitest";
import { RequestLedger } from "../../pi-extension/src/request-ledger.ts";
import { LiveBill } from "../../pi-extension/src/live-bill.ts";
import { OnceReporter } from "../../pi-extension/src/once-reporter.ts";
import { EMPTY_CONTROLS } from "../../core/src/control/control-entries.ts";
import { readControls } from "../../core/src/control/read-controls.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";
import { PRICE_MODELS } from "../../core/src/cost/price-rules.ts";

const user = (text: string, timestamp: number): AgentMessage => ({ role: "user", content: text, timestamp });

function ledger() {
  const seen: string[] = [];
  const bill = new LiveBill(new OnceReporter((m) => seen.push(m)));
  return { requests: new RequestLedger(bill), bill, seen };
}

describe("the request ledger", () => {
  it("a request the render left as it was is not measured: what is sent is what Pi counts", () => {
    const { requests } = ledger();
    const raw = [user("x".repeat(400), 1)];
    requests.record(raw, raw, EMPTY_CONTROLS);
    expect(requests.sentChars).toBeUndefined();
    expect(requests.reclaim).toBeUndefined();
  });

  it("a request the render changed is measured raw and sent; the status line keeps that size after an unchanged one", () => {
    const { requests } = ledger();
    const raw = [user("x".repeat(400), 1), user("y".repeat(400), 2)];
    const sent = [raw[0]!];
    requests.record(raw, sent, EMPTY_CONTROLS);
    expect(requests.reclaim!.rawChars).toBeGreaterThan(requests.reclaim!.sentChars);
    expect(requests.sentChars).toBe(requests.reclaim!.sentChars);
    const reclaim = requests.reclaim;
    requests.record(raw, raw, EMPTY_CONTROLS);
    expect(requests.sentChars).toBeUndefined();
    expect(requests.reclaim).toBe(reclaim);
  });

  it("keeps the last request sent and the markers it was rendered with", () => {
    const { requests } = ledger();
    const raw = [user("a", 1)];
    const sent = [user("b", 1)];
    const controls = readControls([]);
    requests.record(raw, sent, controls);
    expect(requests.lastSent).toBe(sent);
    expect(requests.sentControls).toBe(controls);
  });

  it("counts each request in the current task; a final reply moves them to the finished tasks", () => {
    const { requests } = ledger();
    const raw = [user("a", 1)];
    requests.record(raw, raw, EMPTY_CONTROLS);
    requests.record(raw, raw, EMPTY_CONTROLS);
    expect(requests.history).toEqual({ inCurrentTask: 2, completedTasks: 0, inCompletedTasks: 0 });
    requests.completeTask();
    expect(requests.history).toEqual({ inCurrentTask: 0, completedTasks: 1, inCompletedTasks: 2 });
  });

  it("another branch starts from the history it holds, with no request sent yet", () => {
    const { requests } = ledger();
    const raw = [user("a", 1)];
    requests.record(raw, [], EMPTY_CONTROLS);
    requests.reset({ inCurrentTask: 1, completedTasks: 3, inCompletedTasks: 12 });
    expect(requests).toMatchObject({ history: { inCurrentTask: 1, completedTasks: 3, inCompletedTasks: 12 }, lastSent: [], sentControls: EMPTY_CONTROLS, reclaim: undefined, sentChars: undefined });
  });

  it("each request is billed on the next tick, off the request's path, or at once when the totals are asked for", async () => {
    const { requests, bill } = ledger();
    const raw = [user("x".repeat(4_000), 1)];
    requests.record(raw, raw, EMPTY_CONTROLS);
    expect(bill.totals().requests).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(bill.totals().requests).toBe(1);
    requests.record(raw, raw, EMPTY_CONTROLS);
    expect(bill.settle()).toMatchObject({ requests: 2, rules: "anthropic" });
  });

  it("a new session's bill starts empty, priced by the rules in use", () => {
    const { requests, bill } = ledger();
    bill.useRules("openai");
    const raw = [user("x".repeat(4_000), 1)];
    requests.record(raw, raw, EMPTY_CONTROLS);
    expect(bill.settle()).toMatchObject({ requests: 1, rules: "openai" });
    bill.reset();
    expect(bill.totals()).toEqual({ rules: "openai", prices: PRICE_MODELS.openai, requests: 0, raw: 0, sent: 0 });
  });
});
