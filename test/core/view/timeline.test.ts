// The context timeline: one point per request with its raw and sent context, the provider's usage
// where the message carries it and an estimate where it does not, marks for what reshaped the
// context, and totals that bill the raw side under the same rules.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, echoSummarizer, lastBatch, persist } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { emptyIndex } from "../../../core/src/prune/prune-index.ts";
import { flushBatches } from "../../../core/src/prune/flush.ts";
import { PRUNE_CHAIN, PRUNE_STATS, type AnyEntry } from "../../../core/src/shapes/entries.ts";
import { REWIND_ENTRY, SHRINK_ENTRY } from "../../../core/src/control/control-entries.ts";
import { buildTimeline, branchPointsOf, DEFAULT_INPUT_PRICE, TimelineBuilder } from "../../../core/src/view/timeline.ts";
import { modelRequests } from "../../../core/src/view/request-views.ts";

const config = DEFAULT_CONFIG;

/** Sets the provider's usage on the assistant message just appended. */
function withUsage(b: SessionBuilder, usage: { input: number; output: number; cacheRead: number; cacheWrite: number; cost: { input: number; total: number } }, api = "anthropic-messages"): void {
  const message = (b.entry(b.lastId) as { message: Record<string, unknown> }).message;
  message.usage = usage;
  message.api = api;
}

/** A read summarized after its answer, then two plain prompts; the first two answers carry usage. */
async function session(): Promise<SessionBuilder> {
  const b = new SessionBuilder();
  b.user("look at x");
  b.assistant({ toolCalls: [{ name: "read", args: { path: "src/x.ts" } }] });
  withUsage(b, { input: 1000, output: 50, cacheRead: 0, cacheWrite: 0, cost: { input: 0.003, total: 0.00375 } });
  b.toolResult(b.lastToolCallIds[0]!, "read", big("X"));
  const batch = lastBatch(b, config);
  b.assistant("x is fine");
  withUsage(b, { input: 200, output: 10, cacheRead: 3000, cacheWrite: 0, cost: { input: 0.0006, total: 0.0017 } });
  persist(b, (await flushBatches([batch], emptyIndex(), config, echoSummarizer)).entries);
  b.custom(PRUNE_STATS, { callCount: 1, totalInputTokens: 900, totalOutputTokens: 40, totalCost: 0.0001 });
  b.user("and y?").assistant("y too");
  return b;
}

describe("context timeline", () => {
  it("has one point per request, with the provider's usage and cost where the message carries them", async () => {
    const b = await session();
    const timeline = buildTimeline(b.entries, { config });
    expect(timeline.points.map((p) => p.n)).toEqual([1, 2, 3]);
    expect(timeline.points.map((p) => p.entryId)).toEqual(modelRequests(b.entries).map((r) => r.entryId));
    const [first, second, third] = timeline.points;
    expect(first!.usage).toEqual({ input: 1000, output: 50, cacheRead: 0, cacheWrite: 0, cost: 0.00375 });
    expect(first!.cost).toBe(0.00375);
    expect(first!.costEstimated).toBe(false);
    expect(second!.usage?.cacheRead).toBe(3000);
    expect(second!.cost).toBe(0.0017);
    // The builder's zero usage is no usage: the third request's cost is our estimate.
    expect(third!.usage).toBeUndefined();
    expect(third!.costEstimated).toBe(true);
    expect(third!.cost).toBeGreaterThan(0);
    expect(third!.rules).toBe("openai");
  });

  it("shows the summarized read leaving the sent context while the raw one keeps it", async () => {
    const timeline = buildTimeline((await session()).entries, { config });
    const [, second, third] = timeline.points;
    expect(second!.sentChars).toBe(second!.rawChars);
    expect(third!.rawChars).toBeGreaterThan(second!.rawChars);
    expect(third!.sentChars).toBeLessThan(third!.rawChars - 1000);
    expect(third!.sentTokens).toBe(Math.ceil(third!.sentChars / 4));
    // Without pruning the third request would have sent the read whole: it costs more.
    expect(third!.costWithoutPruning).toBeGreaterThan(third!.cost);
    expect(second!.costWithoutPruning).toBeCloseTo(second!.cost, 12);
  });

  it("marks the flush before the request that first saw it, and totals cost, the estimate without pruning and the summarizer", async () => {
    const timeline = buildTimeline((await session()).entries, { config });
    const flush = timeline.marks.find((m) => m.kind === "flush");
    expect(flush?.beforeRequest).toBe(3);
    const { totals } = timeline;
    expect(totals.requests).toBe(3);
    expect(totals.estimatedRequests).toBe(1);
    expect(totals.summarizer).toEqual({ calls: 1, inputTokens: 900, outputTokens: 40, cost: 0.0001 });
    const sum = (f: (p: (typeof timeline.points)[number]) => number) => timeline.points.reduce((s, p) => s + f(p), 0);
    expect(totals.cost).toBeCloseTo(sum((p) => p.cost), 12);
    expect(totals.costWithoutPruning).toBeCloseTo(sum((p) => p.costWithoutPruning), 12);
    expect(totals.saving).toBeCloseTo(totals.costWithoutPruning - totals.cost - 0.0001, 12);
  });

  it("prices an estimate at the message's own input price, else the price model's default", () => {
    const b = new SessionBuilder();
    b.user("hi").assistant("hello");
    const [point] = buildTimeline(b.entries, { config }).points;
    const e = point!.estimate;
    expect(e.cacheRead + e.input + e.cacheWrite).toBeGreaterThan(0);
    const billed = e.cacheRead * 0.1 + e.cacheWrite * 1.25 + e.input;
    expect(point!.cost).toBeCloseTo((billed + e.output * 8) * DEFAULT_INPUT_PRICE.openai, 15);
  });

  it("marks chain compressions, rewinds and shrinks before the request that first saw them", () => {
    const b = new SessionBuilder();
    b.user("one").assistant("a");
    b.custom(PRUNE_CHAIN, { blockId: "b1", startUserTimestamp: 0 });
    b.user("two").assistant("b");
    b.custom(REWIND_ENTRY, { schema: "pi-mulligan", version: 1 });
    b.custom(SHRINK_ENTRY, { schema: "pi-mulligan", version: 1 });
    const timeline = buildTimeline(b.entries, { config });
    expect(timeline.marks.map((m) => [m.kind, m.beforeRequest])).toEqual([
      ["chain", 2],
      ["rewind", 3],
      ["shrink", 3],
    ]);
  });

  it("marks compactions and branch points", () => {
    const b = new SessionBuilder();
    b.user("one").assistant("a");
    const fork = b.lastId;
    b.user("two").assistant("b");
    b.compactionKeepingNothing("so far");
    b.user("three").assistant("c");
    const leaf = b.lastId;
    b.branchFrom(fork).user("other").assistant("d");
    const byId = new Map(b.entries.map((e) => [e.id, e]));
    const branch: AnyEntry[] = [];
    for (let id: string | null | undefined = leaf; id; id = (byId.get(id) as { parentId?: string | null }).parentId) branch.unshift(byId.get(id)!);
    const timeline = buildTimeline(branch, { config, branchPoints: branchPointsOf(b.entries) });
    expect(timeline.marks.map((m) => [m.kind, m.beforeRequest])).toEqual([
      ["branch", 2],
      ["compaction", 3],
    ]);
  });

  it("gives the same timeline built in pieces, or carried on after Pi appended, as built whole", async () => {
    const b = await session();
    const whole = buildTimeline(b.entries, { config });
    const pieces = new TimelineBuilder(b.entries, { config });
    let steps = 0;
    while (!pieces.step(0)) steps++;
    expect(steps).toBe(2);
    expect(pieces.timeline()).toEqual(whole);

    const cut = b.entries.length - 2;
    const live = new TimelineBuilder(b.entries.slice(0, cut), { config });
    live.step();
    expect(live.timeline().points).toHaveLength(2);
    expect(live.extend(b.entries)).toBe(true);
    expect(live.complete).toBe(false);
    live.step();
    expect(live.timeline()).toEqual(whole);
    // Another branch is not an extension.
    expect(live.extend(b.entries.slice(1))).toBe(false);
  });

  it("never totals a negative cost: a provider that billed less than our estimate scales the cost without pruning, it is not offset by it", async () => {
    // A small read summarized late, after long turns: the sent side rewrites what follows the read
    // (a cache write) where the raw side reads it from the cache, so this request costs more with
    // pruning, and the provider's own cost is far below our estimate of the difference.
    const b = new SessionBuilder();
    const cheap = () => withUsage(b, { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, cost: { input: 0.00003, total: 0.0001 } });
    b.user("look at x");
    b.assistant({ toolCalls: [{ name: "read", args: { path: "src/x.ts" } }] });
    cheap();
    b.toolResult(b.lastToolCallIds[0]!, "read", big("X"));
    const batch = lastBatch(b, config);
    for (let i = 0; i < 3; i++) {
      b.user(`explain part ${i}: ${"words ".repeat(4000)}`);
      b.assistant(`part ${i} is ${"fine ".repeat(4000)}`);
      cheap();
    }
    persist(b, (await flushBatches([batch], emptyIndex(), config, echoSummarizer)).entries);
    b.user("and now?").assistant("done");
    cheap();
    const timeline = buildTimeline(b.entries, { config });
    const last = timeline.points.at(-1)!;
    expect(last.sentChars).toBeLessThan(last.rawChars);
    expect(last.cost).toBe(0.0001);
    // Pruning made this request dearer (a rewrite billed as a cache write), and says so, in proportion.
    expect(last.costWithoutPruning).toBeGreaterThan(0);
    expect(last.costWithoutPruning).toBeLessThan(last.cost);
    for (const point of timeline.points) expect(point.costWithoutPruning).toBeGreaterThanOrEqual(0);
    expect(timeline.totals.cost).toBeGreaterThan(0);
    expect(timeline.totals.costWithoutPruning).toBeGreaterThan(0);
    expect(timeline.totals.costWithoutPruning).toBeCloseTo(timeline.points.reduce((s, p) => s + p.costWithoutPruning, 0), 12);
  });

  it("prices a request whose provider reported $0 (a model with no prices, like a local or scripted one) by our estimate", () => {
    const b = new SessionBuilder();
    b.user("hi").assistant("hello");
    withUsage(b, { input: 700, output: 20, cacheRead: 0, cacheWrite: 0, cost: { input: 0, total: 0 } });
    const [point] = buildTimeline(b.entries, { config }).points;
    expect(point!.usage?.input).toBe(700);
    expect(point!.costEstimated).toBe(true);
    expect(point!.cost).toBeGreaterThan(0);
    expect(point!.costWithoutPruning).toBeCloseTo(point!.cost, 12);
  });

  // Measured, not timed: the speed figures live in the benchmarks.
  it("builds the timeline of a 1,000-request session in one pass", () => {
    const b = new SessionBuilder();
    for (let i = 0; i < 500; i++) {
      b.user(`step ${i}`);
      b.assistant({ toolCalls: [{ name: "read", args: { path: `src/f${i}.ts` } }] });
      b.toolResult(b.lastToolCallIds[0]!, "read", `content ${i} `.repeat(50));
      b.assistant(`done ${i}`);
    }
    const timeline = buildTimeline(b.entries, { config });
    expect(timeline.points).toHaveLength(1000);
  });
});
