// One session entry read back from its file for a search snippet, without reading or parsing the
// rest: the scan remembers which bytes hold the entry's line (the line itself when its body was left
// on disk, else the stretch between the nearest such lines), and the line is found there by its id,
// read in chunks asynchronously, and only that line parsed.
import type { FileHandle } from "node:fs/promises";
import { DEFAULT_MAX_LINE_BYTES, LineSplitter, scanLines, type AnyEntry, type LineSink, type SessionData } from "@pi-pruner/core";

/** Bytes [start, end) of a session file. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Bytes read at once while looking for a line. */
const CHUNK_BYTES = 256 * 1024;

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
  const finder = new EntryFinder(entryId);
  // The reader's limit: a longer line was never read as an entry, and is not held here either.
  const splitter = new LineSplitter(finder, DEFAULT_MAX_LINE_BYTES);
  const source = { read: async (buffer: Buffer, length: number, position: number) => (await file.read(buffer, 0, length, position)).bytesRead };
  if (!(await scanLines(source, range.start, splitter, { chunkBytes: CHUNK_BYTES, end: range.end, between: yieldNow }))) {
    // The range's last line may end where the range does.
    const rest = splitter.takeUnended();
    if (rest) finder.line(rest.bytes, 0, rest.length);
  }
  return finder.entry;
}

/** Looks in each line for the entry's quoted id as an `"id"` field's value, and stops at the line that parses as the entry. */
class EntryFinder implements LineSink {
  entry: AnyEntry | undefined;
  private readonly entryId: string;
  private readonly needle: Buffer;
  /** The bytes last searched, and where the needle lies in them next (-1: nowhere further). */
  private searched: Buffer | undefined;
  private hit = -1;

  constructor(entryId: string) {
    this.entryId = entryId;
    this.needle = Buffer.from(JSON.stringify(entryId), "utf8");
  }

  line(bytes: Buffer | null, start: number, end: number): boolean {
    if (!bytes) return false;
    // One search serves every line of a chunk until a line passes the hit (a quoted id holds no newline).
    if (bytes !== this.searched || (this.hit >= 0 && this.hit < start)) {
      this.searched = bytes;
      this.hit = bytes.indexOf(this.needle, start);
    }
    for (; this.hit >= 0 && this.hit < end; this.hit = bytes.indexOf(this.needle, this.hit + 1)) {
      if (!isIdField(bytes, start, this.hit)) continue;
      this.entry = parseEntry(bytes.toString("utf8", start, end), this.entryId);
      return this.entry !== undefined;
    }
    return false;
  }
}

function parseEntry(text: string, entryId: string): AnyEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value === "object" && value !== null && (value as { id?: unknown }).id === entryId && typeof (value as { type?: unknown }).type === "string") return value as AnyEntry;
  return undefined;
}

/** Whether the quoted id at `at` is the value of an `"id"` field of the line starting at `lineStart`. */
function isIdField(bytes: Buffer, lineStart: number, at: number): boolean {
  const space = (byte: number | undefined) => byte === 0x20 || byte === 0x09 || byte === 0x0d;
  let i = at - 1;
  while (i >= lineStart && space(bytes[i])) i--;
  if (i < lineStart || bytes[i] !== 0x3a /* : */) return false;
  i--;
  while (i >= lineStart && space(bytes[i])) i--;
  return i - 3 >= lineStart && bytes.toString("latin1", i - 3, i + 1) === '"id"';
}
