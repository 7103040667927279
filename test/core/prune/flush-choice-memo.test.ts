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

describe("a call's summarizer input, remembered by its arguments", () => {
  const text = Array.from({ length: 400 }, (_, i) => (i % 50 === 7 ? `error TS2322: line ${i} is wrong` : `line ${i}: ok`)).join("\n");
  const call = { shortRef: "t1", toolName: "bash", args: { command: "npm test" }, resultText: text, isError: false };

  it("the same call asked twice gives the same request", () => {
    expect(buildBatchRequest([call], 2_000)).toEqual(buildBatchRequest([call], 2_000));
  });

  it("another budget, output or tool for the same arguments is worked out again, as a call never seen would be", () => {
    buildBatchRequest([call], 2_000);
    const fresh = (over: Partial<typeof call>, chars: number) => buildBatchRequest([{ ...call, args: { ...call.args }, ...over }], chars).prompt;
    expect(buildBatchRequest([call], 600).prompt).toBe(fresh({}, 600));
    expect(buildBatchRequest([call], 600).prompt).not.toBe(buildBatchRequest([call], 2_000).prompt);
    const shorter = text.slice(0, 3_000);
    expect(buildBatchRequest([{ ...call, resultText: shorter }], 2_000).prompt).toBe(fresh({ resultText: shorter }, 2_000));
    expect(buildBatchRequest([{ ...call, toolName: "read" }], 2_000).prompt).toBe(fresh({ toolName: "read" }, 2_000));
  });

  it("arguments that are no object (a damaged session) are summarized all the same", () => {
    const odd = { ...call, args: "npm test" as unknown as Record<string, unknown> };
    expect(buildBatchRequest([odd], 50_000).prompt).toContain("line 399: ok");
  });
});
