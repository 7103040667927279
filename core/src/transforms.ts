// The message-level steps of the render besides stubs and chains: error purge, orphan sweep and
// thinking strip. Each returns its input array itself when it changes nothing, and copies only
// the messages it changes.
import type { AgentMessage, AssistantBlock, AssistantMessage, ToolCallBlock, ToolResultMessage } from "./messages.ts";
import { countAfter } from "./messages.ts";
import type { PruneConfig } from "./config.ts";
import { findCallBlock, isFailedTurn } from "./chains.ts";

export interface TransformStats {
  purgedArgs: number;
  orphansDropped: number;
  resultsReattached: number;
  resultsSynthesized: number;
  thinkingStripped: number;
}

// ---- thinking ----

function hasThinking(message: AssistantMessage): boolean {
  if (!Array.isArray(message.content)) return false;
  for (const block of message.content) if (block && block.type === "thinking") return true;
  return false;
}

/**
 * The message without any of its thinking blocks (signatures go with them), or the message itself
 * when it has none or when nothing but thinking would remain: providers reject an empty turn, and
 * a message's thinking is kept or dropped as a whole, never in part.
 */
export function withoutThinking(message: AssistantMessage): AssistantMessage {
  if (!hasThinking(message)) return message;
  const rest = message.content.filter((b) => !b || b.type !== "thinking");
  if (rest.length === 0) return message;
  return { ...message, content: rest };
}

/** Keeps thinking on the newest `keepLastTurns` (at least 1) assistant messages and strips it from older ones. */
export function stripThinking(messages: AgentMessage[], config: Pick<PruneConfig, "thinkingStrip">, stats: TransformStats): AgentMessage[] {
  if (!config.thinkingStrip.enabled) return messages;
  const keep = Math.max(1, Math.floor(config.thinkingStrip.keepLastTurns) || 1);
  let out: AgentMessage[] | undefined;
  let seen = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "assistant") continue;
    seen++;
    if (seen <= keep) continue;
    const stripped = withoutThinking(m);
    if (stripped === m) continue;
    out ??= messages.slice();
    out[i] = stripped;
    stats.thinkingStripped++;
  }
  return out ?? messages;
}

// ---- error purge ----

export function purgedArgs(size: number): Record<string, unknown> {
  return { _purged: `<purged-errored-args size="${size}"/>` };
}

function argsSize(args: unknown): number {
  try {
    return JSON.stringify(args ?? {})?.length ?? 0;
  } catch {
    return 0;
  }
}

function alreadyPurged(args: Record<string, unknown>): boolean {
  const keys = Object.keys(args);
  return keys.length === 1 && keys[0] === "_purged";
}

/**
 * A failed call's arguments become a size stub once `cooldownTurns` assistant turns have followed
 * its turn and they are at least `minArgChars` characters of JSON. The error result itself stays.
 * A result belongs to the nearest assistant turn before it, as long as only tool results and
 * custom messages lie between (the same pairing as the orphan sweep). Whether the call failed is
 * read from `source` (the render's input at the same positions): a stub is never an error.
 */
export function purgeErroredArgs(messages: AgentMessage[], source: readonly AgentMessage[], config: Pick<PruneConfig, "purgeErrors">, stats: TransformStats): AgentMessage[] {
  const { enabled, cooldownTurns, minArgChars } = config.purgeErrors;
  if (!enabled) return messages;
  let turnAt = -1;
  let turnsAfter: Int32Array | undefined;
  let targets: Map<number, Set<string>> | undefined;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "assistant") {
      turnAt = isFailedTurn(m) ? -1 : i;
      continue;
    }
    if (m.role === "custom") continue;
    if (m.role !== "toolResult") {
      turnAt = -1;
      continue;
    }
    const original = source.length === messages.length ? source[i]! : m;
    if (turnAt < 0 || !(original.role === "toolResult" && original.isError)) continue;
    turnsAfter ??= countAfter(messages, "assistant");
    if (turnsAfter[turnAt]! < cooldownTurns) continue;
    const call = findCallBlock(messages[turnAt] as AssistantMessage, m.toolCallId);
    if (!call || !call.arguments || typeof call.arguments !== "object" || alreadyPurged(call.arguments)) continue;
    if (argsSize(call.arguments) < minArgChars) continue;
    targets ??= new Map();
    let ids = targets.get(turnAt);
    if (!ids) targets.set(turnAt, (ids = new Set()));
    ids.add(call.id);
  }
  if (!targets) return messages;
  const out = messages.slice();
  for (const [at, ids] of targets) {
    const turn = out[at] as AssistantMessage;
    const content = turn.content.map((block): AssistantBlock => {
      if (!block || block.type !== "toolCall" || !ids.has(block.id)) return block;
      stats.purgedArgs++;
      return { ...block, arguments: purgedArgs(argsSize(block.arguments)) } satisfies ToolCallBlock;
    });
    out[at] = { ...turn, content };
  }
  return out;
}

// ---- orphan sweep ----

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
export function toolPairingIsValid(messages: readonly AgentMessage[]): boolean {
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
export function sweepOrphans(messages: AgentMessage[], stats: TransformStats): AgentMessage[] {
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
