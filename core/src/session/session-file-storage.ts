// How the session reader and `withBodies` reach a session file: open it once, ask its size, read
// byte ranges. The real storage is the file system; the memory one lets unit tests shrink, replace
// or short-read a file between any two reads.
import { open } from "node:fs/promises";

/** A session file held open for one read of it (with the real storage, a file replaced meanwhile is still the one opened). */
export interface OpenSessionFile {
  /** Its size in bytes now. */
  size(): Promise<number>;
  /**
   * Reads up to `length` bytes at `position` into the start of `buffer`; resolves to how many were
   * read. Fewer than asked is allowed anywhere; 0 only at the end of the file.
   */
  read(buffer: Buffer, length: number, position: number): Promise<number>;
  close(): Promise<void>;
}

export interface SessionFileStorage {
  /** Opens `path` for reading; a missing file rejects with an error whose code is "ENOENT". */
  open(path: string): Promise<OpenSessionFile>;
}

export const fileSessionStorage: SessionFileStorage = {
  async open(path) {
    const handle = await open(path, "r");
    return {
      size: async () => (await handle.stat()).size,
      read: async (buffer, length, position) => (await handle.read(buffer, 0, length, position)).bytesRead,
      close: () => handle.close(),
    };
  },
};

export interface MemorySessionStorageOptions {
  /** Each read returns at most this many bytes (a short read, as a network file system may give). */
  maxReadBytes?: number;
  /** Called before each read; a test changes `files` here to change a file between two reads. */
  beforeRead?: (path: string, position: number, length: number) => void;
}

/**
 * Session files held in `files` (path → contents). Each read looks the file up again, so a test
 * that sets new contents for a path sees them on the next read, as with a file written in place.
 */
export function memorySessionStorage(files: Map<string, Buffer | string>, options: MemorySessionStorageOptions = {}): SessionFileStorage {
  const contents = (path: string): Buffer => {
    const value = files.get(path);
    if (value === undefined) {
      const error: NodeJS.ErrnoException = new Error(`ENOENT: no such file, open '${path}'`);
      error.code = "ENOENT";
      throw error;
    }
    return typeof value === "string" ? Buffer.from(value, "utf8") : value;
  };
  return {
    async open(path) {
      contents(path);
      return {
        size: async () => contents(path).length,
        async read(buffer, length, position) {
          options.beforeRead?.(path, position, length);
          const bytes = contents(path);
          const count = Math.max(0, Math.min(length, options.maxReadBytes ?? length, bytes.length - position));
          if (count > 0) bytes.copy(buffer, 0, position, position + count);
          return count;
        },
        close: async () => undefined,
      };
    },
  };
}

/** Reads until `length` bytes are in `buffer` or the file ends; resolves to how many were read. */
export async function readFully(file: OpenSessionFile, buffer: Buffer, length: number, position: number): Promise<number> {
  let total = 0;
  while (total < length) {
    const count = await file.read(total === 0 ? buffer : buffer.subarray(total), length - total, position + total);
    if (count === 0) break;
    total += count;
  }
  return total;
}
