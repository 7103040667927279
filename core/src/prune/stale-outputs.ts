// Outputs a later call made stale: a file read followed by an edit or write of that file, or by a
// read that covers it again; a command run again word for word. Such an output needs no summary:
// its stub says what superseded it, and the raw output stays indexed under its ref. Pure.
import type { AgentMessage } from "../shapes/messages.ts";
import { toolCallsOf } from "../shapes/messages.ts";
import { isProtected, normalizePathForMatch, toolCallPath, type ProtectionConfig } from "../settings/protection.ts";
import type { PruneIndex } from "./prune-index.ts";

/** One tool call of the session with its result, as the context Pi builds holds it. */
export interface SessionCall {
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  resultTimestamp: number;
  isError: boolean;
  /** The ordinal of the assistant message that made the call: calls of one message ran together. */
  turn: number;
}

/** What a supersession check needs of a pending call. */
export interface StaleCandidate {
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  resultTimestamp: number;
  isError: boolean;
}

/** Every tool call of `messages` that has its result, in order. */
export function sessionCallsOf(messages: readonly AgentMessage[]): SessionCall[] {
  const out: SessionCall[] = [];
  let turn = 0;
  let calls = new Map<string, Record<string, unknown>>();
  for (const message of messages) {
    if (message.role === "assistant") {
      turn++;
      calls = new Map(toolCallsOf(message).map((c) => [c.id, c.arguments && typeof c.arguments === "object" ? (c.arguments as Record<string, unknown>) : {}]));
    } else if (message.role === "toolResult" && typeof message.toolCallId === "string") {
      const args = calls.get(message.toolCallId);
      if (!args) continue;
      out.push({ toolCallId: message.toolCallId, toolName: message.toolName, args, resultTimestamp: message.timestamp, isError: message.isError === true, turn });
    }
  }
  return out;
}

const FILE_WRITERS = new Set(["edit", "write"]);

function pathOf(args: Record<string, unknown>): string | undefined {
  const path = toolCallPath(args);
  return path ? normalizePathForMatch(path) : undefined;
}

/** A read of a whole file has neither offset nor limit. */
function isWholeRead(args: Record<string, unknown>): boolean {
  return args.offset === undefined && args.limit === undefined;
}

function sameRange(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return a.offset === b.offset && a.limit === b.limit;
}

/** Whether `later` makes the output of `earlier` stale. A later call that failed changed nothing and read nothing. */
function supersedes(earlier: StaleCandidate, later: SessionCall): boolean {
  if (earlier.toolName === "bash") {
    return later.toolName === "bash" && typeof earlier.args.command === "string" && later.args.command === earlier.args.command;
  }
  if (earlier.toolName !== "read" || later.isError) return false;
  const path = pathOf(earlier.args);
  if (!path || pathOf(later.args) !== path) return false;
  if (FILE_WRITERS.has(later.toolName)) return true;
  return later.toolName === "read" && (isWholeRead(later.args) || sameRange(earlier.args, later.args));
}

function describeCall(call: SessionCall): string {
  const target = call.toolName === "bash" ? call.args.command : toolCallPath(call.args);
  if (typeof target !== "string" || !target) return call.toolName;
  return `${call.toolName} ${target.length > 80 ? `${target.slice(0, 79)}…` : target}`;
}

/**
 * What made `call`'s output stale, as its stub names it (`t15 (edit src/x.ts)`, or `a later call
 * (…)` when that call has no ref yet), or undefined. Only a later assistant message's call counts;
 * a protected output, a failed one, or one the session's calls do not hold is never stale.
 * `calls` is every call of the session in order (later pending batches, the batch the model has
 * not seen yet and protected calls among them).
 */
export function supersededBy(call: StaleCandidate, calls: readonly SessionCall[], index: PruneIndex, config: ProtectionConfig): string | undefined {
  if (call.isError || (call.toolName !== "read" && call.toolName !== "bash")) return undefined;
  if (isProtected(call.toolName, call.args, config)) return undefined;
  const at = calls.findIndex((c) => c.toolCallId === call.toolCallId && c.resultTimestamp === call.resultTimestamp);
  if (at < 0) return undefined;
  const turn = calls[at]!.turn;
  for (let i = at + 1; i < calls.length; i++) {
    const later = calls[i]!;
    if (later.turn === turn || !supersedes(call, later)) continue;
    const indexed = index.byToolCallId.get(later.toolCallId)?.find((c) => c.record.resultTimestamp === later.resultTimestamp);
    const ref = indexed && indexed.shortRef !== later.toolCallId ? indexed.shortRef : "a later call";
    return `${ref} (${describeCall(later)})`;
  }
  return undefined;
}
