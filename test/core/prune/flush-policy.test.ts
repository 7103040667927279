// The cache-aware flush decision on hand-computed cases: a flush happens when what it saves over
// the requests ahead pays for rewriting history from its first change and for the summarizer,
// and before the window fills whatever it costs.
import { describe, expect, it } from "vitest";
import { afterRequest, afterTask, decideFlush, requestsAhead, windowCapTokens, type FlushInputs } from "../../../core/src/prune/flush-policy.ts";
import { rewriteCost, rewriteSpan, savingPerRequest, summarizerCost } from "../../../core/src/cost/flush-economics.ts";
import { priceRulesFor } from "../../../core/src/cost/price-rules.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";
import { estimateTokens, messageChars } from "../../../core/src/shapes/size.ts";

/**
 * Mid-task in a session whose two finished tasks took 40 requests (20 each), five requests into
 * the third: 10,000 tokens of outputs pending whose stubs and summary take 500, the first of them
 * 12,000 tokens and 10 blocks before the end of a 50,000-token request.
 */
function midTask(overrides: Partial<FlushInputs> = {}): FlushInputs {
  return {
    rules: "anthropic",
    moment: "mid-task",
    pending: { rawTokens: 10_000, replacementTokens: 500, summarizerInputTokens: 3_000, summarizerOutputTokens: 300 },
    span: { tokensFromFirstChange: 12_000, blocksFromFirstChange: 10, messageTokens: 50_000 },
    history: { inCurrentTask: 5, completedTasks: 1, inCompletedTasks: 20 },
    context: { tokens: 60_000, contextWindow: 200_000 },
    ...overrides,
  };
}

/** A one-task session of four requests ending: 1,500 tokens pending, 150 of stubs and summary. */
function shortSession(overrides: Partial<FlushInputs> = {}): FlushInputs {
  return {
    rules: "anthropic",
    moment: "final-reply",
    pending: { rawTokens: 1_500, replacementTokens: 150, summarizerInputTokens: 1_700, summarizerOutputTokens: 100 },
    span: { tokensFromFirstChange: 2_000, blocksFromFirstChange: 6, messageTokens: 3_000 },
    history: { inCurrentTask: 0, completedTasks: 1, inCompletedTasks: 4 },
    context: { tokens: 4_000, contextWindow: 200_000 },
    ...overrides,
  };
}

describe("flush economics", () => {
  it("prices the saving per request, the rewrite and the summarizer under each provider's rules", () => {
    expect(savingPerRequest(9_500, "anthropic")).toBeCloseTo(950);
    const span = { tokensFromFirstChange: 12_000, blocksFromFirstChange: 10, messageTokens: 50_000 };
    // 2,500 tokens are left after the change: written at 1.25× instead of read at 0.1×…
    expect(rewriteCost(span, 9_500, "anthropic")).toBeCloseTo(2_875);
    // …or sent uncached once at 1× under OpenAI's automatic caching.
    expect(rewriteCost(span, 9_500, "openai")).toBeCloseTo(2_250);
    // A change 30 blocks back is out of Anthropic's lookback: every message is written again.
    expect(rewriteCost({ ...span, blocksFromFirstChange: 30 }, 9_500, "anthropic")).toBeCloseTo(46_575);
    expect(rewriteCost({ ...span, blocksFromFirstChange: 30 }, 9_500, "openai")).toBeCloseTo(2_250);
    // Output at 5× (Claude Sonnet 4.6's price ratio) or 8× (GPT-5's).
    expect(summarizerCost(3_000, 300, "anthropic")).toBeCloseTo(4_500);
    expect(summarizerCost(3_000, 300, "openai")).toBeCloseTo(5_400);
  });

  it("prices by the active model's registry entry: a cheaper cache read saves less and makes a rewrite dearer", () => {
    // claude-fable-5-1: $10 in, $50 out, $0.25 cache read, $12.50 cache write per million.
    const fable = priceRulesFor({ api: "anthropic-messages", provider: "anthropic", id: "claude-fable-5-1", cost: { input: 10, output: 50, cacheRead: 0.25, cacheWrite: 12.5 } });
    const span = { tokensFromFirstChange: 12_000, blocksFromFirstChange: 10, messageTokens: 50_000 };
    // 9,500 tokens no longer read at 0.025×; 2,500 written at 1.25× instead of read at 0.025×; output at 5×.
    expect(savingPerRequest(9_500, fable)).toBeCloseTo(237.5);
    expect(rewriteCost(span, 9_500, fable)).toBeCloseTo(3_062.5);
    expect(summarizerCost(3_000, 300, fable)).toBeCloseTo(4_500);
  });

  it("without a cache, whatever is removed is saved at the full input price and a rewrite costs nothing extra", () => {
    // gpt-4: $30 in, $60 out, no cache prices.
    const uncached = priceRulesFor({ api: "openai-responses", provider: "openai", id: "gpt-4", cost: { input: 30, output: 60, cacheRead: 0, cacheWrite: 0 } });
    expect(savingPerRequest(9_500, uncached)).toBe(9_500);
    expect(rewriteCost({ tokensFromFirstChange: 12_000, blocksFromFirstChange: 30, messageTokens: 50_000 }, 9_500, uncached)).toBe(0);
    expect(summarizerCost(3_000, 300, uncached)).toBeCloseTo(3_600);
    // So a flush that cannot pay back under a cache pays back at once without one.
    const farBack = midTask({ span: { tokensFromFirstChange: 12_000, blocksFromFirstChange: 30, messageTokens: 50_000 } });
    expect(decideFlush(farBack)).toMatchObject({ flush: false });
    expect(decideFlush({ ...farBack, rules: uncached })).toMatchObject({ flush: true, reason: "pays-back", saving: 9_500 * 15, cost: 3_600 });
  });

  it("measures the span from the assistant message whose call the first change answers, with the blocks the next request adds", () => {
    const text = (n: number): AgentMessage => ({ role: "user", content: "x".repeat(n), timestamp: 1 });
    const call = (id: string): AgentMessage => ({ role: "assistant", content: [{ type: "toolCall", id, name: "read", arguments: {} }], timestamp: 1, stopReason: "toolUse" } as AgentMessage);
    const output = (id: string, n: number): AgentMessage => ({ role: "toolResult", toolCallId: id, toolName: "read", content: [{ type: "text", text: "o".repeat(n) }], isError: false, timestamp: 1 });
    const messages = [text(4_000), call("a"), output("a", 400), call("b"), output("b", 400)];
    const tail = estimateTokens(messages.slice(1).reduce((n, m) => n + messageChars(m), 0));
    // The earlier request's cache entry ends before the call of the changed result: 4 blocks to the end, 2 more next.
    expect(rewriteSpan(messages, 2, 2)).toEqual({ tokensFromFirstChange: tail, blocksFromFirstChange: 6, messageTokens: tail });
    // A next request adding 20 blocks puts that entry out of Anthropic's reach: all the messages count.
    const all = estimateTokens(messages.reduce((n, m) => n + messageChars(m), 0));
    expect(rewriteSpan(messages, 2, 20)).toEqual({ tokensFromFirstChange: tail, blocksFromFirstChange: 24, messageTokens: all });
    expect(rewriteSpan(messages, 5)).toEqual({ tokensFromFirstChange: 0, blocksFromFirstChange: 0, messageTokens: 0 });
  });
});

describe("the flush decision", () => {
  it("a flush that cannot pay back is skipped: a short session is left alone", () => {
    const decision = decideFlush(shortSession());
    // Saving 135 a request over the next task's 4 requests, against a rewrite of 650 tokens at
    // 1.15× and a summarizer call of 1,700 in and 100 out at 5×.
    expect(decision).toEqual({ flush: false, reason: "cannot-pay-back", saving: 540, cost: expect.closeTo(2_947.5, 6), requestsAhead: 4 });
  });

  it("one that pays back is taken mid-task", () => {
    const decision = decideFlush(midTask());
    // 950 a request over the 15 requests the task has left on average, against 2,875 + 4,500.
    expect(decision).toEqual({ flush: true, reason: "pays-back", saving: 14_250, cost: expect.closeTo(7_375, 6), requestsAhead: 15 });
    // The same outputs with only one request expected before the next chance do not pay back.
    expect(decideFlush(midTask({ history: { inCurrentTask: 1, completedTasks: 0, inCompletedTasks: 0 } }))).toMatchObject({ flush: false, reason: "cannot-pay-back", requestsAhead: 1 });
  });

  it("the window cap forces a flush that cannot pay back", () => {
    expect(windowCapTokens(200_000)).toBe(150_000);
    // A small window: Pi's compaction (window minus its 16,384-token reserve) comes first.
    expect(windowCapTokens(32_000)).toBe(15_616);
    expect(decideFlush(shortSession({ context: { tokens: 149_999, contextWindow: 200_000 } }))).toMatchObject({ flush: false, reason: "cannot-pay-back" });
    expect(decideFlush(shortSession({ context: { tokens: 150_000, contextWindow: 200_000 } }))).toMatchObject({ flush: true, reason: "window-cap" });
    // Right after a compaction Pi does not know the size: no cap without a figure.
    expect(decideFlush(shortSession({ context: { tokens: null, contextWindow: 200_000 } }))).toMatchObject({ flush: false });
    // With nothing pending there is nothing a flush could free.
    expect(decideFlush(shortSession({ pending: { rawTokens: 0, replacementTokens: 0, summarizerInputTokens: 0, summarizerOutputTokens: 0 }, context: { tokens: 190_000, contextWindow: 200_000 } }))).toMatchObject({ flush: false, reason: "nothing-pending" });
  });

  it("the first change's position moves the decision: far back it is out of Anthropic's lookback and the whole history is written again", () => {
    const farBack = midTask({ span: { tokensFromFirstChange: 12_000, blocksFromFirstChange: 30, messageTokens: 50_000 } });
    expect(decideFlush(midTask())).toMatchObject({ flush: true });
    expect(decideFlush(farBack)).toMatchObject({ flush: false, reason: "cannot-pay-back", cost: expect.closeTo(51_075, 6) });
    // OpenAI's cache reads any shared prefix: the same change pays back there.
    expect(decideFlush({ ...farBack, rules: "openai" })).toMatchObject({ flush: true, reason: "pays-back", cost: expect.closeTo(7_650, 6) });
  });

  it("an unknown provider uses the Anthropic rules, the strictest", () => {
    const farBack = midTask({ span: { tokensFromFirstChange: 12_000, blocksFromFirstChange: 30, messageTokens: 50_000 } });
    for (const api of [undefined, "google-generative-ai", "some-new-api"]) {
      expect(priceRulesFor({ api }).caching).toBe("anthropic");
      expect(decideFlush({ ...farBack, rules: priceRulesFor({ api }) })).toEqual(decideFlush({ ...farBack, rules: "anthropic" }));
    }
    expect(decideFlush({ ...farBack, rules: priceRulesFor({ api: "openai-completions" }) })).toMatchObject({ flush: true });
  });

  it("counts a final reply's saving over the rest of the session (as long again as so far), and mid-task over the rest of the task", () => {
    // Three tasks of ten requests: the session is expected to run 30 more.
    expect(requestsAhead({ inCurrentTask: 0, completedTasks: 3, inCompletedTasks: 30 }, "final-reply")).toBe(30);
    // The first task's reply: as many again as it took.
    expect(requestsAhead({ inCurrentTask: 8, completedTasks: 0, inCompletedTasks: 0 }, "final-reply")).toBe(8);
    // One task so far: its length is both the average and the session so far.
    expect(requestsAhead({ inCurrentTask: 0, completedTasks: 1, inCompletedTasks: 40 }, "final-reply")).toBe(40);
    // Mid-task: the rest of the task.
    expect(requestsAhead({ inCurrentTask: 4, completedTasks: 3, inCompletedTasks: 30 }, "mid-task")).toBe(6);
    // In the first task: as many again as it took so far.
    expect(requestsAhead({ inCurrentTask: 7, completedTasks: 0, inCompletedTasks: 0 }, "mid-task")).toBe(7);
    // A task running longer than the average still expects one more.
    expect(requestsAhead({ inCurrentTask: 25, completedTasks: 3, inCompletedTasks: 30 }, "mid-task")).toBe(1);
  });
});

describe("the requests counted by task", () => {
  it("each request joins the current task; a final reply moves the task's requests to the finished ones", () => {
    const start = { inCurrentTask: 0, completedTasks: 0, inCompletedTasks: 0 };
    const three = afterRequest(afterRequest(afterRequest(start)));
    expect(three).toEqual({ inCurrentTask: 3, completedTasks: 0, inCompletedTasks: 0 });
    expect(start.inCurrentTask).toBe(0);
    expect(afterTask(three)).toEqual({ inCurrentTask: 0, completedTasks: 1, inCompletedTasks: 3 });
  });

  it("a final reply with no request counted in its task (the runtime never rendered it) leaves the history as it was", () => {
    const history = { inCurrentTask: 0, completedTasks: 2, inCompletedTasks: 9 };
    expect(afterTask(history)).toBe(history);
  });
});
