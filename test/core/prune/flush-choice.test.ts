// Which pending batches a flush takes, case by case, with every input explicit: a meter that finds
// each message before a change still cached (1,000 tokens a message), summarizer inputs fixed in
// the memo the caller holds, and stubs of 40 characters, so each figure can be worked out by hand.
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { emptyIndex, type IndexedCall, type PruneIndex } from "../../../core/src/prune/prune-index.ts";
import type { Batch } from "../../../core/src/prune/flush.ts";
import {
  DEFAULT_SUMMARY_TOKENS_PER_CALL,
  frontierIn,
  frontierQueue,
  MAX_TAIL_BATCHES,
  chooseFlush,
  estimatePending,
  positionsIn,
  rewriteSpanOf,
  summaryTokensPerCall,
  turnBlocks,
  type CacheReadMeter,
  type FlushChoiceInputs,
} from "../../../core/src/prune/flush-choice.ts";
import { estimateChainCompression } from "../../../core/src/prune/chain-plan.ts";
import { rewriteSpan } from "../../../core/src/cost/flush-economics.ts";
import { SessionBill } from "../../../core/src/cost/session-bill.ts";
import { buildBatchRequest } from "../../../core/src/prune/summarizer-prompts.ts";
import { estimateTokens } from "../../../core/src/shapes/size.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";

const config = { ...DEFAULT_CONFIG, chainCompression: { ...DEFAULT_CONFIG.chainCompression, enabled: false } };

/** A pending batch of one read whose result was sent at `timestamp`. */
function batch(id: string, chars: number, timestamp: number): Batch {
  return { turnIndex: timestamp, calls: [{ toolCallId: id, toolName: "read", args: { path: `${id}.ts` }, resultText: "r".repeat(chars), isError: false, turnIndex: timestamp, timestamp: timestamp - 1, resultTimestamp: timestamp }] };
}

const user = (timestamp: number): AgentMessage => ({ role: "user", content: "u", timestamp });
const call = (id: string, timestamp: number): AgentMessage => ({ role: "assistant", content: [{ type: "toolCall", id, name: "read", arguments: {} }], timestamp, stopReason: "toolUse" } as AgentMessage);
const result = (id: string, timestamp: number, text = "r"): AgentMessage => ({ role: "toolResult", toolCallId: id, toolName: "read", content: [{ type: "text", text }], isError: false, timestamp });

/** A request of 60 messages: `old`'s call and result at 1 and 2, `recent`'s at 57 and 58, prompts between. */
function lastRequest(): AgentMessage[] {
  const messages: AgentMessage[] = [];
  for (let i = 0; i < 60; i++) {
    if (i === 1) messages.push(call("old", i));
    else if (i === 2) messages.push(result("old", i));
    else if (i === 57) messages.push(call("recent", i));
    else if (i === 58) messages.push(result("recent", i));
    else messages.push(user(i));
  }
  return messages;
}

/** Every message before the change is still cached; each is 1,000 tokens. */
const meter: CacheReadMeter = { readAfterChange: (sent, changedFrom) => ({ totalTokens: sent.length * 1_000, readTokens: changedFrom * 1_000 }) };

const stub = () => "s".repeat(40);

/** The summarizer's input fixed at 1,000 tokens for each batch. */
/** The summarizer's instructions, which each joined request carries once. */
const SYSTEM = estimateTokens(buildBatchRequest([], 0).systemPrompt.length);

function memoOf(...batches: Batch[]): WeakMap<Batch, number> {
  const memo = new WeakMap<Batch, number>();
  for (const b of batches) memo.set(b, 1_000);
  return memo;
}

/**
 * Mid-task, ten requests into a task, after two tasks of twenty: the rest of the task is ten
 * requests, the rest of the session fifty. `old` (sent at 2) and `recent` (at 58) are pending,
 * 20,000 characters (5,000 tokens) each.
 */
function midTask(overrides: Partial<FlushChoiceInputs> = {}) {
  const old = batch("old", 20_000, 2);
  const recent = batch("recent", 20_000, 58);
  const inputs: FlushChoiceInputs = {
    moment: "mid-task",
    pending: [old, recent],
    index: emptyIndex(),
    config,
    rules: "anthropic",
    history: { inCurrentTask: 10, completedTasks: 2, inCompletedTasks: 40 },
    context: { tokens: 60_000, contextWindow: 200_000 },
    lastSent: lastRequest(),
    controlChange: 60,
    nextBlocks: 0,
    meter,
    summarizedStub: stub,
    summarizerInputMemo: memoOf(old, recent),
    ...overrides,
  };
  return { old, recent, inputs };
}

describe("chooseFlush", () => {
  it("mid-task, when everything would rewrite almost the whole history, the newest batch alone is flushed and the older one stays", () => {
    const { old, inputs } = midTask();
    // Everything: 9,860 tokens removed (10,000 less two 10-token stubs and two 60-token summaries)
    // save 986 a request over ten; the change at message 2 rewrites 58,000 tokens, 48,140 of them
    // left, at 1.15×, plus 2,000 in and 120 out for the summarizer: it does not pay back.
    // The newest alone: 4,930 removed save 493 a request over the fifty left in the session; the
    // change at message 58 rewrites 2,000 tokens, all removed, plus 1,000 in and 60 out at 5×.
    expect(chooseFlush(inputs)).toEqual({ decision: { flush: true, reason: "pays-back", saving: 24_650, cost: 1_300 + SYSTEM, requestsAhead: 50 }, keep: [old] });
  });

  it("the batch the model has not seen yet is never a candidate and always stays", () => {
    const { old, recent, inputs } = midTask();
    const unseen = batch("unseen", 20_000, 70);
    const choice = chooseFlush({ ...inputs, pending: [old, recent, unseen], hold: unseen });
    expect(choice.keep).toEqual([old, unseen]);
    expect(choice.decision).toEqual(chooseFlush(inputs).decision);
  });

  it("a flush of everything that pays back takes everything but the held batch", () => {
    const { old, recent, inputs } = midTask();
    const unseen = batch("unseen", 20_000, 70);
    // The same 57,961 as above, but with 200 requests left in the task (after one task of 210) the
    // 986 a request saves pay it back.
    const long = { inCurrentTask: 10, completedTasks: 1, inCompletedTasks: 210 };
    const choice = chooseFlush({ ...inputs, pending: [old, recent, unseen], hold: unseen, history: long });
    expect(choice.decision).toMatchObject({ flush: true, reason: "pays-back", requestsAhead: 200 });
    expect(choice.keep).toEqual([unseen]);
  });

  it("a change of the agent's markers earlier in the last request is where the rewrite starts", () => {
    const { recent, inputs } = midTask({ pending: [] });
    const only = { ...inputs, pending: [recent] };
    // Alone, `recent` is first changed at 58: 2,000 tokens rewritten, all of them removed, and the
    // summarizer's 1,300; 493 a request over ten pay that back.
    expect(chooseFlush(only).decision).toEqual({ flush: true, reason: "pays-back", saving: 4_930, cost: 1_300 + SYSTEM, requestsAhead: 10 });
    // A rewind applying from message 10 rewrites from there, and the same flush no longer pays back.
    const rewound = chooseFlush({ ...only, controlChange: 10 });
    // 50,000 tokens from message 10, 45,070 left after the removal, at 1.15×, plus the summarizer's 1,300.
    expect(rewound.decision).toMatchObject({ flush: false, reason: "cannot-pay-back", cost: expect.closeTo(45_070 * 1.15 + 1_300 + SYSTEM, 6) });
  });

  it("the window cap flushes everything at once, whatever it costs", () => {
    const { inputs } = midTask({ context: { tokens: 150_000, contextWindow: 200_000 } });
    expect(chooseFlush(inputs)).toMatchObject({ decision: { flush: true, reason: "window-cap" }, keep: [] });
  });

  it("with nothing pending there is nothing to flush, and the held batch stays", () => {
    const unseen = batch("unseen", 20_000, 70);
    const { inputs } = midTask({ pending: [unseen], hold: unseen });
    expect(chooseFlush(inputs)).toEqual({ decision: { flush: false, reason: "nothing-pending", saving: 0, cost: 0, requestsAhead: 10 }, keep: [unseen] });
  });

  it("on a final reply only flushing everything is weighed, over the rest of the session", () => {
    const { inputs } = midTask({ moment: "final-reply" });
    // 9,860 removed save 986 a request over fifty requests, against the same 57,961 as mid-task.
    expect(chooseFlush(inputs)).toEqual({ decision: { flush: false, reason: "cannot-pay-back", saving: 49_300, cost: expect.closeTo(48_140 * 1.15 + 2_600 + SYSTEM, 6), requestsAhead: 50 }, keep: [] });
  });

  it("on a final reply the closed chains it would compress count with the flush, and their first change too", () => {
    const closed: AgentMessage[] = [
      user(1),
      call("c1", 2),
      result("c1", 3, "r".repeat(8_000)),
      { role: "assistant", content: [{ type: "text", text: "done" }], timestamp: 4, stopReason: "stop" } as AgentMessage,
      user(5),
      { role: "assistant", content: [{ type: "text", text: "ok" }], timestamp: 6, stopReason: "stop" } as AgentMessage,
      user(7),
      call("recent", 8),
      result("recent", 9),
    ];
    const recent = batch("recent", 20_000, 9);
    const withChains = { ...config, chainCompression: { ...DEFAULT_CONFIG.chainCompression, enabled: true, rollingWindow: 0, fuseRangeSummary: false } };
    const chains = estimateChainCompression(closed, emptyIndex(), withChains);
    expect(chains.removedTokens).toBeGreaterThan(2_000);
    const base = { ...midTask().inputs, moment: "final-reply" as const, pending: [recent], lastSent: closed, controlChange: closed.length, summarizerInputMemo: memoOf(recent) };
    const without = chooseFlush(base).decision;
    const withThem = chooseFlush({ ...base, config: withChains }).decision;
    // The chains' removed tokens add to the saving over the same requests ahead…
    expect(withThem.saving - without.saving).toBeCloseTo(chains.removedTokens * 0.1 * 50, 6);
    // …and the rewrite starts at the chain's first change, before the batch's result.
    expect(chains.firstChange).toBeLessThan(8);
    expect(withThem.cost).toBeGreaterThan(without.cost);
  });

  it(`without the pruner's breakpoint (automatic caching), the newest ${MAX_TAIL_BATCHES} batches at most are tried alone`, () => {
    // Eleven batches of 1,000 tokens at the end of a request of 122 messages, the newest last. The
    // task has run as long as the average (one request ahead), the session 329 requests so far.
    const batches = Array.from({ length: 11 }, (_, i) => batch(`b${i}`, 4_000, 100 + i));
    const lastSent: AgentMessage[] = [...Array.from({ length: 100 }, (_, i) => user(i)), ...batches.flatMap((_, i) => [call(`b${i}`, 99 + i), result(`b${i}`, 100 + i)])];
    const { inputs } = midTask({ rules: "openai", pending: batches, lastSent, controlChange: lastSent.length, summarizerInputMemo: memoOf(...batches), history: { inCurrentTask: 29, completedTasks: 10, inCompletedTasks: 300 } });
    // The newest k: 930k tokens removed save 93k a request over 329; the rewrite from the oldest of
    // them is (2k - 1) × 1,000 tokens, 1,070k - 1,000 left, sent uncached once (0.9× more than a
    // read), and the summarizer 1,000k in and 60k out at 8×, with its instructions once. The net
    // grows with k: the newest eight win, not nine, ten or eleven.
    expect(chooseFlush(inputs)).toEqual({
      decision: { flush: true, reason: "pays-back", saving: expect.closeTo(93 * 329 * 8, 6), cost: expect.closeTo(0.9 * (1_070 * 8 - 1_000) + (1_000 + 60 * 8) * 8 + SYSTEM, 6), requestsAhead: 329 },
      keep: batches.slice(0, 3),
    });
  });

  it("with the pruner's breakpoint at the frontier, every candidate's rewrite is priced from it, and any number of the newest batches is weighed", () => {
    const batches = Array.from({ length: 11 }, (_, i) => batch(`b${i}`, 4_000, 100 + i));
    const lastSent: AgentMessage[] = [...Array.from({ length: 100 }, (_, i) => user(i)), ...batches.flatMap((_, i) => [call(`b${i}`, 99 + i), result(`b${i}`, 100 + i)])];
    const { inputs } = midTask({ pending: batches, lastSent, controlChange: lastSent.length, summarizerInputMemo: memoOf(...batches), history: { inCurrentTask: 29, completedTasks: 10, inCompletedTasks: 300 } });
    // All eleven: the rewrite starts at the frontier (the oldest batch) whichever are flushed, so
    // the more the better.
    expect(chooseFlush(inputs)).toMatchObject({ decision: { flush: true, reason: "pays-back", saving: expect.closeTo(93 * 329 * 11, 6) }, keep: [] });
  });
});

describe("rewriteSpanOf", () => {
  const sent = lastRequest();

  it("asks the meter what is written again from the first change on", () => {
    expect(rewriteSpanOf(sent, 58, 3, meter)).toEqual({ tokensFromFirstChange: 2_000, blocksFromFirstChange: 0, messageTokens: 2_000 });
  });

  it("a change past the end of the last request rewrites nothing of it", () => {
    expect(rewriteSpanOf(sent, 60, 3, meter)).toEqual({ tokensFromFirstChange: 0, blocksFromFirstChange: 0, messageTokens: 0 });
  });

  it("a meter that cannot tell leaves the estimate from the messages' sizes and blocks", () => {
    const lost: CacheReadMeter = {
      readAfterChange: () => {
        throw new Error("not the request billed last");
      },
    };
    expect(rewriteSpanOf(sent, 58, 3, lost)).toEqual(rewriteSpan(sent, 58, 3));
  });
});

describe("estimatePending", () => {
  const index = emptyIndex();

  it("a batch below minBatchChars gets no summarizer call: it counts for nothing", () => {
    expect(estimatePending([batch("small", 999, 1)], index, config, stub)).toEqual({ rawTokens: 0, replacementTokens: 0, summarizerInputTokens: 0, summarizerOutputTokens: 0 });
  });

  it("the outputs are replaced by a stub each and the summary, which the summarizer writes", () => {
    const b = batch("big", 4_000, 1);
    expect(estimatePending([b], index, config, stub, memoOf(b))).toEqual({ rawTokens: 1_000, replacementTokens: 10 + DEFAULT_SUMMARY_TOKENS_PER_CALL, summarizerInputTokens: 1_000 + SYSTEM, summarizerOutputTokens: DEFAULT_SUMMARY_TOKENS_PER_CALL });
  });

  it("the stub is asked for each call with the next ref", () => {
    const asked: string[] = [];
    const withRefs: PruneIndex = { ...emptyIndex(), lastRefNumber: 6 };
    estimatePending([batch("a", 4_000, 1), batch("b", 4_000, 2)], withRefs, config, (c: IndexedCall) => (asked.push(`${c.record.toolName} ${c.shortRef}`), "s"));
    expect(asked).toEqual(["read t7", "read t7"]);
  });
});

describe("the summarizer's side", () => {
  const callOf = (b: Batch) => b.calls.map((c, i) => ({ shortRef: `t${i + 1}`, toolName: c.toolName, args: c.args, resultText: c.resultText, isError: c.isError }));

  it("one joined request per flush: each batch's calls, and the instructions once", () => {
    const a = batch("a", 4_000, 1);
    const b = batch("b", 6_000, 2);
    const prompt = (x: Batch) => estimateTokens(buildBatchRequest(callOf(x), config.summarizerInputChars).prompt.length);
    expect(estimatePending([a, b], emptyIndex(), config, stub).summarizerInputTokens).toBe(prompt(a) + prompt(b) + SYSTEM);
  });

  it("an output a later call superseded costs no summarizer input or summary, only its stub", () => {
    const a = batch("a", 4_000, 1);
    const b = batch("b", 6_000, 2);
    const stale = estimatePending([a, b], emptyIndex(), config, stub, undefined, (c) => c.toolCallId === "a");
    const alone = estimatePending([b], emptyIndex(), config, stub);
    expect(stale.rawTokens).toBe(1_000 + 1_500);
    expect(stale.summarizerInputTokens).toBe(alone.summarizerInputTokens);
    expect(stale.summarizerOutputTokens).toBe(DEFAULT_SUMMARY_TOKENS_PER_CALL);
    expect(stale.replacementTokens).toBe(10 + 10 + DEFAULT_SUMMARY_TOKENS_PER_CALL);
    // All of a flush superseded: no summarizer request at all.
    expect(estimatePending([a], emptyIndex(), config, stub, undefined, () => true)).toMatchObject({ summarizerInputTokens: 0, summarizerOutputTokens: 0 });
  });

  it("a memo the caller holds is read first and filled once", () => {
    const b = batch("a", 4_000, 1);
    const memo = new WeakMap<Batch, number>();
    const first = estimatePending([b], emptyIndex(), config, stub, memo).summarizerInputTokens;
    expect(memo.get(b)).toBe(first - SYSTEM);
    memo.set(b, 7);
    expect(estimatePending([b], emptyIndex(), config, stub, memo).summarizerInputTokens).toBe(7 + SYSTEM);
  });

  it("a summary takes the session's average per pruned call; before the first, a short bullet each", () => {
    expect(summaryTokensPerCall(emptyIndex())).toBe(DEFAULT_SUMMARY_TOKENS_PER_CALL);
    const index = emptyIndex();
    index.summaries.push({ entryId: "s1", text: "x".repeat(400), refs: [{ shortId: "t1", toolCallId: "a" }, { shortId: "t2", toolCallId: "b" }], keys: ["a", "b"], toolNames: ["read"] });
    expect(summaryTokensPerCall(index)).toBe(50);
  });
});

describe("where batches sit in the last request", () => {
  it("each batch begins at its first result sent; a batch not sent yet has no place", () => {
    const old = batch("old", 10, 2);
    const recent = batch("recent", 10, 58);
    const unseen = batch("unseen", 10, 70);
    const positions = positionsIn(lastRequest(), [old, recent, unseen]);
    expect([...positions.entries()]).toEqual([
      [old, 2],
      [recent, 58],
    ]);
  });

  it("a result is matched by its call id and its time: the same id sent at another time is another result", () => {
    expect(positionsIn(lastRequest(), [batch("old", 10, 3)]).size).toBe(0);
  });

  it("blocks are counted as the provider receives them", () => {
    expect(turnBlocks([call("a", 1), result("a", 2), user(3)])).toBe(3);
    expect(turnBlocks([{ role: "assistant", content: [{ type: "text", text: "a" }, { type: "toolCall", id: "x", name: "read", arguments: {} }], timestamp: 1 } as AgentMessage])).toBe(2);
  });
});

describe("a flush after the pruner's breakpoint at the frontier", () => {
  // Wire sizes as the meter counts them: a prompt of 8,000 tokens (31,975 characters in a 25-character
  // block), a read call of 16 tokens, a result of n tokens (4n − 71 characters in its block), a
  // 10-token exchange. The oldest pending read (100 tokens) comes right after the prompt, then 40
  // blocks of exchanges, then the newest read (2,000 tokens): 10,532 tokens in all.
  const prompt = (tokens: number, timestamp: number): AgentMessage => ({ role: "user", content: "p".repeat(tokens * 4 - 25), timestamp });
  const readCall = (id: string, timestamp: number): AgentMessage => ({ role: "assistant", content: [{ type: "toolCall", id, name: "read", arguments: { path: "a" } }], timestamp, stopReason: "toolUse" } as AgentMessage);
  const readResult = (id: string, tokens: number, timestamp: number) => result(id, timestamp, "o".repeat(tokens * 4 - 71));
  const exchange = (timestamp: number): AgentMessage[] => [
    { role: "assistant", content: [{ type: "text", text: "r".repeat(15) }], timestamp, stopReason: "stop" } as AgentMessage,
    prompt(10, timestamp + 0.5),
  ];
  const before = [prompt(8_000, 0), readCall("c0", 1), readResult("c0", 100, 2)];
  for (let i = 0; i < 20; i++) before.push(...exchange(10 + i));
  const sent = [...before, readCall("c1", 43), readResult("c1", 2_000, 44)];
  const old = batch("c0", 400, 2);
  // 8,000 characters: 2,000 tokens, 1,930 removed once its 10-token stub and 60-token summary replace it.
  const newest = batch("c1", 8_000, 44);

  /** The session's bill after the request before the newest read and the one with it. */
  function billed(): SessionBill {
    const bill = new SessionBill();
    bill.record(before, before);
    bill.record(sent, sent);
    return bill;
  }

  it("the frontier is the first result of the oldest pending batch", () => {
    expect(frontierIn(sent, [old, newest])).toBe(2);
    expect(frontierIn(sent, [newest])).toBe(44);
    expect(frontierIn(sent, [])).toBeUndefined();
  });

  it("a batch too small for the summarizer does not hold the frontier back: it stays as it is", () => {
    // The old read is 329 characters, under the default minimum of 1,000.
    expect(frontierIn(sent, frontierQueue([old, newest], config.minBatchChars))).toBe(44);
    expect(frontierIn(sent, frontierQueue([old, newest], 100))).toBe(2);
    expect(frontierQueue([old], config.minBatchChars)).toEqual([]);
  });

  it("a flush of the newest batch with the frontier 42 blocks back is priced from the frontier, not as a write of the whole prefix", () => {
    // The next turn adds 24 blocks: no earlier entry lies within 20 blocks of its breakpoint.
    expect(rewriteSpanOf(sent, 44, 24, billed())).toMatchObject({ tokensFromFirstChange: 10_532 });
    // The breakpoint before message 2 holds the prompt and the old call (8,016 tokens): 2,516 are written.
    expect(rewriteSpanOf(sent, 44, 24, billed(), 2)).toEqual({ tokensFromFirstChange: 2_516, blocksFromFirstChange: 0, messageTokens: 2_516 });
    // The old batch's summary is still being written: it is queued (the frontier is before it) but
    // not a candidate.
    const choice = chooseFlush({
      moment: "mid-task",
      pending: [newest],
      queued: [old, newest],
      index: emptyIndex(),
      // The old read is small: summarized only with a lower minimum (else it would not hold the frontier).
      config: { ...config, minBatchChars: 100 },
      rules: "anthropic",
      history: { inCurrentTask: 10, completedTasks: 2, inCompletedTasks: 40 },
      context: { tokens: 12_000, contextWindow: 200_000 },
      lastSent: sent,
      controlChange: sent.length,
      nextBlocks: 23,
      meter: billed(),
      summarizedStub: stub,
      summarizerInputMemo: memoOf(old, newest),
    });
    // The newest alone: (2,516 − 1,930) at 1.25× instead of 0.1×, and the summarizer's 1,000 in and
    // 60 out at 5×, against 193 a request over the 50 left in the session.
    expect(choice).toEqual({ decision: { flush: true, reason: "pays-back", saving: expect.closeTo(9_650, 6), cost: expect.closeTo(586 * 1.15 + 1_300 + SYSTEM, 6), requestsAhead: 50 }, keep: [] });
  });

  it("under automatic caching there is no breakpoint to count on: the meter alone says what is read", () => {
    const openai = new SessionBill();
    openai.useRules("openai");
    openai.record(before, before);
    openai.record(sent, sent);
    // OpenAI reads the whole shared prefix before message 44 (8,532 tokens, in 128-token steps: 8,448).
    expect(rewriteSpanOf(sent, 44, 24, openai, 2)).toMatchObject({ tokensFromFirstChange: 10_532 - 8_448 });
  });
});
