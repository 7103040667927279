// A session → what a person wants to see: summaries with their pruned calls, every tool call
// with its state, compressed chains, protected calls, the agent's self-control markers (pi-mulligan's
// shapes), compactions and sizes.
// Shared by the command line, the VS Code trees and `/pruner tree`.
import type { AnyEntry, SessionHeader, StatsData, FrontierData } from "../shapes/entries.ts";
import type { AgentMessage, ToolCallBlock, ToolResultMessage } from "../shapes/messages.ts";
import { occurrenceKey } from "../shapes/messages.ts";
import type { BadLine, SessionData } from "../session/session-reader.ts";
import { getBranch } from "../session/session-reader.ts";
import { rebuildIndex, findCallForResult, type IndexedCall, type PruneIndex } from "../prune/prune-index.ts";
import { protectionReason, type ProtectionConfig } from "../settings/protection.ts";
import type { RenderConfig } from "../render/render.ts";
import { renderBranch } from "./model-view.ts";
import type { ControlsView, MarkerView } from "./control-view.ts";
import { sessionLabels } from "../session/labels.ts";
import { contentChars } from "../shapes/size.ts";

export type CallState = "raw" | "summarized" | "deduped" | "spilled" | "compressed" | "protected";

export interface CallView {
  toolCallId: string;
  occurrenceKey: string;
  toolName: string;
  shortRef?: string;
  state: CallState;
  /** Characters of the raw result text. */
  rawChars: number;
  /** `args.path` when it is a string. */
  path?: string;
  /** `args.command` when it is a string (bash and friends). */
  command?: string;
  args: Record<string, unknown>;
  isError: boolean;
  /** Session entry holding the tool result. */
  resultEntryId?: string;
  assistantEntryId?: string;
  resultTimestamp?: number;
  summaryEntryId?: string;
  chainBlockId?: string;
  spillPath?: string;
  spillBytes?: number;
  /** For a duplicate: the short ref of the original it aliases. */
  aliasOf?: string;
  protectedBy?: { kind: "tool"; name: string } | { kind: "path"; pattern: string };
}

export interface SummaryView {
  entryId: string;
  refs: string[];
  toolCallIds: string[];
  /** Occurrence keys of the calls under this summary. */
  keys: string[];
  toolNames: string[];
  turnIndex?: number;
  text: string;
}

export interface ChainView {
  entryId: string;
  blockId: string;
  toolRefs: string[];
  protectedToolCallIds: string[];
  droppedToolCallIds: string[];
  startUserTimestamp: number;
  finalAssistantTimestamp?: number;
  rangeSummaryText?: string;
  bodySource?: string;
}

export interface ProtectedView {
  toolCallId: string;
  occurrenceKey: string;
  toolName: string;
  path?: string;
  reason: string;
}

export interface CompactionView {
  entryId: string;
  summary: string;
  tokensBefore?: number;
  firstKeptEntryId?: string;
}

export interface SessionView {
  session: { id?: string; cwd?: string; name?: string; firstPrompt?: string; version?: number };
  leafId: string | null;
  errors: BadLine[];
  /** Structural problems: parent cycles, dangling parents, payloads the index skipped. */
  problems: string[];
  summaries: SummaryView[];
  calls: CallView[];
  chains: ChainView[];
  protected: ProtectedView[];
  /** Rewinds and shrinks in the order they were written, each with its state, then the checkpoints. */
  markers: MarkerView[];
  compactions: CompactionView[];
  frontier?: FrontierData;
  stats: StatsData;
  totals: { rawChars: number; modelChars?: number; note: string };
}

export interface ViewOptions {
  leafId?: string;
  config: RenderConfig;
}

export interface BranchCall {
  toolCall: ToolCallBlock;
  result: ToolResultMessage;
  resultEntryId: string;
  assistantEntryId: string;
}

/** Pairs every tool result on the branch with the call in the assistant turn it answers. */
export function pairToolCalls(branch: readonly AnyEntry[]): BranchCall[] {
  const out: BranchCall[] = [];
  let calls = new Map<string, ToolCallBlock>();
  let assistantEntryId = "";
  for (const entry of branch) {
    if (entry.type !== "message") continue;
    const message = (entry as { message: AgentMessage }).message;
    if (message.role === "assistant") {
      calls = new Map();
      assistantEntryId = entry.id;
      if (Array.isArray(message.content)) {
        for (const block of message.content) if (block && block.type === "toolCall") calls.set(block.id, block);
      }
    } else if (message.role === "toolResult") {
      const toolCall = calls.get(message.toolCallId) ?? {
        type: "toolCall" as const,
        id: message.toolCallId,
        name: message.toolName,
        arguments: {},
      };
      out.push({ toolCall, result: message, resultEntryId: entry.id, assistantEntryId });
    }
  }
  return out;
}

function chainMembership(index: PruneIndex): { byKey: Map<string, string>; byId: Map<string, string> } {
  const byKey = new Map<string, string>();
  const byId = new Map<string, string>();
  for (const chain of index.chains) {
    const keys = strings(chain.droppedOccurrenceKeys);
    for (const key of keys) byKey.set(key, chain.blockId);
    if (!Array.isArray(chain.droppedOccurrenceKeys)) for (const id of strings(chain.droppedToolCallIds)) byId.set(id, chain.blockId);
  }
  return { byKey, byId };
}

/** The string items of a payload list (session files are input: the list may be anything). */
function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

/** A payload value shown as text: strings as they are, numbers and booleans printed, anything else empty. */
function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return "";
}

function numberOrUndefined(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

function stringArg(args: Record<string, unknown>, name: string): string | undefined {
  const v = args[name];
  return typeof v === "string" ? v : undefined;
}

function describeReason(reason: NonNullable<CallView["protectedBy"]>): string {
  return reason.kind === "tool" ? `tool \`${reason.name}\` is in protectedTools` : `path matches \`${reason.pattern}\``;
}

/** The markers list of a session view: rewinds and shrinks in written order, then the checkpoints. */
export function markersOf(controls: ControlsView): MarkerView[] {
  return [...controls.markers, ...controls.checkpoints];
}

function sessionInfo(header: SessionHeader | undefined, branch: readonly AnyEntry[]): SessionView["session"] {
  return {
    id: header?.id,
    cwd: typeof header?.cwd === "string" ? header.cwd : undefined,
    version: numberOrUndefined(header?.version),
    ...sessionLabels(branch),
  };
}

/** One tool call as the view shows it; its state follows from protection, chains and the index. */
export function callViewOf(input: {
  toolCallId: string;
  toolName: string;
  resultTimestamp: number | undefined;
  result: Pick<ToolResultMessage, "content" | "isError">;
  args: Record<string, unknown>;
  resultEntryId: string;
  assistantEntryId: string | undefined;
  found?: { call: IndexedCall; aliased: boolean };
  chainBlockId?: string;
  config: ProtectionConfig;
}): CallView {
  const { found, chainBlockId, args } = input;
  const reason = protectionReason(input.toolName, args, input.config);
  let state: CallState = "raw";
  if (reason) state = "protected";
  else if (chainBlockId) state = "compressed";
  else if (found?.aliased) state = "deduped";
  else if (found?.call.record.spillPath) state = "spilled";
  else if (found) state = "summarized";
  return {
    toolCallId: input.toolCallId,
    occurrenceKey: occurrenceKey(input.toolCallId, input.resultTimestamp),
    toolName: input.toolName,
    shortRef: found?.call.shortRef,
    state,
    rawChars: contentChars(input.result.content),
    path: stringArg(args, "path"),
    command: stringArg(args, "command"),
    args,
    isError: input.result.isError === true,
    resultEntryId: input.resultEntryId,
    assistantEntryId: input.assistantEntryId || undefined,
    resultTimestamp: input.resultTimestamp,
    summaryEntryId: found && !found.aliased ? found.call.summaryEntryId : undefined,
    chainBlockId,
    spillPath: found?.call.record.spillPath,
    spillBytes: found?.call.record.spillBytes,
    aliasOf: found?.aliased ? found.call.shortRef : undefined,
    protectedBy: reason,
  };
}

/** The Protected list's entry for a call, when it is protected. */
export function protectedViewOf(call: CallView): ProtectedView | undefined {
  if (!call.protectedBy) return undefined;
  return { toolCallId: call.toolCallId, occurrenceKey: call.occurrenceKey, toolName: call.toolName, path: call.path, reason: describeReason(call.protectedBy) };
}

export function buildSessionView(data: SessionData, options: ViewOptions): SessionView {
  const branch = getBranch(data, options.leafId);
  const { index, problems } = rebuildIndex(branch.entries);
  const membership = chainMembership(index);
  const model = renderBranch(branch.entries, index, options.config);

  const calls: CallView[] = [];
  const protectedCalls: ProtectedView[] = [];
  for (const pair of pairToolCalls(branch.entries)) {
    const { toolCall, result } = pair;
    const args = (toolCall.arguments && typeof toolCall.arguments === "object" ? toolCall.arguments : {}) as Record<string, unknown>;
    // Ids, names and timestamps come from the file: anything that is not a string (a number) is normalised here.
    const toolCallId = textOf(result.toolCallId);
    const toolName = textOf(result.toolName);
    const resultTimestamp = numberOrUndefined(result.timestamp);
    const key = occurrenceKey(toolCallId, resultTimestamp);
    const found = findCallForResult(index, toolCallId, resultTimestamp as number);
    const view = callViewOf({
      toolCallId,
      toolName,
      resultTimestamp,
      result,
      args,
      resultEntryId: pair.resultEntryId,
      assistantEntryId: pair.assistantEntryId,
      found,
      chainBlockId: membership.byKey.get(key) ?? membership.byId.get(toolCallId),
      config: options.config,
    });
    calls.push(view);
    const protectedView = protectedViewOf(view);
    if (protectedView) protectedCalls.push(protectedView);
  }

  const summaries: SummaryView[] = index.summaries.map((s) => ({
    entryId: s.entryId,
    refs: s.refs.map((r) => r.shortId),
    toolCallIds: s.refs.map((r) => r.toolCallId),
    keys: s.keys,
    toolNames: s.toolNames,
    turnIndex: s.turnIndex,
    text: s.text,
  }));

  const chains: ChainView[] = index.chains.map((c) => ({
    entryId: c.entryId,
    blockId: c.blockId,
    toolRefs: strings(c.toolRefs),
    protectedToolCallIds: strings(c.protectedToolCallIds),
    droppedToolCallIds: strings(c.droppedToolCallIds),
    startUserTimestamp: c.startUserTimestamp,
    finalAssistantTimestamp: numberOrUndefined(c.finalAssistantTimestamp),
    rangeSummaryText: typeof c.rangeSummaryText === "string" ? c.rangeSummaryText : undefined,
    bodySource: typeof c.bodySource === "string" ? c.bodySource : undefined,
  }));

  const compactions: CompactionView[] = [];
  for (const entry of branch.entries) {
    if (entry.type === "compaction") {
      const c = entry as { id: string; summary?: unknown; tokensBefore?: unknown; firstKeptEntryId?: unknown };
      compactions.push({
        entryId: c.id,
        summary: typeof c.summary === "string" ? c.summary : "",
        tokensBefore: typeof c.tokensBefore === "number" ? c.tokensBefore : undefined,
        firstKeptEntryId: typeof c.firstKeptEntryId === "string" ? c.firstKeptEntryId : undefined,
      });
    }
  }

  return {
    session: sessionInfo(data.header, branch.entries),
    leafId: branch.leafId,
    errors: data.errors,
    problems: [...branch.problems, ...problems, ...model.controls.unreadable.map((u) => `a ${u.customType} entry (${u.entryId}) was skipped: ${u.problem}`)],
    summaries,
    calls,
    chains,
    protected: protectedCalls,
    markers: markersOf(model.controls),
    compactions,
    frontier: index.frontier,
    stats: index.stats,
    totals: { rawChars: model.rawChars, modelChars: model.modelChars, note: "characters; tokens ≈ characters / 4 (an estimate)" },
  };
}
