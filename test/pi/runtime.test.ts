import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";
import { memorySpillStorage } from "../../core/src/session/blobs.ts";
import { PRUNE_CHAIN, PRUNE_INDEX, PRUNE_SUMMARY, type ChainData, type IndexData, type PersistEntry, type SpillStorage } from "../../core/src/shapes/entries.ts";
import type { AgentMessage, ToolResultMessage } from "../../core/src/shapes/messages.ts";
import { rebuildIndex } from "../../core/src/prune/prune-index.ts";
import { renderModelView } from "../../core/src/render/render.ts";
import { cacheMeter } from "../../core/src/cost/cache-rules.ts";
import { PRICE_MODELS } from "../../core/src/cost/price-rules.ts";
import type { Summarizer } from "../../core/src/prune/summarizer-prompts.ts";
import { EMPTY_CONTROLS } from "../../core/src/control/control-entries.ts";
import { requestHistoryOf } from "../../core/src/prune/pending-batches.ts";
import { PrunerRuntime, type RuntimeHost, type RuntimeOptions } from "../../pi-extension/src/runtime.ts";
import type { SummarizerCost } from "../../pi-extension/src/flush-sequence.ts";
import { compactReply, flushReply } from "../../pi-extension/src/commands.ts";
import { OnceReporter } from "../../pi-extension/src/once-reporter.ts";
import { statsReport, statusText } from "../../pi-extension/src/status.ts";
import { formatQueryResult } from "../../pi-extension/src/query-tool.ts";
import { SessionBuilder } from "../helpers/session-builder.ts";
import { big, echoSummarizer, persist, piContext, resultTexts } from "../helpers/prune-session.ts";

function runtime(overrides: Partial<typeof DEFAULT_CONFIG>, options: RuntimeOptions = {}) {
  const seen: string[] = [];
  const rt = new PrunerRuntime({ ...DEFAULT_CONFIG, ...overrides }, new OnceReporter((m) => seen.push(m)), options);
  return { rt, seen };
}

describe("budget triggers", () => {
  it("autoBudgetThreshold fires when the context share reaches it", () => {
    const { rt } = runtime({ autoBudgetThreshold: 0.5 });
    expect(rt.budgetTrigger(40_000, 100_000)).toBeUndefined();
    expect(rt.budgetTrigger(50_000, 100_000)).toBe("budget");
  });

  it("budgetTurnDelta fires on a jump between two turns, never on the first turn after a reload", () => {
    const { rt } = runtime({ budgetTurnDelta: 0.2 });
    expect(rt.budgetTrigger(50_000, 100_000)).toBeUndefined();
    expect(rt.budgetTrigger(60_000, 100_000)).toBeUndefined();
    expect(rt.budgetTrigger(85_000, 100_000)).toBe("budget-delta");
    rt.rebuild([]);
    expect(rt.budgetTrigger(99_000, 100_000)).toBeUndefined();
  });

  it("unknown usage (right after a compaction) is no trigger and keeps the previous share", () => {
    const { rt } = runtime({ budgetTurnDelta: 0.2 });
    rt.budgetTrigger(30_000, 100_000);
    expect(rt.budgetTrigger(null, 100_000)).toBeUndefined();
    expect(rt.budgetTrigger(55_000, 100_000)).toBe("budget-delta");
  });

  it("both off by default", () => {
    const { rt } = runtime({});
    expect(rt.budgetTrigger(99_000, 100_000)).toBeUndefined();
  });
});

describe("reporting", () => {
  it("the same problem is reported once per session", () => {
    const { rt, seen } = runtime({});
    rt.reporter.report("x", "summarizer failed");
    rt.reporter.report("x", "summarizer failed");
    expect(seen).toEqual(["summarizer failed"]);
  });
});

// The turn_end policy and the one flush-then-compress sequence, driven the way Pi drives them:
// a session built turn by turn, the runtime told of each turn's end, an injected summarizer and
// the in-memory spill storage.
describe("what a turn's end does", () => {
  /** A summarizer that records what it was asked (a batch or a fusion of a chain's summaries). */
  function recording(answer: Summarizer = echoSummarizer) {
    const asked: ("batch" | "fusion")[] = [];
    const summarizer: Summarizer = (request) => {
      asked.push(request.systemPrompt.includes("merge several summaries") ? "fusion" : "batch");
      return answer(request);
    };
    return { asked, summarizer };
  }

  function session(overrides: Partial<typeof DEFAULT_CONFIG>, answer?: Summarizer) {
    const costs: SummarizerCost[] = [];
    const { rt: live, seen } = runtime(overrides, { onCost: (cost) => costs.push(cost) });
    const spill = memorySpillStorage();
    const b = new SessionBuilder();
    live.startSession(b.entries, spill);
    const { asked, summarizer } = recording(answer);
    let usage = { tokens: 10_000 as number | null, contextWindow: 100_000 };
    let contextReads = 0;
    const host: RuntimeHost = {
      contextUsage: () => usage,
      summarizer: () => summarizer,
      contextMessages: () => (contextReads++, piContext(b)),
      controls: () => EMPTY_CONTROLS,
    };
    let turnIndex = 0;
    /** One tool-using turn: the assistant's calls, their results, then turn_end. */
    const toolTurn = (calls: { path: string; text: string }[]) => {
      b.assistant({ toolCalls: calls.map((c) => ({ name: "read", args: { path: c.path } })) });
      const ids = b.lastToolCallIds;
      calls.forEach((c, i) => b.toolResult(ids[i]!, "read", c.text));
      const messages = piContext(b);
      const results = messages.slice(-calls.length) as ToolResultMessage[];
      const message = messages[messages.length - calls.length - 1]!;
      return live.turnEnd({ message, toolResults: results, turnIndex: turnIndex++, outcome: "completed" }, host);
    };
    /** The final reply (Pi has appended it to the branch before turn_end). */
    const finalReply = (text = "done") => {
      b.assistant(text);
      const messages = piContext(b);
      return live.turnEnd({ message: messages[messages.length - 1]!, toolResults: [], turnIndex: turnIndex++, outcome: "completed" }, host);
    };
    /** One request: the context so far through the runtime's render, as Pi's `context` event does. */
    const request = () => live.render(piContext(b));
    return {
      rt: live, seen, costs, spill, b, asked, host, toolTurn, finalReply, request,
      setUsage: (tokens: number) => (usage = { tokens, contextWindow: 100_000 }),
      contextReads: () => contextReads,
    };
  }

  const types = (entries: readonly PersistEntry[]) => entries.map((e) => e.customType);

  it("a tool-using turn below every trigger is only captured: nothing is summarized yet", async () => {
    const s = session({});
    s.b.user("fix the build");
    expect(await s.toolTurn([{ path: "src/a.ts", text: big("A") }])).toEqual([]);
    expect(s.asked).toEqual([]);
    expect(s.rt.pendingCallCount()).toBe(1);
  });

  it("the final reply flushes the chain's batches, then compresses the chain it closed, both written at the next flush point", async () => {
    // The sequence itself, on every final reply (cacheAware off): the cache-aware policy is tested below.
    const s = session({ cacheAware: false, chainCompression: { ...DEFAULT_CONFIG.chainCompression, rollingWindow: 0 } });
    s.b.user("fix the build");
    await s.toolTurn([{ path: "src/a.ts", text: big("A") }]);
    await s.toolTurn([{ path: "src/b.ts", text: big("B") }]);
    // Both batches are asked about in one request; nothing is written after the answer.
    expect(await s.finalReply()).toEqual([]);
    expect(s.asked).toEqual(["batch"]);
    // The next prompt's start (or the session's shutdown) applies them; the compression then finds their two summaries and fuses them.
    const { entries, answered } = await s.rt.settleAsked(s.host);
    expect(answered).toBe(true);
    expect(s.asked).toEqual(["batch", "fusion"]);
    const firstChain = types(entries).indexOf(PRUNE_CHAIN);
    expect(firstChain).toBeGreaterThan(types(entries).lastIndexOf(PRUNE_SUMMARY));
    const chain = entries[firstChain] as { data: ChainData };
    expect(chain.data.toolRefs).toEqual(["t1", "t2"]);
    expect(chain.data.rangeSummaryText).toContain("belong together");
    expect(s.rt.pendingCallCount()).toBe(0);
    // The summarizer's spending is told as it happens, with the session's running total.
    expect(s.costs.map((c) => [c.cost, c.totalCost])).toEqual([
      [0.001, 0.001],
      [0.0005, 0.0015],
    ]);
  });

  it("a budget trigger flushes mid-task without compressing: the chain is still open", async () => {
    const s = session({ autoBudgetThreshold: 0.5, chainCompression: { ...DEFAULT_CONFIG.chainCompression, rollingWindow: 0 } });
    s.b.user("fix the build");
    s.setUsage(60_000);
    const entries = await s.toolTurn([{ path: "src/a.ts", text: big("A") }]);
    expect(s.asked).toEqual(["batch"]);
    expect(types(entries)).toContain(PRUNE_SUMMARY);
    expect(types(entries)).not.toContain(PRUNE_CHAIN);
    expect(s.contextReads()).toBe(0);
    expect(s.rt.pendingCallCount()).toBe(0);
  });

  it('with pruneOn "on-demand" a final reply neither flushes nor compresses; /pruner now does', async () => {
    const s = session({ pruneOn: "on-demand", chainCompression: { ...DEFAULT_CONFIG.chainCompression, rollingWindow: 0 } });
    s.b.user("fix the build");
    await s.toolTurn([{ path: "src/a.ts", text: big("A") }]);
    expect(await s.finalReply()).toEqual([]);
    expect(s.asked).toEqual([]);
    expect(s.contextReads()).toBe(0);
    expect(s.rt.pendingCallCount()).toBe(1);
    const now = await s.rt.flushes.flushCommand(s.host);
    expect(flushReply(now.outcome)).toBe("pi-pruner: flushed 1 batch(es): summarized t1");
    expect(types(now.entries)).toContain(PRUNE_SUMMARY);
    expect(types(now.entries)).not.toContain(PRUNE_CHAIN);
    expect(s.rt.pendingCallCount()).toBe(0);
    expect(flushReply((await s.rt.flushes.flushCommand(s.host)).outcome)).toBe("pi-pruner: nothing pending to summarize");
  });

  it("a failing summarizer leaves the batch pending and persists nothing of it; the next flush retries it", async () => {
    let down = true;
    const flaky: Summarizer = async (request) => {
      if (down) throw new Error("connection refused");
      return echoSummarizer(request);
    };
    const s = session({ cacheAware: false }, flaky);
    s.b.user("fix the build");
    await s.toolTurn([{ path: "src/a.ts", text: big("A") }]);
    expect(await s.finalReply()).toEqual([]);
    const { entries } = await s.rt.settleAsked(s.host);
    expect(types(entries)).not.toContain(PRUNE_SUMMARY);
    expect(types(entries)).not.toContain(PRUNE_INDEX);
    expect(s.rt.pendingCallCount()).toBe(1);
    expect(s.seen).toEqual(["pi-pruner: summarizer failed (connection refused); raw outputs stay in context and the batch will be retried"]);
    down = false;
    expect(flushReply((await s.rt.flushes.flushCommand(s.host)).outcome)).toBe("pi-pruner: flushed 1 batch(es): summarized t1");
    expect(s.rt.pendingCallCount()).toBe(0);
  });

  it("/pruner compact summarizes what is pending first, then compresses every closed chain, ignoring the rolling window", async () => {
    const s = session({});
    s.b.user("fix the build");
    await s.toolTurn([{ path: "src/a.ts", text: big("A") }]);
    await s.toolTurn([{ path: "src/b.ts", text: big("B") }]);
    s.b.assistant("done"); // a final reply the runtime was not told of: its batches are still pending
    expect(s.rt.pendingCallCount()).toBe(2);
    const compact = await s.rt.flushes.compactCommand(s.host);
    expect(s.asked).toEqual(["batch", "fusion"]);
    expect(compactReply(compact.outcome)).toMatch(/^pi-pruner: compressed 1 chain\(s\): \S+, 1 with a fused range summary$/);
    expect(types(compact.entries).indexOf(PRUNE_CHAIN)).toBeGreaterThan(types(compact.entries).lastIndexOf(PRUNE_SUMMARY));
    expect(compactReply((await s.rt.flushes.compactCommand(s.host)).outcome)).toBe("pi-pruner: no closed chain left to compress");
  });

  it("an oversized result goes to the spill storage at once, and the query tool reads it back from there", async () => {
    const s = session({ spillThreshold: 5_000 });
    s.b.user("look at the log");
    const log = Array.from({ length: 300 }, (_, i) => `line ${i}: ${"y".repeat(20)}`).join("\n");
    const entries = await s.toolTurn([{ path: "build.log", text: log }]);
    const record = (entries.find((e) => e.customType === PRUNE_INDEX) as { data: IndexData }).data.toolCalls![0]!;
    expect(record.resultText).toBe("");
    expect(s.spill.files.get(record.spillPath!)).toBe(log);
    expect(s.rt.pendingCallCount()).toBe(0);
    const answer = await formatQueryResult(["t1"], s.rt.index, s.rt.spill);
    expect(answer).toContain(log);
  });

  it("when the spill cannot be written the output stays inline, pending for the summarizer, and the problem is told once", async () => {
    const s = session({ spillThreshold: 5_000 });
    const full: SpillStorage = {
      write: () => {
        throw new Error("disk full");
      },
      read: async () => ({ ok: false, reason: "nothing was written" }),
    };
    s.rt.rebuild([], full);
    s.b.user("look at the log");
    expect(await s.toolTurn([{ path: "build.log", text: "z".repeat(6_000) }])).toEqual([]);
    expect(s.rt.pendingCallCount()).toBe(1);
    expect(s.seen).toEqual(["pi-pruner: could not write a spill file (disk full); the output stays inline"]);
  });

  it("a result left pending by a crash is spilled when the session starts again", () => {
    const b = new SessionBuilder().user("look at the log").toolUse("bash", { command: "cat build.log" }, "z".repeat(6_000));
    const { rt } = runtime({ spillThreshold: 5_000 });
    const spill = memorySpillStorage();
    const entries = rt.startSession(b.entries, spill);
    expect(types(entries)).toEqual([PRUNE_INDEX]);
    expect([...spill.files.values()]).toEqual(["z".repeat(6_000)]);
    expect(rt.pendingCallCount()).toBe(0);
  });

  describe("the cache-aware policy (the default)", () => {
    it("a short task is left alone: its final reply summarizes nothing and the history the model sees stays as it was", async () => {
      const s = session({});
      s.rt.useModel("anthropic-messages");
      s.b.user("fix the build");
      s.request();
      await s.toolTurn([{ path: "src/a.ts", text: big("A") }]);
      s.request();
      await s.toolTurn([{ path: "src/b.ts", text: big("B") }]);
      s.request();
      expect(await s.finalReply()).toEqual([]);
      expect(s.asked).toEqual([]);
      expect(s.rt.pendingCallCount()).toBe(2);
      expect(s.rt.lastDecision).toMatchObject({ moment: "final-reply", flush: false, reason: "cannot-pay-back", requestsAhead: 3 });
      const input = piContext(s.b);
      expect(s.rt.render(input)).toBe(input);
    });

    it("a long task flushes mid-task once the saving pays back; the read the model has not seen yet waits, and a rebuild from the file renders the same", async () => {
      const s = session({});
      s.rt.useModel("openai-completions");
      s.b.user("read the whole project");
      s.request();
      let turns = 0;
      let entries: PersistEntry[] = [];
      while (entries.length === 0 && turns < 40) {
        entries = await s.toolTurn([{ path: `src/f${turns}.ts`, text: big(`file ${turns}`, 8_000) }]);
        turns++;
        if (entries.length === 0) s.request();
      }
      expect(types(entries)).toContain(PRUNE_SUMMARY);
      expect(s.rt.lastDecision).toMatchObject({ moment: "mid-task", flush: true, reason: "pays-back" });
      // Not on the first turns, where too few requests lie ahead to repay the summarizer.
      expect(turns).toBeGreaterThan(5);
      expect(turns).toBeLessThan(40);
      // Every batch but the newest, in one request.
      expect(s.asked).toEqual(["batch"]);
      expect(s.rt.pendingCallCount()).toBe(1);

      persist(s.b, entries);
      const texts = resultTexts(s.request());
      expect(texts).toHaveLength(turns);
      expect(texts.slice(0, -1).filter((t) => t.includes("pruned: see ref"))).toHaveLength(turns - 1);
      expect(texts.at(-1)).toContain(`file ${turns - 1}`);
      // The epoch the runtime keeps is the one the file gives, so the editor shows what was sent.
      const rebuilt = rebuildIndex(s.b.entries).index;
      expect(rebuilt.epoch).toBe(s.rt.index.epoch);
      expect(JSON.stringify(renderModelView(piContext(s.b), rebuilt, s.rt.config).messages)).toBe(JSON.stringify(s.request()));
      expect(requestHistoryOf(s.b.entries)).toEqual({ inCurrentTask: turns, completedTasks: 0, inCompletedTasks: 0 });
    });

    it("mid-task on the Anthropic rules, a flush is priced from the pruner's breakpoint at the frontier: the long prompt before it stays cached, so everything pending is flushed", async () => {
      const s = session({});
      s.rt.useModel("anthropic-messages");
      // A long prompt: without a cache entry at the frontier, a change 20 blocks back would write all of it again.
      s.b.user(`review this spec:\n${"s".repeat(80_000)}`);
      s.request();
      for (let i = 0; i < 12; i++) {
        expect(await s.toolTurn([{ path: `src/small-${i}.ts`, text: big(`small ${i}`, 1_200) }])).toEqual([]);
        s.request();
      }
      expect(await s.toolTurn([{ path: "src/big.ts", text: big("big file", 40_000) }])).toEqual([]);
      s.request();
      // The big read has been sent once; the next turn's read waits for the model.
      const entries = await s.toolTurn([{ path: "src/next.ts", text: big("next", 1_200) }]);
      expect(types(entries)).toContain(PRUNE_SUMMARY);
      expect(s.rt.lastDecision).toMatchObject({ moment: "mid-task", flush: true, reason: "pays-back" });
      // What the flush rewrites starts at the frontier (the first small read), not at the spec: far
      // less than writing the spec's 20,000 tokens again.
      expect(s.rt.lastDecision!.cost).toBeLessThan(20_000 * (1.25 - 0.1));
      // One summarizer request for the thirteen batches; the read the model has not seen stays.
      expect(s.asked).toEqual(["batch"]);
      expect(s.rt.pendingCallCount()).toBe(1);
      persist(s.b, entries);
      const texts = resultTexts(s.request());
      expect(texts.filter((t) => t.includes("pruned: see ref"))).toHaveLength(13);
      expect(texts.at(-1)).toContain("next");
    });

    it("the window cap forces a flush mid-task that could not pay back", async () => {
      const s = session({});
      s.b.user("fix the build");
      s.request();
      expect(await s.toolTurn([{ path: "src/a.ts", text: big("A") }])).toEqual([]);
      s.request();
      expect(await s.toolTurn([{ path: "src/b.ts", text: big("B") }])).toEqual([]);
      expect(s.rt.lastDecision).toMatchObject({ flush: false, reason: "cannot-pay-back" });
      s.request();
      s.setUsage(80_000);
      const entries = await s.toolTurn([{ path: "src/c.ts", text: big("C") }]);
      expect(types(entries)).toContain(PRUNE_SUMMARY);
      expect(s.rt.lastDecision).toMatchObject({ flush: true, reason: "window-cap" });
      expect(s.asked).toEqual(["batch"]);
      expect(s.rt.pendingCallCount()).toBe(1);
    });

    it("the provider comes from the session's model; an unknown or absent one is priced by the Anthropic rules", () => {
      const { rt } = runtime({});
      for (const [api, rules] of [["openai-responses", "openai"], ["openai-completions", "openai"], ["anthropic-messages", "anthropic"], ["google-generative-ai", "anthropic"], [undefined, "anthropic"]] as const) {
        rt.useModel(api);
        expect(rt.rules, String(api)).toBe(rules);
      }
    });

    it("every request is billed with and without pruning under the session model's rules, for /pruner stats and the status line", async () => {
      const s = session({ cacheAware: false });
      s.rt.useModel("openai-responses");
      const requests: { raw: AgentMessage[]; sent: AgentMessage[] }[] = [];
      const request = () => {
        const raw = piContext(s.b);
        requests.push({ raw, sent: s.rt.render(raw) });
      };
      s.b.user("fix the build");
      request();
      await s.toolTurn([{ path: "src/a.ts", text: big("A", 8_000) }]);
      request();
      persist(s.b, await s.finalReply());
      // The next prompt's start applies what the final reply's flush asked.
      persist(s.b, (await s.rt.settleAsked(s.host)).entries);
      for (const word of ["next", "and next", "once more"]) {
        s.b.user(word);
        request();
        s.b.assistant(`${word}: done`);
      }
      const bill = s.rt.bill.settle()!;
      // The same requests billed apart, in order, with two meters of the same rules.
      const raw = cacheMeter("openai");
      const sent = cacheMeter("openai");
      let rawBilled = 0;
      let sentBilled = 0;
      for (const r of requests) {
        rawBilled += raw.bill({ system: "", tools: "", messages: r.raw }).billed;
        sentBilled += sent.bill({ system: "", tools: "", messages: r.sent }).billed;
      }
      expect(bill).toEqual({ rules: "openai", prices: PRICE_MODELS.openai, requests: 5, raw: rawBilled, sent: sentBilled });
      expect(bill.sent).toBeLessThan(bill.raw);
      const report = statsReport(s.rt.index, bill);
      expect(report).toContain("billed input over 5 request(s), estimated under the openai cache rules");
      expect(report).toContain("the system prompt and tools are the same either way and left out");
      expect(report).toMatch(/without pruning: [\d,]+\n {2}with pruning: [\d,]+ \(requests [\d,]+ \+ summarizer [\d,]+\), -\d+%/);
      expect(statusText(s.rt.config, s.rt.requests.reclaim, bill)).toMatch(/^prune: \S+→\S+ \(-\d+%\) · \$ -\d+%$/);
    });
  });
});
