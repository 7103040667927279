// What a session offers to a full-text search: a person's prompts, the model's replies, each tool
// call's arguments and its output, one searchable part each, with where a hit leads (the call's
// document, or the model view at the request that first sent the message). Pure: the entries come
// in read with their bodies; the caller indexes the parts and lets them go.
import type { AnyEntry } from "../shapes/entries.ts";
import { isMessageEntry } from "../shapes/entries.ts";
import { contentText, occurrenceKey } from "../shapes/messages.ts";
import { isRecord } from "../shapes/json.ts";
import { modelRequests } from "./request-views.ts";

export type SearchPartKind = "prompt" | "reply" | "arguments" | "output";

export interface SearchPart {
  /** Unique within the session: the entry, the kind and the block. */
  id: string;
  entryId: string;
  kind: SearchPartKind;
  text: string;
  toolName?: string;
  toolCallId?: string;
  /** The call's occurrence key (its document), for arguments and outputs. */
  callKey?: string;
  /**
   * The request (1-based along `branch`) that first sent this message to the model; "next" when
   * none has yet; undefined when the message is not on that branch.
   */
  request?: number | "next";
  timestamp?: number;
}

export interface SearchPartsOptions {
  /** The branch whose requests the model view steps through; default: none (no request numbers). */
  branch?: readonly AnyEntry[];
  /**
   * Entries whose tool results name each call's occurrence key, when `entries` is one batch of a
   * session read a part at a time; default: `entries`. Results' ids and timestamps are never elided.
   */
  keysFrom?: readonly AnyEntry[];
  /** Text beyond this many characters of one part is not indexed, so one huge output cannot stall a scan. */
  maxChars?: number;
}

const SEARCH_PART_MAX_CHARS = 200_000;

/** The searchable parts of a session's entries, in file order. */
export function sessionSearchParts(entries: readonly AnyEntry[], options: SearchPartsOptions = {}): SearchPart[] {
  const maxChars = options.maxChars ?? SEARCH_PART_MAX_CHARS;
  const requestOf = firstRequestOf(options.branch);
  const parts: SearchPart[] = [];
  const add = (part: Omit<SearchPart, "text" | "request">, text: string) => {
    const trimmed = text.trim();
    if (!trimmed) return;
    const request = requestOf(part.entryId);
    parts.push({ ...part, text: trimmed.length > maxChars ? trimmed.slice(0, maxChars) : trimmed, ...(request !== undefined ? { request } : {}) });
  };
  for (const entry of entries) {
    if (!isMessageEntry(entry)) continue;
    // Session files are input: a message entry may hold anything.
    const held: unknown = entry.message;
    if (!isRecord(held)) continue;
    const message = held as Record<string, unknown> & { role?: unknown; content?: unknown };
    const timestamp = typeof message.timestamp === "number" ? { timestamp: message.timestamp } : {};
    switch (message.role) {
      case "user":
        add({ id: `${entry.id}:prompt`, entryId: entry.id, kind: "prompt", ...timestamp }, textOf(message.content));
        break;
      case "assistant": {
        if (!Array.isArray(message.content)) break;
        const reply = message.content
          .filter((b) => isRecord(b) && b.type === "text" && typeof b.text === "string")
          .map((b) => (b as { text: string }).text)
          .join("\n");
        add({ id: `${entry.id}:reply`, entryId: entry.id, kind: "reply", ...timestamp }, reply);
        message.content.forEach((block, i) => {
          if (!isRecord(block) || block.type !== "toolCall" || typeof block.id !== "string") return;
          const toolName = typeof block.name === "string" ? block.name : "tool";
          add({ id: `${entry.id}:arguments:${i}`, entryId: entry.id, kind: "arguments", toolName, toolCallId: block.id, ...timestamp }, argumentText(block.arguments));
        });
        break;
      }
      case "toolResult": {
        if (typeof message.toolCallId !== "string") break;
        const callKey = occurrenceKey(message.toolCallId, typeof message.timestamp === "number" ? message.timestamp : undefined);
        const toolName = typeof message.toolName === "string" ? message.toolName : "tool";
        add({ id: `${entry.id}:output`, entryId: entry.id, kind: "output", toolName, toolCallId: message.toolCallId, callKey, ...timestamp }, textOf(message.content));
        break;
      }
      case "bashExecution":
        add({ id: `${entry.id}:output`, entryId: entry.id, kind: "output", toolName: "bash", ...timestamp }, `${String(message.command ?? "")}\n${String(message.output ?? "")}`);
        break;
      default:
        break;
    }
  }
  // A call's arguments open its document too: the result carries the key (its timestamp).
  const keyOfCall = callKeys(options.keysFrom ?? entries);
  for (const p of parts) if (p.kind === "arguments" && p.toolCallId) p.callKey = keyOfCall.get(p.toolCallId) ?? p.toolCallId;
  return parts;
}

/** Each call's occurrence key by its id, from the tool results among `entries`. */
function callKeys(entries: readonly AnyEntry[]): Map<string, string> {
  const keys = new Map<string, string>();
  for (const entry of entries) {
    if (!isMessageEntry(entry)) continue;
    const message: unknown = entry.message;
    if (!isRecord(message) || message.role !== "toolResult" || typeof message.toolCallId !== "string") continue;
    keys.set(message.toolCallId, occurrenceKey(message.toolCallId, typeof message.timestamp === "number" ? message.timestamp : undefined));
  }
  return keys;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return Array.isArray(content) ? contentText(content.filter(isRecord) as { type: string; text?: string }[]) : "";
}

/** Argument values as words, in order: the keys and JSON punctuation are noise to a person searching. Walked by a loop: arguments nest as deep as their writer liked. */
function argumentText(args: unknown): string {
  const out: string[] = [];
  const pending: unknown[] = [args];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "string") out.push(value);
    else if (typeof value === "number" || typeof value === "boolean") out.push(String(value));
    else if (Array.isArray(value) || isRecord(value)) {
      const items = Object.values(value);
      for (let i = items.length - 1; i >= 0; i--) pending.push(items[i]);
    }
  }
  return out.join("\n");
}

/** For an entry of the branch, the first request built after it (the one that sent it). */
function firstRequestOf(branch: readonly AnyEntry[] | undefined): (entryId: string) => number | "next" | undefined {
  if (!branch) return () => undefined;
  const requests = modelRequests(branch);
  const positions = new Map<string, number>();
  branch.forEach((e, i) => positions.set(e.id, i));
  return (entryId) => {
    const position = positions.get(entryId);
    if (position === undefined) return undefined;
    // Requests are in branch order: the first one after the entry, by bisection.
    let lo = 0;
    let hi = requests.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (requests[mid]!.end > position) hi = mid;
      else lo = mid + 1;
    }
    return lo < requests.length ? requests[lo]!.n : "next";
  };
}
