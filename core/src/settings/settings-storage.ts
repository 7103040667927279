// How the settings reader and writer reach settings files. The real storage is the file system,
// where the safety lives (exclusive lock files, temp file + rename only over the file that was
// read, permission bits, one read bounded to 4 MiB that opens no FIFO or device); the memory one
// lets unit tests run the editing logic.
import { randomBytes } from "node:crypto";
import {
  accessSync,
  closeSync,
  constants as fsConstants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  readlinkSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
  type BigIntStats,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

/** A read of a settings file: its text, permission bits, and which version of the file it was. */
interface StoredFile {
  text: string;
  mode: number;
  /**
   * Tells this version of the file from any later one (on disk: device, inode, size and
   * modification time); undefined when the storage cannot tell.
   */
  version?: string;
}

/** What a write expects to replace: the file as it was read, or no file (`exists` false). */
interface ExpectedFile {
  exists: boolean;
  text: string;
  version?: string;
}

/**
 * Errors thrown by a storage carry `code` as Node's do: "ENOENT", "EEXIST", "EISDIR", "ENOTREG" (not
 * a regular file), "EFBIG" (larger than MAX_SETTINGS_FILE_BYTES, with `size` when known)…
 */
export interface SettingsStorage {
  /** The text, permission bits and version of a regular file of at most MAX_SETTINGS_FILE_BYTES; anything else is refused without reading it. */
  readFile(path: string): StoredFile;
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
  /**
   * Puts `from` in the place of `to` in one step, but only while `to` is still the file `expected`
   * describes (or, when it does not exist, still absent): false, with nothing moved, once it has
   * changed. Someone who replaces the file meanwhile is never overwritten.
   */
  replaceIfUnchanged(from: string, to: string, expected: ExpectedFile): boolean;
  remove(path: string): void;
}

function errnoError(code: string, message: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(message);
  error.code = code;
  return error;
}

/** A settings file larger than this is not read: the one bound of every read of a settings file. */
export const MAX_SETTINGS_FILE_BYTES = 4 * 1024 * 1024;

/** Thrown for a file past the bound: code "EFBIG", with its size when the file told it. */
function tooLargeError(path: string, size: number | undefined): NodeJS.ErrnoException & { size?: number } {
  return Object.assign(errnoError("EFBIG", `${path} is larger than ${MAX_SETTINGS_FILE_BYTES} bytes`), { size });
}

const READ_CHUNK_BYTES = 64 * 1024;

/**
 * The text and permission bits of a regular file, read with a byte limit whatever its size says.
 * Anything else is refused without reading it, and where stat can tell, without opening it: a
 * FIFO would block until a writer appears, a device (a link to /dev/zero) never ends. A file the
 * system makes up as it is read (/proc/self/pagemap: "0 bytes", and no end) is refused too.
 * Errors carry `code` (a non-regular file: "ENOTREG", a directory: "EISDIR", past the bound: "EFBIG").
 */
function readRegularFile(path: string): StoredFile {
  // Links are followed, as Pi's own reader follows them, but only to a regular file.
  refuseIrregular(path, statSync(path, { bigint: true }));
  // O_NONBLOCK: the open itself must not wait for a FIFO's writer put there since the stat.
  const fd = openSync(path, fsConstants.O_RDONLY | (fsConstants.O_NONBLOCK ?? 0));
  try {
    const stat = fstatSync(fd, { bigint: true });
    refuseIrregular(path, stat);
    if (stat.size > BigInt(MAX_SETTINGS_FILE_BYTES)) throw tooLargeError(path, Number(stat.size));
    const bytes = readAtMost(fd, path, Number(stat.size));
    // Stat again after the read: a change in place while reading gives another version.
    const after = fstatSync(fd, { bigint: true });
    const text = bytes.toString("utf8");
    return { text, mode: Number(stat.mode & 0o7777n), version: versionOf(after) === versionOf(stat) ? versionOf(stat) : undefined };
  } finally {
    closeSync(fd);
  }
}

function refuseIrregular(path: string, stat: BigIntStats): void {
  if (!stat.isFile()) throw errnoError(stat.isDirectory() ? "EISDIR" : "ENOTREG", `${path} is not a regular file`);
}

/**
 * At most MAX_SETTINGS_FILE_BYTES of an open file ("EFBIG" past them). Bytes past a size of 0
 * that a second look still gives as 0 are a generated file's ("ENOTREG"): a file being written
 * meanwhile has grown by then.
 */
function readAtMost(fd: number, path: string, size: number): Buffer {
  let buffer = Buffer.allocUnsafe(Math.min(MAX_SETTINGS_FILE_BYTES + 1, Math.max(size + 1, READ_CHUNK_BYTES)));
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (length > MAX_SETTINGS_FILE_BYTES) throw tooLargeError(path, undefined);
      const larger = Buffer.allocUnsafe(Math.min(MAX_SETTINGS_FILE_BYTES + 1, buffer.length * 2));
      buffer.copy(larger, 0, 0, length);
      buffer = larger;
    }
    // Whole chunks: a generated file may refuse a read of odd length (/proc/self/pagemap reads in steps of 8).
    const read = readSync(fd, buffer, length, Math.min(buffer.length - length, READ_CHUNK_BYTES), null);
    if (read === 0) return buffer.subarray(0, length);
    length += read;
    if (size === 0 && fstatSync(fd).size === 0) throw errnoError("ENOTREG", `${path} is not a regular file (generated as it is read)`);
  }
}

/** The same file, unchanged: the same inode on the same device, with the same size and modification time. */
function versionOf(stat: BigIntStats): string {
  return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}`;
}

function quietlyUnlink(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

// A file system without hard links (FAT, some network shares) answers `link` with one of these.
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EXDEV", "EMLINK", "EINVAL"]);

function noHardLinks(error: unknown): boolean {
  return NO_HARD_LINKS.has((error as NodeJS.ErrnoException).code ?? "");
}

/**
 * POSIX has no rename that checks what it replaces; this comes as close as it allows. A hard link
 * to the file changes the directory, so it is made only once a rename already under way there has
 * ended, and it names the file in place at that moment. That file is compared with the one read,
 * and the rename follows straight after: what stays open is the microseconds between the two.
 */
function replaceIfUnchangedOnDisk(from: string, to: string, expected: ExpectedFile): boolean {
  if (!expected.exists) return createIfStillAbsent(from, to);
  // The text first: a change written into the same file shows here even on a coarse clock.
  if (!holdsText(to, expected.text)) return false;
  const witness = join(dirname(to), `.${basename(to)}.${process.pid}.${randomBytes(6).toString("hex")}.witness`);
  try {
    linkSync(to, witness);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    if (!noHardLinks(error)) throw error;
    if (!isVersion(to, expected.version)) return false;
    renameSync(from, to);
    return true;
  }
  try {
    if (!isVersion(witness, expected.version)) return false;
    renameSync(from, to);
    return true;
  } finally {
    quietlyUnlink(witness);
  }
}

/** A file created only while there is none: a hard link, unlike a rename, fails when its name is taken. */
function createIfStillAbsent(from: string, to: string): boolean {
  try {
    linkSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    if (!noHardLinks(error)) throw error;
    if (existsOnDisk(to)) return false;
    renameSync(from, to);
    return true;
  }
  quietlyUnlink(from);
  return true;
}

function existsOnDisk(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function holdsText(path: string, text: string): boolean {
  try {
    return readRegularFile(path).text === text;
  } catch {
    return false;
  }
}

/** Whether `path` is the version read (when the read told one; else the text check stands alone). */
function isVersion(path: string, version: string | undefined): boolean {
  if (version === undefined) return true;
  try {
    return versionOf(statSync(path, { bigint: true })) === version;
  } catch {
    return false;
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
  replaceIfUnchanged: replaceIfUnchangedOnDisk,
  remove: unlinkSync,
};

/**
 * Settings files held in `files` (path → text), lock and temp files included, so a test sees
 * every file the writer left behind. There are no directories, links or read-only files.
 */
export function memorySettingsStorage(files: Map<string, string>): SettingsStorage {
  const modes = new Map<string, number>();
  const changedAt = new Map<string, number>();
  // Bumped on every write through the storage; a test that sets `files` directly is caught by the text.
  const versions = new Map<string, number>();
  let writes = 0;
  const written = (path: string) => versions.set(path, ++writes);
  const versionOfPath = (path: string) => String(versions.get(path) ?? 0);
  const missing = (path: string) => errnoError("ENOENT", `ENOENT: no such file or directory, '${path}'`);
  const rename = (from: string, to: string) => {
    const text = files.get(from);
    if (text === undefined) throw missing(from);
    files.delete(from);
    files.set(to, text);
    modes.set(to, modes.get(from) ?? 0o644);
    changedAt.set(to, changedAt.get(from) ?? Date.now());
    written(to);
  };
  return {
    readFile(path) {
      const text = files.get(path);
      if (text === undefined) throw missing(path);
      const size = Buffer.byteLength(text);
      if (size > MAX_SETTINGS_FILE_BYTES) throw tooLargeError(path, size);
      return { text, mode: modes.get(path) ?? 0o644, version: versionOfPath(path) };
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
      written(path);
    },
    // A file a test put in `files` itself counts as just changed (a lock there is not stale).
    modifiedAt: (path) => (files.has(path) ? (changedAt.get(path) ?? Date.now()) : undefined),
    rename,
    replaceIfUnchanged(from, to, expected) {
      const current = files.get(to);
      const unchanged = expected.exists
        ? current === expected.text && (expected.version === undefined || expected.version === versionOfPath(to))
        : current === undefined;
      if (!unchanged) return false;
      rename(from, to);
      return true;
    },
    remove(path) {
      if (!files.delete(path)) throw missing(path);
    },
  };
}
