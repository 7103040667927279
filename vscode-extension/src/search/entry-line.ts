// One session entry read back from its file for a search snippet, without reading or parsing the
// rest: the scan remembers which bytes hold the entry's line (the line itself when its body was left
// on disk, else the stretch between the nearest such lines), and the line is found there by its id,
// read in chunks asynchronously, and only that line parsed.
import type { FileHandle } from "node:fs/promises";
import type { AnyEntry, SessionData } from "@pi-pruner/core";

/** Bytes [start, end) of a session file. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Bytes read at once while looking for a line. */
const CHUNK_BYTES = 256 * 1024;
const NEWLINE = 0x0a;
/** Bytes looked at before an id for its field name (`"id"`, a colon, a little whitespace). */
const FIELD_LOOKBACK = 16;

/**
 * For each entry of `data` (read with lazy bodies), the bytes its line lies in: exactly its line when
 * its body was left on disk, else from the end of the nearest such line before it to the start of
 * the nearest after (the file's start and the end of what was read at the ends).
 */
export function entryLineRanges(data: SessionData): Map<string, ByteRange> {
  const spans = data.elided;
  const ranges = new Map<string, ByteRange>();
  const between: string[] = [];
  let start = 0;
  const close = (end: number) => {
    // One object for the stretch: every hit in it holds the same one.
    const range = { start, end };
    for (const id of between) ranges.set(id, range);
    between.length = 0;
  };
  for (const entry of data.entries) {
    const span = spans?.get(entry.id);
    if (!span) {
      between.push(entry.id);
      continue;
    }
    close(span.start);
    ranges.set(entry.id, { start: span.start, end: span.start + span.bytes });
    start = span.start + span.bytes;
  }
  close(data.bytes);
  return ranges;
}

/**
 * The entry `entryId` as its line in `range` of the file holds it, or undefined when no line there
 * is that entry (the file was rewritten since it was read). `yieldNow` is awaited between chunks.
 */
export async function readEntryLine(file: FileHandle, range: ByteRange, entryId: string, yieldNow: () => Promise<void>): Promise<AnyEntry | undefined> {
  const needle = Buffer.from(JSON.stringify(entryId), "utf8");
  for (let from = range.start; from < range.end; ) {
    const line = await findIdLine(file, { start: from, end: range.end }, needle, yieldNow);
    if (!line) return undefined;
    const buffer = Buffer.allocUnsafe(line.end - line.start);
    if ((await readAt(file, buffer, line.start)) < buffer.length) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(buffer.toString("utf8"));
    } catch {
      value = undefined;
    }
    if (typeof value === "object" && value !== null && (value as { id?: unknown }).id === entryId && typeof (value as { type?: unknown }).type === "string") return value as AnyEntry;
    from = line.end + 1;
  }
  return undefined;
}

/** The first line in `range` where `needle` (a quoted id) follows `"id":`; its bytes without the newline. */
async function findIdLine(file: FileHandle, range: ByteRange, needle: Buffer, yieldNow: () => Promise<void>): Promise<ByteRange | undefined> {
  // Each chunk is searched with the end of the one before, so an id cut by a chunk's edge is found.
  const overlap = needle.length + FIELD_LOOKBACK;
  let carry = Buffer.alloc(0);
  /** File offset of the first byte of `carry` + the new chunk. */
  let base = range.start;
  /** File offset just past the last newline before `base`, i.e. where the line at `base` starts. */
  let lineStart = range.start;
  for (let position = range.start; position < range.end; ) {
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, range.end - position));
    const read = await readAt(file, chunk, position);
    if (read === 0) return undefined;
    const buffer = carry.length > 0 ? Buffer.concat([carry, chunk.subarray(0, read)]) : chunk.subarray(0, read);
    // Ids wholly inside the carried bytes were looked at with the chunk before.
    for (let at = buffer.indexOf(needle, Math.max(0, carry.length - needle.length + 1)); at >= 0; at = buffer.indexOf(needle, at + 1)) {
      if (!isIdField(buffer, at)) continue;
      const newline = at === 0 ? -1 : buffer.lastIndexOf(NEWLINE, at - 1);
      const start = newline >= 0 ? base + newline + 1 : lineStart;
      const end = await lineEnd(file, buffer, base, at + needle.length, range.end, yieldNow);
      return { start, end };
    }
    const last = buffer.lastIndexOf(NEWLINE);
    if (last >= 0) lineStart = base + last + 1;
    position += read;
    const keep = Math.min(overlap, buffer.length);
    carry = Buffer.from(buffer.subarray(buffer.length - keep));
    base = position - keep;
    await yieldNow();
  }
  return undefined;
}

/** Whether the quoted id at `at` is the value of an `"id"` field; true when that lies before `buffer` (the parse then decides). */
function isIdField(buffer: Buffer, at: number): boolean {
  const space = (byte: number | undefined) => byte === 0x20 || byte === 0x09 || byte === 0x0d;
  let i = at - 1;
  while (i >= 0 && space(buffer[i])) i--;
  if (i < 0) return true;
  if (buffer[i] !== 0x3a /* : */) return false;
  i--;
  while (i >= 0 && space(buffer[i])) i--;
  return i < 3 || buffer.toString("latin1", i - 3, i + 1) === '"id"';
}

/** Where the line holding `buffer[from]` ends (the newline's offset, or `limit`), reading on past `buffer` if need be. */
async function lineEnd(file: FileHandle, buffer: Buffer, base: number, from: number, limit: number, yieldNow: () => Promise<void>): Promise<number> {
  const inBuffer = buffer.indexOf(NEWLINE, from);
  if (inBuffer >= 0) return base + inBuffer;
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  for (let position = base + buffer.length; position < limit; ) {
    const read = await readAt(file, chunk.subarray(0, Math.min(CHUNK_BYTES, limit - position)), position);
    if (read === 0) return position;
    const newline = chunk.subarray(0, read).indexOf(NEWLINE);
    if (newline >= 0) return position + newline;
    position += read;
    await yieldNow();
  }
  return limit;
}

/** Reads into the whole of `buffer` from `position` unless the file ends first; resolves to how many bytes were read. */
async function readAt(file: FileHandle, buffer: Buffer, position: number): Promise<number> {
  let total = 0;
  while (total < buffer.length) {
    const { bytesRead } = await file.read(buffer, total, buffer.length - total, position + total);
    if (bytesRead === 0) break;
    total += bytesRead;
  }
  return total;
}
