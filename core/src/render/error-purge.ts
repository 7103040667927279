// The error purge: large arguments of a failed call become a size stub after a cool-down; the error
// result itself stays.
import type { AgentMessage, AssistantBlock, AssistantMessage, ToolCallBlock } from "../shapes/messages.ts";
import { countAfter } from "../shapes/messages.ts";
import type { PruneConfig } from "../settings/config.ts";
import { findCallBlock, isFailedTurn } from "../shapes/messages.ts";

export interface ErrorPurgeStats {
  purgedArgs: number;
}

function purgedArgs(size: number): Record<string, unknown> {
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
 * its turn before `epochEnd` (the newest flush's end; turns after it count at the next flush) and
 * they are at least `minArgChars` characters of JSON. The error result itself stays.
 * A result belongs to the nearest assistant turn before it, as long as only tool results and
 * custom messages lie between (the same pairing as the orphan sweep). Whether the call failed is
 * read from `source` (the render's input at the same positions): a stub is never an error.
 */
export function purgeErroredArgs(
  messages: AgentMessage[],
  source: readonly AgentMessage[],
  config: Pick<PruneConfig, "purgeErrors">,
  stats: ErrorPurgeStats,
  epochEnd = messages.length,
): AgentMessage[] {
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
    if (turnAt < 0 || turnAt >= epochEnd || !(original.role === "toolResult" && original.isError)) continue;
    turnsAfter ??= countAfter(messages, "assistant", epochEnd);
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
