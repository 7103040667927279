// The blobs folder of a session, where spilled tool output lives: its name, and reading a spill
// file from inside it only.
import { constants as fsConstants } from "node:fs";
import { open, realpath } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";

/** `<sessionDir>/<sessionId>-blobs`, where the pruner writes spilled output. */
export function blobsDirFor(sessionFile: string, sessionId: string): string {
  return join(dirname(sessionFile), `${sessionId}-blobs`);
}

export type SpillRead = { ok: true; text: string; path: string } | { ok: false; reason: string };

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
