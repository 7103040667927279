// Which closed chains to compress and the entries that compress them, with the optional fusion of
// a chain's batch summaries into one range summary.
import type { AgentMessage } from "../shapes/messages.ts";
import { contentText } from "../shapes/messages.ts";
import { estimateTokens, messageChars } from "../shapes/size.ts";
import type { ChainData, ToolCallRecord, ToolCallRef } from "../shapes/entries.ts";
import { PRUNE_CHAIN, PRUNE_INDEX } from "../shapes/entries.ts";
import type { PruneConfig } from "../settings/config.ts";
import { isProtected } from "../settings/protection.ts";
import { addIndexedCall, findCallForResult, nextBlockId, nextShortRef, recordKey, type PruneIndex, type SummaryInfo } from "./prune-index.ts";
import type { PersistEntry } from "../shapes/entries.ts";
import { detectClosedChains, summariesWithin, type ClosedChain } from "./chains.ts";
import { buildFusionRequest, type Summarizer, type SummarizerUsage } from "./summarizer-prompts.ts";

export type ChainPlanConfig = Pick<PruneConfig, "chainCompression" | "protectedTools" | "protectedPaths">;

export interface PlannedChain {
  chain: ClosedChain;
  data: ChainData;
  summaries: SummaryInfo[];
  /** Records for calls no summary or spill covers yet: indexed so context_tree_query can recover them. */
  newRecords: ToolCallRecord[];
  newRefs: ToolCallRef[];
}

export interface PlanOptions {
  /** Ignore the rolling window: every closed chain not yet compressed (`/pruner compact`). */
  all?: boolean;
  /** Epoch ms stored as `compressedAt`. */
  now?: number;
}

/**
 * Which closed chains fall out of the rolling window and are not compressed yet, with the chain
 * entries that compress them. The index is updated as the plan is made (new refs, block ids);
 * the caller persists the entries in order.
 */
export function planChainCompression(messages: readonly AgentMessage[], index: PruneIndex, config: ChainPlanConfig, options: PlanOptions = {}): PlannedChain[] {
  return chainsToCompress(messages, index, config, options.all === true).map((chain) => planOne(chain, index, config, options.now ?? Date.now()));
}

/** The closed chains out of the rolling window (all of them with `all`) that no chain entry compresses yet. */
function chainsToCompress(messages: readonly AgentMessage[], index: PruneIndex, config: ChainPlanConfig, all: boolean): ClosedChain[] {
  const closed = detectClosedChains(messages);
  const keepRaw = all ? 0 : Math.max(0, config.chainCompression.rollingWindow);
  const outOfWindow = closed.slice(0, Math.max(0, closed.length - keepRaw));
  if (!outOfWindow.length) return [];
  const compressedStarts = new Set(index.chains.map((c) => c.startUserTimestamp));
  return outOfWindow.filter((chain) => !compressedStarts.has(chain.startUserTimestamp));
}

/** What compressing the chains due now would change in `messages` (a request as sent), in estimated tokens. */
export interface ChainCompressionEstimate {
  /** Tokens the chains' blocks would remove: everything between each start and final reply, less the summaries a block keeps. */
  removedTokens: number;
  /** The summaries inside those chains, which a fused range summary is written from. */
  summaryTokens: number;
  /** Position of the first message compression would change (`messages.length` when none). */
  firstChange: number;
}

/**
 * The saving of compressing what `planChainCompression` would compress now, without planning it:
 * the cache-aware policy weighs it with the flush it rides on. Protected outputs stay in a block
 * and are not counted as removed.
 */
export function estimateChainCompression(messages: readonly AgentMessage[], index: PruneIndex, config: ChainPlanConfig): ChainCompressionEstimate {
  const estimate: ChainCompressionEstimate = { removedTokens: 0, summaryTokens: 0, firstChange: messages.length };
  if (!config.chainCompression.enabled) return estimate;
  for (const chain of chainsToCompress(messages, index, config, false)) {
    let inside = 0;
    let kept = 0;
    for (let i = chain.start + 1; i < chain.end; i++) {
      const m = messages[i]!;
      const chars = messageChars(m);
      inside += chars;
      if (m.role === "custom") kept += chars;
    }
    for (const call of chain.calls) if (isProtected(call.toolName, call.args, config)) kept += messageChars(call.result);
    estimate.removedTokens += estimateTokens(Math.max(0, inside - kept));
    estimate.summaryTokens += estimateTokens(kept);
    estimate.firstChange = Math.min(estimate.firstChange, chain.start + 1);
  }
  return estimate;
}

function planOne(chain: ClosedChain, index: PruneIndex, config: ChainPlanConfig, now: number): PlannedChain {
  const blockId = nextBlockId(index);
  const protectedIds: string[] = [];
  const droppedIds: string[] = [];
  const droppedKeys: string[] = [];
  const toolRefs: string[] = [];
  const newRecords: ToolCallRecord[] = [];
  const newRefs: ToolCallRef[] = [];
  for (const call of chain.calls) {
    if (isProtected(call.toolName, call.args, config)) {
      protectedIds.push(call.toolCallId);
      continue;
    }
    droppedIds.push(call.toolCallId);
    droppedKeys.push(call.key);
    const found = findCallForResult(index, call.toolCallId, call.resultTimestamp);
    // A repeated output has no ref of its own: its original's ref belongs to the original's chain.
    if (found?.aliased) continue;
    let ref: string;
    if (found) ref = found.call.shortRef;
    else {
      const record: ToolCallRecord = {
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        args: call.args,
        resultText: contentText(call.result.content),
        isError: call.isError,
        timestamp: call.callTimestamp,
        resultTimestamp: call.resultTimestamp,
      };
      ref = nextShortRef(index);
      addIndexedCall(index, { record, key: recordKey(record), shortRef: ref });
      newRecords.push(record);
      newRefs.push({ shortId: ref, toolCallId: call.toolCallId, resultTimestamp: call.resultTimestamp });
    }
    if (!toolRefs.includes(ref)) toolRefs.push(ref);
  }
  const summaries = summariesWithin(index, new Set(droppedKeys), new Set(droppedIds));
  const data: ChainData = {
    blockId,
    startUserTimestamp: chain.startUserTimestamp,
    finalAssistantTimestamp: chain.finalAssistantTimestamp,
    droppedToolCallIds: droppedIds,
    droppedOccurrenceKeys: droppedKeys,
    protectedToolCallIds: protectedIds,
    toolRefs,
    compressedAt: now,
    bodySource: summaries.length ? "batch-summaries" : "call-list",
  };
  return { chain, data, summaries, newRecords, newRefs };
}

// ---- compression with range summary fusion ----

export interface ChainCompressionResult {
  /** Entries to persist, in order: per chain an index entry for newly indexed calls, then the chain entry. */
  entries: PersistEntry[];
  chains: ChainData[];
  /** Chains whose body is a fused range summary. */
  rangesSummarized: number;
  summarizerCalls: number;
  usage: SummarizerUsage;
  /** Why fusion calls failed; each such chain still compressed with its batch summaries. */
  fusionFailures: string[];
}

/**
 * Plans the compression, fuses each chain's batch summaries into one range summary when there are
 * two or more (one summarizer call per chain, all in parallel), and returns the entries. A failed
 * or empty fusion only means the chain's body falls back to its batch summaries.
 */
export async function compressChains(
  messages: readonly AgentMessage[],
  index: PruneIndex,
  config: ChainPlanConfig,
  summarize: Summarizer | undefined,
  options: PlanOptions = {},
): Promise<ChainCompressionResult> {
  const result: ChainCompressionResult = { entries: [], chains: [], rangesSummarized: 0, summarizerCalls: 0, usage: { input: 0, output: 0, cost: 0 }, fusionFailures: [] };
  const plans = planChainCompression(messages, index, config, options);
  if (!plans.length) return result;

  const fuse = config.chainCompression.fuseRangeSummary && summarize ? plans.filter((p) => p.summaries.length >= 2) : [];
  const answers = await Promise.allSettled(
    fuse.map((plan) => {
      const refs = plan.summaries.flatMap((s) => s.refs.map((r) => r.shortId));
      return summarize!(buildFusionRequest(plan.summaries.map((s) => s.text), refs));
    }),
  );
  fuse.forEach((plan, i) => {
    const answer = answers[i]!;
    result.summarizerCalls++;
    if (answer.status === "rejected") {
      result.fusionFailures.push(String((answer.reason as Error)?.message ?? answer.reason));
      return;
    }
    const usage = answer.value.usage;
    if (usage) {
      result.usage.input += usage.input;
      result.usage.output += usage.output;
      result.usage.cost += usage.cost;
    }
    const text = finishRangeSummary(answer.value.text, plan.data.toolRefs ?? []);
    if (!text) {
      result.fusionFailures.push("the summarizer returned an empty range summary");
      return;
    }
    plan.data.rangeSummaryText = text;
    plan.data.bodySource = "range-summary";
    result.rangesSummarized++;
  });

  for (const plan of plans) {
    if (plan.newRecords.length) {
      result.entries.push({ kind: "custom", customType: PRUNE_INDEX, data: { toolCalls: plan.newRecords, refs: plan.newRefs } });
    }
    result.entries.push({ kind: "custom", customType: PRUNE_CHAIN, data: plan.data });
    index.chains.push({ ...plan.data, entryId: "" });
    result.chains.push(plan.data);
  }
  return result;
}

/** A fused summary may only name refs of its own chain; unknown ones lose their backticks. Empty → "". */
function finishRangeSummary(answer: string, refs: readonly string[]): string {
  const known = new Set(refs);
  return answer
    .replace(/\r\n/g, "\n")
    .trim()
    .replace(/`(t\d+)`/g, (whole, ref: string) => (known.has(ref) ? whole : ref.replace(/^t/, "call ")));
}
