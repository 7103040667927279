// File watching: session files under the agent dir (appends, new and removed sessions), the agent
// dir's settings file, and each workspace folder's project settings file.
//
// Outside the workspace, VS Code's watcher is slow to start and misses files in folders that did
// not exist when it started, so the agent dir is watched with the OS (non-recursive watches, one
// per folder that matters): the session folders of the scope, `sessions/` for new folders, the
// agent dir for `settings.json` and `sessions/`, or its parent until it exists. VS Code's watcher
// stays on as a second opinion; a change seen twice only costs an empty tail read.
import { existsSync, lstatSync, readdirSync, watch, type FSWatcher } from "node:fs";
import { basename, dirname, join } from "node:path";
import * as vscode from "vscode";
import { sessionDirFor, sessionsRoot } from "@pi-pruner/core";

export interface WatchTargets {
  agentDir: string;
  agentDirExists: boolean;
  folders: readonly vscode.WorkspaceFolder[];
  /** Session folders of the scope that exist now. */
  sessionDirs: readonly string[];
}

export interface WatchHandlers {
  sessionChanged(path: string): void;
  /** Session files or folders came or went (a session folder may need watching). */
  sessionsAddedOrRemoved(): void;
  settingsChanged(): void;
  agentDirAppeared(): void;
  /** A folder that is watched came or went: the watches may need to be made again. */
  layoutChanged(): void;
}

/** An OS watch of one folder; quietly nothing when the folder cannot be watched. */
function watchFolder(dir: string, onEvent: (name: string) => void): vscode.Disposable | undefined {
  let watcher: FSWatcher;
  try {
    watcher = watch(dir, { persistent: false }, (_event, name) => onEvent(typeof name === "string" ? name : ""));
  } catch {
    return undefined;
  }
  watcher.on("error", () => watcher.close());
  return new vscode.Disposable(() => watcher.close());
}

/** Watches what `targets` name; dispose and create again when they change. */
export function watchPiFiles(targets: WatchTargets, handlers: WatchHandlers): vscode.Disposable {
  const disposables: vscode.Disposable[] = [];
  const keep = (d: vscode.Disposable | undefined) => d && disposables.push(d);
  let settingsTimer: NodeJS.Timeout | undefined;
  const settingsChanged = () => {
    if (settingsTimer) return;
    settingsTimer = setTimeout(() => {
      settingsTimer = undefined;
      handlers.settingsChanged();
    }, 100);
  };
  const { agentDir } = targets;
  const root = sessionsRoot(agentDir);

  if (targets.agentDirExists) {
    keep(
      watchFolder(agentDir, (name) => {
        if (name === "settings.json" || name === "") settingsChanged();
        if (name === "sessions" || name === "") handlers.sessionsAddedOrRemoved();
      }),
    );
    keep(watchFolder(root, () => handlers.sessionsAddedOrRemoved()));
    for (const dir of targets.sessionDirs) {
      keep(
        watchFolder(dir, (name) => {
          if (name.endsWith(".jsonl")) handlers.sessionChanged(join(dir, name));
          else if (name === "") handlers.sessionsAddedOrRemoved();
        }),
      );
    }
    const sessions = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(agentDir), "sessions/**/*.jsonl"));
    disposables.push(
      sessions,
      sessions.onDidChange((uri) => handlers.sessionChanged(uri.fsPath)),
      sessions.onDidCreate(() => handlers.sessionsAddedOrRemoved()),
      sessions.onDidDelete(() => handlers.sessionsAddedOrRemoved()),
    );
  } else {
    // Pi has not run here yet: notice when its agent dir appears.
    keep(
      watchFolder(dirname(agentDir), (name) => {
        if (name === basename(agentDir) || name === "") handlers.agentDirAppeared();
      }),
    );
  }
  for (const folder of targets.folders) {
    if (folder.uri.scheme !== "file") continue;
    // The project file, by VS Code's watcher and by the OS: VS Code's can miss a `.pi/` folder that
    // was removed and made again.
    const project = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, ".pi/settings.json"));
    disposables.push(project, project.onDidChange(settingsChanged), project.onDidCreate(settingsChanged), project.onDidDelete(settingsChanged));
    const base = folder.uri.fsPath;
    keep(
      watchFolder(base, (name) => {
        if (name === ".pi" || name === "") {
          settingsChanged();
          handlers.layoutChanged();
        }
      }),
    );
    keep(
      watchFolder(join(base, ".pi"), (name) => {
        if (name === "settings.json" || name === "") settingsChanged();
      }),
    );
  }
  return new vscode.Disposable(() => {
    for (const d of disposables) d.dispose();
    // A change seen just before the watches are made again must not be lost with them.
    if (settingsTimer) {
      clearTimeout(settingsTimer);
      handlers.settingsChanged();
    }
  });
}

/** What there is to watch now, and a key that changes when that does. */
export function watchState(agentDir: string, folders: readonly vscode.WorkspaceFolder[], all: boolean): { sessionDirs: string[]; key: string } {
  const sessionDirs = existingSessionDirs(agentDir, folders, all);
  const projectDirs = folders.map((f) => folderIdentity(join(f.uri.fsPath, ".pi")));
  return { sessionDirs, key: JSON.stringify([existsSync(sessionsRoot(agentDir)), sessionDirs, projectDirs]) };
}

/**
 * Which folder is at `path`: its device and inode, and whether it is a link. A `.pi` folder deleted
 * and made again, or replaced by a link, is another folder, and the OS watch on the old one hears
 * nothing more; a key that only said "it exists" kept that dead watch.
 */
function folderIdentity(path: string): string | null {
  try {
    const s = lstatSync(path);
    return `${s.dev}:${s.ino}:${s.isSymbolicLink() ? "link" : s.isDirectory() ? "dir" : "other"}`;
  } catch {
    return null;
  }
}

/** The session folders of the scope that exist now. */
function existingSessionDirs(agentDir: string, folders: readonly vscode.WorkspaceFolder[], all: boolean): string[] {
  const root = sessionsRoot(agentDir);
  let dirs: string[];
  if (all) {
    try {
      dirs = readdirSync(root, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => join(root, d.name));
    } catch {
      dirs = [];
    }
  } else dirs = folders.map((f) => sessionDirFor(agentDir, f.uri.fsPath));
  return dirs.filter((d) => existsSync(d));
}
