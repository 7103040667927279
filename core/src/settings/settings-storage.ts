// How the settings reader and writer reach settings files. The real storage is the file system,
// where the writer's safety lives (exclusive lock files, temp file + rename, permission bits, a
// FIFO never opened for a blocking read); the memory one lets unit tests run the editing logic.
import {
  accessSync,
  closeSync,
  constants as fsConstants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { dirname, resolve } from "node:path";

/** Errors thrown by a storage carry `code` as Node's do: "ENOENT", "EEXIST", "EISDIR", "ENOTREG" (not a regular file)… */
export interface SettingsStorage {
  /** The text and permission bits of a regular file; anything else is refused without reading it. */
  readFile(path: string): { text: string; mode: number };
  /** The file a write to `path` must replace: symlinks followed, a dangling one too. */
  resolveTarget(path: string): string;
  /** Throws when an existing file may not be written by this process ("ENOENT" when there is none). */
  checkWritable(path: string): void;
  /** Creates a directory and its parents; nothing when it exists. */
  makeDirectory(path: string): void;
  /**
   * Creates a file that must not exist yet ("EEXIST" otherwise) holding `text`. `mode` is set
   * exactly (not filtered by the umask); `durable` flushes it to disk before returning.
   */
  createFile(path: string, text: string, options?: { mode?: number; durable?: boolean }): void;
  /** When the file was last changed (ms since the epoch), or undefined when there is none. */
  modifiedAt(path: string): number | undefined;
  /** Replaces `to` by `from` in one step. */
  rename(from: string, to: string): void;
  remove(path: string): void;
}

function errnoError(code: string, message: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(message);
  error.code = code;
  return error;
}

/**
 * The text and permission bits of a regular file. Anything else is refused without reading it:
 * opening a FIFO would block until a writer appears, and a device (a link to /dev/zero) never
 * ends. Errors carry `code` (a non-regular file: "ENOTREG", a directory: "EISDIR").
 */
export function readRegularFile(path: string): { text: string; mode: number } {
  // O_NONBLOCK: the open itself must not wait for a FIFO's writer (no effect on regular files).
  const fd = openSync(path, fsConstants.O_RDONLY | (fsConstants.O_NONBLOCK ?? 0));
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw errnoError(stat.isDirectory() ? "EISDIR" : "ENOTREG", `${path} is not a regular file`);
    return { text: readFileSync(fd, "utf8"), mode: stat.mode & 0o7777 };
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes through a symlinked settings file (dotfile managers) instead of replacing the link, also
 * when the link's target does not exist yet (it is then created).
 */
function resolveWriteTarget(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    // A dangling link: follow it by hand (bounded, a loop fails later as unreadable).
    let path = file;
    for (let hops = 0; hops < 40; hops++) {
      try {
        if (!lstatSync(path).isSymbolicLink()) return path;
        path = resolve(dirname(path), readlinkSync(path));
      } catch {
        return path;
      }
    }
    return file;
  }
}

export const fileSettingsStorage: SettingsStorage = {
  readFile: readRegularFile,
  resolveTarget: resolveWriteTarget,
  checkWritable: (path) => accessSync(path, fsConstants.W_OK),
  makeDirectory: (path) => void mkdirSync(path, { recursive: true }),
  createFile(path, text, options = {}) {
    const fd = openSync(path, "wx", options.mode ?? 0o666);
    try {
      // The mode given to open is filtered by the umask; the bits asked for are set exactly.
      if (options.mode !== undefined) fchmodSync(fd, options.mode);
      writeSync(fd, text);
      if (options.durable) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
  modifiedAt(path) {
    try {
      return statSync(path).mtimeMs;
    } catch {
      return undefined;
    }
  },
  rename: renameSync,
  remove: unlinkSync,
};

/**
 * Settings files held in `files` (path → text), lock and temp files included, so a test sees
 * every file the writer left behind. There are no directories, links or read-only files.
 */
export function memorySettingsStorage(files: Map<string, string>): SettingsStorage {
  const modes = new Map<string, number>();
  const changedAt = new Map<string, number>();
  const missing = (path: string) => errnoError("ENOENT", `ENOENT: no such file or directory, '${path}'`);
  return {
    readFile(path) {
      const text = files.get(path);
      if (text === undefined) throw missing(path);
      return { text, mode: modes.get(path) ?? 0o644 };
    },
    resolveTarget: (path) => path,
    checkWritable(path) {
      if (!files.has(path)) throw missing(path);
    },
    makeDirectory: () => undefined,
    createFile(path, text, options = {}) {
      if (files.has(path)) throw errnoError("EEXIST", `EEXIST: file already exists, '${path}'`);
      files.set(path, text);
      modes.set(path, options.mode ?? 0o644);
      changedAt.set(path, Date.now());
    },
    // A file a test put in `files` itself counts as just changed (a lock there is not stale).
    modifiedAt: (path) => (files.has(path) ? (changedAt.get(path) ?? Date.now()) : undefined),
    rename(from, to) {
      const text = files.get(from);
      if (text === undefined) throw missing(from);
      files.delete(from);
      files.set(to, text);
      modes.set(to, modes.get(from) ?? 0o644);
      changedAt.set(to, changedAt.get(from) ?? Date.now());
    },
    remove(path) {
      if (!files.delete(path)) throw missing(path);
    },
  };
}
