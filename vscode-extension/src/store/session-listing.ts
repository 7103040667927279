// Which session files a scope holds: every session under the agent dir, or the open workspace
// folders' sessions, newest first. Listing is cheap (a stat per file); nothing is parsed here.
import { listAllSessionFiles, listSessionFiles, sessionDirFor, type SessionFileInfo } from "@pi-pruner/core";
import type { AgentDir } from "../settings/prune-settings.ts";

interface WorkspaceFolderRef {
  name: string;
  path: string;
}

export interface SessionScope {
  agentDir: AgentDir;
  folders: WorkspaceFolderRef[];
  /** Every session under the agent dir, not only the open folders'. */
  all: boolean;
}

export interface ListedSession {
  info: SessionFileInfo;
  /** The workspace folder the session belongs to, when the scope lists folders. */
  cwd?: string;
}

/** The scope's session files, newest first. */
export async function listScopeSessions(scope: SessionScope): Promise<ListedSession[]> {
  if (scope.all) return (await listAllSessionFiles(scope.agentDir.path)).map((info) => ({ info }));
  const perFolder = await Promise.all(
    scope.folders.map(async (folder) => (await listSessionFiles(sessionDirFor(scope.agentDir.path, folder.path))).map((info) => ({ info, cwd: folder.path }))),
  );
  return perFolder.flat().sort((a, b) => b.info.mtimeMs - a.info.mtimeMs);
}
