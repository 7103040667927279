// What a branch still holds for the pruner to do, rebuilt from its entries alone: the tool-result
// batches no entry covers yet (so a reload loses nothing), and the requests made so far by task
// (the flush choice's estimate of the requests ahead). Pure: the Pi runtime keeps the queue.
import type { AssistantMessage, ToolResultMessage } from "../shapes/messages.ts";
import { occurrenceKey, toolCallsOf } from "../shapes/messages.ts";
import { isMessageEntry, type AnyEntry } from "../shapes/entries.ts";
import type { PruneConfig } from "../settings/config.ts";
import { captureBatch, type Batch } from "./flush.ts";
import type { PruneIndex } from "./prune-index.ts";
import type { RequestHistory } from "./flush-policy.ts";

/** Whether the index already holds this result (as a call or a duplicate's alias), or the frontier has passed it. */
export function isCovered(index: PruneIndex, toolCallId: string, resultTimestamp: number): boolean {
  const key = occurrenceKey(toolCallId, resultTimestamp);
  if (index.calls.has(key) || index.aliases.has(key)) return true;
  const frontier = index.frontier?.lastAttemptedTimestamp;
  return typeof frontier === "number" && resultTimestamp <= frontier;
}

/**
 * The batches of the branch's tool-using turns whose results the index does not cover, oldest
 * first: each turn's calls with their results, protected calls left out as capture leaves them,
 * numbered by the assistant messages before them. A user message closes a turn's results.
 */
export function unflushedBatches(branch: readonly AnyEntry[], index: PruneIndex, config: Pick<PruneConfig, "protectedTools" | "protectedPaths">): Batch[] {
  const batches: Batch[] = [];
  let assistant: AssistantMessage | undefined;
  let results: ToolResultMessage[] = [];
  let turn = 0;
  const close = () => {
    if (assistant && results.length) {
      const { batch } = captureBatch(assistant, results, turn, config);
      if (batch) {
        const fresh = batch.calls.filter((c) => !isCovered(index, c.toolCallId, c.resultTimestamp));
        if (fresh.length) batches.push({ turnIndex: turn, calls: fresh });
      }
    }
    assistant = undefined;
    results = [];
  };
  for (const entry of branch) {
    if (!isMessageEntry(entry)) continue;
    const message = entry.message;
    if (message.role === "assistant") {
      close();
      turn++;
      if (toolCallsOf(message).length) assistant = message;
    } else if (message.role === "toolResult" && assistant) {
      results.push(message);
    } else if (message.role === "user") close();
  }
  close();
  return batches;
}

/** Requests (assistant messages) on a branch by task: a final reply, one without tool calls, ends a task. */
export function requestHistoryOf(branch: readonly AnyEntry[]): RequestHistory {
  const history: RequestHistory = { inCurrentTask: 0, completedTasks: 0, inCompletedTasks: 0 };
  for (const entry of branch) {
    if (!isMessageEntry(entry)) continue;
    const message = entry.message;
    if (message?.role !== "assistant") continue;
    history.inCurrentTask++;
    if (toolCallsOf(message).length === 0) {
      history.completedTasks++;
      history.inCompletedTasks += history.inCurrentTask;
      history.inCurrentTask = 0;
    }
  }
  return history;
}
