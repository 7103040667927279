// The pure transform from the messages Pi would send to the messages the model sees.
// The same function serves Pi live (the `context` event) and the editor's model view.
//
// Order: stub-replace → error purge → chain range prune → orphan sweep → thinking strip.
// Invariants: nothing to change → the input array itself comes back (no copy, no serialisation);
// every step copies only the messages it changes; stubs and blocks are deterministic so the
// rendered prefix stays byte-stable between turns (prompt cache); protected output is never
// replaced or dropped.
import type { AgentMessage } from "../shapes/messages.ts";
import type { PruneIndex } from "../prune/prune-index.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../settings/config.ts";
import { stubResults, type StubStats } from "./stubs.ts";
import { purgeErroredArgs, type ErrorPurgeStats } from "./error-purge.ts";
import { pruneChainRanges, type ChainRenderStats } from "./chain-blocks.ts";
import { sweepOrphans, type OrphanSweepStats } from "./orphan-sweep.ts";
import { stripThinking, type ThinkingStripStats } from "./thinking-strip.ts";

/** The settings the render reads. The nested blocks default to DEFAULT_CONFIG's when absent. */
export type RenderConfig = Pick<PruneConfig, "enabled" | "protectedTools" | "protectedPaths" | "recoveryGraceTurns"> &
  Partial<Pick<PruneConfig, "chainCompression" | "purgeErrors" | "thinkingStrip">>;

export interface RenderStats extends StubStats, ErrorPurgeStats, ChainRenderStats, OrphanSweepStats, ThinkingStripStats {}

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
