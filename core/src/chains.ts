// Closed chains and their compression plan. A closed chain is a user message, the tool-using
// assistant turns and results that follow it, and a final text-only assistant reply. Chains are
// found on the context Pi actually builds (after its own compaction), never on the raw branch, and
// are identified by position: the start user message's and the final assistant's timestamps, each
// of which must name exactly one message of its role. Tool-call ids are never used to find a range:
// providers repeat them across responses.
import type { AgentMessage, AssistantMessage, ToolCallBlock, ToolResultMessage } from "./messages.ts";
import { contentText, occurrenceKey } from "./messages.ts";
import type { ChainData, ToolCallRecord, ToolCallRef } from "./entries.ts";
import { PRUNE_CHAIN, PRUNE_INDEX } from "./entries.ts";
import type { PruneConfig } from "./config.ts";
import { isProtected } from "./protected.ts";
import { addIndexedCall, findCallForResult, nextBlockId, nextShortRef, recordKey, type PruneIndex, type SummaryInfo } from "./records.ts";
import type { PersistEntry } from "./pipeline.ts";
import { buildFusionRequest, type Summarizer, type SummarizerUsage } from "./summarize.ts";

export interface ChainRange {
  /** Index of the start user message. */
  start: number;
  /** Index of the final text-only assistant reply. */
  end: number;
}

/** One tool result inside a chain, with the call it answers (paired by position, not by id alone). */
export interface ChainCall {
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  /** Occurrence key `toolCallId@resultTimestamp`. */
  key: string;
  resultIndex: number;
  resultTimestamp: number;
  /** The result message itself (read its text with contentText only where it is needed). */
  result: ToolResultMessage;
  isError: boolean;
  /** Timestamp of the assistant message holding the call (the result's when no call was found). */
  callTimestamp: number;
}

export interface ClosedChain extends ChainRange {
  startUserTimestamp: number;
  finalAssistantTimestamp: number;
  calls: ChainCall[];
  /** Assistant turns with tool calls between start and end. */
  toolTurns: number;
}

/** An assistant reply the provider layer never replays (Pi drops errored and aborted turns). */
export function isFailedTurn(message: AssistantMessage): boolean {
  return message.stopReason === "error" || message.stopReason === "aborted";
}

export function hasToolCalls(message: AssistantMessage): boolean {
  if (!Array.isArray(message.content)) return false;
  for (const block of message.content) if (block && block.type === "toolCall") return true;
  return false;
}

/** Roles that may sit inside a chain: everything else ends a chain in progress. */
function insideChain(message: AgentMessage): boolean {
  return message.role === "assistant" || message.role === "toolResult" || message.role === "custom";
}

/** Message position by timestamp for user and assistant messages; -1 marks a timestamp held by more than one. */
export interface TimestampLookup {
  user: Map<number, number>;
  assistant: Map<number, number>;
}

export function indexTimestamps(messages: readonly AgentMessage[]): TimestampLookup {
  const lookup: TimestampLookup = { user: new Map(), assistant: new Map() };
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const map = m.role === "user" ? lookup.user : m.role === "assistant" ? lookup.assistant : undefined;
    if (!map) continue;
    map.set(m.timestamp, map.has(m.timestamp) ? -1 : i);
  }
  return lookup;
}

/** The tool results between start and end, each paired with its call in the nearest assistant turn before it. */
export function callsInRange(messages: readonly AgentMessage[], range: ChainRange): ChainCall[] {
  const calls: ChainCall[] = [];
  let turn: AssistantMessage | undefined;
  for (let i = range.start + 1; i < range.end; i++) {
    const m = messages[i]!;
    if (m.role === "assistant") turn = m;
    else if (m.role === "toolResult") {
      const call = turn ? findCallBlock(turn, m.toolCallId) : undefined;
      const args = call && call.arguments && typeof call.arguments === "object" ? call.arguments : {};
      calls.push({
        toolCallId: m.toolCallId,
        toolName: m.toolName,
        args,
        key: occurrenceKey(m.toolCallId, m.timestamp),
        resultIndex: i,
        resultTimestamp: m.timestamp,
        result: m,
        isError: m.isError === true,
        callTimestamp: call && turn ? turn.timestamp : m.timestamp,
      });
    }
  }
  return calls;
}

export function findCallBlock(message: AssistantMessage, toolCallId: string): ToolCallBlock | undefined {
  if (!Array.isArray(message.content)) return undefined;
  for (const block of message.content) if (block && block.type === "toolCall" && block.id === toolCallId) return block;
  return undefined;
}

/**
 * Every closed chain with at least one tool-using turn, oldest first. A chain whose boundary
 * timestamps are not unique cannot be found again later, so it is not reported as closed.
 * A failed (errored or aborted) reply neither closes a chain nor breaks it; a steering user
 * message starts a new chain; any message other than assistant, tool result or custom ends the
 * chain in progress unclosed.
 */
export function detectClosedChains(messages: readonly AgentMessage[], lookup: TimestampLookup = indexTimestamps(messages)): ClosedChain[] {
  const chains: ClosedChain[] = [];
  let start = -1;
  let toolTurns = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "user") {
      start = i;
      toolTurns = 0;
      continue;
    }
    if (start < 0) continue;
    if (!insideChain(m)) {
      start = -1;
      continue;
    }
    if (m.role !== "assistant") continue;
    if (hasToolCalls(m)) {
      toolTurns++;
      continue;
    }
    if (isFailedTurn(m)) continue;
    const startMessage = messages[start]!;
    if (toolTurns > 0 && lookup.user.get(startMessage.timestamp) === start && lookup.assistant.get(m.timestamp) === i) {
      const range = { start, end: i };
      chains.push({ ...range, startUserTimestamp: startMessage.timestamp, finalAssistantTimestamp: m.timestamp, calls: callsInRange(messages, range), toolTurns });
    }
    start = -1;
  }
  return chains;
}

export type ChainResolution =
  | { ok: true; range: ChainRange }
  | { ok: false; reason: string; /** Neither boundary is in the context: Pi's compaction removed the chain. */ absent: boolean };

/**
 * Finds a persisted chain in the messages by position. Entries written without a final
 * assistant timestamp end at the first text-only reply after the start.
 */
export function resolveChain(messages: readonly AgentMessage[], lookup: TimestampLookup, chain: Pick<ChainData, "startUserTimestamp" | "finalAssistantTimestamp">): ChainResolution {
  const start = lookup.user.get(chain.startUserTimestamp);
  const hasFinal = typeof chain.finalAssistantTimestamp === "number";
  let end = hasFinal ? lookup.assistant.get(chain.finalAssistantTimestamp!) : undefined;
  if (start === undefined) {
    return { ok: false, reason: "its start message is not in the context", absent: !hasFinal || end === undefined };
  }
  if (start < 0) return { ok: false, reason: "more than one user message has its start timestamp", absent: false };
  if (!hasFinal) end = firstClosingReply(messages, start);
  if (end === undefined) return { ok: false, reason: "its final reply is not in the context", absent: false };
  if (end < 0) return { ok: false, reason: "more than one assistant message has its final timestamp", absent: false };
  if (end <= start) return { ok: false, reason: "its final reply comes before its start", absent: false };
  const final = messages[end] as AssistantMessage;
  if (hasToolCalls(final)) return { ok: false, reason: "its final message calls tools", absent: false };
  for (let i = start + 1; i < end; i++) {
    if (!insideChain(messages[i]!)) return { ok: false, reason: `a ${messages[i]!.role} message lies inside its range`, absent: false };
  }
  return { ok: true, range: { start, end } };
}

function firstClosingReply(messages: readonly AgentMessage[], start: number): number | undefined {
  for (let i = start + 1; i < messages.length; i++) {
    const m = messages[i]!;
    if (!insideChain(m)) return undefined;
    if (m.role === "assistant" && !hasToolCalls(m) && !isFailedTurn(m)) return i;
  }
  return undefined;
}

/** The batch summaries whose every call lies in one chain: those the chain's block replaces. */
export function summariesWithin(index: PruneIndex, keys: ReadonlySet<string>, ids: ReadonlySet<string>): SummaryInfo[] {
  return index.summaries.filter((s) => s.keys.length > 0 && s.keys.every((k) => keys.has(k) || (!k.includes("@") && ids.has(k))));
}

// ---- compression planning ----

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
  const closed = detectClosedChains(messages);
  const keepRaw = options.all ? 0 : Math.max(0, config.chainCompression.rollingWindow);
  const outOfWindow = closed.slice(0, Math.max(0, closed.length - keepRaw));
  if (!outOfWindow.length) return [];
  const compressedStarts = new Set(index.chains.map((c) => c.startUserTimestamp));
  const plans: PlannedChain[] = [];
  for (const chain of outOfWindow) {
    if (compressedStarts.has(chain.startUserTimestamp)) continue;
    plans.push(planOne(chain, index, config, options.now ?? Date.now()));
  }
  return plans;
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
export function finishRangeSummary(answer: string, refs: readonly string[]): string {
  const known = new Set(refs);
  return answer
    .replace(/\r\n/g, "\n")
    .trim()
    .replace(/`(t\d+)`/g, (whole, ref: string) => (known.has(ref) ? whole : ref.replace(/^t/, "call ")));
}

