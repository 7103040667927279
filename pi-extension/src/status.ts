// The status-line segment and the text reports of `/pruner status` and `/pruner stats`.
import type { PruneConfig } from "@pi-pruner/core";
import type { PruneIndex } from "@pi-pruner/core";
import { estimateTokens, formatCount, formatNumber, summarizerCost, type BillTotals, type CacheRules, type FlushDecision, type FlushMoment } from "@pi-pruner/core";
import type { Reclaim } from "./request-sizes.ts";

export const STATUS_KEY = "pi-pruner";

/** The change of the billed input against no pruning, e.g. `-41%` (`+3%` when pruning cost more); nothing while they are the same. */
function billChange(bill: BillTotals, summarizer = 0): string | undefined {
  if (bill.requests === 0 || bill.raw <= 0 || (bill.sent === bill.raw && summarizer === 0)) return undefined;
  const change = Math.round(((bill.sent + summarizer - bill.raw) / bill.raw) * 100);
  return `${change > 0 ? "+" : change < 0 ? "-" : "±"}${Math.abs(change)}%`;
}

/** `prune: 92k→14k (-85%) · $ -41%` in estimated tokens and billed input; `prune: on` before anything was pruned. */
export function statusText(config: PruneConfig, reclaim: Reclaim | undefined, bill?: BillTotals): string {
  if (!config.enabled) return "prune: off";
  const money = bill ? billChange(bill) : undefined;
  const moneyPart = money ? ` · $ ${money}` : "";
  if (!reclaim || reclaim.rawChars === 0) return `prune: on${moneyPart}`;
  const raw = estimateTokens(reclaim.rawChars);
  const sent = estimateTokens(reclaim.sentChars);
  const percent = Math.round(((raw - sent) / raw) * 100);
  return `prune: ${formatCount(raw)}→${formatCount(sent)} (-${percent}%)${moneyPart}`;
}

/** What the cache-aware policy last decided, and by which rules. */
export interface PolicyState {
  rules: CacheRules;
  decision: (FlushDecision & { moment: FlushMoment }) | undefined;
}

function flushMode(config: PruneConfig, policy: PolicyState | undefined): string {
  if (config.pruneOn !== "agent-message") return "only on /pruner now";
  if (!config.cacheAware) return "on the agent's final reply";
  return `when it pays back under the ${policy?.rules ?? "anthropic"} cache rules, and before the window fills`;
}

function decisionLine(policy: PolicyState | undefined): string | undefined {
  const d = policy?.decision;
  if (!d) return undefined;
  const verdict = d.reason === "window-cap" ? "flush (the window is nearly full)" : d.reason === "pays-back" ? "flush" : d.reason === "nothing-pending" ? "nothing to flush" : d.reason === "summarizer-busy" ? "wait (it would pay back, but the last flush's summaries are still being written: these join the next flush)" : "wait";
  return `last decision (${d.moment}): ${verdict}; saves ≈${formatNumber(Math.round(d.saving))} over ${formatNumber(Math.round(d.requestsAhead))} request(s) ahead, costs ≈${formatNumber(Math.round(d.cost))} (input-token equivalents)`;
}

export function statusReport(config: PruneConfig, index: PruneIndex, pendingCalls: number, reclaim: Reclaim | undefined, policy?: PolicyState): string {
  const spilled = [...index.calls.values()].filter((c) => c.record.spillPath).length;
  const lines = [
    `pi-pruner is ${config.enabled ? "on" : "off"} (flush: ${flushMode(config, policy)})`,
    `summaries: ${index.summaries.length}, pruned calls: ${index.calls.size} (${spilled} spilled), duplicates aliased: ${index.aliases.size}, chains compressed: ${index.chains.length}`,
    `pending calls: ${pendingCalls}`,
    reclaim
      ? `last request: ${formatNumber(reclaim.rawChars)} chars raw → ${formatNumber(reclaim.sentChars)} sent (≈${formatCount(estimateTokens(reclaim.rawChars))}→${formatCount(estimateTokens(reclaim.sentChars))} tokens, estimate)`
      : "last request: nothing pruned yet",
    `protectedTools: ${JSON.stringify(config.protectedTools)}  protectedPaths: ${JSON.stringify(config.protectedPaths)}`,
    `summarizer: ${config.summarizerModel} (thinking ${config.summarizerThinking}), minBatchChars ${config.minBatchChars}, dedup ${config.dedupByContentHash ? "on" : "off"}`,
  ];
  const decision = decisionLine(policy);
  if (decision) lines.push(decision);
  if (index.frontier?.outcome) lines.push(`last flush outcome: ${index.frontier.outcome}`);
  return lines.join("\n");
}

export function statsReport(index: PruneIndex, bill?: BillTotals): string {
  const s = index.stats;
  const lines = [
    `summarizer calls: ${s.callCount ?? 0}`,
    `tokens: ${s.totalInputTokens ?? 0} in, ${s.totalOutputTokens ?? 0} out`,
    `cost: $${(s.totalCost ?? 0).toFixed(4)}`,
    `chains compressed: ${s.chainsCompressed ?? 0}, range summaries: ${s.rangesSummarized ?? 0}`,
  ];
  if (bill && bill.requests > 0) {
    const summarizer = summarizerCost(s.totalInputTokens ?? 0, s.totalOutputTokens ?? 0, bill.prices);
    const total = bill.sent + summarizer;
    lines.push(
      `billed input over ${bill.requests} request(s), estimated under the ${bill.rules} cache rules, in input-token equivalents (the system prompt and tools are the same either way and left out):`,
      `  without pruning: ${formatNumber(Math.round(bill.raw))}`,
      `  with pruning: ${formatNumber(Math.round(total))} (requests ${formatNumber(Math.round(bill.sent))} + summarizer ${formatNumber(Math.round(summarizer))}), ${billChange(bill, summarizer) ?? "±0%"}`,
    );
  } else lines.push("billed input: no request yet");
  return lines.join("\n");
}
