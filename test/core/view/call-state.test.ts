import { describe, expect, it } from "vitest";
import { isPrunedState, type CallState } from "../../../core/src/view/call-state.ts";

describe("isPrunedState", () => {
  it("a summarized, deduplicated, spilled or compressed call was pruned; a raw or protected one was not", () => {
    const states: CallState[] = ["raw", "summarized", "deduped", "spilled", "compressed", "protected"];
    expect(states.filter(isPrunedState)).toEqual(["summarized", "deduped", "spilled", "compressed"]);
  });
});
