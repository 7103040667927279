// Where Pi keeps session files and what can be learned about one cheaply: the folder of a working
// directory, the session files in it (newest first), a label from the file's first bytes, and the
// spill sidecar of a pruned call, read only from inside its session's blobs folder.
import { constants as fsConstants } from "node:fs";
import { open, readdir, realpath, stat } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import { parseSessionText } from "./session.ts";
import { sessionLabels } from "./view.ts";

export interface SessionFileInfo {
  path: string;
  /** The folder under `<agentDir>/sessions/` (Pi's encoded cwd). */
  folder: string;
  size: number;
  mtimeMs: number;
}

export interface SessionHead {
  id?: string;
  cwd?: string;
  /** Latest `session_info` name within the head. */
  name?: string;
  /** First user prompt within the head, whitespace collapsed. */
  firstPrompt?: string;
}

/** Pi's folder for the sessions of a working directory: `--<cwd, leading separator dropped, / \ : as ->--`. */
export function sessionFolderName(cwd: string): string {
  return `--${resolve(cwd).replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

export function sessionsRoot(agentDir: string): string {
  return join(agentDir, "sessions");
}

export function sessionDirFor(agentDir: string, cwd: string): string {
  return join(sessionsRoot(agentDir), sessionFolderName(cwd));
}

async function jsonlFilesIn(dir: string): Promise<SessionFileInfo[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const out: SessionFileInfo[] = [];
  await Promise.all(
    names
      .filter((name) => name.endsWith(".jsonl"))
      .map(async (name) => {
        const path = join(dir, name);
        try {
          const s = await stat(path);
          if (s.isFile()) out.push({ path, folder: basename(dir), size: s.size, mtimeMs: s.mtimeMs });
        } catch {
          // Removed between the listing and the stat.
        }
      }),
  );
  return out;
}

/** Session files of one folder, newest first (by modification time, then name). */
export async function listSessionFiles(dir: string): Promise<SessionFileInfo[]> {
  return sortNewestFirst(await jsonlFilesIn(dir));
}

/** Session files of every folder under `<agentDir>/sessions/`, newest first. */
export async function listAllSessionFiles(agentDir: string): Promise<SessionFileInfo[]> {
  const root = sessionsRoot(agentDir);
  let folders: string[];
  try {
    folders = (await readdir(root, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return [];
  }
  const lists = await Promise.all(folders.map((f) => jsonlFilesIn(join(root, f))));
  return sortNewestFirst(lists.flat());
}

function sortNewestFirst(files: SessionFileInfo[]): SessionFileInfo[] {
  return files.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.path < b.path ? 1 : a.path > b.path ? -1 : 0));
}

/** Header, name and first prompt from the first `maxBytes` of a session file. Never throws. */
export async function readSessionHead(path: string, maxBytes = 64 * 1024): Promise<SessionHead> {
  let text: string;
  try {
    const handle = await open(path, "r");
    try {
      const buffer = Buffer.alloc(maxBytes);
      const { bytesRead } = await handle.read(buffer, 0, maxBytes, 0);
      const slice = buffer.subarray(0, bytesRead);
      // Only complete lines: a cut line would be reported as bad, and it is not.
      const lastNewline = slice.lastIndexOf(0x0a);
      text = lastNewline >= 0 ? slice.subarray(0, lastNewline + 1).toString("utf8") : "";
    } finally {
      await handle.close();
    }
  } catch {
    return {};
  }
  const data = parseSessionText(text);
  const head: SessionHead = { id: data.header?.id, cwd: data.header?.cwd };
  const { name, firstPrompt } = sessionLabels(data.entries);
  if (name !== undefined) head.name = name;
  if (firstPrompt !== undefined) head.firstPrompt = firstPrompt;
  return head;
}

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
