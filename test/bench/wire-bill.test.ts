// The wire bill prices the request bodies a real `pi` sent, as the providers document their
// caches: Anthropic's breakpoints where the body has `cache_control` with the 20-block lookback
// and the minimum cacheable prefix, OpenAI's automatic prefix cache from 1,024 tokens in 128-token
// steps. Every case is computed by hand from blocks of known size (a block's tokens are its JSON
// characters / 4).
import { describe, expect, it } from "vitest";
import { anthropicWireMeter, billWire, openAiWireMeter, type ModelPrices } from "../../bench/lib/wire-bill.ts";

/** A text block of exactly `tokens` tokens (`{"type":"text","text":"…"}` is 25 characters around its text). */
function text(tokens: number, seed: string, breakpoint = false): Record<string, unknown> {
  const body = seed.padEnd(tokens * 4 - 25, ".");
  return breakpoint ? { type: "text", text: body, cache_control: { type: "ephemeral" } } : { type: "text", text: body };
}

/** Tools (500 tokens, a breakpoint), system (600, a breakpoint), then the messages: Pi's head. */
function anthropicBody(messages: { role: string; content: Record<string, unknown>[] }[]): Record<string, unknown> {
  return { model: "claude-sonnet-4-6", tools: [text(500, "tools", true)], system: [text(600, "system", true)], messages };
}

const firstTurn = (breakpoint: boolean) => ({ role: "user", content: [text(300, "prompt", breakpoint)] });

describe("the Anthropic wire meter", () => {
  it("writes every prefix a breakpoint caches on the first request and reads the newest entry on the next", () => {
    const meter = anthropicWireMeter();
    // Tools end at 500 tokens (under the 1,024 minimum: no entry), system at 1,100, the prompt at 1,400.
    expect(meter.bill(anthropicBody([firstTurn(true)]))).toEqual({ input: 1400, cacheRead: 0, cacheWrite: 1400, uncached: 0 });
    // Pi moves the last breakpoint to the new last message; the old one is found by the lookback.
    const next = anthropicBody([firstTurn(false), { role: "assistant", content: [text(200, "answer")] }, { role: "user", content: [text(300, "result", true)] }]);
    expect(meter.bill(next)).toEqual({ input: 1900, cacheRead: 1400, cacheWrite: 500, uncached: 0 });
  });

  it("finds an earlier entry 19 blocks before the breakpoint but not 20 (the breakpoint counts among the 20)", () => {
    const after = (blocks: number) => {
      const meter = anthropicWireMeter();
      meter.bill(anthropicBody([firstTurn(true)]));
      const added = Array.from({ length: blocks }, (_, i) => text(10, `b${i}`, i === blocks - 1));
      return meter.bill(anthropicBody([firstTurn(false), { role: "assistant", content: added }]));
    };
    // 19 blocks added: the prompt's entry (1,400) is the 20th block counting back from the breakpoint.
    expect(after(19)).toEqual({ input: 1590, cacheRead: 1400, cacheWrite: 190, uncached: 0 });
    // 20 added: out of reach; only the system breakpoint's own entry (1,100) is read, the rest written again.
    expect(after(20)).toEqual({ input: 1600, cacheRead: 1100, cacheWrite: 500, uncached: 0 });
  });

  it("caches nothing under the minimum, and leaves what follows the last breakpoint uncached", () => {
    const meter = anthropicWireMeter({ minCacheTokens: 2048, lookbackBlocks: 20 });
    const body = anthropicBody([firstTurn(false), { role: "assistant", content: [text(200, "answer")] }]);
    // The breakpoints end at 500 and 1,100 tokens: both under 2,048, so nothing is written or read.
    expect(meter.bill(body)).toEqual({ input: 1600, cacheRead: 0, cacheWrite: 0, uncached: 1600 });
    expect(meter.bill(body)).toEqual({ input: 1600, cacheRead: 0, cacheWrite: 0, uncached: 1600 });
    const low = anthropicWireMeter();
    // Under the 1,024 minimum the system entry is written; the assistant turn after it is uncached.
    expect(low.bill(body)).toEqual({ input: 1600, cacheRead: 0, cacheWrite: 1100, uncached: 500 });
    expect(low.bill(body)).toEqual({ input: 1600, cacheRead: 1100, cacheWrite: 0, uncached: 500 });
  });

  it("counts an earlier turn's thinking as prompt: changing it is a change of the prefix", () => {
    // `{"type":"thinking","thinking":"…","signature":"s"}` is 49 characters around its text: 200 tokens.
    const turn = (thinking: string) => ({ role: "assistant", content: [{ type: "thinking", thinking: thinking.padEnd(200 * 4 - 49, "."), signature: "s" }, text(50, "call")] });
    const meter = anthropicWireMeter();
    const first = anthropicBody([firstTurn(false), turn("first thoughts"), { role: "user", content: [text(100, "result", true)] }]);
    expect(meter.bill(first)).toEqual({ input: 1750, cacheRead: 0, cacheWrite: 1750, uncached: 0 });
    // The same request with that thinking rewritten: the blocks before it end at the prompt, where no
    // breakpoint made an entry, so only the system entry is read and the rest is written again.
    const changed = anthropicBody([firstTurn(false), turn("other thoughts"), { role: "user", content: [text(100, "result", true)] }]);
    expect(meter.bill(changed)).toEqual({ input: 1750, cacheRead: 1100, cacheWrite: 650, uncached: 0 });
  });

  it("keys a block by its message: the same blocks split into other messages are another prompt", () => {
    const meter = anthropicWireMeter();
    meter.bill(anthropicBody([{ role: "user", content: [text(300, "a"), text(300, "b", true)] }]));
    const split = meter.bill(anthropicBody([{ role: "user", content: [text(300, "a")] }, { role: "user", content: [text(300, "b", true)] }]));
    expect(split).toEqual({ input: 1700, cacheRead: 1100, cacheWrite: 600, uncached: 0 });
  });
});

/** A chat-completions message of exactly `tokens` tokens (`{"role":"user","content":"…"}` is 28 characters around its text). */
function message(tokens: number, seed: string, role = "user"): Record<string, unknown> {
  return { role, content: seed.padEnd(tokens * 4 - 24 - role.length, ".") };
}

describe("the OpenAI wire meter", () => {
  it("reads nothing on the first request and the shared prefix from 1,024 tokens in 128-token steps after", () => {
    const meter = openAiWireMeter();
    const head = [message(1000, "system", "system"), message(500, "task")];
    expect(meter.bill({ messages: head })).toEqual({ input: 1500, cacheRead: 0, cacheWrite: 0, uncached: 1500 });
    // 1,500 shared: 1,024 + 3 × 128.
    expect(meter.bill({ messages: [...head, message(300, "more")] })).toEqual({ input: 1800, cacheRead: 1408, cacheWrite: 0, uncached: 392 });
  });

  it("reads nothing when the shared prefix is under 1,024 tokens", () => {
    const meter = openAiWireMeter();
    meter.bill({ messages: [message(1000, "system", "system"), message(500, "task")] });
    expect(meter.bill({ messages: [message(1000, "system", "system"), message(500, "other")] })).toEqual({ input: 1500, cacheRead: 0, cacheWrite: 0, uncached: 1500 });
  });

  it("reads the longest prefix shared with any earlier request, into the characters of the first message that differs", () => {
    const meter = openAiWireMeter();
    const system = message(1000, "system", "system");
    const long = message(800, "a long tool result");
    const content = long.content as string;
    meter.bill({ messages: [system, long] });
    meter.bill({ messages: [system, message(100, "something else")] });
    // Of the changed message only `{"role":"user","content":"a long tool result` (44 characters, 11
    // tokens) matches the first request: 1,011 tokens shared, under the minimum.
    const changed = { role: "user", content: `a long tool result${"!".repeat(content.length - 18)}` };
    expect(meter.bill({ messages: [system, changed] })).toEqual({ input: 1800, cacheRead: 0, cacheWrite: 0, uncached: 1800 });
    // Its first 600 tokens of characters match: 1,600 shared with the first request, 1,024 + 4 × 128 read.
    const edited = { role: "user", content: `${content.slice(0, 600 * 4 - 28)}${"?".repeat(content.length - (600 * 4 - 28))}` };
    expect(meter.bill({ messages: [system, edited] })).toEqual({ input: 1800, cacheRead: 1536, cacheWrite: 0, uncached: 264 });
  });

  it("counts the tool declarations as the start of the prefix", () => {
    const meter = openAiWireMeter();
    const tools = [{ type: "function", function: { name: "read", description: "d".repeat(4000) } }];
    meter.bill({ tools, messages: [message(100, "task")] });
    expect(meter.bill({ tools, messages: [message(100, "task"), message(100, "next")] }).cacheRead).toBeGreaterThanOrEqual(1024);
    expect(meter.bill({ tools: [{ ...tools[0], function: { name: "read", description: "e".repeat(4000) } }], messages: [message(100, "task")] }).cacheRead).toBe(0);
  });
});

describe("a run's wire bill", () => {
  const sonnet: ModelPrices = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

  it("prices the agent's requests and the summarizer's as two conversations, and counts each", () => {
    const first = anthropicBody([firstTurn(true)]);
    const second = anthropicBody([firstTurn(false), { role: "assistant", content: [text(200, "answer")] }, { role: "user", content: [text(300, "result", true)] }]);
    const bill = billWire(
      "anthropic-messages",
      [
        { body: first, outputTokens: 100, summarizer: false },
        // The summarizer's body is the agent's first: its own conversation has no entry yet, so it writes all of it.
        { body: first, outputTokens: 40, summarizer: true },
        { body: second, outputTokens: 100, summarizer: false },
      ],
      sonnet,
    );
    expect(bill.agentRequests).toBe(2);
    expect(bill.summarizerCalls).toBe(1);
    expect(bill.tokens).toEqual({ input: 1400 + 1400 + 1900, cacheRead: 1400, cacheWrite: 1400 + 1400 + 500, uncached: 0 });
    expect(bill.summarizer).toMatchObject({ input: 1400, cacheWrite: 1400, outputTokens: 40 });
    expect(bill.outputTokens).toBe(240);
    expect(bill.peakContext).toBe(1900);
    // Agent: 1,400 + 500 written at $3.75, 1,400 read at $0.30, 200 output at $15; summarizer: 1,400 written, 40 output.
    const agentInput = 1900 * 3.75 + 1400 * 0.3;
    const summarizer = 1400 * 3.75 + 40 * 15;
    expect(bill.dollars).toBeCloseTo((agentInput + 200 * 15 + summarizer) / 1e6, 12);
    expect(bill.dollarsWithoutAgentOutput).toBeCloseTo((agentInput + summarizer) / 1e6, 12);
    expect(bill.summarizer.dollars).toBeCloseTo(summarizer / 1e6, 12);
  });
});
