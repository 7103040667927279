// What the requests of a session sent, kept after each render in one step: the sizes for the status
// line, the count of requests by task, the last request and the markers it was rendered with (where
// a flush's first change is looked for), and the bill.
import { EMPTY_CONTROLS, afterRequest, afterTask, type AgentMessage, type ControlState, type RequestHistory } from "@pi-pruner/core";
import { RequestSizes, type Reclaim } from "./request-sizes.ts";
import type { LiveBill } from "./live-bill.ts";

export class RequestLedger {
  /** Sizes of the last request the render changed, raw and sent. */
  reclaim: Reclaim | undefined;
  /** Characters of what the last request sent, when the render changed it (else Pi's own count is right). */
  sentChars: number | undefined;
  /** Requests so far (one per `context` event) by task: the policy's estimate of the requests ahead. */
  history: RequestHistory = { inCurrentTask: 0, completedTasks: 0, inCompletedTasks: 0 };
  /** What the last request sent. */
  lastSent: readonly AgentMessage[] = [];
  /** The self-control markers that last request was rendered with. */
  sentControls: ControlState = EMPTY_CONTROLS;
  readonly bill: LiveBill;
  private readonly sizes = new RequestSizes();

  constructor(bill: LiveBill) {
    this.bill = bill;
  }

  /** The branch changed: no request of it was sent by this process yet; `history` is what the branch holds. */
  reset(history: RequestHistory): void {
    this.history = history;
    this.lastSent = [];
    this.sentControls = EMPTY_CONTROLS;
    this.reclaim = undefined;
    this.sentChars = undefined;
  }

  /** One request rendered: `raw` as Pi built it, `sent` as the render left it (the same array when nothing changed). */
  record(raw: readonly AgentMessage[], sent: readonly AgentMessage[], controls: ControlState): void {
    // When the render changed nothing, what is sent is what Pi counts: there is nothing to measure.
    if (sent !== raw) {
      this.reclaim = this.sizes.measure(raw, sent);
      this.sentChars = this.reclaim.sentChars;
    } else this.sentChars = undefined;
    this.history = afterRequest(this.history);
    this.lastSent = sent;
    this.sentControls = controls;
    this.bill.record(raw, sent);
  }

  /** The final reply ends a task: its requests join the finished tasks'. */
  completeTask(): void {
    this.history = afterTask(this.history);
  }
}
