// Reading Pi session files (JSONL): a header line, then entries linked by id/parentId.
// Tolerant by design: a bad line is reported with its line number and reading goes on.
// The reader never writes to the file (Pi's own loader appends a newline to a torn file).
import type { AnyEntry, SessionHeader } from "../shapes/entries.ts";
import { elideBodies, type LineSpan } from "./lazy-bodies.ts";
import { fileSessionStorage, readFully, type OpenSessionFile, type SessionFileStorage } from "./session-file-storage.ts";
import { DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES, LineSplitter, scanLines, type LineSink } from "./line-scan.ts";
import { isRecord } from "../shapes/json.ts";

export interface BadLine {
  /** 1-based line number in the file. */
  line: number;
  message: string;
}

export interface SessionData {
  /** The first line, if it is a valid header. */
  header?: SessionHeader;
  /** Well-formed entries in file order. */
  entries: AnyEntry[];
  /** For a duplicated id, the first entry (later ones are BadLines). */
  byId: Map<string, AnyEntry>;
  errors: BadLine[];
  /** Complete (newline-terminated) lines consumed. */
  lineCount: number;
  /** Byte offset just after the last complete line consumed. */
  bytes: number;
  /**
   * Read with `lazyBodies`: the entries whose long bodies are stand-ins, and where their lines are
   * (`withBodies` in bodies.ts reads them back).
   */
  elided?: Map<string, LineSpan>;
}

export interface ReadOptions {
  /** Lines longer than this are skipped (reported, never held in memory). Default 128 MiB. */
  maxLineBytes?: number;
  /** Size of each read from the file. Default 1 MiB. */
  chunkBytes?: number;
  /**
   * Keep long bodies (tool output, thinking, the index's raw text) on disk: in memory they are
   * stand-ins of the same length, so sizes and views are exact but the text is not there. Tail
   * reads of the same data keep doing so. For views; anything that shows or sends text needs
   * `withBodies`.
   */
  lazyBodies?: boolean;
  /** Where the file is read from. Default: the file system. */
  storage?: SessionFileStorage;
}

export interface TailResult {
  entries: AnyEntry[];
  /** BadLines in the new bytes. (A cut-off last line reported earlier and since completed is also dropped from `data.errors`.) */
  errors: BadLine[];
  /** The file was replaced or shrank: `data` was rebuilt from scratch and `entries`/`errors` hold everything. */
  reset: boolean;
}

export interface Branch {
  /** The entry the walk started from; null for an empty session or an unknown leaf. */
  leafId: string | null;
  /** Root → leaf. */
  entries: AnyEntry[];
  /** A parentId cycle, a parent missing from the file, an unknown leaf. */
  problems: string[];
}

/** How much of the file's beginning is remembered to recognise a replaced file. */
const FINGERPRINT_BYTES = 4096;
const NEWLINE = 0x0a;

// ---------------------------------------------------------------- public API

export function parseSessionText(text: string): SessionData {
  const data = emptySessionData();
  const reader = new SessionReader(data, DEFAULT_MAX_LINE_BYTES);
  reader.splitter.push(Buffer.from(text, "utf8"));
  reader.finishComplete();
  return data;
}

export async function readSessionFile(path: string, options: ReadOptions = {}): Promise<SessionData> {
  const file = await (options.storage ?? fileSessionStorage).open(path);
  try {
    return await readWholeFile(file, options);
  } finally {
    await file.close();
  }
}

/**
 * Parses only the bytes appended since `data` was read and adds them to `data`. A final line
 * without its newline is left for a later call (the writer may be in the middle of it).
 * Calls on the same `data` must not overlap.
 */
export async function readSessionTail(path: string, data: SessionData, options: ReadOptions = {}): Promise<TailResult> {
  const file = await (options.storage ?? fileSessionStorage).open(path);
  try {
    const state = readerStates.get(data);
    const size = await file.size();
    const replaced = size < data.bytes || !(await startsWith(file, state?.fingerprint ?? Buffer.alloc(0)));
    if (replaced) return await resetFrom(file, data, options);

    const reader = new SessionReader(data, options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
    const provisional = state?.provisional;
    if (provisional) {
      const comparison = await compareLineAt(file, data.bytes, provisional, options);
      if (comparison !== "incomplete" && reader.settleProvisional(provisional, comparison) === "invalidated") {
        return await resetFrom(file, data, options);
      }
    }

    const entriesBefore = data.entries.length;
    const errorsBefore = data.errors.length;
    await pumpFrom(file, data.bytes, reader, options);
    return { entries: data.entries.slice(entriesBefore), errors: data.errors.slice(errorsBefore), reset: false };
  } finally {
    await file.close();
  }
}

/** The entry Pi resumes from when it opens the file: the last one in file order. */
export function defaultLeafId(data: SessionData): string | null {
  return data.entries.length > 0 ? data.entries[data.entries.length - 1].id : null;
}

/**
 * Walks parentId links from `leafId` (default: the last entry) to the root. `null` is an empty
 * branch, as in Pi. The walk stops at a parentId cycle or a parent missing from the file.
 */
export function getBranch(data: SessionData, leafId?: string | null): Branch {
  const startId = leafId === undefined ? defaultLeafId(data) : leafId;
  if (startId === null) return { leafId: null, entries: [], problems: [] };
  const leaf = data.byId.get(startId);
  if (!leaf) return { leafId: null, entries: [], problems: [`leaf "${startId}" is not an entry of this session`] };

  // Walked once without remembering what it visited: a walk longer than the entries there are has
  // gone round a cycle, and only then is it walked again remembering, to say where the cycle closes.
  const plain = walkUp(data, leaf, undefined);
  const { path, problems } = plain ?? walkUp(data, leaf, new Set<string>())!;
  path.reverse();
  return { leafId: startId, entries: path, problems };
}

/**
 * The entries from `leaf` up to the root or a parent missing from the file, leaf first. Without
 * `visited`, undefined when the walk outgrows the entries there are (a cycle); with it, the walk
 * stops where the cycle closes.
 */
function walkUp(data: SessionData, leaf: AnyEntry, visited: Set<string> | undefined): { path: AnyEntry[]; problems: string[] } | undefined {
  const path: AnyEntry[] = [];
  const problems: string[] = [];
  const limit = data.byId.size;
  let current: AnyEntry = leaf;
  for (;;) {
    path.push(current);
    if (visited) visited.add(current.id);
    else if (path.length > limit) return undefined;
    const parentId = current.parentId;
    if (parentId === null) break;
    if (visited?.has(parentId)) {
      problems.push(`parentId cycle: "${current.id}" points back to "${parentId}"; the branch is cut there`);
      break;
    }
    const parent = data.byId.get(parentId);
    if (!parent) {
      problems.push(`entry "${current.id}" has parentId "${parentId}", which is not in the file; the branch starts at "${current.id}"`);
      break;
    }
    current = parent;
  }
  return { path, problems };
}

// ---------------------------------------------------------------- file reading

async function readWholeFile(file: OpenSessionFile, options: ReadOptions): Promise<SessionData> {
  const data = emptySessionData();
  if (options.lazyBodies) readerStates.set(data, { fingerprint: Buffer.alloc(0), lazy: true });
  const reader = new SessionReader(data, options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
  await pumpFrom(file, 0, reader, options);
  reader.finishComplete();
  return data;
}

/** Feeds the reader everything from `position` to the end of the file. */
async function pumpFrom(file: OpenSessionFile, position: number, reader: SessionReader, options: ReadOptions): Promise<void> {
  await scanLines(file, position, reader.splitter, { chunkBytes: options.chunkBytes ?? DEFAULT_CHUNK_BYTES });
}

/**
 * Compares the line now at `position` with what was read there before its newline arrived,
 * a chunk at a time (the line may be huge).
 */
async function compareLineAt(file: OpenSessionFile, position: number, earlier: ProvisionalLine, options: ReadOptions): Promise<LineComparison> {
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const chunk = Buffer.allocUnsafe(chunkBytes);
  let offset = 0; // within the line
  let sameSoFar = true;
  for (;;) {
    const bytesRead = await file.read(chunk, chunkBytes, position + offset);
    if (bytesRead === 0) return "incomplete";
    const read = chunk.subarray(0, bytesRead);
    const newline = read.indexOf(NEWLINE);
    const piece = newline >= 0 ? read.subarray(0, newline) : read;
    if (sameSoFar && earlier.bytes) {
      const expected = earlier.bytes.subarray(offset, offset + piece.length);
      sameSoFar = expected.length === piece.length && expected.equals(piece);
    }
    offset += piece.length;
    if (newline >= 0) return sameSoFar && offset === earlier.length ? "same" : "changed";
  }
}

async function startsWith(file: OpenSessionFile, prefix: Buffer): Promise<boolean> {
  if (prefix.length === 0) return true;
  const head = Buffer.alloc(prefix.length);
  // Read fully: a short read is not a different beginning.
  const bytesRead = await readFully(file, head, prefix.length, 0);
  return bytesRead === prefix.length && head.equals(prefix);
}

/** Re-reads the whole file into `data`, in place (holders of data.entries etc. see the new contents). */
async function resetFrom(file: OpenSessionFile, data: SessionData, options: ReadOptions): Promise<TailResult> {
  const fresh = await readWholeFile(file, { ...options, lazyBodies: options.lazyBodies ?? readerStates.get(data)?.lazy });
  data.header = fresh.header;
  replaceItems(data.entries, fresh.entries);
  replaceItems(data.errors, fresh.errors);
  data.byId.clear();
  for (const [id, entry] of fresh.byId) data.byId.set(id, entry);
  data.lineCount = fresh.lineCount;
  data.bytes = fresh.bytes;
  if (fresh.elided) data.elided = fresh.elided;
  else delete data.elided;
  const state = readerStates.get(fresh);
  if (state) readerStates.set(data, state);
  return { entries: [...fresh.entries], errors: [...fresh.errors], reset: true };
}

function replaceItems<T>(target: T[], items: readonly T[]): void {
  target.length = 0;
  for (const item of items) target.push(item); // no push(...items): it overflows the stack on huge sessions
}

// ---------------------------------------------------------------- line splitting and bookkeeping

/**
 * A final line without newline, read when the file was taken as complete. It is reported, but not
 * counted in `lineCount`/`bytes`, so a later tail read can settle it once its newline arrives.
 */
interface ProvisionalLine {
  /** Null when the line was longer than maxLineBytes: then only its length is known. */
  bytes: Buffer | null;
  length: number;
  /** It became the header or an entry (the caller has seen it). */
  contributedRecord: boolean;
  /** BadLines it added: the last ones in `data.errors`. */
  errorCount: number;
}

interface ReaderState {
  /** The file's first bytes (up to FINGERPRINT_BYTES): different bytes there mean a replaced file. */
  fingerprint: Buffer;
  /** Read with `lazyBodies`. */
  lazy?: boolean;
  provisional?: ProvisionalLine;
}

type LineComparison = "incomplete" | "same" | "changed";

// Kept beside SessionData rather than in it, so the public shape stays plain data.
const readerStates = new WeakMap<SessionData, ReaderState>();

function emptySessionData(): SessionData {
  return { entries: [], byId: new Map(), errors: [], lineCount: 0, bytes: 0 };
}

/** Records each line of the bytes its splitter is given in `data`. */
class SessionReader implements LineSink {
  private readonly data: SessionData;
  private readonly state: ReaderState;
  private readonly maxLineBytes: number;
  readonly splitter: LineSplitter;

  constructor(data: SessionData, maxLineBytes: number) {
    this.data = data;
    this.maxLineBytes = maxLineBytes;
    let state = readerStates.get(data);
    if (!state) {
      state = { fingerprint: Buffer.alloc(0) };
      readerStates.set(data, state);
    }
    this.state = state;
    this.splitter = new LineSplitter(this, maxLineBytes);
  }

  /** The input is complete: a final line without newline is recorded too, provisionally. */
  finishComplete(): void {
    const rest = this.splitter.takeUnended();
    if (!rest) return;
    const line = rest.bytes;
    const errorsBefore = this.data.errors.length;
    const recordsBefore = this.recordCount();
    this.recordLine(line, 0, line ? line.length : 0, this.data.lineCount + 1, true, rest.length);
    this.state.provisional = {
      bytes: line,
      length: rest.length,
      contributedRecord: this.recordCount() > recordsBefore,
      errorCount: this.data.errors.length - errorsBefore,
    };
  }

  /**
   * Before a tail read: if the provisional line now has its newline and is unchanged, count it as
   * consumed; if it changed, withdraw its BadLines so it is read again — unless it had already
   * become an entry or the header, which only a full re-read can take back.
   */
  settleProvisional(provisional: ProvisionalLine, comparison: "same" | "changed"): "kept" | "withdrawn" | "invalidated" {
    this.state.provisional = undefined;
    if (comparison === "same") {
      this.countConsumed(provisional.length);
      if (provisional.bytes) this.extendFingerprint(provisional.bytes, 0, provisional.bytes.length);
      return "kept";
    }
    if (provisional.contributedRecord) return "invalidated";
    this.data.errors.splice(this.data.errors.length - provisional.errorCount, provisional.errorCount);
    return "withdrawn";
  }

  /** A complete line, `line[start, end)` (null when it was too long to keep). */
  line(line: Buffer | null, start: number, end: number): void {
    this.recordLine(line, start, end, this.data.lineCount + 1, false);
    this.countConsumed(end - start);
    if (line) this.extendFingerprint(line, start, end);
  }

  private countConsumed(lineBytes: number): void {
    this.data.lineCount += 1;
    this.data.bytes += lineBytes + 1;
  }

  /** Called right after the line `source[from, to)` was counted as consumed. */
  private extendFingerprint(source: Buffer, from: number, to: number): void {
    const fingerprint = this.state.fingerprint;
    // The fingerprint must be the file's exact prefix: once a line is missing from it (a skipped
    // over-long line), it stops growing.
    const lineStart = this.data.bytes - (to - from) - 1;
    if (fingerprint.length >= FINGERPRINT_BYTES || fingerprint.length !== lineStart) return;
    const room = FINGERPRINT_BYTES - fingerprint.length;
    const withLine = Buffer.concat([fingerprint, source.subarray(from, Math.min(to, from + room)), Buffer.from([NEWLINE])]);
    this.state.fingerprint = withLine.subarray(0, FINGERPRINT_BYTES);
  }

  private recordCount(): number {
    return this.data.entries.length + (this.data.header ? 1 : 0);
  }

  /** Whether a non-blank line has been seen yet: only the first one may be the header. */
  private seenFirstLine(): boolean {
    return this.data.header !== undefined || this.data.entries.length > 0 || this.data.errors.length > 0;
  }

  private bad(line: number, message: string): void {
    this.data.errors.push({ line, message });
  }

  /**
   * The line is `line[from, to)` (null when it was too long to keep), `length` bytes. `data.bytes`
   * is still the offset of the line's first byte when this runs.
   */
  private recordLine(line: Buffer | null, from: number, to: number, lineNumber: number, unterminated: boolean, length = to - from): void {
    if (line === null) {
      this.bad(lineNumber, `line is ${formatBytes(length)}, longer than the ${formatBytes(this.maxLineBytes)} limit; skipped`);
      return;
    }
    let text: string;
    try {
      text = line.toString("utf8", from, to); // invalid UTF-8 becomes U+FFFD
    } catch (error) {
      // Only a line beyond V8's string limit gets here (possible with a raised maxLineBytes).
      this.bad(lineNumber, `line of ${formatBytes(length)} could not be decoded (${error instanceof Error ? error.message : String(error)}); skipped`);
      return;
    }
    if (lineNumber === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    // A line that opens an object is not blank: only others are trimmed to find out.
    if (text.charCodeAt(0) !== 0x7b && text.trim() === "") return;

    const isFirst = !this.seenFirstLine();
    const parsed = parseLine(text, isFirst);
    if (parsed.kind === "bad") {
      this.bad(lineNumber, unterminated && parsed.notJson ? `last line is cut off (no newline at the end): ${parsed.message}` : parsed.message);
      return;
    }
    if (parsed.kind === "header") {
      this.data.header = parsed.header;
      return;
    }
    if (isFirst) this.bad(lineNumber, "no session header: the first line should be {\"type\":\"session\",…}");
    const entry = parsed.entry;
    if (this.data.byId.has(entry.id)) {
      this.bad(lineNumber, `duplicate id "${entry.id}": only the first entry with this id is kept`);
      return;
    }
    this.data.entries.push(entry);
    this.data.byId.set(entry.id, entry);
    if (this.state.lazy && elideBodies(entry)) (this.data.elided ??= new Map()).set(entry.id, { start: this.data.bytes, bytes: length });
  }
}

// ---------------------------------------------------------------- one line → header, entry or problem

type ParsedLine =
  | { kind: "header"; header: SessionHeader }
  | { kind: "entry"; entry: AnyEntry }
  | { kind: "bad"; message: string; notJson: boolean };

/** Fields each known entry type needs to be usable; anything else passes through unchecked. */
const REQUIRED_STRING_FIELDS: ReadonlyMap<string, readonly string[]> = new Map([
  ["custom", ["customType"]],
  ["custom_message", ["customType"]],
  ["compaction", ["summary", "firstKeptEntryId"]],
  ["branch_summary", ["summary"]],
  ["context_edit", ["targetId"]],
  ["label", ["targetId"]],
]);

const NO_FIELDS: readonly string[] = [];

function parseLine(text: string, isFirst: boolean): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { kind: "bad", message: `not valid JSON (${error instanceof Error ? error.message : String(error)})`, notJson: true };
  }
  const problem = (message: string): ParsedLine => ({ kind: "bad", message, notJson: false });

  if (!isRecord(value)) return problem(`expected a JSON object, found ${describeJson(value)}`);
  const type = value.type;
  if (type === undefined) return problem('missing "type"');
  if (typeof type !== "string") return problem(`"type" is ${describeJson(type)}, not a string`);

  if (type === "session") {
    if (!isFirst) return problem("a session header after the first line; ignored");
    if (typeof value.id !== "string") return problem('session header without a string "id"');
    return { kind: "header", header: value as unknown as SessionHeader };
  }

  if (typeof value.id !== "string") return problem(`${type} entry without a string "id"`);
  if (value.parentId !== null && typeof value.parentId !== "string") {
    return problem(`${type} entry "${value.id}": "parentId" must be a string or null, found ${describeJson(value.parentId)}`);
  }
  if (type === "message") {
    const message = value.message;
    if (!isRecord(message)) return problem(`message entry "${value.id}" without a "message" object`);
    if (typeof message.role !== "string") return problem(`message entry "${value.id}": message without a string "role"`);
  }
  for (const field of REQUIRED_STRING_FIELDS.get(type) ?? NO_FIELDS) {
    if (typeof value[field] !== "string") return problem(`${type} entry "${value.id}" without a string "${field}"`);
  }
  return { kind: "entry", entry: value as unknown as AnyEntry };
}

function describeJson(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "nothing";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} bytes`;
}
