// The blobs folder of a session, where spilled tool output lives: its name, the names of the
// files in it, writing them, and reading them back from inside it only. Everything that touches
// the folder is here, behind `SpillStorage`; `memorySpillStorage` is the same contract without disk.
import { constants as fsConstants, mkdirSync, writeFileSync } from "node:fs";
import { open, realpath } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
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

/**
 * Reads a spilled output, but only from inside its session's blobs folder: the path comes from the
 * session file, which is untrusted. Symbolic links are resolved before the check.
 */
export async function readSpillFile(sessionFile: string, sessionId: string | undefined, spillPath: string): Promise<SpillRead> {
  if (!sessionId) return { ok: false, reason: "the session has no id, so it has no blobs folder" };
  if (/[\0]/.test(spillPath)) return { ok: false, reason: "the spill path is not a usable path" };
  const blobs = blobsDirFor(sessionFile, sessionId);
  const candidate = resolve(dirname(sessionFile), spillPath);
  const outside = { ok: false as const, reason: `${spillPath} is outside this session's blobs folder (${blobs}); refused` };
  if (!candidate.startsWith(resolve(blobs) + sep)) return outside;
  // Inside by name; now by what the names point to.
  let realBlobs: string;
  let realFile: string;
  try {
    realBlobs = await realpath(blobs);
    realFile = await realpath(candidate);
  } catch {
    return { ok: false, reason: `${spillPath} does not exist` };
  }
  if (!realFile.startsWith(realBlobs + sep)) return outside;
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
