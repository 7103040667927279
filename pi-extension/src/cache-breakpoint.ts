// The pruner's cache breakpoint on the payload Pi is about to send: at the frontier (the end of the
// history a flush keeps), and for one request after the frontier moved, at the previous frontier
// too. What one request marked is remembered for the next; core decides where the markers go.
import { markerWireOf, placeFrontierBreakpoint, type Batch, type BreakpointMemory, type ModelInfo } from "@pi-pruner/core";

export class FrontierBreakpoint {
  private memory: BreakpointMemory | undefined;

  /**
   * The payload to send with `pending` (the queue's batches, oldest first) to `model`, the one the
   * request is for (its api and provider say the payload's wire): the one given when nothing is added.
   */
  place(payload: unknown, pending: readonly Batch[], model: ModelInfo | undefined): unknown {
    const placed = placeFrontierBreakpoint(
      payload,
      markerWireOf(model),
      pending.flatMap((batch) => batch.calls.map((call) => call.toolCallId)),
      this.memory,
    );
    this.memory = placed.memory;
    return placed.payload;
  }

  /** Another session or branch: what the last request marked says nothing about the next. */
  reset(): void {
    this.memory = undefined;
  }
}
