// The flush choice weighs the pending batches at every turn's end, several ways mid-task: what a
// batch adds to the summarizer's request is worked out once and taken from the caller's memo after,
// also when the caller asks which outputs are stale and none is.
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { emptyIndex } from "../../../core/src/prune/prune-index.ts";
import type { Batch } from "../../../core/src/prune/flush.ts";
import { estimatePending } from "../../../core/src/prune/flush-choice.ts";
import { buildBatchRequest } from "../../../core/src/prune/summarizer-prompts.ts";
import { estimateTokens } from "../../../core/src/shapes/size.ts";

const SYSTEM = estimateTokens(buildBatchRequest([], 0).systemPrompt.length);
const stub = () => "s".repeat(40);

function readBatch(ids: string[]): Batch {
  return { turnIndex: 1, calls: ids.map((id, i) => ({ toolCallId: id, toolName: "read", args: { path: `${id}.ts` }, resultText: `${id} `.repeat(1_000), isError: false, turnIndex: 1, timestamp: i, resultTimestamp: i + 1 })) };
}

describe("the summarizer input of a pending batch", () => {
  it("with nothing stale, the memo's figure is used (a figure no batch of these sizes would give)", () => {
    const b = readBatch(["a", "b"]);
    const memo = new WeakMap<Batch, number>([[b, 7]]);
    const estimate = estimatePending([b], emptyIndex(), DEFAULT_CONFIG, stub, memo, () => false);
    expect(estimate.summarizerInputTokens).toBe(7 + SYSTEM);
  });

  it("worked out once and remembered: the second estimate asks the memo only", () => {
    const b = readBatch(["a", "b"]);
    const memo = new WeakMap<Batch, number>();
    const first = estimatePending([b], emptyIndex(), DEFAULT_CONFIG, stub, memo, () => false);
    const remembered = memo.get(b);
    expect(remembered).toBeGreaterThan(1_000);
    memo.set(b, 3);
    expect(estimatePending([b], emptyIndex(), DEFAULT_CONFIG, stub, memo, () => false).summarizerInputTokens).toBe(3 + SYSTEM);
    expect(first.summarizerInputTokens).toBe(remembered! + SYSTEM);
  });

  it("a stale output leaves the batch's figure alone: the live calls are worked out without the memo", () => {
    const b = readBatch(["a", "b"]);
    const memo = new WeakMap<Batch, number>([[b, 7]]);
    const live = estimatePending([readBatch(["b"])], emptyIndex(), DEFAULT_CONFIG, stub);
    const estimate = estimatePending([b], emptyIndex(), DEFAULT_CONFIG, stub, memo, (c) => c.toolCallId === "a");
    expect(estimate.summarizerInputTokens).toBe(live.summarizerInputTokens);
    expect(memo.get(b)).toBe(7);
  });
});
