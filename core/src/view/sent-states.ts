// What the model is sent of each chain and each tool call, read off the render itself rather than
// off the pruner's entries: a chain entry whose range Pi's compaction removed was never sent as a
// block; a result a summary covers but the render left as it was went out raw; a result Pi's
// compaction dropped is not sent at all. The entries say what a writer decided; this says what
// came of it.
import type { AnyEntry, ChainData } from "../shapes/entries.ts";
import { isCompactionEntry, isMessageEntry, PRUNE_CHAIN, QUERY_TOOL } from "../shapes/entries.ts";
import type { AgentMessage } from "../shapes/messages.ts";
import { occurrenceKey } from "../shapes/messages.ts";
import { isRecord } from "../shapes/json.ts";
import type { ChainInfo } from "../prune/prune-index.ts";
import type { RenderConfig, RenderStats } from "../render/render.ts";
import { DEFAULT_CONFIG } from "../settings/config.ts";
import { isPrunedState, type CallState } from "./call-state.ts";
import { PROTECTED_RESEND, PROTECTED_RESEND_LABEL } from "../render/compaction-protect.ts";

/** What a chain's block was built from, and whether a summarizer had a part in it. */
export interface ChainBody {
  withoutSummarizer: boolean;
  text: string;
}

export function chainBodyOf(chain: Pick<ChainData, "bodySource" | "rangeSummaryText">): ChainBody {
  switch (chain.bodySource) {
    case "range-summary":
      return { withoutSummarizer: false, text: "one fused summary (a summarizer call)" };
    case "batch-summaries":
      return { withoutSummarizer: false, text: "its batch summaries" };
    case "call-list":
      return { withoutSummarizer: true, text: "built without a summarizer: a list of its calls" };
    case "deterministic":
      return { withoutSummarizer: true, text: "built without a summarizer: a list of its calls (the writer's deterministic body)" };
    case undefined:
      return typeof chain.rangeSummaryText === "string"
        ? { withoutSummarizer: false, text: "one fused summary (a summarizer call)" }
        : { withoutSummarizer: false, text: "its batch summaries, joined when sent" };
    default:
      return { withoutSummarizer: false, text: `body "${String(chain.bodySource)}"` };
  }
}

export type ChainSentState = "compressed" | "removed-by-compaction" | "not-applied";

export interface ChainSent {
  state: ChainSentState;
  /** In a person's words: "sent as one compressed block", "removed by compaction, never sent", … */
  text: string;
  /** The compaction that removed the chain's start. */
  compactionEntryId?: string;
}

type CallSentAs = "raw" | "stub" | "left-out" | "not-in-context";

/** Set only where what was sent differs from what the call's state says (or the call is not sent at all). */
export interface CallSent {
  as: CallSentAs;
  text: string;
}

/** The part of a model view the states are read from. */
export interface RenderedBranch {
  rawMessages: readonly AgentMessage[];
  messages: readonly AgentMessage[];
  stats?: Pick<RenderStats, "unresolvedChains">;
  renderError?: string;
}

/**
 * Where entries sit on the branch, and which compaction (if any) removed an entry from Pi's context.
 * Each part is worked out on its first question: most branches never ask (every chain sent, every
 * result in the context).
 */
export class BranchPositions {
  private readonly branch: readonly AnyEntry[];
  private positions: Map<string, number> | undefined;
  private users: Map<number, number> | undefined;
  private removals: { entryId: string; position: number; keptFrom: number }[] | undefined;

  constructor(branch: readonly AnyEntry[]) {
    this.branch = branch;
  }

  /** Each entry's position on the branch, by id. */
  get at(): ReadonlyMap<string, number> {
    if (!this.positions) {
      const at = new Map<string, number>();
      this.branch.forEach((entry, i) => at.set(entry.id, i));
      this.positions = at;
    }
    return this.positions;
  }

  private get userAt(): ReadonlyMap<number, number> {
    if (!this.users) {
      const userAt = new Map<number, number>();
      this.branch.forEach((entry, i) => {
        if (!isMessageEntry(entry)) return;
        const message = entry.message;
        if (message?.role === "user" && typeof message.timestamp === "number" && !userAt.has(message.timestamp)) userAt.set(message.timestamp, i);
      });
      this.users = userAt;
    }
    return this.users;
  }

  private get compactions(): readonly { entryId: string; position: number; keptFrom: number }[] {
    if (!this.removals) {
      const compactions: { entryId: string; position: number; keptFrom: number }[] = [];
      this.branch.forEach((entry, i) => {
        if (!isCompactionEntry(entry)) return;
        const first: unknown = entry.firstKeptEntryId;
        const kept = typeof first === "string" ? this.at.get(first) : undefined;
        // A kept entry that is not before the compaction (Pi's "keep nothing") keeps nothing before it.
        compactions.push({ entryId: entry.id, position: i, keptFrom: kept !== undefined && kept < i ? kept : i });
      });
      this.removals = compactions;
    }
    return this.removals;
  }

  userMessage(timestamp: number): number | undefined {
    return this.userAt.get(timestamp);
  }

  /**
   * The compaction since which the entry at `position` has been out of Pi's context: Pi builds the
   * context from the newest compaction's kept part on, so an entry is out when that part starts
   * after it, and it has been out since the earliest compaction of the run of those that left it out.
   */
  removedBy(position: number): { entryId: string; position: number } | undefined {
    let remover: { entryId: string; position: number } | undefined;
    const compactions = this.compactions;
    for (let i = compactions.length - 1; i >= 0; i--) {
      const c = compactions[i]!;
      if (c.position < position || c.keptFrom <= position) break;
      remover = c;
    }
    return remover;
  }
}

/** The state of each chain entry of the index (by entry id) in the render of this branch. */
export function chainSentStates(branch: readonly AnyEntry[], chains: readonly ChainInfo[], rendered: RenderedBranch, config: RenderConfig, positions = new BranchPositions(branch)): Map<string, ChainSent> {
  const blocks = new Set<string>();
  for (const m of rendered.messages) {
    if (m.role === "custom" && m.customType === PRUNE_CHAIN && isRecord(m.details) && typeof m.details.blockId === "string") blocks.add(m.details.blockId);
  }
  const unresolved = new Map((rendered.stats?.unresolvedChains ?? []).map((u) => [`${u.blockId}@${u.startUserTimestamp}`, u]));
  const out = new Map<string, ChainSent>();
  for (const chain of chains) {
    if (blocks.has(chain.blockId)) {
      out.set(chain.entryId, { state: "compressed", text: "sent as one compressed block" });
      continue;
    }
    const start = positions.userMessage(chain.startUserTimestamp);
    const remover = start !== undefined ? positions.removedBy(start) : undefined;
    const chainAt = positions.at.get(chain.entryId);
    if (remover) {
      const neverSent = chainAt === undefined || chainAt > remover.position;
      out.set(chain.entryId, {
        state: "removed-by-compaction",
        text: neverSent ? "removed by compaction, never sent" : "sent as a block until Pi's compaction removed it",
        compactionEntryId: remover.entryId,
      });
      continue;
    }
    const problem = unresolved.get(`${chain.blockId}@${chain.startUserTimestamp}`);
    let why: string;
    if (problem) why = problem.reason;
    else if (rendered.renderError !== undefined) why = "the render failed";
    else if (!config.enabled) why = "pruning is off in the settings this view is rendered with";
    else if (!(config.chainCompression ?? DEFAULT_CONFIG.chainCompression).enabled) why = "chain compression is off in the settings this view is rendered with";
    else why = "an earlier chain entry starts at the same message";
    out.set(chain.entryId, { state: "not-applied", text: `not applied: ${why}` });
  }
  return out;
}

/** What a call needs for its sent state. */
export interface SentCall {
  toolCallId: string;
  toolName: string;
  occurrenceKey: string;
  state: CallState;
  resultEntryId?: string;
  chainBlockId?: string;
}

/** The result entries whose output the render sent again after Pi's compaction summary. */
function resentEntries(messages: readonly AgentMessage[]): Set<string> {
  const out = new Set<string>();
  for (const m of messages) {
    if (m.role !== "custom" || m.customType !== PROTECTED_RESEND || !isRecord(m.details)) continue;
    const ids: unknown = m.details.resultEntryIds;
    if (Array.isArray(ids)) for (const id of ids) if (typeof id === "string") out.add(id);
  }
  return out;
}

function resultsByKey(messages: readonly AgentMessage[]): Map<string, AgentMessage> {
  const out = new Map<string, AgentMessage>();
  for (const m of messages) {
    if (m.role === "toolResult" && typeof m.toolCallId === "string") out.set(occurrenceKey(m.toolCallId, typeof m.timestamp === "number" ? m.timestamp : undefined), m);
  }
  return out;
}

/**
 * For each call (by occurrence key) whose sending differs from what its state says: not in the
 * context at all, sent raw though pruned, or pruned by something else than its chain.
 */
export function callSentStates(
  branch: readonly AnyEntry[],
  calls: readonly SentCall[],
  rendered: RenderedBranch,
  chainStates: ReadonlyMap<string, ChainSent>,
  chainEntryOf: (blockId: string) => string | undefined,
  positions = new BranchPositions(branch),
): Map<string, CallSent> {
  const raw = resultsByKey(rendered.rawMessages);
  const sent = resultsByKey(rendered.messages);
  const resent = resentEntries(rendered.messages);
  const out = new Map<string, CallSent>();
  for (const call of calls) {
    const before = raw.get(call.occurrenceKey);
    if (!before && call.resultEntryId !== undefined && resent.has(call.resultEntryId)) {
      out.set(call.occurrenceKey, { as: "raw", text: PROTECTED_RESEND_LABEL });
      continue;
    }
    if (!before) {
      const at = call.resultEntryId !== undefined ? positions.at.get(call.resultEntryId) : undefined;
      const remover = at !== undefined ? positions.removedBy(at) : undefined;
      out.set(call.occurrenceKey, {
        as: "not-in-context",
        text: remover ? "removed by Pi's compaction: not sent since" : "not in the context Pi builds (a context edit removed it)",
      });
      continue;
    }
    const after = sent.get(call.occurrenceKey);
    if (call.state === "compressed") {
      const entryId = call.chainBlockId !== undefined ? chainEntryOf(call.chainBlockId) : undefined;
      const chain = entryId !== undefined ? chainStates.get(entryId) : undefined;
      if (!chain || chain.state === "compressed") continue;
      if (after === before) out.set(call.occurrenceKey, { as: "raw", text: `sent raw: its chain was ${chain.state === "removed-by-compaction" ? "cut by Pi's compaction" : "not applied"}` });
      else if (after) out.set(call.occurrenceKey, { as: "stub", text: `sent as a stub: its chain was ${chain.state === "removed-by-compaction" ? "cut by Pi's compaction" : "not applied"}` });
      else out.set(call.occurrenceKey, { as: "left-out", text: "left out of what is sent" });
      continue;
    }
    if (!isPrunedState(call.state)) continue;
    if (after === before) {
      out.set(call.occurrenceKey, { as: "raw", text: call.toolName === QUERY_TOOL ? "sent raw: recovered output in its grace window" : "sent raw: the render left it as it was" });
    } else if (!after) out.set(call.occurrenceKey, { as: "left-out", text: "left out of what is sent" });
  }
  return out;
}
