// A session → what a person wants to see: summaries with their pruned calls, every tool call
// with its state, compressed chains, protected calls, the agent's self-control markers (pi-mulligan's
// shapes), compactions and sizes.
// Shared by the command line, the VS Code trees and `/pruner tree`.
import type { AnyEntry, SessionHeader, StatsData, FrontierData } from "../shapes/entries.ts";
import { isCompactionEntry, isCustomMessageEntry, isMessageEntry } from "../shapes/entries.ts";
import type { ToolCallBlock, ToolResultMessage } from "../shapes/messages.ts";
import { occurrenceKey } from "../shapes/messages.ts";
import type { BadLine, SessionData } from "../session/session-reader.ts";
import { getBranch } from "../session/session-reader.ts";
import { rebuildIndex, findCallForResult, type ChainInfo, type IndexedCall, type PruneIndex, type SummaryInfo } from "../prune/prune-index.ts";
import { protectionReason, type ProtectionConfig } from "../settings/protection.ts";
import type { RenderConfig } from "../render/render.ts";
import { renderBranch } from "./model-view.ts";
import type { ControlsView, MarkerView } from "./control-view.ts";
import { markdownToPlain, sessionLabels, userPromptOf } from "../session/labels.ts";
import { stripFooter } from "../prune/summarizer-prompts.ts";
import { contentChars, messageChars } from "../shapes/size.ts";
import { PRUNE_SUMMARY } from "../shapes/entries.ts";
import { configForWriter } from "./recorded-settings.ts";
import { chainWrittenByPiPruner, detectSessionWriter, INERT_MARKERS, markersWereInert, renderedCounts, renderFidelity, type RenderFidelity, type SessionWriter } from "./session-writer.ts";
import { writerDiagnostics, type DiagnosticView } from "./writer-diagnostics.ts";
import { BranchPositions, callSentStates, chainBodyOf, chainSentStates, type CallSent, type ChainSent, type ChainSentState } from "./sent-states.ts";
import { isPrunedState, type CallState } from "./call-state.ts";

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
  /** For a stale output: the call that superseded it, as its stub names it (`t15 (edit src/x.ts)`). */
  supersededBy?: string;
  protectedBy?: { kind: "tool"; name: string } | { kind: "path"; pattern: string };
  /** Where what the model is sent differs from what `state` says, or the result is not sent at all. */
  sent?: CallSent;
  /** Why the model can no longer be given this output back (context_tree_query), when it cannot. */
  unrecoverable?: string;
  /** Entry ids of the writer's diagnostics that concern this call (SessionView.diagnostics). */
  diagnostics?: string[];
}

export interface SummaryView {
  entryId: string;
  refs: string[];
  toolCallIds: string[];
  /** Occurrence keys of the calls under this summary. */
  keys: string[];
  toolNames: string[];
  /** The writer's internal turn number: it matches no prompt a person sees, so labels use `prompt`. */
  turnIndex?: number;
  text: string;
  /** The text as plain words on one line: markdown and the ref footer (ours or pi-condense's) removed. */
  preview: string;
  /** The user prompt its calls were made for (one line), and which prompt of the branch it is (1-based). */
  prompt?: string;
  promptNumber?: number;
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
  /** What the render did with it: sent as a block, removed by Pi's compaction, or not applied. */
  state: ChainSentState;
  /** The state in a person's words ("removed by compaction, never sent"). */
  stateText: string;
  /** The compaction that removed its start, when one did. */
  compactionEntryId?: string;
  /** What its block is made of ("built without a summarizer: …"). */
  bodyText: string;
  withoutSummarizer: boolean;
  /**
   * For another writer's chain: the text it persisted for the block's body (what it sent between
   * the block's tags, its protected outputs aside), to set beside the block rendered here.
   */
  writerText?: string;
  /** Entry ids of the writer's diagnostics that concern this chain. */
  diagnostics: string[];
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
  /** Who wrote the session's pruning and self-control entries. */
  writer: SessionWriter;
  /** What the render at the leaf means for another writer's session, with the counts that must match. */
  fidelity: RenderFidelity;
  /** The writer's diagnostic entries (pi-condense's), oldest first. */
  diagnostics: DiagnosticView[];
  frontier?: FrontierData;
  stats: StatsData;
  totals: ReclaimTotals;
}

/** What the model is sent at the leaf against what Pi alone would send, and what explains the difference. */
export interface ReclaimTotals {
  /** What Pi would send without the pruner (its summaries left out), agent's rewound spans included. */
  rawChars: number;
  /** What the model is sent. */
  modelChars?: number;
  note: string;
  /** Characters the agent's active rewinds leave out of what is sent (part of the reclaim). */
  rewoundChars?: number;
  /** Active rewinds that leave nothing out now: their reasons, in the markers. */
  rewindsNotApplied?: number;
  /** The first entry counted when the branch is cut (a parent missing from the file, a cycle): what came before is in neither figure. */
  cutAt?: string;
  /** Why more is sent than Pi alone would send, when it is. */
  excess?: string;
}

export interface ViewOptions {
  leafId?: string;
  config: RenderConfig;
}

interface BranchCall {
  toolCall: ToolCallBlock;
  result: ToolResultMessage;
  resultEntryId: string;
  assistantEntryId: string;
}

/** Pairs every tool result on the branch with the call in the assistant turn it answers. */
function pairToolCalls(branch: readonly AnyEntry[]): BranchCall[] {
  const out: BranchCall[] = [];
  // The calls of the newest assistant turn (one map, emptied at each turn).
  const calls = new Map<string, ToolCallBlock>();
  let assistantEntryId = "";
  for (const entry of branch) {
    if (!isMessageEntry(entry)) continue;
    const message = entry.message;
    if (message.role === "assistant") {
      if (calls.size > 0) calls.clear();
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

/**
 * For the entries prompts are looked up by (assistant turns, which make the calls, and the
 * summaries), the newest user prompt at or before it on the branch and its number (1-based).
 */
function promptsOnBranch(branch: readonly AnyEntry[]): Map<string, { text: string; number: number }> {
  const out = new Map<string, { text: string; number: number }>();
  let current: { text: string; number: number } | undefined;
  for (const entry of branch) {
    const role = isMessageEntry(entry) ? entry.message?.role : undefined;
    if (role === "user") {
      const prompt = userPromptOf(entry);
      if (prompt !== undefined) current = { text: prompt, number: (current?.number ?? 0) + 1 };
    }
    if (current && (role === "assistant" || isCustomMessageEntry(entry))) out.set(entry.id, current);
  }
  return out;
}

// pi-condense ends a summary with a rule and a bold list of its refs; the refs are shown beside it anyway.
const FOREIGN_REF_FOOTER = /\n\s*-{3,}\s*\n\s*\*\*Summarized tool refs\*\*[\s\S]*$/;

/** A summary as plain words: without the ref footer either writer appends, markdown removed. */
export function summaryPreview(text: string): string {
  return markdownToPlain(stripFooter(text).replace(FOREIGN_REF_FOOTER, ""));
}

/** The markers list of a session view: rewinds and shrinks in written order, then the checkpoints. */
function markersOf(controls: ControlsView): MarkerView[] {
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
  /** occurrenceKey(toolCallId, resultTimestamp), when the caller has it already. */
  occurrenceKey?: string;
}): CallView {
  const { found, chainBlockId, args } = input;
  const reason = protectionReason(input.toolName, args, input.config);
  let state: CallState = "raw";
  if (reason) state = "protected";
  else if (chainBlockId) state = "compressed";
  else if (found?.aliased) state = "deduped";
  else if (found?.call.record.spillPath) state = "spilled";
  else if (typeof found?.call.record.supersededBy === "string") state = "superseded";
  else if (found) state = "summarized";
  return {
    toolCallId: input.toolCallId,
    occurrenceKey: input.occurrenceKey ?? occurrenceKey(input.toolCallId, input.resultTimestamp),
    toolName: input.toolName,
    // A call no entry gave a short ref is named by its tool-call id (the index uses the id as its ref).
    shortRef: found && found.call.shortRef !== found.call.record.toolCallId ? found.call.shortRef : undefined,
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
    supersededBy: found && !found.aliased ? found.call.record.supersededBy : undefined,
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
  const writer = detectSessionWriter(branch.entries);
  // The session as it went: markers that did nothing when sent are listed, credited with nothing.
  const inert = markersWereInert(writer);
  // Another writer's session shows the state that writer gave it, never today's settings.
  const config = configForWriter(writer, options.config);
  const model = renderBranch(branch.entries, index, config, undefined, inert ? INERT_MARKERS : undefined);

  const calls: CallView[] = [];
  /** The index's call for each of `calls`, by position. */
  const foundCalls: ReturnType<typeof findCallForResult>[] = [];
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
      config,
      occurrenceKey: key,
    });
    calls.push(view);
    foundCalls.push(found);
    const protectedView = protectedViewOf(view);
    if (protectedView) protectedCalls.push(protectedView);
  }

  const callByKey = new Map<string, CallView>();
  for (const call of calls) callByKey.set(call.occurrenceKey, call);

  // Where each entry is on the branch, found once (and only when asked) for the sent states and the diagnostics.
  const positions = new BranchPositions(branch.entries);
  const chainStates = chainSentStates(branch.entries, index.chains, model, config, positions);
  markSent(branch.entries, calls, index.chains, model, chainStates, positions);
  markUnrecoverable(calls, foundCalls);
  const diagnostics = writerDiagnostics(branch.entries, calls, index);
  linkDiagnostics(diagnostics, callByKey);

  const view: SessionView = {
    session: sessionInfo(data.header, branch.entries),
    leafId: branch.leafId,
    errors: data.errors,
    problems: [...branch.problems, ...problems, ...model.controls.unreadable.map((u) => `a ${u.customType} entry (${u.entryId}) was skipped: ${u.problem}`)],
    summaries: [],
    calls,
    chains: [],
    protected: protectedCalls,
    markers: markersOf(model.controls),
    compactions: [],
    writer,
    fidelity: renderFidelity(writer, renderedCounts(model), inert ? "sent" : "next"),
    diagnostics,
    frontier: index.frontier,
    stats: index.stats,
    totals: reclaimTotals(branch.entries, model, callByKey, index.summaries),
  };
  // What the Sessions tree's session row does not show is made when first read: the summaries (their
  // previews and prompts), the chains and the compactions. Read or not, they are the same values.
  deferred(view, "summaries", () => summaryViews(index, branch.entries, callByKey));
  deferred(view, "chains", () => chainViews(index, chainStates, writer, diagnostics));
  deferred(view, "compactions", () => compactionViews(branch.entries));
  return view;
}

/**
 * Makes `target[key]` computed on its first read and kept from then on. It is an own, enumerable
 * property throughout, so copies, comparisons and JSON see the value as if it had been set at once;
 * a write before the first read replaces it.
 */
function deferred<T extends object, K extends keyof T>(target: T, key: K, compute: () => T[K]): void {
  const settle = (value: T[K]): T[K] => {
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
    return value;
  };
  Object.defineProperty(target, key, { get: () => settle(compute()), set: settle, enumerable: true, configurable: true });
}

/** The view of each summary of the index, with the prompt its calls were made for. */
function summaryViews(index: PruneIndex, branch: readonly AnyEntry[], callByKey: ReadonlyMap<string, CallView>): SummaryView[] {
  const prompts = promptsOnBranch(branch);
  const promptOfCall = (key: string) => {
    const assistantEntryId = callByKey.get(key)?.assistantEntryId;
    return assistantEntryId ? prompts.get(assistantEntryId) : undefined;
  };
  return index.summaries.map((s) => {
    // The prompt of its first call on the branch; a summary of calls no longer here, the prompt it was written under.
    let prompt: { text: string; number: number } | undefined;
    for (const key of s.keys) if ((prompt = promptOfCall(key))) break;
    prompt ??= prompts.get(s.entryId);
    return {
      entryId: s.entryId,
      refs: s.refs.map((r) => r.shortId),
      toolCallIds: s.refs.map((r) => r.toolCallId),
      keys: s.keys,
      toolNames: s.toolNames,
      turnIndex: s.turnIndex,
      text: s.text,
      preview: summaryPreview(s.text),
      ...(prompt ? { prompt: prompt.text, promptNumber: prompt.number } : {}),
    };
  });
}

/** The view of each chain of the index, with its state in the render and the writer's diagnostics that concern it. */
function chainViews(index: PruneIndex, chainStates: ReturnType<typeof chainSentStates>, writer: SessionWriter, diagnostics: readonly DiagnosticView[]): ChainView[] {
  return index.chains.map((c) => ({
    ...chainState(c, chainStates.get(c.entryId), writer.foreign, diagnostics),
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
}

function compactionViews(branch: readonly AnyEntry[]): CompactionView[] {
  const compactions: CompactionView[] = [];
  for (const entry of branch) {
    if (!isCompactionEntry(entry)) continue;
    // The session reader does not check the size: it is narrowed here.
    const tokensBefore: unknown = entry.tokensBefore;
    compactions.push({
      entryId: entry.id,
      summary: typeof entry.summary === "string" ? entry.summary : "",
      tokensBefore: typeof tokensBefore === "number" ? tokensBefore : undefined,
      firstKeptEntryId: typeof entry.firstKeptEntryId === "string" ? entry.firstKeptEntryId : undefined,
    });
  }
  return compactions;
}

/** A chain's state in the render, what its block is made of, another writer's own text for it, and that writer's diagnostics of it. */
function chainState(chain: ChainInfo, sent: ChainSent | undefined, foreign: boolean, diagnostics: readonly DiagnosticView[]) {
  const body = chainBodyOf(chain);
  return {
    state: sent?.state ?? ("not-applied" as const),
    stateText: sent?.text ?? "not applied",
    ...(sent?.compactionEntryId ? { compactionEntryId: sent.compactionEntryId } : {}),
    bodyText: body.text,
    withoutSummarizer: body.withoutSummarizer,
    ...(foreign && !chainWrittenByPiPruner(chain) && typeof chain.rangeSummaryText === "string" ? { writerText: chain.rangeSummaryText } : {}),
    diagnostics: diagnostics.filter((d) => d.blockIds.includes(chain.blockId)).map((d) => d.entryId),
  };
}

/** Each call whose sending differs from what its state says gets `sent`. */
function markSent(branch: readonly AnyEntry[], calls: CallView[], chains: readonly ChainInfo[], model: ReturnType<typeof renderBranch>, chainStates: ReturnType<typeof chainSentStates>, positions: BranchPositions): void {
  const entryOfBlock = new Map<string, string>();
  for (const c of chains) if (!entryOfBlock.has(c.blockId)) entryOfBlock.set(c.blockId, c.entryId);
  const notes = callSentStates(branch, calls, model, chainStates, (blockId) => entryOfBlock.get(blockId), positions);
  for (const call of calls) {
    const note = notes.get(call.occurrenceKey);
    if (note) call.sent = note;
  }
}

/**
 * A pruned call whose output the model cannot be given back: no record holds it, or its record
 * holds no text and names no spill file. (Whether a spill file is still there is a question for
 * the disk: spillRecovery.)
 */
function markUnrecoverable(calls: CallView[], foundCalls: readonly ReturnType<typeof findCallForResult>[]): void {
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    if (!isPrunedState(call.state)) continue;
    const found = foundCalls[i];
    if (!found) {
      call.unrecoverable = "no record of its output was kept: context_tree_query cannot return it";
      continue;
    }
    const record = found.call.record;
    if (!record.spillPath && !record.resultText && call.rawChars > 0) call.unrecoverable = "its record holds no copy of the output: context_tree_query returns nothing";
  }
}

/** Each call the writer's diagnostics concern gets their entry ids (a chain's are found when its view is made). */
function linkDiagnostics(diagnostics: readonly DiagnosticView[], byKey: ReadonlyMap<string, CallView>): void {
  for (const d of diagnostics) {
    for (const key of d.callKeys) {
      const call = byKey.get(key);
      if (call) (call.diagnostics ??= []).push(d.entryId);
    }
  }
}

/**
 * The reclaim of the leaf: the two sizes, the part of it the agent's rewinds account for, and, when
 * more is sent than raw, the reason: the pruner's summaries are sent while the results they stand
 * for are not stubbed (their calls raw, or not on a branch cut at an unreadable line), or its
 * stubs and blocks are longer than what they replace.
 */
function reclaimTotals(branch: readonly AnyEntry[], model: ReturnType<typeof renderBranch>, byKey: ReadonlyMap<string, CallView>, summaries: readonly Pick<SummaryInfo, "keys">[]): ReclaimTotals {
  const totals: ReclaimTotals = { rawChars: model.rawChars, modelChars: model.modelChars, note: "characters; tokens ≈ characters / 4 (an estimate)" };
  const active = model.controls.rewinds.filter((r) => r.state === "active");
  const rewound = active.reduce((sum, r) => sum + r.hiddenChars, 0);
  if (rewound > 0) totals.rewoundChars = rewound;
  const idle = active.filter((r) => r.notApplied !== undefined).length;
  if (idle > 0) totals.rewindsNotApplied = idle;
  const first = branch[0];
  if (first && first.parentId !== null && first.parentId !== undefined) totals.cutAt = first.id;
  if (model.modelChars <= model.rawChars) return totals;

  let summaryChars = 0;
  let standInChars = 0;
  const rawResults = new Set<unknown>();
  for (const m of model.rawMessages) if (m.role === "toolResult") rawResults.add(m.toolCallId);
  for (const m of model.messages) {
    if (m.role === "custom" && m.customType === PRUNE_SUMMARY) summaryChars += messageChars(m);
    // The orphan sweep answers a call that has no result yet with a short error result.
    else if (m.role === "toolResult" && !rawResults.has(m.toolCallId)) standInChars += messageChars(m);
  }
  let rawCalls = 0;
  let missingCalls = 0;
  for (const summary of summaries) {
    for (const key of summary.keys) {
      const call = byKey.get(key);
      if (!call) missingCalls++;
      else if (call.state === "raw") rawCalls++;
    }
  }
  const reasons: string[] = [];
  if (summaryChars > 0 && (rawCalls > 0 || missingCalls > 0)) {
    const unstubbed = [rawCalls ? `${rawCalls} sent raw` : "", missingCalls ? `${missingCalls} not on this branch` : ""].filter(Boolean).join(", ");
    reasons.push(`the pruner's summaries (${summaryChars} characters) are sent while the calls they stand for are not stubbed (${unstubbed})`);
  }
  if (standInChars > 0) reasons.push(`calls without a result yet are sent with a short error result in its place (${standInChars} characters)`);
  if (reasons.length === 0) reasons.push(summaryChars > 0 ? `the pruner's summaries (${summaryChars} characters) are longer than the outputs they replace` : "the pruner's stubs and blocks are longer than what they replace");
  if (totals.cutAt) reasons.push(`the branch starts at entry ${totals.cutAt}: what came before it is not in the file, so it is in neither figure`);
  totals.excess = reasons.join("; ");
  return totals;
}
