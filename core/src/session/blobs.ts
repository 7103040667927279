// The blobs folder of a session, where spilled tool output lives: its name, the names of the
// files in it, writing them, and reading them back from inside it only. Everything that touches
// the folder is here, behind `SpillStorage`; `memorySpillStorage` is the same contract without disk.
//
// Every value that becomes part of a path here comes from a session file, which is untrusted
// (session files travel): the session id, a tool-call id, a result's timestamp, a recorded spill
// path. Each is checked before it is used; the folder itself must be a real folder, never a link;
// writes create a new file and follow no link; reads resolve links and refuse anything outside.
import { createHash } from "node:crypto";
import { closeSync, constants as fsConstants, lstatSync, mkdirSync, openSync, readSync, fstatSync, writeSync } from "node:fs";
import { lstat, open, realpath } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import type { SpillCall, SpillRead, SpillReadOptions, SpillStorage } from "../shapes/entries.ts";

/** The longest session id or file-name stem the pruner puts in a path (far below any file system's 255). */
const MAX_NAME_CHARS = 128;
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * Whether a session id may name a folder: letters, digits, `_`, `.` and `-`, starting with a
 * letter or digit (so never `.` or `..`), at most 128 characters. Pi's own ids are UUIDs; a
 * session file can carry anything in its header, and Pi takes it as it is when it opens the file.
 */
export function isSafeSessionId(id: unknown): id is string {
  return typeof id === "string" && id.length <= MAX_NAME_CHARS && SAFE_NAME.test(id);
}

/** Why a session id cannot name a blobs folder, in words for a warning. */
function unsafeIdReason(id: unknown): string {
  const shown = typeof id === "string" ? JSON.stringify(id.length > 60 ? `${id.slice(0, 60)}…` : id) : `a ${id === null ? "null" : typeof id}`;
  return `this session's id ${shown} is not a safe folder name, so it has no blobs folder`;
}

/** `<sessionDir>/<sessionId>-blobs`, where the pruner writes spilled output. Throws for an id that is not safe. */
export function blobsDirFor(sessionFile: string, sessionId: string): string {
  const dir = blobsFolderOf(sessionFile, sessionId);
  if (!dir) throw new Error(unsafeIdReason(sessionId));
  return dir;
}

function blobsFolderOf(sessionFile: string, sessionId: unknown): string | undefined {
  return isSafeSessionId(sessionId) ? join(dirname(sessionFile), `${sessionId}-blobs`) : undefined;
}

/**
 * One file per occurrence: the same tool-call id can come back with a new result (a retried turn),
 * so the result's timestamp is part of the name. The id comes from the model, so it is made safe
 * (and a long one shortened, with a hash of the whole so two long ids still differ); the timestamp
 * comes from the session file, so it must be a whole number or there is no name.
 */
export function spillFileName(call: Pick<SpillCall, "toolCallId" | "resultTimestamp">): string {
  const timestamp: unknown = call.resultTimestamp;
  if (typeof timestamp !== "number" || !Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new Error(`the tool result's timestamp is not a whole number of milliseconds (${describeValue(timestamp)})`);
  }
  const rawId: unknown = call.toolCallId;
  if (typeof rawId !== "string" || rawId === "") throw new Error("the tool result has no tool-call id");
  let safeId = rawId.replace(/[^A-Za-z0-9_.-]/g, "_");
  if (safeId.length > 96) safeId = `${safeId.slice(0, 64)}~${createHash("sha256").update(rawId).digest("hex").slice(0, 16)}`;
  return `${safeId}-${timestamp}.txt`;
}

function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  return value === null ? "null" : typeof value === "number" ? String(value) : typeof value;
}

/**
 * The blobs folder, made if missing: it must be a real folder. A link in its place (to `~/.ssh`,
 * say) or any other kind of file is refused, so nothing is ever written through it.
 */
function ensureBlobsFolder(dir: string): void {
  mkdirSync(dirname(dir), { recursive: true });
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  const found = lstatSync(dir);
  if (found.isSymbolicLink()) throw new Error(`${dir} is a symbolic link, not a folder; nothing is spilled through it`);
  if (!found.isDirectory()) throw new Error(`${dir} is not a folder`);
}

/** Flags for creating a spill file: a new file only, never through a link, never waiting on a FIFO. */
const CREATE_FLAGS = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);
const READ_FLAGS = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);

/**
 * Writes a new spill file. The name is predictable, so something may already be there: a file
 * holding exactly this output (a spill written just before a crash, before its index entry) is
 * taken as it is; anything else (a link, a FIFO, another file) is refused and the output stays inline.
 */
function writeNewFile(path: string, text: string): void {
  let fd: number;
  try {
    fd = openSync(path, CREATE_FLAGS, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST" && holdsExactly(path, text)) return;
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(code === "EEXIST" ? `${path} already exists and is not this output; refused` : `${path} could not be created (${code ?? String(error)})`);
  }
  try {
    const bytes = Buffer.from(text, "utf8");
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
  } finally {
    closeSync(fd);
  }
}

/** Whether a path is a plain file (not a link, not shared by a hard link) whose bytes are exactly `text`. */
function holdsExactly(path: string, text: string): boolean {
  let fd: number | undefined;
  try {
    const expected = Buffer.from(text, "utf8");
    fd = openSync(path, READ_FLAGS);
    const s = fstatSync(fd);
    if (!s.isFile() || s.nlink !== 1 || s.size !== expected.length) return false;
    const actual = Buffer.alloc(expected.length);
    let read = 0;
    while (read < actual.length) {
      const n = readSync(fd, actual, read, actual.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return read === expected.length && actual.equals(expected);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The spill storage of a session on disk: files in its blobs folder. A session without a file, or
 * whose id is not a safe folder name, has no folder: writes fail (the caller reports it once and
 * keeps the output inline) and reads are refused.
 */
export function fileSpillStorage(sessionFile: string | undefined, sessionId: string | undefined): SpillStorage {
  return {
    write(call) {
      if (!sessionFile || sessionId === undefined) throw new Error("this session has no directory on disk");
      const dir = blobsFolderOf(sessionFile, sessionId);
      if (!dir) throw new Error(unsafeIdReason(sessionId));
      const name = spillFileName(call);
      ensureBlobsFolder(dir);
      const path = join(dir, name);
      writeNewFile(path, call.resultText);
      return path;
    },
    async read(spillPath, options) {
      if (!sessionFile) return { ok: false, reason: "this session has no file on disk" };
      return readSpillFile(sessionFile, sessionId, spillPath, options);
    },
  };
}

/** Spill storage held in memory, for tests of code that spills: same names, same refusals of unknown paths. */
export function memorySpillStorage(): SpillStorage & { readonly files: ReadonlyMap<string, string>; readonly reads: readonly string[] } {
  const files = new Map<string, string>();
  const reads: string[] = [];
  return {
    files,
    reads,
    write(call) {
      const path = `memory-blobs/${spillFileName(call)}`;
      files.set(path, call.resultText);
      return path;
    },
    async read(spillPath, options) {
      reads.push(spillPath);
      const text = files.get(spillPath);
      if (text === undefined) return { ok: false, reason: `${spillPath} does not exist` };
      const bytes = Buffer.byteLength(text, "utf8");
      if (options?.maxBytes === undefined || bytes <= options.maxBytes) return { ok: true, text, path: spillPath };
      return { ok: true, text: cutToBytes(Buffer.from(text, "utf8"), options.maxBytes), path: spillPath, bytes, truncated: true };
    },
  };
}

/** The first `maxBytes` bytes as text, cut on a character boundary. */
function cutToBytes(bytes: Buffer, maxBytes: number): string {
  return bytes.subarray(0, maxBytes).toString("utf8").replace(/\uFFFD+$/, "");
}

/** The last part of a recorded path, on either kind of separator (a session may come from another system). */
function recordedFileName(spillPath: string): string | undefined {
  const name = spillPath.split(/[\\/]/).pop();
  return name && name !== "." && name !== ".." ? name : undefined;
}

/**
 * Where a recorded spill path is found inside its session's blobs folder: the path itself when it
 * lies inside, else a file of the same name in the folder (a session folder that was moved or
 * copied keeps its blobs beside it, while the records still name the old absolute place). Nothing
 * outside the folder is ever looked at. The path comes from the session file, which is untrusted.
 */
function spillCandidate(sessionFile: string, sessionId: string, spillPath: string): { ok: true; path: string; byName: boolean } | { ok: false; reason: string } {
  if (typeof spillPath !== "string" || spillPath === "" || /[\0]/.test(spillPath)) return { ok: false, reason: "the spill path is not a usable path" };
  const dir = blobsFolderOf(sessionFile, sessionId);
  if (!dir) return { ok: false, reason: unsafeIdReason(sessionId) };
  const blobs = resolve(dir);
  const candidate = resolve(dirname(sessionFile), spillPath);
  if (candidate.startsWith(blobs + sep) && !candidate.slice(blobs.length + 1).includes(sep)) return { ok: true, path: candidate, byName: false };
  const name = recordedFileName(spillPath);
  if (name) return { ok: true, path: join(blobs, name), byName: true };
  return { ok: false, reason: `${spillPath} is outside this session's blobs folder (${blobs}); refused` };
}

/**
 * The real path of a recorded spill inside its session's blobs folder, or why there is none. The
 * folder must be a real folder (a link in its place is refused, wherever it points); the file's
 * links are resolved and it must still lie inside the folder's real path.
 */
async function realSpillPath(sessionFile: string, sessionId: string | undefined, spillPath: string): Promise<{ ok: true; path: string } | { ok: false; reason: string }> {
  if (sessionId === undefined) return { ok: false, reason: "the session has no id, so it has no blobs folder" };
  const found = spillCandidate(sessionFile, sessionId, spillPath);
  if (!found.ok) return found;
  const blobs = resolve(blobsDirFor(sessionFile, sessionId));
  const missing = (): { ok: false; reason: string } =>
    found.byName
      ? { ok: false, reason: `${spillPath} is outside this session's blobs folder (${blobs}), which holds no file ${basename(found.path)} either; refused` }
      : { ok: false, reason: `${spillPath} does not exist` };
  let realBlobs: string;
  try {
    const folder = await lstat(blobs);
    if (folder.isSymbolicLink()) return { ok: false, reason: `this session's blobs folder (${blobs}) is a symbolic link; nothing is read through it` };
    if (!folder.isDirectory()) return { ok: false, reason: `this session's blobs folder (${blobs}) is not a folder` };
    realBlobs = await realpath(blobs);
  } catch {
    return missing();
  }
  let realFile: string;
  try {
    realFile = await realpath(found.path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") return { ok: false, reason: `${spillPath} is a loop of symbolic links; refused` };
    return missing();
  }
  // Inside by name; now by what the names point to.
  if (!realFile.startsWith(realBlobs + sep)) return { ok: false, reason: `${spillPath} is outside this session's blobs folder (${blobs}); refused` };
  return { ok: true, path: realFile };
}

/** Whether a recorded spill can be read back (without reading it): its file inside the blobs folder, or why not. */
export async function locateSpillFile(sessionFile: string, sessionId: string | undefined, spillPath: string): Promise<{ ok: true; path: string } | { ok: false; reason: string }> {
  const found = await realSpillPath(sessionFile, sessionId, spillPath);
  if (!found.ok) return found;
  try {
    // lstat never opens the file, so a FIFO in its place cannot make this wait.
    const s = await lstat(found.path);
    if (!s.isFile()) return { ok: false, reason: `${spillPath} is not a file` };
    if (s.nlink !== 1) return { ok: false, reason: `${spillPath} is a hard link shared with another file; refused` };
  } catch (error) {
    return { ok: false, reason: `${spillPath} could not be read (${(error as NodeJS.ErrnoException).code ?? String(error)})` };
  }
  return found;
}

/**
 * Reads a spilled output, but only from inside its session's blobs folder (see realSpillPath).
 * With `maxBytes`, at most that many bytes are read (`truncated` says the file holds more), so a
 * huge spill costs no more memory than what the caller can use.
 */
export async function readSpillFile(sessionFile: string, sessionId: string | undefined, spillPath: string, options: SpillReadOptions = {}): Promise<SpillRead> {
  const found = await realSpillPath(sessionFile, sessionId, spillPath);
  if (!found.ok) return found;
  const realFile = found.path;
  try {
    // O_NONBLOCK: opening a FIFO put in place of the file must not wait for a writer; O_NOFOLLOW:
    // a link swapped in after the check is not followed. The type check on the open handle then
    // refuses anything but a plain file.
    const handle = await open(realFile, READ_FLAGS);
    try {
      const s = await handle.stat();
      if (!s.isFile()) return { ok: false, reason: `${spillPath} is not a file` };
      if (s.nlink !== 1) return { ok: false, reason: `${spillPath} is a hard link shared with another file; refused` };
      const limit = options.maxBytes === undefined ? Infinity : Math.max(0, Math.floor(options.maxBytes));
      if (s.size <= limit) return { ok: true, text: (await handle.readFile()).toString("utf8"), path: realFile };
      const buffer = Buffer.alloc(limit);
      let read = 0;
      while (read < limit) {
        const { bytesRead } = await handle.read(buffer, read, limit - read, read);
        if (bytesRead === 0) break;
        read += bytesRead;
      }
      return { ok: true, text: cutToBytes(buffer.subarray(0, read), read), path: realFile, bytes: s.size, truncated: true };
    } finally {
      await handle.close();
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") return { ok: false, reason: `${spillPath} is a symbolic link; refused` };
    return { ok: false, reason: `${spillPath} could not be read (${code ?? String(error)})` };
  }
}
