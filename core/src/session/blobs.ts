// The blobs folder of a session, where spilled tool output lives: its name, the names of the
// files in it, writing them, and reading them back from inside it only. Everything that touches
// the folder is here, behind `SpillStorage`; `memorySpillStorage` is the same contract without disk.
import { constants as fsConstants, mkdirSync, writeFileSync } from "node:fs";
import { open, realpath, stat } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import type { SpillCall, SpillRead, SpillStorage } from "../shapes/entries.ts";

/** `<sessionDir>/<sessionId>-blobs`, where the pruner writes spilled output. */
export function blobsDirFor(sessionFile: string, sessionId: string): string {
  return join(dirname(sessionFile), `${sessionId}-blobs`);
}

/**
 * One file per occurrence: the same tool-call id can come back with a new result (a retried turn),
 * so the result's timestamp is part of the name. The id comes from the model, so it is made safe.
 */
export function spillFileName(call: Pick<SpillCall, "toolCallId" | "resultTimestamp">): string {
  const safeId = call.toolCallId.replace(/[^A-Za-z0-9_.-]/g, "_");
  return `${safeId}-${call.resultTimestamp}.txt`;
}

/**
 * The spill storage of a session on disk: files in its blobs folder. A session without a file or
 * an id (an in-memory session) has no folder, so writes fail and reads are refused.
 */
export function fileSpillStorage(sessionFile: string | undefined, sessionId: string | undefined): SpillStorage {
  return {
    write(call) {
      if (!sessionFile || !sessionId) throw new Error("this session has no directory on disk");
      const dir = blobsDirFor(sessionFile, sessionId);
      mkdirSync(dir, { recursive: true });
      const path = join(dir, spillFileName(call));
      writeFileSync(path, call.resultText, "utf8");
      return path;
    },
    async read(spillPath) {
      if (!sessionFile) return { ok: false, reason: "this session has no file on disk" };
      return readSpillFile(sessionFile, sessionId, spillPath);
    },
  };
}

/** Spill storage held in memory, for tests of code that spills: same names, same refusals of unknown paths. */
export function memorySpillStorage(): SpillStorage & { readonly files: ReadonlyMap<string, string> } {
  const files = new Map<string, string>();
  return {
    files,
    write(call) {
      const path = `memory-blobs/${spillFileName(call)}`;
      files.set(path, call.resultText);
      return path;
    },
    async read(spillPath) {
      const text = files.get(spillPath);
      return text === undefined ? { ok: false, reason: `${spillPath} does not exist` } : { ok: true, text, path: spillPath };
    },
  };
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
export function spillCandidate(sessionFile: string, sessionId: string, spillPath: string): { ok: true; path: string; byName: boolean } | { ok: false; reason: string } {
  if (/[\0]/.test(spillPath)) return { ok: false, reason: "the spill path is not a usable path" };
  const blobs = resolve(blobsDirFor(sessionFile, sessionId));
  const candidate = resolve(dirname(sessionFile), spillPath);
  if (candidate.startsWith(blobs + sep)) return { ok: true, path: candidate, byName: false };
  const name = recordedFileName(spillPath);
  if (name) return { ok: true, path: join(blobs, name), byName: true };
  return { ok: false, reason: `${spillPath} is outside this session's blobs folder (${blobs}); refused` };
}

/** The real path of a recorded spill inside its session's blobs folder, links resolved, or why there is none. */
async function realSpillPath(sessionFile: string, sessionId: string | undefined, spillPath: string): Promise<{ ok: true; path: string } | { ok: false; reason: string }> {
  if (!sessionId) return { ok: false, reason: "the session has no id, so it has no blobs folder" };
  const found = spillCandidate(sessionFile, sessionId, spillPath);
  if (!found.ok) return found;
  const blobs = blobsDirFor(sessionFile, sessionId);
  let realBlobs: string;
  let realFile: string;
  try {
    realBlobs = await realpath(blobs);
    realFile = await realpath(found.path);
  } catch {
    return found.byName
      ? { ok: false, reason: `${spillPath} is outside this session's blobs folder (${blobs}), which holds no file ${basename(found.path)} either; refused` }
      : { ok: false, reason: `${spillPath} does not exist` };
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
    // stat never opens the file, so a FIFO in its place cannot make this wait.
    if (!(await stat(found.path)).isFile()) return { ok: false, reason: `${spillPath} is not a file` };
  } catch (error) {
    return { ok: false, reason: `${spillPath} could not be read (${(error as NodeJS.ErrnoException).code ?? String(error)})` };
  }
  return found;
}

/**
 * Reads a spilled output, but only from inside its session's blobs folder (see spillCandidate).
 * Symbolic links are resolved before the check.
 */
export async function readSpillFile(sessionFile: string, sessionId: string | undefined, spillPath: string): Promise<SpillRead> {
  const found = await realSpillPath(sessionFile, sessionId, spillPath);
  if (!found.ok) return found;
  const realFile = found.path;
  try {
    // O_NONBLOCK: opening a FIFO put in place of the file must not wait for a writer; the type
    // check on the open handle then refuses it.
    const handle = await open(realFile, fsConstants.O_RDONLY | (fsConstants.O_NONBLOCK ?? 0));
    try {
      const s = await handle.stat();
      if (!s.isFile()) return { ok: false, reason: `${spillPath} is not a file` };
      return { ok: true, text: (await handle.readFile()).toString("utf8"), path: realFile };
    } finally {
      await handle.close();
    }
  } catch (error) {
    return { ok: false, reason: `${spillPath} could not be read (${(error as NodeJS.ErrnoException).code ?? String(error)})` };
  }
}
