// Why a request cost what it did: its read / written / uncached tokens (the provider's where the
// answer carries usage, else the meter's estimate) and, for a request that wrote back more than it
// added, the cause found between it and the request before. One hand-computed case per cause.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, echoSummarizer, lastBatch, persist } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { emptyIndex } from "../../../core/src/prune/prune-index.ts";
import { flushBatches } from "../../../core/src/prune/flush.ts";
import { PRUNE_CHAIN, PRUNE_SETTINGS, PRUNE_STATS } from "../../../core/src/shapes/entries.ts";
import { REWIND_ENTRY, SHRINK_ENTRY } from "../../../core/src/control/control-entries.ts";
import { branchCost, causeText, requestCostLine } from "../../../core/src/view/request-cost.ts";

const config = DEFAULT_CONFIG;

interface Usage {
  input: number;
  cacheRead: number;
  cacheWrite: number;
}

/** The message of the entry just appended. */
function lastMessage(b: SessionBuilder): Record<string, unknown> {
  return (b.entry(b.lastId) as unknown as { message: Record<string, unknown> }).message;
}

/** An answer from Claude Sonnet 4.6 over Anthropic's API, with the provider's usage when given. */
function answer(b: SessionBuilder, text: string, usage?: Usage, model = "claude-sonnet-4-6"): SessionBuilder {
  b.assistant(text);
  const message = lastMessage(b);
  Object.assign(message, { api: "anthropic-messages", provider: "anthropic", model });
  if (usage) message.usage = { ...usage, output: 20, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  return b;
}

/** Request 1 wrote its 4,000-token prompt to the cache. */
const FIRST: Usage = { input: 10, cacheRead: 0, cacheWrite: 4000 };
/** Request 2 added 1,000 tokens but read nothing: it wrote the 4,010 of request 1 again. */
const REWROTE: Usage = { input: 10, cacheRead: 0, cacheWrite: 5000 };

/** Two requests with `between` written between them; the second rewrote the cache. */
function rewriteAfter(between: (b: SessionBuilder) => void, second: Usage = REWROTE): ReturnType<typeof branchCost> {
  const b = new SessionBuilder();
  b.user("first question");
  answer(b, "first answer", FIRST);
  b.user("second question");
  between(b);
  answer(b, "second answer", second);
  return branchCost(b.entries, { config });
}

function secondRequest(between: (b: SessionBuilder) => void) {
  const cost = rewriteAfter(between).requests[1]!;
  // Hand-computed: 5,010 in, 4,010 sent before: 1,000 added; 5,010 not read, 4,010 of them rewritten.
  expect(cost).toMatchObject({ read: 0, written: 5000, uncached: 10, estimated: false, added: 1000, rewritten: 4010 });
  return cost;
}

describe("what a request cost and why", () => {
  it("takes the provider's figures and finds no rewrite in a request that read what the one before wrote", () => {
    const costs = rewriteAfter((b) => b.custom(PRUNE_SETTINGS, { version: "0.1.0", config: {} }), { input: 10, cacheRead: 4010, cacheWrite: 1000 });
    expect(costs.requests[0]).toMatchObject({ n: 1, read: 0, written: 4000, uncached: 10, estimated: false, added: 4010, rewritten: 0, causes: [] });
    // 5,020 in, 4,010 before: 1,010 added, all of it written or uncached. A settings record is no cause when nothing was rewritten.
    expect(costs.requests[1]).toMatchObject({ n: 2, read: 4010, written: 1000, uncached: 10, added: 1010, rewritten: 0, causes: [] });
    expect(costs.requests[1]!.firstChange).toBeUndefined();
    expect(causeText(costs.requests[1]!)).toBe("");
  });

  it("finds no rewrite where no cache held the previous request: a provider that reported none, a prompt below the minimum", () => {
    // The provider billed every token of request 1 uncached: there was no cache to lose, compaction or not.
    const b = new SessionBuilder();
    b.user("first question");
    answer(b, "first answer", { input: 4010, cacheRead: 0, cacheWrite: 0 });
    b.compaction({ firstKeptEntryId: b.lastId });
    b.user("second question");
    answer(b, "second answer", { input: 3000, cacheRead: 0, cacheWrite: 0 });
    expect(branchCost(b.entries, { config }).requests[1]).toMatchObject({ uncached: 3000, added: 0, rewritten: 0, causes: [], firstChange: 0 });
    // Estimated: request 1 is a few tokens, below Claude's 1,024-token minimum, so nothing was cached.
    const small = new SessionBuilder();
    small.user("hi");
    answer(small, "hello");
    small.compaction({ firstKeptEntryId: small.lastId });
    small.user("again");
    answer(small, "hello again");
    const [, second] = branchCost(small.entries, { config }).requests;
    expect(second).toMatchObject({ estimated: true, rewritten: 0, causes: [], firstChange: 0 });
  });

  it("names the flush and the refs it stubbed, the first changed message, and what the flush cost and saved", async () => {
    const b = new SessionBuilder();
    b.user("look at x");
    b.assistant({ toolCalls: [{ name: "read", args: { path: "src/x.ts" } }] });
    Object.assign(lastMessage(b), { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-6", usage: { ...FIRST, output: 20 } });
    b.toolResult(b.lastToolCallIds[0]!, "read", big("X", 6000));
    const batch = lastBatch(b, config);
    // Request 2 read request 1's 4,010 and wrote the 1,500-token result.
    answer(b, "x is fine", { input: 10, cacheRead: 4010, cacheWrite: 1500 });
    persist(b, (await flushBatches([batch], emptyIndex(), config, echoSummarizer)).entries);
    b.custom(PRUNE_STATS, { callCount: 1, totalInputTokens: 100, totalOutputTokens: 20, totalCost: 0.001 });
    b.user("and y?");
    // Request 3: the stub made it 1,710 in, less than request 2's 5,520: nothing added, 1,510 written or sent again.
    answer(b, "y too", { input: 10, cacheRead: 200, cacheWrite: 1500 });
    const { requests, flushes } = branchCost(b.entries, { config });
    expect(requests[1]).toMatchObject({ added: 1510, rewritten: 0 });
    const third = requests[2]!;
    expect(third).toMatchObject({ read: 200, written: 1500, uncached: 10, added: 0, rewritten: 1510, firstChange: 2 });
    expect(third.causes.map((c) => c.kind)).toEqual(["flush"]);
    expect(third.causes[0]!.refs).toEqual(["t1"]);
    expect(causeText(third)).toBe("a flush (summarized) stubbed t1 (first changed message: 3)");
    expect(flushes).toHaveLength(1);
    const flush = flushes[0]!;
    expect(flush).toMatchObject({ beforeRequest: 3, refs: ["t1"], rewriteTokens: 1510, laterRequests: 1, summarizer: { calls: 1, inputTokens: 100, outputTokens: 20, cost: 0.001 } });
    // The 6,000-character result left the request, its stub came in: a few hundred characters at most.
    expect(flush.savedCharsPerRequest).toBeGreaterThan(5500);
    expect(flush.savedCharsPerRequest).toBeLessThan(6002);
    expect(flush.savedTokens).toBe(Math.ceil(flush.savedCharsPerRequest / 4));
  });

  it("names a compressed chain", () => {
    const cost = secondRequest((b) => b.custom(PRUNE_CHAIN, { chainId: "c1" }));
    expect(cost.causes.map((c) => c.label)).toEqual(["a chain was compressed"]);
  });

  it("names Pi's compaction, with the first changed message", () => {
    const cost = secondRequest((b) => b.compaction({ firstKeptEntryId: b.lastId, summary: "we asked a first question" }));
    expect(cost.causes.map((c) => c.kind)).toEqual(["compaction"]);
    expect(cost.firstChange).toBe(0);
    expect(causeText(cost)).toBe("Pi compacted the context (first changed message: 1)");
  });

  it("names a rewind and a shrink", () => {
    expect(secondRequest((b) => b.custom(REWIND_ENTRY, { note: "wrong file" })).causes.map((c) => c.kind)).toEqual(["rewind"]);
    expect(secondRequest((b) => b.custom(SHRINK_ENTRY, { note: "too long" })).causes.map((c) => c.kind)).toEqual(["shrink"]);
  });

  it("names a settings change", () => {
    const cost = secondRequest((b) => b.custom(PRUNE_SETTINGS, { version: "0.1.0", config: {} }));
    expect(cost.causes.map((c) => c.label)).toEqual(["the settings changed"]);
  });

  it("names a model change, from Pi's record or from the answers' models", () => {
    expect(secondRequest((b) => b.modelChange("anthropic", "claude-sonnet-4-6")).causes.map((c) => c.kind)).toEqual(["model"]);
    const b = new SessionBuilder();
    b.user("first question");
    answer(b, "first answer", FIRST);
    b.user("second question");
    answer(b, "second answer", REWROTE, "claude-opus-4-6");
    const cost = branchCost(b.entries, { config }).requests[1]!;
    expect(cost.rewritten).toBe(4010);
    expect(cost.causes.map((c) => c.label)).toEqual(["the model changed (anthropic/claude-sonnet-4-6 → anthropic/claude-opus-4-6)"]);
  });

  it("names an idle gap past the cache's five-minute lifetime", () => {
    const b = new SessionBuilder();
    b.user("first question");
    answer(b, "first answer", FIRST);
    const sentFirst = lastMessage(b).timestamp as number;
    b.user("second question");
    answer(b, "second answer", REWROTE);
    lastMessage(b).timestamp = sentFirst + 6 * 60_000;
    const cost = branchCost(b.entries, { config }).requests[1]!;
    expect(cost.rewritten).toBe(4010);
    expect(cost.causes.map((c) => c.label)).toEqual(["an idle gap of 6 min, past the cache's 5 min lifetime"]);
  });

  it("names the lookback: the meter's estimate, when more than 20 blocks came after the last cache entry", () => {
    const session = (calls: number) => {
      const b = new SessionBuilder();
      b.user(big("Q", 8000));
      b.assistant({ toolCalls: Array.from({ length: calls }, (_, i) => ({ name: "read", args: { path: `f${i}.ts` } })) });
      Object.assign(lastMessage(b), { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-6" });
      for (const id of b.lastToolCallIds) b.toolResult(id, "read", `contents of ${id}`);
      answer(b, "done");
      return branchCost(b.entries, { config }).requests;
    };
    // 11 calls and 11 results: 22 blocks after request 1's cache entry, past the lookback: all written again.
    const [first, second] = session(11);
    expect(second!.estimated).toBe(true);
    expect(second!.read).toBe(0);
    const firstTotal = first!.read + first!.written + first!.uncached;
    expect(second!.rewritten).toBe(firstTotal);
    expect(second!.causes.map((c) => c.kind)).toEqual(["lookback"]);
    expect(causeText(second!)).toBe("22 blocks were added, past the provider's 20-block lookback");
    expect(requestCostLine(second!, String)).toContain("(estimate) · rewrote");
    // 10 calls: 20 blocks, within it: request 1's entry is read.
    const [, within] = session(10);
    expect(within!.read).toBe(firstTotal);
    expect(within!.rewritten).toBe(0);
  });
});
