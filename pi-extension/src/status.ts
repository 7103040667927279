// The status-line segment and the text reports of `/pruner status` and `/pruner stats`.
import type { PruneConfig } from "@pi-pruner/core";
import type { PruneIndex } from "@pi-pruner/core";
import { estimateTokens, formatCount, formatNumber } from "@pi-pruner/core";
import type { Reclaim } from "./runtime.ts";

export const STATUS_KEY = "pi-pruner";

/** `prune: 92k→14k (-85%)` in estimated tokens; `prune: on` before anything was pruned. */
export function statusText(config: PruneConfig, reclaim: Reclaim | undefined): string {
  if (!config.enabled) return "prune: off";
  if (!reclaim || reclaim.rawChars === 0) return "prune: on";
  const raw = estimateTokens(reclaim.rawChars);
  const sent = estimateTokens(reclaim.sentChars);
  const percent = Math.round(((raw - sent) / raw) * 100);
  return `prune: ${formatCount(raw)}→${formatCount(sent)} (-${percent}%)`;
}

export function statusReport(config: PruneConfig, index: PruneIndex, pendingCalls: number, reclaim: Reclaim | undefined): string {
  const spilled = [...index.calls.values()].filter((c) => c.record.spillPath).length;
  const lines = [
    `pi-pruner is ${config.enabled ? "on" : "off"} (flush: ${config.pruneOn === "agent-message" ? "on the agent's final reply" : "only on /pruner now"})`,
    `summaries: ${index.summaries.length}, pruned calls: ${index.calls.size} (${spilled} spilled), duplicates aliased: ${index.aliases.size}, chains compressed: ${index.chains.length}`,
    `pending calls: ${pendingCalls}`,
    reclaim
      ? `last request: ${formatNumber(reclaim.rawChars)} chars raw → ${formatNumber(reclaim.sentChars)} sent (≈${formatCount(estimateTokens(reclaim.rawChars))}→${formatCount(estimateTokens(reclaim.sentChars))} tokens, estimate)`
      : "last request: nothing pruned yet",
    `protectedTools: ${JSON.stringify(config.protectedTools)}  protectedPaths: ${JSON.stringify(config.protectedPaths)}`,
    `summarizer: ${config.summarizerModel} (thinking ${config.summarizerThinking}), minBatchChars ${config.minBatchChars}, dedup ${config.dedupByContentHash ? "on" : "off"}`,
  ];
  if (index.frontier?.outcome) lines.push(`last flush outcome: ${index.frontier.outcome}`);
  return lines.join("\n");
}

export function statsReport(index: PruneIndex): string {
  const s = index.stats;
  return [
    `summarizer calls: ${s.callCount ?? 0}`,
    `tokens: ${s.totalInputTokens ?? 0} in, ${s.totalOutputTokens ?? 0} out`,
    `cost: $${(s.totalCost ?? 0).toFixed(4)}`,
    `chains compressed: ${s.chainsCompressed ?? 0}, range summaries: ${s.rangesSummarized ?? 0}`,
  ].join("\n");
}
