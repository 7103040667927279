// Where Pi keeps session files and what can be learned about one cheaply: the folder of a working
// directory, the session files in it (newest first), a label from the file's first bytes, and the
// spill sidecar of a pruned call, read only from inside its session's blobs folder.
import { open, readdir, stat } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { parseSessionText } from "./session-reader.ts";
import { sessionLabels } from "./labels.ts";

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
  /** When the session began (the header's timestamp, epoch ms), when it says. */
  startedAt?: number;
}

/** Pi's folder for the sessions of a working directory: `--<cwd, leading separator dropped, / \ : as ->--`. */
function sessionFolderName(cwd: string): string {
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
  const startedAt = typeof data.header?.timestamp === "string" ? Date.parse(data.header.timestamp) : NaN;
  if (Number.isFinite(startedAt)) head.startedAt = startedAt;
  const { name, firstPrompt } = sessionLabels(data.entries);
  if (name !== undefined) head.name = name;
  if (firstPrompt !== undefined) head.firstPrompt = firstPrompt;
  return head;
}
