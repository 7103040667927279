// Large bodies left on disk. A view of a session needs the size of every tool output, thinking
// block and index record, not its text. A session read with `lazyBodies` keeps those strings as
// stand-ins of the same length (they share one buffer, so they cost almost nothing) and remembers
// the byte range of each line that had one; `withBodies` reads those lines back when a person asks
// for the text (a call's document, the model view, a chain review).
import type { AnyEntry } from "../shapes/entries.ts";
import { isCustomEntryOf, isMessageEntry, PRUNE_INDEX } from "../shapes/entries.ts";
import { isRecord } from "../shapes/json.ts";
import { fileSessionStorage, readFully, type SessionFileStorage } from "./session-file-storage.ts";

/** Strings shorter than this stay in memory: not worth a read later. */
export const LAZY_BODY_MIN_CHARS = 1024;

/** Where an entry's line is in the file. */
export interface LineSpan {
  /** Byte offset of the line's first byte. */
  start: number;
  /** Length in bytes, without the newline. */
  bytes: number;
}

const FILL_CHAR = "·";
const FILLER = FILL_CHAR.repeat(1 << 16);

/**
 * A string of exactly `length` UTF-16 units that is not the text: a slice of one shared filler
 * (a view into it, not a copy), or for very long bodies a rope of such slices.
 */
export function standIn(length: number): string {
  if (length <= FILLER.length) return FILLER.slice(0, length);
  let rope = FILLER;
  while (rope.length * 2 <= length) rope = rope + rope;
  return rope + standIn(length - rope.length);
}

/** Replaces `holder[key]` by a stand-in when it is a long string; says whether it did. */
function elide(holder: Record<string, unknown>, key: string): boolean {
  const value = holder[key];
  if (typeof value !== "string" || value.length < LAZY_BODY_MIN_CHARS) return false;
  holder[key] = standIn(value.length);
  return true;
}

/**
 * Image data in a message's content, and its text too when `withText` (a tool's output; a person's
 * prompt stays, since sessions are named after it). A string content is text.
 */
function elideContent(message: Record<string, unknown>, withText: boolean): boolean {
  if (typeof message.content === "string") return withText && elide(message, "content");
  if (!Array.isArray(message.content)) return false;
  let any = false;
  for (const block of message.content) {
    if (!isRecord(block)) continue;
    if (block.type === "text" && withText) any = elide(block, "text") || any;
    else if (block.type === "image") any = elide(block, "data") || any;
  }
  return any;
}

/**
 * Swaps the bodies of a freshly parsed entry for stand-ins, in place: tool output, images,
 * thinking, shell output and the raw text in the pruner's index records. Prompts, replies,
 * arguments, summaries and everything else the tree shows or names a session by stay. Returns
 * whether anything changed.
 */
export function elideBodies(entry: AnyEntry): boolean {
  // The bodies are swapped in the very objects the line was parsed into, read as the plain JSON they are.
  const message: unknown = isMessageEntry(entry) ? entry.message : undefined;
  if (isRecord(message)) {
    switch (message.role) {
      case "toolResult":
        return elideContent(message, true);
      case "user":
        return elideContent(message, false);
      case "bashExecution":
        return elide(message, "output");
      case "assistant": {
        if (!Array.isArray(message.content)) return false;
        let any = false;
        for (const block of message.content) {
          if (isRecord(block) && block.type === "thinking") {
            any = elide(block, "thinking") || any;
            any = elide(block, "thinkingSignature") || any;
          }
        }
        return any;
      }
      default:
        return false;
    }
  }
  const data = isCustomEntryOf(entry, PRUNE_INDEX) ? entry.data : undefined;
  if (isRecord(data) && Array.isArray(data.toolCalls)) {
    let any = false;
    for (const record of data.toolCalls) if (isRecord(record)) any = elide(record, "resultText") || any;
    return any;
  }
  return false;
}

/** Lines closer than this are read together. */
const MAX_GAP_BYTES = 256 * 1024;
/** The most read at once. */
const MAX_READ_BYTES = 16 * 1024 * 1024;

/**
 * The entries with their bodies read back from the file (entries without stand-ins come back as
 * they are). Throws when a line is no longer the entry it was: the file was rewritten since.
 */
export async function withBodies(
  path: string,
  spans: ReadonlyMap<string, LineSpan> | undefined,
  entries: readonly AnyEntry[],
  storage: SessionFileStorage = fileSessionStorage,
): Promise<AnyEntry[]> {
  const wanted = spans ? entries.filter((e) => spans.has(e.id)) : [];
  if (!spans || wanted.length === 0) return entries.slice();
  const order = wanted.map((entry) => ({ entry, span: spans.get(entry.id)! })).sort((a, b) => a.span.start - b.span.start);
  const full = new Map<string, AnyEntry>();
  const file = await storage.open(path);
  try {
    for (let i = 0; i < order.length; ) {
      // One read for a run of nearby lines.
      const first = order[i]!.span.start;
      let end = first + order[i]!.span.bytes;
      let j = i + 1;
      while (j < order.length) {
        const span = order[j]!.span;
        const next = Math.max(end, span.start + span.bytes);
        if (span.start - end > MAX_GAP_BYTES || next - first > MAX_READ_BYTES) break;
        end = next;
        j++;
      }
      const buffer = Buffer.allocUnsafe(end - first);
      const bytesRead = await readFully(file, buffer, buffer.length, first);
      for (; i < j; i++) {
        const { entry, span } = order[i]!;
        const from = span.start - first;
        if (from + span.bytes > bytesRead) throw changedError(path, entry);
        let text = buffer.toString("utf8", from, from + span.bytes);
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          throw changedError(path, entry);
        }
        if (!isRecord(value) || value.id !== entry.id || value.type !== entry.type) throw changedError(path, entry);
        full.set(entry.id, value as unknown as AnyEntry);
      }
    }
  } finally {
    await file.close();
  }
  return entries.map((e) => full.get(e.id) ?? e);
}

function changedError(path: string, entry: AnyEntry): Error {
  return new Error(`${path} changed since it was read: entry "${entry.id}" is no longer where it was; read the session again`);
}

/**
 * Entries read back, remembered by the stand-in entry they replace: a document shown again after
 * Pi appended reads only the lines it has not read yet. A re-read file has new entry objects, so
 * nothing stale is ever returned. `clear` lets the bodies go.
 */
export class BodyCache {
  private full = new WeakMap<AnyEntry, AnyEntry>();

  async withBodies(
    path: string,
    spans: ReadonlyMap<string, LineSpan> | undefined,
    entries: readonly AnyEntry[],
    storage: SessionFileStorage = fileSessionStorage,
  ): Promise<AnyEntry[]> {
    const missing = spans ? entries.filter((e) => spans.has(e.id) && !this.full.has(e)) : [];
    if (missing.length > 0) {
      const read = await withBodies(path, spans, missing, storage);
      missing.forEach((entry, i) => this.full.set(entry, read[i]!));
    }
    return entries.map((e) => this.full.get(e) ?? e);
  }

  clear(): void {
    this.full = new WeakMap();
  }
}
