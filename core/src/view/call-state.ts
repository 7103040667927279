// What was done to a tool call's result, as a view shows it, and the one test of whether that
// pruned it. Its own module so that every view (the session view, what was sent, spill recovery)
// asks the same question without importing the session view.

/**
 * raw: sent as it was; protected: kept by protection; the others: pruned, each its own way
 * (superseded: a later call made the output stale, and its stub names that call).
 */
export type CallState = "raw" | "summarized" | "superseded" | "deduped" | "spilled" | "compressed" | "protected";

/** Whether a call in this state was pruned: summarized, superseded, deduplicated, spilled to disk or compressed into a chain. */
export function isPrunedState(state: CallState): boolean {
  return state !== "raw" && state !== "protected";
}
