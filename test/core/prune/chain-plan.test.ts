// Chain compression planning: which closed chains beyond the rolling window are compressed, with
// which block ids, and how a chain's batch summaries are fused into one range summary.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, chainBlocks, echoSummarizer, freshIndex, persist, piContext, playChain } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import { compressChains, estimateChainCompression, planChainCompression } from "../../../core/src/prune/chain-plan.ts";
import { estimateTokens, messageChars } from "../../../core/src/shapes/size.ts";
import type { Summarizer } from "../../../core/src/prune/summarizer-prompts.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, protectedTools: ["todo"], protectedPaths: ["**/skills/**/*.md"] };

describe("compression planning", () => {
  async function sixChains() {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    for (let n = 1; n <= 6; n++) await playChain(b, index, config, `chain ${n}`, [[{ name: "read", args: { path: `src/${n}.ts` }, result: big(`file ${n}`) }]]);
    return { b, index };
  }

  it("with K=3 the chains beyond the three newest are planned, oldest first, with monotonic block ids", async () => {
    const { b, index } = await sixChains();
    const plans = planChainCompression(piContext(b), index, config, { now: 1 });
    expect(plans.map((p) => [p.data.blockId, p.data.toolRefs])).toEqual([
      ["b1", ["t1"]],
      ["b2", ["t2"]],
      ["b3", ["t3"]],
    ]);
  });

  it("estimates what compressing the chains due now removes, from the first chain's first message, without planning them", async () => {
    const { b, index } = await sixChains();
    const sent = renderModelView(piContext(b), index, config).messages;
    const before = JSON.stringify(index);
    const estimate = estimateChainCompression(sent, index, config);
    expect(JSON.stringify(index)).toBe(before);
    // The three oldest chains: everything between each start and final reply but their summaries.
    const starts = sent.flatMap((m, i) => (m.role === "user" ? [i] : []));
    let removed = 0;
    let kept = 0;
    for (const start of starts.slice(0, 3)) {
      const end = sent.findIndex((m, i) => i > start && m.role === "assistant" && !m.content.some((c) => c.type === "toolCall"));
      for (const m of sent.slice(start + 1, end)) (m.role === "custom" ? (kept += messageChars(m)) : (removed += messageChars(m)));
    }
    expect(estimate).toEqual({ removedTokens: expect.any(Number), summaryTokens: expect.any(Number), firstChange: starts[0]! + 1 });
    expect(estimate.removedTokens).toBeCloseTo(estimateTokens(removed), -1);
    expect(estimate.summaryTokens).toBeCloseTo(estimateTokens(kept), -1);
    expect(estimate.removedTokens).toBeGreaterThan(0);
    // Once compressed, nothing is due.
    persist(b, (await compressChains(piContext(b), index, config, echoSummarizer, { now: 1 })).entries);
    expect(estimateChainCompression(renderModelView(piContext(b), index, config).messages, index, config)).toMatchObject({ removedTokens: 0 });
  });

  it("chains already compressed are not planned again; /pruner compact (all) takes every remaining closed chain", async () => {
    const { b, index } = await sixChains();
    const first = await compressChains(piContext(b), index, config, echoSummarizer, { now: 1 });
    persist(b, first.entries);
    expect(first.chains).toHaveLength(3);
    expect(planChainCompression(piContext(b), index, config)).toEqual([]);
    const all = await compressChains(piContext(b), index, config, echoSummarizer, { all: true, now: 2 });
    expect(all.chains.map((c) => c.blockId)).toEqual(["b4", "b5", "b6"]);
    // A rebuild from the session continues the numbering.
    persist(b, all.entries);
    expect(freshIndex(b).lastBlockNumber).toBe(6);
  });

  it("a chain with two batch summaries gets one fused range summary; one summary needs no fusion call", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await playChain(b, index, config, "two batches", [[{ name: "read", args: { path: "a.ts" }, result: big("A") }], [{ name: "read", args: { path: "b.ts" }, result: big("B") }]]);
    await playChain(b, index, config, "one batch", [[{ name: "read", args: { path: "c.ts" }, result: big("C") }]]);
    let calls = 0;
    const counting: Summarizer = async (r) => (calls++, echoSummarizer(r));
    const result = await compressChains(piContext(b), index, { ...config, chainCompression: { ...config.chainCompression, rollingWindow: 0 } }, counting, { now: 1 });
    expect(calls).toBe(1);
    expect(result.rangesSummarized).toBe(1);
    expect(result.chains[0]).toMatchObject({ blockId: "b1", bodySource: "range-summary", rangeSummaryText: "- fused: `t1` `t2` belong together" });
    expect(result.chains[1]).toMatchObject({ blockId: "b2", bodySource: "batch-summaries" });
    expect(result.chains[1]!.rangeSummaryText).toBeUndefined();
    expect(result.usage).toEqual({ input: 50, output: 10, cost: 0.0005 });
  });

  it("a failed fusion still compresses the chain, with its batch summaries as the body", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await playChain(b, index, config, "two batches", [[{ name: "read", args: { path: "a.ts" }, result: big("A") }], [{ name: "read", args: { path: "b.ts" }, result: big("B") }]]);
    const failing: Summarizer = async () => {
      throw new Error("HTTP 503");
    };
    const result = await compressChains(piContext(b), index, { ...config, chainCompression: { ...config.chainCompression, rollingWindow: 0 } }, failing);
    expect(result.fusionFailures).toEqual(["HTTP 503"]);
    expect(result.chains[0]).toMatchObject({ bodySource: "batch-summaries" });
    persist(b, result.entries);
    const [block] = chainBlocks(renderModelView(piContext(b), freshIndex(b), config).messages);
    expect(block).toContain("`t1` read output, summarized");
    expect(block).toContain("`t2` read output, summarized");
  });

  it("calls no summary covers are indexed at compression so context_tree_query can recover them", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await playChain(b, index, config, "tiny", [[{ name: "bash", args: { command: "echo hi" }, result: "hi" }]]);
    expect(index.calls.size).toBe(0); // trivial batch: skipped, never indexed
    const result = await compressChains(piContext(b), index, { ...config, chainCompression: { ...config.chainCompression, rollingWindow: 0 } }, echoSummarizer);
    expect(result.entries.map((e) => e.customType)).toEqual(["context-prune-index", "context-prune-chain"]);
    expect(result.chains[0]).toMatchObject({ toolRefs: ["t1"], bodySource: "call-list" });
    persist(b, result.entries);
    const rebuilt = freshIndex(b);
    expect(rebuilt.byShortRef.get("t1")?.record).toMatchObject({ toolName: "bash", resultText: "hi", args: { command: "echo hi" } });
    const [block] = chainBlocks(renderModelView(piContext(b), rebuilt, config).messages);
    expect(block).toBe('<compressed-chain id="b1" tools="t1">\n- `t1` bash echo hi\n</compressed-chain>');
  });
});
