// Sessions recorded in another folder than the one they are listed for: a project moved or copied
// with its sessions. Their calls name files by the old folder's paths, so the explorer's marks and
// Sessions That Read This File match them by their path inside that folder, and the Sessions view
// says so.
import { isAbsolute, join, relative, resolve } from "node:path";
import * as vscode from "vscode";
import type { SessionState } from "./store/session-store.ts";
import { oneLine } from "./text.ts";

/** Where a session was recorded (its cwd) and the open folder it is listed for, when they differ. */
export interface SessionMove {
  recorded: string;
  open: string;
}

/** Whether `path` is one of the workspace's folders (sessions are listed per folder). */
function isWorkspaceFolder(path: string): boolean {
  return vscode.workspace.workspaceFolders?.some((folder) => resolve(folder.uri.fsPath) === resolve(path)) ?? false;
}

/** The session's move, if it was recorded elsewhere than the open folder it is listed for. */
export function sessionMove(state: SessionState | undefined, isOpenFolder: (path: string) => boolean = isWorkspaceFolder): SessionMove | undefined {
  const recorded = state?.view?.session.cwd ?? state?.head.cwd;
  if (!state || !recorded || !isAbsolute(recorded) || !isOpenFolder(state.cwd)) return undefined;
  return resolve(recorded) === resolve(state.cwd) ? undefined : { recorded: resolve(recorded), open: resolve(state.cwd) };
}

/** `path` inside `from`, as the same path inside `to`; undefined when it is not inside `from`. */
function carry(path: string, from: string, to: string): string | undefined {
  const inside = relative(from, path);
  return inside === "" || inside.startsWith("..") || isAbsolute(inside) ? undefined : join(to, inside);
}

/** A path the session named (already absolute, as its cwd resolves it) as the open folder's file. */
export function toOpenFolder(path: string, move: SessionMove | undefined): string {
  return (move && carry(path, move.recorded, move.open)) ?? path;
}

/** An open folder's file as the session would have named it in the folder it was recorded in. */
export function toRecordedFolder(path: string, move: SessionMove | undefined): string {
  return (move && carry(path, move.open, move.recorded)) ?? path;
}

/**
 * What the Sessions view says when some of its sessions were recorded elsewhere: how many, where
 * (up to two folders), and how their files are matched. Undefined when none was.
 */
export function movedSessionsMessage(states: readonly SessionState[], isOpenFolder: (path: string) => boolean = isWorkspaceFolder): string | undefined {
  const folders = new Map<string, number>();
  for (const state of states) {
    const move = sessionMove(state, isOpenFolder);
    if (move) folders.set(move.recorded, (folders.get(move.recorded) ?? 0) + 1);
  }
  if (folders.size === 0) return undefined;
  const count = [...folders.values()].reduce((a, b) => a + b, 0);
  const names = [...folders.keys()].slice(0, 2).map((f) => oneLine(f, 80));
  const where = `${names.join(" and ")}${folders.size > 2 ? ` and ${folders.size - 2} other folder${folders.size === 3 ? "" : "s"}` : ""}`;
  return `${count} session${count === 1 ? " was" : "s were"} recorded in another folder (${where}): ${count === 1 ? "its" : "their"} files are matched by their path inside that folder.`;
}
