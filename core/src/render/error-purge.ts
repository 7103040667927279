// The error purge: the long strings of a failed call's large arguments are cut short after a
// cool-down; the error result itself stays.
import type { AgentMessage, AssistantBlock, AssistantMessage, ToolCallBlock } from "../shapes/messages.ts";
import { countAfter } from "../shapes/messages.ts";
import type { PruneConfig } from "../settings/config.ts";
import { findCallBlock, isFailedTurn } from "../shapes/messages.ts";
import { argsChars } from "../shapes/size.ts";

export interface ErrorPurgeStats {
  purgedArgs: number;
}

/**
 * A string argument longer than this is cut. Paths, ids, patterns and short commands fit and stay
 * whole, so the model still sees what the failed call was about; the file contents, scripts and
 * long commands that make a call reach `minArgChars` (500 by default) do not.
 */
export const PURGE_STRING_BOUND = 128;
/** How much of a cut string is kept: its start, then the marker. Together they fit in the bound, so a purge of purged arguments changes nothing. */
const PURGE_HEAD_CHARS = 64;
/** Containers nested deeper than this are kept as they are: arguments are session data, and the walk stays bounded on any of it. */
const PURGE_MAX_DEPTH = 64;

/** The start of `text`, then a marker naming how many characters were cut (never half of a surrogate pair). */
function cutString(text: string): string {
  let head = text.slice(0, PURGE_HEAD_CHARS);
  const last = head.charCodeAt(head.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) head = head.slice(0, -1);
  return `${head}…<purged-errored-args cut="${text.length - head.length}"/>`;
}

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return typeof value === "object" && value !== null;
}

/**
 * `args` in the same shape (keys, their order, value types, array lengths) with every string
 * longer than `PURGE_STRING_BOUND` cut by `cutString`; `args` itself when no string is that long.
 * Walked with a stack, not by recursion, to `PURGE_MAX_DEPTH`.
 */
function purgedArguments(args: Record<string, unknown>): Record<string, unknown> {
  let changed = false;
  const copyOf = (value: Container): Container => (Array.isArray(value) ? new Array<unknown>(value.length) : {});
  const root = copyOf(args) as Record<string, unknown>;
  const stack: { from: Container; to: Container; depth: number }[] = [{ from: args, to: root, depth: 1 }];
  while (stack.length > 0) {
    const { from, to, depth } = stack.pop()!;
    for (const key of Object.keys(from)) {
      const value = (from as Record<string, unknown>)[key];
      let next = value;
      if (typeof value === "string" && value.length > PURGE_STRING_BOUND) {
        next = cutString(value);
        changed = true;
      } else if (isContainer(value) && depth < PURGE_MAX_DEPTH) {
        next = copyOf(value);
        stack.push({ from: value, to: next as Container, depth: depth + 1 });
      }
      // A key such as `__proto__` from parsed JSON is an own property; plain assignment would not make one.
      Object.defineProperty(to, key, { value: next, enumerable: true, writable: true, configurable: true });
    }
  }
  return changed ? root : args;
}

/**
 * A failed call's arguments are purged once `cooldownTurns` assistant turns have followed its turn
 * before `epochEnd` (the newest flush's end; turns after it count at the next flush) and they are
 * at least `minArgChars` characters of JSON: each string in them longer than `PURGE_STRING_BOUND`
 * keeps its start and says how much was cut, and everything else keeps its shape, so a tool whose
 * provider needs an argument as a string (a grammar tool's input) still gets one. The error result
 * itself stays.
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
  let targets: Map<number, Map<string, Record<string, unknown>>> | undefined;
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
    if (!call || !call.arguments || typeof call.arguments !== "object" || Array.isArray(call.arguments)) continue;
    if (argsChars(call.arguments) < minArgChars) continue;
    const purged = purgedArguments(call.arguments);
    if (purged === call.arguments) continue;
    targets ??= new Map();
    let calls = targets.get(turnAt);
    if (!calls) targets.set(turnAt, (calls = new Map()));
    calls.set(call.id, purged);
  }
  if (!targets) return messages;
  const out = messages.slice();
  for (const [at, calls] of targets) {
    const turn = out[at] as AssistantMessage;
    const content = turn.content.map((block): AssistantBlock => {
      if (!block || block.type !== "toolCall") return block;
      const purged = calls.get(block.id);
      if (!purged) return block;
      stats.purgedArgs++;
      return { ...block, arguments: purged } satisfies ToolCallBlock;
    });
    out[at] = { ...turn, content };
  }
  return out;
}
