// The price models on small requests whose every block has a size chosen by hand: the expected
// bills below are worked out from the providers' rules, not read back from the code.
import { describe, expect, it } from "vitest";
import { cacheMeter, type ProviderRequest, type RequestBill } from "../../../core/src/cost/cache-rules.ts";
import { PRICE_MODELS, priceRulesFor, type ModelInfo } from "../../../core/src/cost/price-rules.ts";
import { SessionBill } from "../../../core/src/cost/session-bill.ts";
import type { AgentMessage, AssistantMessage, ToolResultMessage, UserMessage } from "../../../core/src/shapes/messages.ts";

// Wire sizes: a text block {"type":"text","text":"…"} is 25 characters around its text; the tool
// declarations travel as one JSON string (2 quotes); a thinking block with signature "sig" is 51
// characters around its text; {"type":"tool_use","id":"c1","name":"read","input":{"path":"a"}} is
// 64 characters (16 tokens); a tool result {"type":"tool_result","tool_use_id":"c1","content":"…",
// "is_error":false} is 71 around its text. A token is 4 characters.
const fill = (chars: number, ch: string) => ch.repeat(chars);
const tools = (tokens: number) => fill(tokens * 4 - 2, "t");
const system = (tokens: number) => fill(tokens * 4 - 25, "s");
const user = (tokens: number, ch = "u"): UserMessage => ({ role: "user", content: fill(tokens * 4 - 25, ch), timestamp: 0 });
const reply = (tokens: number, ch = "r"): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text: fill(tokens * 4 - 25, ch) }],
  timestamp: 0,
  stopReason: "stop",
});
/** Thinking of `thinkingTokens`, then a 16-token read call. */
const thinkAndCall = (thinkingTokens: number, id = "c1"): AssistantMessage => ({
  role: "assistant",
  content: [
    { type: "thinking", thinking: fill(thinkingTokens * 4 - 51, "k"), thinkingSignature: "sig" },
    { type: "toolCall", id, name: "read", arguments: { path: "a" } },
  ],
  timestamp: 0,
  stopReason: "toolUse",
});
const result = (tokens: number, id = "c1"): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "read",
  content: [{ type: "text", text: fill(tokens * 4 - 71, "o") }],
  isError: false,
  timestamp: 0,
});

/** 600 tokens of tools (under the 1,024 minimum alone) and 600 of system prompt: 1,200 together. */
const head = { tools: tools(600), system: system(600) };
const req = (messages: AgentMessage[], h: { tools: string; system: string } = head): ProviderRequest => ({ ...h, messages });

function expectBill(actual: RequestBill, expected: { input: number; read: number; write: number; uncached: number; billed: number }): void {
  expect({ input: actual.inputTokens, read: actual.cacheReadTokens, write: actual.cacheWriteTokens, uncached: actual.uncachedTokens }).toEqual({
    input: expected.input,
    read: expected.read,
    write: expected.write,
    uncached: expected.uncached,
  });
  expect(actual.billed).toBeCloseTo(expected.billed, 6);
}

/** 31 messages of 10 tokens each, user first and last; `changed` gets other text of the same size. */
function history(changed = -1): AgentMessage[] {
  const out: AgentMessage[] = [];
  for (let i = 0; i < 31; i++) {
    const ch = i === changed ? "x" : i % 2 ? "r" : "u";
    out.push(i % 2 ? reply(10, ch) : user(10, ch));
  }
  return out;
}

describe("anthropic rules", () => {
  it("writes the whole first request at 1.25× and reads it back when one exchange is appended", () => {
    const meter = cacheMeter("anthropic");
    expectBill(meter.bill(req([user(100)])), { input: 1300, read: 0, write: 1300, uncached: 0, billed: 1625 });
    // The last breakpoint looks back two blocks and finds the first request's entry (1,300).
    expectBill(meter.bill(req([user(100), reply(50), user(100, "v")])), { input: 1450, read: 1300, write: 150, uncached: 0, billed: 130 + 187.5 });
  });

  it("a change more than 20 blocks before the last breakpoint rewrites everything after the system prompt", () => {
    const meter = cacheMeter("anthropic");
    expectBill(meter.bill(req(history())), { input: 1510, read: 0, write: 1510, uncached: 0, billed: 1887.5 });
    // The first message changed: the old entry is no prefix any more, and no boundary within 20
    // blocks of the last one matches; only the system prompt's entry (tools + system) is read.
    const changed = [...history(0), reply(10), user(10)];
    expectBill(meter.bill(req(changed)), { input: 1530, read: 1200, write: 330, uncached: 0, billed: 120 + 412.5 });
  });

  it("a change within 20 blocks of the last breakpoint reads the earlier entry before it", () => {
    const meter = cacheMeter("anthropic");
    meter.bill(req(history()));
    meter.bill(req([...history(), reply(10), user(10)]));
    // The reply appended by the second request changes: the first request's entry ends four
    // blocks before the new breakpoint, so its 1,510 tokens are read and the 40 after it written.
    const third = [...history(), reply(10, "x"), user(10), reply(10), user(10)];
    expectBill(meter.bill(req(third)), { input: 1550, read: 1510, write: 40, uncached: 0, billed: 151 + 50 });
  });

  it("finds an earlier entry 20 blocks before the breakpoint, but not 21", () => {
    /** `count` messages of 10 tokens, alternating, ending with a user message. */
    const appended = (count: number) => Array.from({ length: count }, (_, i) => ((count - i) % 2 ? user(10) : reply(10)));
    const near = cacheMeter("anthropic");
    near.bill(req([user(100)]));
    expectBill(near.bill(req([user(100), ...appended(20)])), { input: 1500, read: 1300, write: 200, uncached: 0, billed: 130 + 250 });
    // One block more and the first request's entry is out of reach: only the head is read.
    const far = cacheMeter("anthropic");
    far.bill(req([user(100)]));
    expectBill(far.bill(req([user(100), ...appended(21)])), { input: 1510, read: 1200, write: 310, uncached: 0, billed: 120 + 387.5 });
  });

  it("caches nothing while a prefix is under 1,024 tokens, and writes once it reaches them", () => {
    const small = { tools: tools(100), system: system(100) };
    const meter = cacheMeter("anthropic");
    expectBill(meter.bill(req([user(100)], small)), { input: 300, read: 0, write: 0, uncached: 300, billed: 300 });
    expectBill(meter.bill(req([user(100), reply(50), user(100)], small)), { input: 450, read: 0, write: 0, uncached: 450, billed: 450 });
    const grown = [user(100), reply(50), user(100), reply(300), user(400)];
    expectBill(meter.bill(req(grown, small)), { input: 1150, read: 0, write: 1150, uncached: 0, billed: 1437.5 });
    expectBill(meter.bill(req([...grown, reply(10), user(10)], small)), { input: 1170, read: 1150, write: 20, uncached: 0, billed: 115 + 25 });
  });

  it("on a model that strips it, bills the thinking of the open tool loop and drops earlier turns' thinking without breaking the prefix", () => {
    // claude-sonnet-4-5 strips earlier turns' thinking; its minimum is 1,024 tokens.
    const meter = cacheMeter(priceRulesFor(SONNET_4_5));
    meter.bill(req([user(100)]));
    // In the loop: 200 tokens of thinking are input. Read the first request (1,300), write the rest.
    expectBill(meter.bill(req([user(100), thinkAndCall(200), result(50)])), { input: 1566, read: 1300, write: 266, uncached: 0, billed: 130 + 332.5 });
    // A new user turn: that thinking is stripped (200 tokens fewer), and the loop's entry still
    // matches without it, up to the tool result (1,300 + 16 + 50).
    const next = [user(100), thinkAndCall(200), result(50), reply(50), user(100, "v")];
    expectBill(meter.bill(req(next)), { input: 1516, read: 1366, write: 150, uncached: 0, billed: 136.6 + 187.5 });
  });

  it("leaves tokens after the last breakpoint uncached when the request ends with an assistant message", () => {
    const meter = cacheMeter("anthropic");
    meter.bill(req([user(100)]));
    // The last breakpoint is the system prompt's: the first request's entry lies after it, out of reach.
    expectBill(meter.bill(req([user(100), reply(50)])), { input: 1350, read: 1200, write: 0, uncached: 150, billed: 120 + 150 });
  });
});

describe("openai rules", () => {
  it("sends the first request uncached and reads the shared prefix in 128-token steps from 1,024", () => {
    const meter = cacheMeter("openai");
    expectBill(meter.bill(req([user(100)])), { input: 1300, read: 0, write: 0, uncached: 1300, billed: 1300 });
    // 1,300 shared → 1,024 + 2 × 128 = 1,280 read.
    expectBill(meter.bill(req([user(100), reply(50), user(100, "v")])), { input: 1450, read: 1280, write: 0, uncached: 170, billed: 128 + 170 });
  });

  it("rounds down to the step: 1,151 shared tokens read 1,024, 1,152 read 1,152", () => {
    const h = { tools: tools(424), system: system(600) };
    const below = cacheMeter("openai");
    below.bill(req([user(127)], h));
    expect(below.bill(req([user(127), reply(10), user(10)], h)).cacheReadTokens).toBe(1024);
    const at = cacheMeter("openai");
    at.bill(req([user(128)], h));
    expect(at.bill(req([user(128), reply(10), user(10)], h)).cacheReadTokens).toBe(1152);
  });

  it("reads up to a change deep in history, rounded to the step", () => {
    const meter = cacheMeter("openai");
    meter.bill(req(history()));
    // The second message changed: 1,200 + 10 tokens are shared → 1,024 + 128 = 1,152.
    const changed = [...history(1), reply(10), user(10)];
    expectBill(meter.bill(req(changed)), { input: 1530, read: 1152, write: 0, uncached: 378, billed: 115.2 + 378 });
  });

  it("reads the longest prefix shared with any earlier request, not only the previous one", () => {
    const meter = cacheMeter("openai");
    meter.bill(req([user(100)]));
    meter.bill(req([user(100, "x")]));
    // The first request shares 1,300 tokens (→ 1,280), the previous one only the 1,200 of the head.
    expect(meter.bill(req([user(100), reply(50), user(100)])).cacheReadTokens).toBe(1280);
  });

  it("reads nothing when under 1,024 tokens are shared", () => {
    const small = { tools: tools(100), system: system(100) };
    const meter = cacheMeter("openai");
    meter.bill(req([user(100)], small));
    expectBill(meter.bill(req([user(100), reply(50), user(100)], small)), { input: 450, read: 0, write: 0, uncached: 450, billed: 450 });
  });

  it("bills the open tool loop's thinking as input and drops earlier turns' thinking (reasoning is discarded after each turn)", () => {
    const meter = cacheMeter("openai");
    meter.bill(req([user(100)]));
    // The loop is open: its 200 tokens of thinking are input, but do not enter the prefix key.
    expectBill(meter.bill(req([user(100), thinkAndCall(200), result(50)])), { input: 1566, read: 1280, write: 0, uncached: 286, billed: 128 + 286 });
    // A new user turn: that thinking is no longer input (1,716 − 200) and the prefix through the
    // result, 1,366 tokens without it, is still shared → 1,024 + 2 × 128 = 1,280.
    const next = [user(100), thinkAndCall(200), result(50), reply(50), user(100, "v")];
    expectBill(meter.bill(req(next)), { input: 1516, read: 1280, write: 0, uncached: 236, billed: 128 + 236 });
  });
});

describe("simple model", () => {
  // The wire text of the bench's earlier character-prefix model, written out by hand.
  const hello = '{"role":"user","content":[{"type":"text","text":"hello"}]}';
  const hi = '{"role":"assistant","content":[{"type":"text","text":"hi"}]}';
  const headChars = 400;
  const helloMsg: UserMessage = { role: "user", content: "hello", timestamp: 0 };
  const answer = (text: string): AssistantMessage => ({ role: "assistant", content: [{ type: "text", text }], timestamp: 0 });

  it("reads the common character prefix with the previous request at 0.1× and writes the rest at 1.25×", () => {
    const expected = [
      { tokens: (headChars + hello.length) / 4, cached: 0 },
      { tokens: (headChars + hello.length + hi.length) / 4, cached: (headChars + hello.length) / 4 },
      // "hi" becomes "ho": the shared characters run to the "h".
      { tokens: (headChars + hello.length + hi.length) / 4, cached: (headChars + hello.length + hi.indexOf("hi") + 1) / 4 },
    ];
    const requests = [[helloMsg], [helloMsg, answer("hi")], [helloMsg, answer("ho")]];
    const meter = cacheMeter("simple");
    requests.forEach((messages, i) => {
      const { tokens, cached } = expected[i]!;
      const billed = cached * 0.1 + (tokens - cached) * 1.25;
      const bill = meter.bill({ tools: "x".repeat(headChars), system: "", messages });
      expect(bill.inputTokens).toBe(tokens);
      expect(bill.cacheReadTokens).toBe(cached);
      expect(bill.cacheWriteTokens).toBe(tokens - cached);
      expect(bill.billed).toBeCloseTo(billed, 9);
    });
  });
});

describe("earlier turns' thinking, per model", () => {
  // 4,200 tokens of head (tools 2,000, system 2,200): over Haiku 4.5's 4,096-token minimum.
  const bigHead = { tools: tools(2_000), system: system(2_200) };
  const loop = [user(100), thinkAndCall(200), result(50)];
  const nextTurn = [...loop, reply(50), user(100, "v")];

  it("Sonnet 4.6 keeps it: after the next user turn the 200 thinking tokens are still input, and the loop's entry is read with them", () => {
    const meter = cacheMeter(priceRulesFor(SONNET_4_6));
    expectBill(meter.bill(req([user(100)], bigHead)), { input: 4_300, read: 0, write: 4_300, uncached: 0, billed: 5_375 });
    expectBill(meter.bill(req(loop, bigHead)), { input: 4_566, read: 4_300, write: 266, uncached: 0, billed: 430 + 332.5 });
    // 4,566 up to the tool result, thinking included, read back; the reply and the prompt written.
    expectBill(meter.bill(req(nextTurn, bigHead)), { input: 4_716, read: 4_566, write: 150, uncached: 0, billed: 456.6 + 187.5 });
  });

  it("Haiku 4.5 strips it: the same request is 200 tokens smaller and reads the loop's entry without them", () => {
    const meter = cacheMeter(priceRulesFor(HAIKU_4_5));
    expectBill(meter.bill(req([user(100)], bigHead)), { input: 4_300, read: 0, write: 4_300, uncached: 0, billed: 5_375 });
    expectBill(meter.bill(req(loop, bigHead)), { input: 4_566, read: 4_300, write: 266, uncached: 0, billed: 430 + 332.5 });
    expectBill(meter.bill(req(nextTurn, bigHead)), { input: 4_516, read: 4_366, write: 150, uncached: 0, billed: 436.6 + 187.5 });
  });
});

// Registry entries as Pi 1.6's pi-ai carries them (dollars per million tokens).
const SONNET_4_6: ModelInfo = { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-6", cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } };
const SONNET_4_5: ModelInfo = { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-5", cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } };
const HAIKU_4_5: ModelInfo = { api: "anthropic-messages", provider: "anthropic", id: "claude-haiku-4-5", cost: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 } };
const FABLE_5_1: ModelInfo = { api: "anthropic-messages", provider: "anthropic", id: "claude-fable-5-1", cost: { input: 10, output: 50, cacheRead: 0.25, cacheWrite: 12.5 } };

describe("priceRulesFor", () => {
  it("takes the multiples from the model's registry prices: Fable 5.1 reads at 0.025×, not 0.1×", () => {
    expect(priceRulesFor(SONNET_4_6)).toEqual({ model: "anthropic/claude-sonnet-4-6", inputPerMillion: 3, caching: "anthropic", read: 0.1, write: 1.25, uncached: 1, output: 5, thinkingKept: true, minCachedTokens: 1_024 });
    expect(priceRulesFor(FABLE_5_1)).toMatchObject({ caching: "anthropic", read: 0.025, write: 1.25, output: 5, thinkingKept: true });
    // gpt-5: $1.25 in, $10 out, $0.125 cache read, no write price.
    expect(priceRulesFor({ api: "openai-responses", provider: "openai", id: "gpt-5", cost: { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 } })).toMatchObject({ caching: "openai", read: 0.1, write: 1, output: 8, thinkingKept: false });
  });

  it("a Fable request is billed at its own read price: 1,300 tokens read cost 32.5", () => {
    const meter = cacheMeter(priceRulesFor(FABLE_5_1));
    expectBill(meter.bill(req([user(100)])), { input: 1_300, read: 0, write: 1_300, uncached: 0, billed: 1_625 });
    expectBill(meter.bill(req([user(100), reply(50), user(100, "v")])), { input: 1_450, read: 1_300, write: 150, uncached: 0, billed: 32.5 + 187.5 });
  });

  it("OpenAI-completions with Anthropic-style compat gets breakpoint rules, as Pi then adds cache_control", () => {
    const viaCompat = { api: "openai-completions", provider: "my-proxy", id: "claude-sonnet-4-6", compat: { cacheControlFormat: "anthropic" }, cost: SONNET_4_6.cost };
    expect(priceRulesFor(viaCompat)).toMatchObject({ caching: "anthropic", read: 0.1, write: 1.25, thinkingKept: true });
    // Pi detects OpenRouter's anthropic/* routes itself; an explicit compat value wins.
    const openRouter = { api: "openai-completions", provider: "openrouter", id: "anthropic/claude-haiku-4.5", cost: HAIKU_4_5.cost };
    expect(priceRulesFor(openRouter)).toMatchObject({ caching: "anthropic", thinkingKept: false, minCachedTokens: 4_096 });
    expect(priceRulesFor({ ...openRouter, compat: { cacheControlFormat: "none" } }).caching).toBe("openai");
    expect(priceRulesFor({ api: "openai-completions", provider: "openrouter", id: "openai/gpt-5", cost: { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 } }).caching).toBe("openai");
    // The request is then billed with breakpoints: a change far back rewrites everything after the system prompt.
    const meter = cacheMeter(priceRulesFor(viaCompat));
    meter.bill(req(history()));
    expect(meter.bill(req([...history(0), reply(10), user(10)])).cacheReadTokens).toBe(1_200);
  });

  it("a model without cache prices caches nothing: every request is billed whole, uncached", () => {
    const gpt4 = priceRulesFor({ api: "openai-responses", provider: "openai", id: "gpt-4", cost: { input: 30, output: 60, cacheRead: 0, cacheWrite: 0 } });
    expect(gpt4).toMatchObject({ caching: "none", read: 1, write: 1, output: 2 });
    const meter = cacheMeter(gpt4);
    expectBill(meter.bill(req([user(100)])), { input: 1_300, read: 0, write: 0, uncached: 1_300, billed: 1_300 });
    expectBill(meter.bill(req([user(100), reply(50), user(100, "v")])), { input: 1_450, read: 0, write: 0, uncached: 1_450, billed: 1_450 });
    expect(meter.readAfterChange(req([user(100), reply(50), user(100, "v")]), 2, 2)).toEqual({ totalTokens: 1_450, readTokens: 0 });
  });

  it("an unknown model falls back to the strictest rules: Anthropic-style, 0.1× and 1.25×, Sonnet's output price", () => {
    for (const model of [undefined, {}, { api: "anthropic-messages", provider: "mock", id: "m" }, { api: "google-generative-ai", id: "x", cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } }]) {
      expect(priceRulesFor(model)).toEqual(PRICE_MODELS.anthropic);
    }
    expect(PRICE_MODELS.anthropic).toMatchObject({ caching: "anthropic", read: 0.1, write: 1.25, output: 5, thinkingKept: true });
    // Known to cache automatically but not priced: OpenAI's stand-in, gpt-5.
    expect(priceRulesFor({ api: "openai-responses", provider: "custom", id: "my-model" })).toEqual(PRICE_MODELS.openai);
  });
});

describe("a session that switches models", () => {
  it("prices each request by the model it was sent to, starting the new model's cache empty", () => {
    const bill = new SessionBill();
    const first = [user(2_000)];
    const second = [...first, reply(50), user(100, "v")];
    const third = [...second, reply(50), user(100, "w")];
    bill.useRules(priceRulesFor(SONNET_4_6));
    bill.record(first, first);
    bill.record(second, second);
    // 2,000 written at 1.25×; then 2,000 read at 0.1× and 150 written.
    expect(bill.settle().sent).toBeCloseTo(2_500 + 200 + 187.5, 6);
    bill.useRules(priceRulesFor(FABLE_5_1));
    bill.record(third, third);
    // Fable's cache is empty: all 2,300 written at 1.25×.
    expect(bill.settle()).toMatchObject({ rules: "anthropic", requests: 3, sent: expect.closeTo(2_887.5 + 2_875, 6) });
    // The same model again keeps its cache: the next turn reads the 2,300 at Fable's 0.025×.
    bill.useRules(priceRulesFor(FABLE_5_1));
    const fourth = [...third, reply(50), user(100, "x")];
    bill.record(fourth, fourth);
    expect(bill.settle().sent).toBeCloseTo(2_887.5 + 2_875 + 2_300 * 0.025 + 150 * 1.25, 6);
  });
});

describe("what the next request reads after a change in history", () => {
  // A task's first call: the prompt (1,300 tokens with the head) was cached by the first request;
  // the second added a call with 200 tokens of thinking and its 50-token result.
  const first = [user(100)];
  const second = [user(100), thinkAndCall(200), result(50)];

  it("Anthropic: the longest earlier entry before the change, within 20 blocks of the next breakpoint", () => {
    const meter = cacheMeter("anthropic");
    meter.bill(req(first));
    meter.bill(req(second));
    // Stubbing the result keeps the prompt's entry (1,300), 3 blocks back from the next request's end.
    expect(meter.readAfterChange(req(second), 2, 2)).toEqual({ totalTokens: 1566, readTokens: 1300 });
    // A next request 25 blocks longer is out of reach of that entry: only the system prompt's (1,200) is read.
    expect(meter.readAfterChange(req(second), 2, 25)).toEqual({ totalTokens: 1566, readTokens: 1200 });
    // No change: the whole request was cached at its end.
    expect(meter.readAfterChange(req(second), 3, 2)).toEqual({ totalTokens: 1566, readTokens: 1566 });
    // Asked about a copy of that request (not the objects it billed), it works the chain out again: the same answers.
    expect(meter.readAfterChange(req(structuredClone(second)), 2, 2)).toEqual({ totalTokens: 1566, readTokens: 1300 });
    expect(meter.readAfterChange(req(structuredClone(second)), 2, 25)).toEqual({ totalTokens: 1566, readTokens: 1200 });
  });

  it("OpenAI: the prefix before the change, seen earlier, in its 128-token steps", () => {
    const meter = cacheMeter("openai");
    meter.bill(req(first));
    meter.bill(req(second));
    // Through the call (the open loop's thinking counts): 1,516 shared → 1,024 + 3 × 128.
    expect(meter.readAfterChange(req(second), 2, 2)).toEqual({ totalTokens: 1566, readTokens: 1408 });
    // A change in the prompt leaves the head: 1,200 → 1,152.
    expect(meter.readAfterChange(req(second), 0, 2)).toEqual({ totalTokens: 1566, readTokens: 1152 });
  });
});


describe("the pruner's own breakpoint at the frontier", () => {
  // 8,000 tokens of prompt, the oldest pending read (call 16, result 100), 40 blocks of exchanges
  // (400 tokens), then the newest read (call 16, result 2,000): the frontier is 42 blocks back.
  const call = (id: string): AssistantMessage => ({ role: "assistant", content: [{ type: "toolCall", id, name: "read", arguments: { path: "a" } }], timestamp: 0, stopReason: "toolUse" });
  const exchanges: AgentMessage[] = [];
  for (let i = 0; i < 20; i++) exchanges.push(reply(10), user(10, "e"));
  const before = [user(8_000), call("c0"), result(100, "c0"), ...exchanges];
  const last = [...before, call("c1"), result(2_000, "c1")];
  /** The newest result stubbed (20 tokens), then a turn of 24 blocks: the old entries are out of the lookback. */
  const nextTurn: AgentMessage[] = [];
  for (let i = 0; i < 12; i++) nextTurn.push(reply(10), user(10, "n"));
  const flushed = [...before, call("c1"), result(20, "c1"), ...nextTurn];
  const noHead = { tools: "", system: "" };

  it("the request after a flush of the newest batch reads the entry at the frontier, however far back", () => {
    const meter = cacheMeter("anthropic");
    // The breakpoint sits on the last block before the oldest pending result: message 1.
    meter.bill({ ...noHead, messages: before, extraBreakpoints: [1] });
    meter.bill({ ...noHead, messages: last, extraBreakpoints: [1] });
    // 8,792 tokens; the frontier's entry (8,016: the prompt and the old call) is read, the rest written.
    expectBill(meter.bill({ ...noHead, messages: flushed, extraBreakpoints: [1] }), { input: 8_792, read: 8_016, write: 776, uncached: 0, billed: 801.6 + 970 });
  });

  it("without it, the same request finds no entry within 20 blocks and writes everything", () => {
    const meter = cacheMeter("anthropic");
    meter.bill({ ...noHead, messages: before });
    meter.bill({ ...noHead, messages: last });
    expectBill(meter.bill({ ...noHead, messages: flushed }), { input: 8_792, read: 0, write: 8_792, uncached: 0, billed: 10_990 });
  });

  it("asked what a change after the frontier leaves readable, the meter counts the entry the caller's breakpoint holds", () => {
    const meter = cacheMeter("anthropic");
    meter.bill({ ...noHead, messages: before });
    meter.bill({ ...noHead, messages: last });
    // Changing message 44 with 24 blocks to come: nothing within the lookback, all 10,532 written again…
    expect(meter.readAfterChange({ ...noHead, messages: last }, 44, 24)).toEqual({ totalTokens: 10_532, readTokens: 0 });
    // …unless a breakpoint holds everything before message 2 (8,016 tokens).
    expect(meter.readAfterChange({ ...noHead, messages: last }, 44, 24, 2)).toEqual({ totalTokens: 10_532, readTokens: 8_016 });
    // A change before the frontier gains nothing from it.
    expect(meter.readAfterChange({ ...noHead, messages: last }, 1, 24, 2)).toEqual({ totalTokens: 10_532, readTokens: 0 });
  });
});
