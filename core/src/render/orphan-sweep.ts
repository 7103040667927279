// The orphan sweep: providers reject a tool result that does not directly follow its call, and a call
// without a result. The sweep restores that pairing after the other steps changed the messages.
import type { AgentMessage, AssistantMessage, ToolCallBlock, ToolResultMessage } from "../shapes/messages.ts";
import { findCallBlock, isFailedTurn } from "../shapes/messages.ts";

export interface OrphanSweepStats {
  orphansDropped: number;
  resultsReattached: number;
  resultsSynthesized: number;
}

export const MISSING_RESULT_TEXT = "[No result for this call is in the context.]";

function callBlocks(message: AssistantMessage): ToolCallBlock[] {
  if (isFailedTurn(message) || !Array.isArray(message.content)) return [];
  const out: ToolCallBlock[] = [];
  for (const block of message.content) if (block && block.type === "toolCall") out.push(block);
  return out;
}

function countCalls(message: AssistantMessage): number {
  let n = 0;
  if (!Array.isArray(message.content)) return 0;
  for (const block of message.content) if (block && block.type === "toolCall") n++;
  return n;
}

/**
 * True when every tool call has exactly one result directly after its assistant turn and every
 * result answers a call of that turn. Allocation-free: the common case costs one pass.
 */
function toolPairingIsValid(messages: readonly AgentMessage[]): boolean {
  let i = 0;
  while (i < messages.length) {
    const m = messages[i]!;
    if (m.role === "toolResult") return false;
    if (m.role !== "assistant") {
      i++;
      continue;
    }
    const failed = isFailedTurn(m);
    let j = i + 1;
    for (; j < messages.length; j++) {
      const r = messages[j]!;
      if (r.role !== "toolResult") break;
      if (failed || !findCallBlock(m, r.toolCallId)) return false;
      for (let k = i + 1; k < j; k++) if ((messages[k] as ToolResultMessage).toolCallId === r.toolCallId) return false;
    }
    if (!failed && j - (i + 1) !== countCalls(m)) return false;
    i = j;
  }
  return true;
}

/**
 * Providers reject a tool result that does not directly follow the assistant turn holding its
 * call. Any message that is neither assistant nor tool result is a barrier:
 * - a result whose call is not in the assistant turn right before it (or that answers a call a
 *   second time) is dropped;
 * - a result displaced only by custom messages (an extension's notice between parallel results)
 *   is moved back to its turn, so its output is not lost;
 * - a call left without a result gets a short error result, as Pi's provider layer would add.
 * Errored and aborted turns are never replayed by Pi, so their results count as orphans.
 */
export function sweepOrphans(messages: AgentMessage[], stats: OrphanSweepStats): AgentMessage[] {
  if (toolPairingIsValid(messages)) return messages;
  const out: AgentMessage[] = [];
  let turn: { message: AssistantMessage; calls: ToolCallBlock[]; answered: Set<string>; insertAt: number; adjacent: boolean } | undefined;

  const closeTurn = () => {
    if (!turn) return;
    const missing: ToolResultMessage[] = [];
    for (const call of turn.calls) {
      if (turn.answered.has(call.id)) continue;
      missing.push({
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text: MISSING_RESULT_TEXT }],
        isError: true,
        timestamp: turn.message.timestamp,
      });
    }
    if (missing.length) {
      out.splice(turn.insertAt, 0, ...missing);
      stats.resultsSynthesized += missing.length;
    }
    turn = undefined;
  };

  for (const m of messages) {
    if (m.role === "assistant") {
      closeTurn();
      out.push(m);
      const calls = callBlocks(m);
      turn = calls.length ? { message: m, calls, answered: new Set(), insertAt: out.length, adjacent: true } : undefined;
      continue;
    }
    if (m.role === "toolResult") {
      if (!turn || turn.answered.has(m.toolCallId) || !turn.calls.some((c) => c.id === m.toolCallId)) {
        stats.orphansDropped++;
        continue;
      }
      turn.answered.add(m.toolCallId);
      if (turn.adjacent) out.push(m);
      else {
        out.splice(turn.insertAt, 0, m);
        stats.resultsReattached++;
      }
      turn.insertAt++;
      continue;
    }
    if (m.role === "custom" && turn) {
      turn.adjacent = false;
      out.push(m);
      continue;
    }
    closeTurn();
    out.push(m);
  }
  closeTurn();
  return out;
}
