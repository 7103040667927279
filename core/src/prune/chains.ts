// Closed chains and their compression plan. A closed chain is a user message, the tool-using
// assistant turns and results that follow it, and a final text-only assistant reply. Chains are
// found on the context Pi actually builds (after its own compaction), never on the raw branch, and
// are identified by position: the start user message's and the final assistant's timestamps, each
// of which must name exactly one message of its role. Tool-call ids are never used to find a range:
// providers repeat them across responses.
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../shapes/messages.ts";
import { findCallBlock, hasToolCalls, isFailedTurn, occurrenceKey } from "../shapes/messages.ts";
import type { ChainData } from "../shapes/entries.ts";
import { type PruneIndex, type SummaryInfo } from "./prune-index.ts";

export interface ChainRange {
  /** Index of the start user message. */
  start: number;
  /** Index of the final text-only assistant reply. */
  end: number;
}

/** One tool result inside a chain, with the call it answers (paired by position, not by id alone). */
export interface ChainCall {
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  /** Occurrence key `toolCallId@resultTimestamp`. */
  key: string;
  resultIndex: number;
  resultTimestamp: number;
  /** The result message itself (read its text with contentText only where it is needed). */
  result: ToolResultMessage;
  isError: boolean;
  /** Timestamp of the assistant message holding the call (the result's when no call was found). */
  callTimestamp: number;
}

export interface ClosedChain extends ChainRange {
  startUserTimestamp: number;
  finalAssistantTimestamp: number;
  calls: ChainCall[];
  /** Assistant turns with tool calls between start and end. */
  toolTurns: number;
}

/** Roles that may sit inside a chain: everything else ends a chain in progress. */
function insideChain(message: AgentMessage): boolean {
  return message.role === "assistant" || message.role === "toolResult" || message.role === "custom";
}

/** Message position by timestamp for user and assistant messages; -1 marks a timestamp held by more than one. */
export interface TimestampLookup {
  user: Map<number, number>;
  assistant: Map<number, number>;
}

export function indexTimestamps(messages: readonly AgentMessage[]): TimestampLookup {
  const lookup: TimestampLookup = { user: new Map(), assistant: new Map() };
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const map = m.role === "user" ? lookup.user : m.role === "assistant" ? lookup.assistant : undefined;
    if (!map) continue;
    map.set(m.timestamp, map.has(m.timestamp) ? -1 : i);
  }
  return lookup;
}

/** The tool results between start and end, each paired with its call in the nearest assistant turn before it. */
export function callsInRange(messages: readonly AgentMessage[], range: ChainRange): ChainCall[] {
  const calls: ChainCall[] = [];
  let turn: AssistantMessage | undefined;
  for (let i = range.start + 1; i < range.end; i++) {
    const m = messages[i]!;
    if (m.role === "assistant") turn = m;
    else if (m.role === "toolResult") {
      const call = turn ? findCallBlock(turn, m.toolCallId) : undefined;
      const args = call && call.arguments && typeof call.arguments === "object" ? call.arguments : {};
      calls.push({
        toolCallId: m.toolCallId,
        toolName: m.toolName,
        args,
        key: occurrenceKey(m.toolCallId, m.timestamp),
        resultIndex: i,
        resultTimestamp: m.timestamp,
        result: m,
        isError: m.isError === true,
        callTimestamp: call && turn ? turn.timestamp : m.timestamp,
      });
    }
  }
  return calls;
}

/**
 * Every closed chain with at least one tool-using turn, oldest first. A chain whose boundary
 * timestamps are not unique cannot be found again later, so it is not reported as closed.
 * A failed (errored or aborted) reply neither closes a chain nor breaks it; a steering user
 * message starts a new chain; any message other than assistant, tool result or custom ends the
 * chain in progress unclosed.
 */
export function detectClosedChains(messages: readonly AgentMessage[], lookup: TimestampLookup = indexTimestamps(messages)): ClosedChain[] {
  const chains: ClosedChain[] = [];
  let start = -1;
  let toolTurns = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "user") {
      start = i;
      toolTurns = 0;
      continue;
    }
    if (start < 0) continue;
    if (!insideChain(m)) {
      start = -1;
      continue;
    }
    if (m.role !== "assistant") continue;
    if (hasToolCalls(m)) {
      toolTurns++;
      continue;
    }
    if (isFailedTurn(m)) continue;
    const startMessage = messages[start]!;
    if (toolTurns > 0 && lookup.user.get(startMessage.timestamp) === start && lookup.assistant.get(m.timestamp) === i) {
      const range = { start, end: i };
      chains.push({ ...range, startUserTimestamp: startMessage.timestamp, finalAssistantTimestamp: m.timestamp, calls: callsInRange(messages, range), toolTurns });
    }
    start = -1;
  }
  return chains;
}

export type ChainResolution =
  | { ok: true; range: ChainRange }
  | { ok: false; reason: string; /** Neither boundary is in the context: Pi's compaction removed the chain. */ absent: boolean };

/**
 * Finds a persisted chain in the messages by position. Entries written without a final
 * assistant timestamp end at the first text-only reply after the start.
 */
export function resolveChain(messages: readonly AgentMessage[], lookup: TimestampLookup, chain: Pick<ChainData, "startUserTimestamp" | "finalAssistantTimestamp">): ChainResolution {
  const start = lookup.user.get(chain.startUserTimestamp);
  const hasFinal = typeof chain.finalAssistantTimestamp === "number";
  let end = hasFinal ? lookup.assistant.get(chain.finalAssistantTimestamp!) : undefined;
  if (start === undefined) {
    return { ok: false, reason: "its start message is not in the context", absent: !hasFinal || end === undefined };
  }
  if (start < 0) return { ok: false, reason: "more than one user message has its start timestamp", absent: false };
  if (!hasFinal) end = firstClosingReply(messages, start);
  if (end === undefined) return { ok: false, reason: "its final reply is not in the context", absent: false };
  if (end < 0) return { ok: false, reason: "more than one assistant message has its final timestamp", absent: false };
  if (end <= start) return { ok: false, reason: "its final reply comes before its start", absent: false };
  const final = messages[end] as AssistantMessage;
  if (hasToolCalls(final)) return { ok: false, reason: "its final message calls tools", absent: false };
  for (let i = start + 1; i < end; i++) {
    if (!insideChain(messages[i]!)) return { ok: false, reason: `a ${messages[i]!.role} message lies inside its range`, absent: false };
  }
  return { ok: true, range: { start, end } };
}

function firstClosingReply(messages: readonly AgentMessage[], start: number): number | undefined {
  for (let i = start + 1; i < messages.length; i++) {
    const m = messages[i]!;
    if (!insideChain(m)) return undefined;
    if (m.role === "assistant" && !hasToolCalls(m) && !isFailedTurn(m)) return i;
  }
  return undefined;
}

/** The batch summaries whose every call lies in one chain: those the chain's block replaces. */
export function summariesWithin(index: PruneIndex, keys: ReadonlySet<string>, ids: ReadonlySet<string>): SummaryInfo[] {
  return index.summaries.filter((s) => s.keys.length > 0 && s.keys.every((k) => keys.has(k) || (!k.includes("@") && ids.has(k))));
}
