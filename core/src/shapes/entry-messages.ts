// What each session entry contributes to the context Pi builds, and how Pi's `context_edit`
// entries change that (Pi's sessionEntryToContextMessages and its edit projection). Pi's context
// builder (session/pi-context.ts) chooses the entries; anything that must see an entry's messages
// as Pi showed them, edits applied, reads them here.
import type { AnyEntry } from "./entries.ts";
import { isBranchSummaryEntry, isCompactionEntry, isContextEditEntry, isCustomMessageEntry, isMessageEntry } from "./entries.ts";
import type { AgentMessage, AssistantBlock, CustomMessage, ToolResultMessage, UserMessage } from "./messages.ts";
import { isRecord } from "./json.ts";

export interface ContextMessage {
  /** The entry's own message object (not a copy) unless an edit replaced its content: treat as read-only. */
  message: AgentMessage;
  /** The entry the message comes from. */
  entryId: string;
}

/**
 * The messages of `entries` in order, each entry's with the latest edit of it among `editsFrom`
 * applied (an omitted entry gives none). System messages included.
 */
export function editedMessages(entries: readonly AnyEntry[], editsFrom: readonly AnyEntry[]): ContextMessage[] {
  const edits = latestEdits(editsFrom);
  const out: ContextMessage[] = [];
  for (const entry of entries) {
    for (const message of applyEdit(messagesOf(entry), edits.get(entry.id))) out.push({ message, entryId: entry.id });
  }
  return out;
}

type Replacement = { content: string | unknown[] } | null;

/**
 * The latest usable edit per target among `entries`. A replacement that is neither null nor
 * `{content: string | array}` is ignored: Pi would crash or blank the message on it.
 */
function latestEdits(entries: readonly AnyEntry[]): Map<string, Replacement> {
  const edits = new Map<string, Replacement>();
  for (const entry of entries) {
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
    // The session reader refuses such an entry, but entries can come from elsewhere (Pi's own list).
    if (!isRecord(message as unknown)) return [];
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
export function entryTime(entry: AnyEntry): number {
  const time: unknown = entry.timestamp;
  // Not validated by the reader: anything but a string or a number would make Date throw.
  return typeof time === "string" || typeof time === "number" ? new Date(time).getTime() : Number.NaN;
}
