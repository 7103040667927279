// Applying lines appended to a session file to an existing session view without rebuilding it.
// A live session grows by a few entries at a time; rebuilding the whole view on each append costs
// time proportional to the file. The fast path here costs time proportional to the new entries,
// and declines (returns undefined → rebuild) whenever the new entries could change anything but
// the tail: pruner payloads, markers, compactions, edits, a new branch, or a tool-call id seen before.
import type { AnyEntry } from "../shapes/entries.ts";
import { isMessageEntry } from "../shapes/entries.ts";
import type { AssistantMessage, ToolCallBlock } from "../shapes/messages.ts";
import type { SessionData } from "../session/session-reader.ts";
import { callViewOf, protectedViewOf, type CallView, type ProtectedView, type SessionView } from "./session-view.ts";
import { promptLabel } from "../session/labels.ts";
import type { ProtectionConfig } from "../settings/protection.ts";
import { QUERY_TOOL } from "../shapes/entries.ts";
import { messageChars } from "../shapes/size.ts";

/** Entry types that only ever add messages (or nothing) at the end of the context. */
const PLAIN_ENTRY_TYPES = new Set(["message", "model_change", "thinking_level_change"]);
/** How far back the pairing of a tool result with its assistant turn may look. */
const MAX_LOOKBACK = 256;

export interface AppendedView {
  view: SessionView;
  /**
   * `view.totals.modelChars` is the old figure plus the new messages' characters: an estimate,
   * because the render may change older messages when new ones arrive (a call's result arriving,
   * cool-downs and windows counted in turns). Everything else in the view is exact. A caller that
   * shows the figure recomputes the model view soon after.
   */
  modelCharsEstimated: boolean;
}

const knownCallIds = new WeakMap<SessionView, Set<string>>();

function callIdsOf(view: SessionView): Set<string> {
  let ids = knownCallIds.get(view);
  if (!ids) {
    ids = new Set(view.calls.map((c) => c.toolCallId));
    for (const s of view.summaries) for (const id of s.toolCallIds) ids.add(id);
    for (const c of view.chains) for (const id of c.droppedToolCallIds) ids.add(id);
    for (const c of view.chains) for (const id of c.protectedToolCallIds) ids.add(id);
    knownCallIds.set(view, ids);
  }
  return ids;
}

/** The assistant turn a tool result at the end of the branch answers: the latest assistant message before it. */
function latestAssistant(data: SessionData, appended: readonly AnyEntry[], before: number, leafId: string): { entryId: string; calls: Map<string, ToolCallBlock> } | undefined | null {
  const callsOf = (entryId: string, message: AssistantMessage) => {
    const calls = new Map<string, ToolCallBlock>();
    if (Array.isArray(message.content)) for (const block of message.content) if (block && block.type === "toolCall") calls.set(block.id, block);
    return { entryId, calls };
  };
  const assistantOf = (entry: AnyEntry) => (isMessageEntry(entry) && entry.message.role === "assistant" ? entry.message : undefined);
  for (let i = before - 1; i >= 0; i--) {
    const message = assistantOf(appended[i]!);
    if (message) return callsOf(appended[i]!.id, message);
  }
  let id: string | null = leafId;
  for (let steps = 0; id !== null && steps < MAX_LOOKBACK; steps++) {
    const entry = data.byId.get(id);
    if (!entry) return undefined;
    const message = assistantOf(entry);
    if (message) return callsOf(entry.id, message);
    id = entry.parentId;
  }
  // No assistant turn within reach: the full rebuild decides (null = the root was reached).
  return id === null ? null : undefined;
}

/**
 * `view` was built by buildSessionView for the default leaf of `data`, before `appended` (entries
 * the tail reader just added, in file order) were read. Returns the view with them applied, or
 * undefined when only a full rebuild gives the right answer.
 */
export function appendToSessionView(view: SessionView, data: SessionData, appended: readonly AnyEntry[], config: ProtectionConfig): AppendedView | undefined {
  if (appended.length === 0) return { view, modelCharsEstimated: false };
  if (view.leafId === null) return undefined;
  const ids = callIdsOf(view);
  const newCalls: CallView[] = [];
  let parentId: string = view.leafId;
  let addedChars = 0;
  let firstPrompt = view.session.firstPrompt;
  const seenHere = new Set<string>();

  for (let i = 0; i < appended.length; i++) {
    const entry = appended[i]!;
    if (entry.parentId !== parentId) return undefined; // a new branch or a re-parented entry
    parentId = entry.id;
    if (!PLAIN_ENTRY_TYPES.has(entry.type)) return undefined;
    if (!isMessageEntry(entry)) continue;
    const message = entry.message;
    if (message.role === "system") continue; // never part of the context
    // Other roles (shell commands, summaries) have rules of their own in the context builder.
    if (message.role !== "user" && message.role !== "assistant" && message.role !== "toolResult") return undefined;
    if (message.role === "user") {
      // A user turn moves recovered output out of its grace window, which changes older stubs.
      if (view.calls.some((c) => c.toolName === QUERY_TOOL)) return undefined;
      if (firstPrompt === undefined) firstPrompt = promptLabel(message.content);
    }
    if (message.content == null) return undefined; // the context builder substitutes content; leave it to it
    addedChars += messageChars(message);
    if (message.role !== "toolResult") continue;

    // Odd shapes (ids that are not strings, a missing timestamp) are normalised by the full build.
    if (typeof message.toolCallId !== "string" || typeof message.toolName !== "string" || typeof message.timestamp !== "number") return undefined;
    if (ids.has(message.toolCallId) || seenHere.has(message.toolCallId)) return undefined;
    seenHere.add(message.toolCallId);
    const turn = latestAssistant(data, appended, i, view.leafId);
    if (turn === undefined) return undefined;
    const toolCall = turn?.calls.get(message.toolCallId);
    const args = (toolCall?.arguments && typeof toolCall.arguments === "object" ? toolCall.arguments : {}) as Record<string, unknown>;
    // A call seen for the first time is in no index, summary, alias or chain: raw, or protected.
    newCalls.push(
      callViewOf({
        toolCallId: message.toolCallId,
        toolName: message.toolName,
        resultTimestamp: message.timestamp,
        result: message,
        args,
        resultEntryId: entry.id,
        assistantEntryId: turn?.entryId,
        config,
      }),
    );
  }

  const protectedCalls = newCalls.map(protectedViewOf).filter((p): p is ProtectedView => p !== undefined);
  const next: SessionView = {
    ...view,
    session: { ...view.session, firstPrompt },
    leafId: parentId,
    errors: data.errors,
    calls: newCalls.length ? [...view.calls, ...newCalls] : view.calls,
    protected: protectedCalls.length ? [...view.protected, ...protectedCalls] : view.protected,
    totals: {
      ...view.totals,
      rawChars: view.totals.rawChars + addedChars,
      modelChars: view.totals.modelChars === undefined ? undefined : view.totals.modelChars + addedChars,
    },
  };
  // The next view knows every id this one did, plus the new calls' (the old view is not used again).
  for (const id of seenHere) ids.add(id);
  knownCallIds.set(next, ids);
  return { view: next, modelCharsEstimated: addedChars > 0 };
}
