// From a branch of session entries to the messages Pi 1.6 sends for it — the input of the render.
// Mirrors Pi's buildSessionContext (tested against it as an oracle), minus system messages:
// Pi's `context` extension event never includes them.
import type { AnyEntry } from "../shapes/entries.ts";
import { isBranchSummaryEntry, isCompactionEntry, isContextEditEntry, isCustomMessageEntry, isMessageEntry } from "../shapes/entries.ts";
import type { AgentMessage, AssistantBlock, CustomMessage, ToolResultMessage, UserMessage } from "../shapes/messages.ts";
import { isRecord } from "../shapes/json.ts";

export interface ContextMessage {
  /** The entry's own message object (not a copy) unless an edit replaced its content: treat as read-only. */
  message: AgentMessage;
  /** The entry the message comes from. */
  entryId: string;
}

/** `branch` is root → leaf, as returned by getBranch. */
export function buildPiContext(branch: readonly AnyEntry[]): ContextMessage[] {
  const selected = selectContextEntries(branch);
  const edits = latestEdits(selected);
  const context: ContextMessage[] = [];
  selected.forEach((entry, index) => {
    // An older compaction inside the newest one's kept range contributes nothing; the newest is first.
    if (entry.type === "compaction" && index > 0) return;
    for (const message of applyEdit(messagesOf(entry), edits.get(entry.id))) {
      if (message.role !== "system") context.push({ message, entryId: entry.id });
    }
  });
  return context;
}

/**
 * Without a compaction, the whole branch. With one, the newest: itself, then the entries from its
 * firstKeptEntryId up to it, then every entry after it. A firstKeptEntryId not on the branch
 * before it (a retain-none compaction stores its own id) keeps nothing. (Pi also leaves out the
 * kept system messages here; buildPiContext drops every system message anyway.)
 */
function selectContextEntries(branch: readonly AnyEntry[]): readonly AnyEntry[] {
  const compactionIndex = branch.findLastIndex(isCompactionEntry);
  const compaction = branch[compactionIndex];
  if (!compaction || !isCompactionEntry(compaction)) return branch;

  const selected: AnyEntry[] = [compaction];
  const firstKept = branch.findIndex((entry, i) => i < compactionIndex && entry.id === compaction.firstKeptEntryId);
  if (firstKept >= 0) selected.push(...branch.slice(firstKept, compactionIndex));
  selected.push(...branch.slice(compactionIndex + 1));
  return selected;
}

type Replacement = { content: string | unknown[] } | null;

/**
 * The latest usable edit per target among the selected entries (as in Pi, edits cut away by a
 * compaction no longer count). A replacement that is neither null nor `{content: string | array}`
 * is ignored: Pi would crash or blank the message on it.
 */
function latestEdits(selected: readonly AnyEntry[]): Map<string, Replacement> {
  const edits = new Map<string, Replacement>();
  for (const entry of selected) {
    if (!isContextEditEntry(entry)) continue;
    const { targetId, replacement } = entry;
    if (replacement === null) edits.set(targetId, null);
    else if (isRecord(replacement) && (typeof replacement.content === "string" || Array.isArray(replacement.content))) {
      edits.set(targetId, { content: replacement.content });
    }
  }
  return edits;
}

function applyEdit(messages: AgentMessage[], replacement: Replacement | undefined): AgentMessage[] {
  if (replacement === undefined) return messages;
  if (replacement === null) return [];
  return messages.map((message) => withContent(message, replacement.content));
}

/** Replaces only the content; assistant and tool-result content must be arrays, so a string becomes one text block. */
function withContent(message: AgentMessage, content: string | unknown[]): AgentMessage {
  const blocks = typeof content === "string" ? [{ type: "text" as const, text: content }] : content;
  switch (message.role) {
    case "user":
      return { ...message, content: content as UserMessage["content"] };
    case "custom":
      return { ...message, content: content as CustomMessage["content"] };
    case "assistant":
      return { ...message, content: blocks as AssistantBlock[] };
    case "toolResult":
      return { ...message, content: blocks as ToolResultMessage["content"] };
    default:
      return message;
  }
}

/** What one entry contributes, before edits (Pi's sessionEntryToContextMessages). */
function messagesOf(entry: AnyEntry): AgentMessage[] {
  if (isMessageEntry(entry)) {
    const { message } = entry;
    // Hand-edited or old files can lack content; Pi substitutes an empty array.
    const needsArray = message.role === "user" || message.role === "assistant" || message.role === "toolResult";
    if (needsArray && message.content == null) return [{ ...message, content: [] }];
    return [message];
  }
  if (isCustomMessageEntry(entry)) {
    const { customType, content, display, details } = entry;
    return [{ role: "custom", customType, content: content ?? [], display: display ?? false, details, timestamp: entryTime(entry) }];
  }
  if (isBranchSummaryEntry(entry)) {
    const { summary, fromId } = entry;
    // Pi drops a branch summary whose text is empty.
    return summary ? [{ role: "branchSummary", summary, fromId: fromId ?? null, timestamp: entryTime(entry) }] : [];
  }
  if (isCompactionEntry(entry)) {
    const { summary, tokensBefore } = entry;
    return [{ role: "compactionSummary", summary, tokensBefore: tokensBefore ?? 0, timestamp: entryTime(entry) }];
  }
  return [];
}

/** Summary and custom messages carry the entry's ISO time as epoch ms, as Pi builds them. */
function entryTime(entry: AnyEntry): number {
  const time: unknown = entry.timestamp;
  // Not validated by the reader: anything but a string or a number would make Date throw.
  return typeof time === "string" || typeof time === "number" ? new Date(time).getTime() : Number.NaN;
}

