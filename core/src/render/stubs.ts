// Step 1 of the render: summarized, superseded and spilled tool results become short
// deterministic stubs naming their ref, so the rendered prefix stays byte-stable between requests.
import type { AgentMessage, ToolResultMessage } from "../shapes/messages.ts";
import { countAfter } from "../shapes/messages.ts";
import { QUERY_TOOL } from "../shapes/entries.ts";
import type { PruneIndex, IndexedCall } from "../prune/prune-index.ts";
import { findCallForResult } from "../prune/prune-index.ts";
import { isProtected } from "../settings/protection.ts";
import { escapePrunerTags, oneLine } from "../shapes/text.ts";
import type { PruneConfig } from "../settings/config.ts";

export type StubConfig = Pick<PruneConfig, "protectedTools" | "protectedPaths" | "recoveryGraceTurns">;

export interface StubStats {
  stubbed: number;
  keptProtected: number;
  keptInGrace: number;
}

// A stub quotes the session's record (tool name, preview, paths), so each goes through
// escapePrunerTags: what a session holds can open or close none of the pruner's tags.

/** Short: every request reads each stub again (the query tool's declaration says how refs are used). */
export function summarizedStub(call: IndexedCall): string {
  return escapePrunerTags(`[${call.record.toolName} output pruned: see ref \`${call.shortRef}\` in the summary; ${QUERY_TOOL} returns it]`);
}

function spilledStub(call: IndexedCall): string {
  const r = call.record;
  const size = r.spillBytes ?? 0;
  const preview = r.resultPreview ?? "";
  return escapePrunerTags(
    `[Output of ${r.toolName} spilled to disk (${size} bytes), ref \`${call.shortRef}\`. First part:\n` +
    `${preview}\n` +
    `Full output: ${r.spillPath}. Call ${QUERY_TOOL} with ["${call.shortRef}"] to read it.]`
  );
}

/** What a superseded stub may quote of its record's text at most: the pruner writes a ref and a short call (80 characters of path or command); a session file from elsewhere may hold anything there. */
const SUPERSEDED_BY_CHARS = 120;

/** A stale output needs no summary: the stub names what superseded it, and the ref brings it back. */
function supersededStub(call: IndexedCall, supersededBy: string): string {
  return escapePrunerTags(`[${call.record.toolName} output superseded by ${oneLine(supersededBy, SUPERSEDED_BY_CHARS)}; ${QUERY_TOOL} returns ref \`${call.shortRef}\`]`);
}

function stubFor(call: IndexedCall): string {
  if (call.record.spillPath) return spilledStub(call);
  return typeof call.record.supersededBy === "string" ? supersededStub(call, call.record.supersededBy) : summarizedStub(call);
}

// Protection is re-checked on every render (a pattern added mid-session must un-stub old reads),
// but each record is matched once per pattern list.
const protectionCache = new WeakMap<IndexedCall, { tools: readonly string[]; paths: readonly string[]; value: boolean }>();

function callIsProtected(call: IndexedCall, config: StubConfig): boolean {
  const cached = protectionCache.get(call);
  if (cached && cached.tools === config.protectedTools && cached.paths === config.protectedPaths) return cached.value;
  const value = isProtected(call.record.toolName, call.record.args, config);
  protectionCache.set(call, { tools: config.protectedTools, paths: config.protectedPaths, value });
  return value;
}

// A whole render after a flush stubs every summarized result again: the same message stubbed for
// the same indexed call (whose ref and record never change) gets the stub it got before, so a
// view's pass over a branch's requests measures and bills it once. Pi hands the live render fresh
// copies, which never match.
const stubCache = new WeakMap<AgentMessage, { call: IndexedCall; stub: ToolResultMessage }>();

function stubOf(message: ToolResultMessage, call: IndexedCall): ToolResultMessage {
  const cached = stubCache.get(message);
  if (cached?.call === call) return cached.stub;
  const stub: ToolResultMessage = { ...message, content: [{ type: "text", text: stubFor(call) }], isError: false };
  stubCache.set(message, { call, stub });
  return stub;
}

/**
 * Step 1: summarized and spilled tool results become deterministic stubs. A recovery result stays
 * raw while fewer than `recoveryGraceTurns` user turns follow it before `epochEnd` (the newest
 * flush's end), so its grace runs out at a flush, never between two.
 */
export function stubResults(
  messages: AgentMessage[],
  index: PruneIndex,
  config: StubConfig,
  stats: StubStats,
  epochEnd = messages.length,
  /** Results the agent shrank: its replacement stands. */
  keep?: ReadonlySet<AgentMessage>,
): AgentMessage[] {
  if (index.calls.size === 0) return messages;
  let out: AgentMessage[] | undefined;
  let turnsAfter: Int32Array | undefined;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    // A hand-edited or damaged message without a string id cannot be one of ours.
    if (message.role !== "toolResult" || typeof message.toolCallId !== "string") continue;
    if (keep?.has(message)) continue;
    const found = findCallForResult(index, message.toolCallId, message.timestamp);
    if (!found) continue;
    if (callIsProtected(found.call, config)) {
      stats.keptProtected++;
      continue;
    }
    if (message.toolName === QUERY_TOOL) {
      // Counted only when a recovery result is present: only those need it.
      turnsAfter ??= countAfter(messages, "user", epochEnd);
      if (turnsAfter[i]! < config.recoveryGraceTurns) {
        stats.keptInGrace++;
        continue;
      }
    }
    out ??= messages.slice();
    out[i] = stubOf(message, found.call);
    stats.stubbed++;
  }
  return out ?? messages;
}
