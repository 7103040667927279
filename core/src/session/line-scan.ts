// Every pass over a session file splits it into lines the same way: read a chunk at a time, split on
// 0x0A (so invalid UTF-8 can never hide a newline), hand a line that lies whole in one chunk on in
// place, and gather only a line that crosses a chunk's edge. The reader, the quick reclaim estimate
// and the search's read-back of one entry all scan with this.
import type { OpenSessionFile } from "./session-file-storage.ts";

const NEWLINE = 0x0a;

/** A whole pass over a file reads this much at once. */
export const DEFAULT_CHUNK_BYTES = 1024 * 1024;
/** Longer lines are counted and passed over, never held (a damaged or hostile file cannot fill memory with one). */
export const DEFAULT_MAX_LINE_BYTES = 128 * 1024 * 1024;

/** Takes the lines a LineSplitter finds, in order. */
export interface LineSink {
  /**
   * The line `bytes[start, end)`, without its newline. `bytes` is null when the line was longer than
   * the splitter's limit: then only its length, `end - start`, is known. Returns true to stop.
   */
  line(bytes: Buffer | null, start: number, end: number): boolean | void;
}

/** What follows the last newline pushed: a line not yet ended. */
export interface UnendedLine {
  /** Null when it is longer than the limit. */
  bytes: Buffer | null;
  length: number;
}

/** Splits bytes pushed a chunk at a time into lines for a sink; a line longer than `maxLineBytes` is counted, never held. */
export class LineSplitter {
  private readonly sink: LineSink;
  private readonly maxLineBytes: number;
  /** Bytes of the line in progress, which began in an earlier chunk. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** The line in progress exceeded maxLineBytes: its bytes are counted, not kept. */
  private skipping = false;

  constructor(sink: LineSink, maxLineBytes: number) {
    this.sink = sink;
    this.maxLineBytes = maxLineBytes;
  }

  /**
   * Splits `chunk`, the bytes after those pushed before. The sink may keep views into it. Returns
   * true when the sink asked to stop (the rest of the chunk is dropped; push nothing more).
   */
  push(chunk: Buffer): boolean {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, start);
      if (newline < 0) {
        this.hold(chunk.subarray(start));
        return false;
      }
      // Most lines lie whole in one chunk: handed on there, without a view or a list for them.
      if (this.pendingBytes === 0) {
        if (this.sink.line(newline - start > this.maxLineBytes ? null : chunk, start, newline)) return true;
      } else {
        this.hold(chunk.subarray(start, newline));
        const length = this.pendingBytes;
        const line = this.skipping ? null : this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
        this.clear();
        if (this.sink.line(line, 0, length)) return true;
      }
      start = newline + 1;
    }
  }

  /** The bytes after the last newline, copied, or undefined when there are none; forgets them. */
  takeUnended(): UnendedLine | undefined {
    if (this.pendingBytes === 0) return undefined;
    const rest = { bytes: this.skipping ? null : Buffer.concat(this.pending), length: this.pendingBytes };
    this.clear();
    return rest;
  }

  private hold(piece: Buffer): void {
    if (piece.length === 0) return;
    this.pendingBytes += piece.length;
    if (this.skipping) return;
    if (this.pendingBytes > this.maxLineBytes) {
      this.skipping = true;
      this.pending = [];
      return;
    }
    this.pending.push(piece);
  }

  private clear(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.skipping = false;
  }
}

export interface ScanOptions {
  /** Bytes asked for in each read. */
  chunkBytes: number;
  /** Where to stop (exclusive); default the file's end. */
  end?: number;
  /** Awaited after each chunk is split (to let other work run). */
  between?: () => Promise<void>;
}

/** Reads `file` from `position` to the end (or `options.end`) into `splitter`; resolves to whether its sink stopped the scan. */
export async function scanLines(file: Pick<OpenSessionFile, "read">, position: number, splitter: LineSplitter, options: ScanOptions): Promise<boolean> {
  const { chunkBytes, end = Infinity, between } = options;
  // A fresh buffer per read: lines are handed on as views into it, without copying.
  const readAt = async (at: number) => {
    const length = Math.min(chunkBytes, end - at);
    if (length <= 0) return { buffer: undefined, bytesRead: 0 };
    const buffer = Buffer.allocUnsafe(length);
    return { buffer, bytesRead: await file.read(buffer, length, at) };
  };
  let next = readAt(position);
  try {
    for (;;) {
      const { bytesRead, buffer } = await next;
      if (bytesRead === 0) return false;
      position += bytesRead;
      // The next read runs while this chunk is split.
      next = readAt(position);
      if (splitter.push(buffer!.subarray(0, bytesRead))) return true;
      if (between) await between();
    }
  } finally {
    // A read still in flight (the sink threw or stopped) must not become an unhandled rejection.
    next.catch(() => undefined);
  }
}
