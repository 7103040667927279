// The pure transform from the messages Pi would send to the messages the model sees.
// The same function serves Pi live (the `context` event) and the editor's model view.
//
// Order: stub-replace → error purge → chain range prune → orphan sweep → thinking strip.
// Invariants: nothing to change → the input array itself comes back (no copy, no serialisation);
// every step copies only the messages it changes; stubs and blocks are deterministic so the
// rendered prefix stays byte-stable between turns (prompt cache); protected output is never
// replaced or dropped.
import type { AgentMessage, ToolResultMessage } from "./messages.ts";
import { countAfter, occurrenceKey } from "./messages.ts";
import type { PruneIndex, IndexedCall } from "./records.ts";
import { findCallForResult } from "./records.ts";
import { isProtected } from "./protected.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "./config.ts";
import { pruneChainRanges, type ChainRenderStats } from "./chain-render.ts";
import { purgeErroredArgs, stripThinking, sweepOrphans, type TransformStats } from "./transforms.ts";

export const QUERY_TOOL = "context_tree_query";

/** The settings the render reads. The nested blocks default to DEFAULT_CONFIG's when absent. */
export type RenderConfig = Pick<PruneConfig, "enabled" | "protectedTools" | "protectedPaths" | "recoveryGraceTurns"> &
  Partial<Pick<PruneConfig, "chainCompression" | "purgeErrors" | "thinkingStrip">>;

export interface RenderStats extends ChainRenderStats, TransformStats {
  stubbed: number;
  keptProtected: number;
  keptInGrace: number;
}

export function emptyRenderStats(): RenderStats {
  return {
    stubbed: 0,
    keptProtected: 0,
    keptInGrace: 0,
    purgedArgs: 0,
    chainsCompressed: 0,
    summariesSuppressed: 0,
    protectedRelocated: 0,
    unresolvedChains: [],
    orphansDropped: 0,
    resultsReattached: 0,
    resultsSynthesized: 0,
    thinkingStripped: 0,
  };
}

export interface RenderResult {
  messages: AgentMessage[];
  stats: RenderStats;
}

export function summarizedStub(call: IndexedCall): string {
  return `[Output of ${call.record.toolName} pruned: see ref \`${call.shortRef}\` in the pruner summary. Call ${QUERY_TOOL} with ["${call.shortRef}"] for the full text.]`;
}

export function spilledStub(call: IndexedCall): string {
  const r = call.record;
  const size = r.spillBytes ?? 0;
  const preview = r.resultPreview ?? "";
  return (
    `[Output of ${r.toolName} spilled to disk (${size} bytes), ref \`${call.shortRef}\`. First part:\n` +
    `${preview}\n` +
    `Full output: ${r.spillPath}. Call ${QUERY_TOOL} with ["${call.shortRef}"] to read it.]`
  );
}

export function stubFor(call: IndexedCall): string {
  return call.record.spillPath ? spilledStub(call) : summarizedStub(call);
}

// Protection is re-checked on every render (a pattern added mid-session must un-stub old reads),
// but each record is matched once per pattern list.
const protectionCache = new WeakMap<IndexedCall, { tools: readonly string[]; paths: readonly string[]; value: boolean }>();

function callIsProtected(call: IndexedCall, config: RenderConfig): boolean {
  const cached = protectionCache.get(call);
  if (cached && cached.tools === config.protectedTools && cached.paths === config.protectedPaths) return cached.value;
  const value = isProtected(call.record.toolName, call.record.args, config);
  protectionCache.set(call, { tools: config.protectedTools, paths: config.protectedPaths, value });
  return value;
}


/** Step 1: summarized and spilled tool results become deterministic stubs. */
export function stubResults(messages: AgentMessage[], index: PruneIndex, config: RenderConfig, stats: RenderStats): AgentMessage[] {
  if (index.calls.size === 0) return messages;
  let out: AgentMessage[] | undefined;
  let turnsAfter: Int32Array | undefined;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    // A hand-edited or damaged message without a string id cannot be one of ours.
    if (message.role !== "toolResult" || typeof message.toolCallId !== "string") continue;
    const found = findCallForResult(index, message.toolCallId, message.timestamp);
    if (!found) continue;
    if (callIsProtected(found.call, config)) {
      stats.keptProtected++;
      continue;
    }
    if (message.toolName === QUERY_TOOL) {
      // Counted only when a recovery result is present: only those need it.
      turnsAfter ??= countAfter(messages, "user");
      if (turnsAfter[i]! < config.recoveryGraceTurns) {
        stats.keptInGrace++;
        continue;
      }
    }
    const stub: ToolResultMessage = {
      ...message,
      content: [{ type: "text", text: stubFor(found.call) }],
      isError: false,
    };
    out ??= messages.slice();
    out[i] = stub;
    stats.stubbed++;
  }
  return out ?? messages;
}

export function renderModelView(messages: AgentMessage[], index: PruneIndex, config: RenderConfig): RenderResult {
  const stats = emptyRenderStats();
  if (!config.enabled) return { messages, stats };
  const full = {
    ...config,
    chainCompression: config.chainCompression ?? DEFAULT_CONFIG.chainCompression,
    purgeErrors: config.purgeErrors ?? DEFAULT_CONFIG.purgeErrors,
    thinkingStrip: config.thinkingStrip ?? DEFAULT_CONFIG.thinkingStrip,
  };
  let current = stubResults(messages, index, config, stats);
  current = purgeErroredArgs(current, messages, full, stats);
  current = pruneChainRanges(current, messages, index, full, stats);
  current = sweepOrphans(current, stats);
  current = stripThinking(current, full, stats);
  return { messages: current, stats };
}

/** The occurrence key of a tool result message, the identity every transform uses. */
export function resultKey(message: ToolResultMessage): string {
  return occurrenceKey(message.toolCallId, message.timestamp);
}
