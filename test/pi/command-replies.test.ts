// The lines `/pruner now` and `/pruner compact` answer with, from what the runtime says it did.
import { describe, expect, it } from "vitest";
import { compactReply, flushReply } from "../../pi-extension/src/commands.ts";
import type { FlushResult } from "../../core/src/prune/flush.ts";
import type { ChainCompressionResult } from "../../core/src/prune/chain-plan.ts";

const usage = { input: 0, output: 0, cost: 0 };

describe("/pruner now", () => {
  it("names each batch's outcome and its refs", () => {
    const flushed: FlushResult = {
      entries: [],
      retry: [],
      usage,
      summarizerCalls: 1,
      outcomes: [
        { batchTurnIndex: 1, outcome: "summarized", rawChars: 3_000, summaryChars: 200, refs: ["t1", "t2"] },
        { batchTurnIndex: 2, outcome: "skipped-trivial", rawChars: 40, summaryChars: 0, refs: [] },
      ],
    };
    expect(flushReply({ kind: "flushed", flushed })).toBe("pi-pruner: flushed 2 batch(es): summarized t1,t2; skipped-trivial");
    expect(flushReply({ kind: "flushed", flushed: { ...flushed, outcomes: [] } })).toBe("pi-pruner: flushed 0 batch(es): nothing new");
  });

  it("says when there was nothing to do, or the flush could not run", () => {
    expect(flushReply({ kind: "nothing-pending" })).toBe("pi-pruner: nothing pending to summarize");
    expect(flushReply({ kind: "not-run" })).toBe("pi-pruner: flush did not run");
  });
});

describe("/pruner compact", () => {
  const result = (chains: string[], rangesSummarized: number): ChainCompressionResult => ({
    entries: [],
    chains: chains.map((blockId) => ({ blockId }) as ChainCompressionResult["chains"][number]),
    rangesSummarized,
    summarizerCalls: rangesSummarized,
    usage,
    fusionFailures: [],
  });

  it("names the chains it compressed and how many have a fused range summary", () => {
    expect(compactReply({ kind: "ran", compressed: result(["b1", "b2"], 1) })).toBe("pi-pruner: compressed 2 chain(s): b1, b2, 1 with a fused range summary");
    expect(compactReply({ kind: "ran", compressed: result(["b1"], 0) })).toBe("pi-pruner: compressed 1 chain(s): b1");
  });

  it("says when nothing was left, or why it did not run", () => {
    expect(compactReply({ kind: "ran", compressed: result([], 0) })).toBe("pi-pruner: no closed chain left to compress");
    expect(compactReply({ kind: "ran", compressed: undefined })).toBe("pi-pruner: no closed chain left to compress");
    expect(compactReply({ kind: "pruning-off" })).toBe("pi-pruner is off (/pruner on)");
    expect(compactReply({ kind: "compression-off" })).toBe("pi-pruner: chain compression is off (chainCompression.enabled)");
  });
});
