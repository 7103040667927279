// File watching: session files under the agent dir (appends, new and removed sessions) and the
// settings files that decide protection (global and each folder's project file).
import { existsSync, readdirSync, watch, type FSWatcher } from "node:fs";
import { basename, dirname, join } from "node:path";
import * as vscode from "vscode";
import { sessionDirFor, sessionsRoot } from "../../core/src/session-files.ts";

export interface WatchTargets {
  agentDir: string;
  agentDirExists: boolean;
  folders: readonly vscode.WorkspaceFolder[];
  /** Session folders that exist now: watched directly as well, for the quickest notice of an append. */
  sessionDirs: readonly string[];
}

export interface WatchHandlers {
  sessionChanged(path: string): void;
  sessionsAddedOrRemoved(): void;
  settingsChanged(): void;
  agentDirAppeared(): void;
}

/** Watches what `targets` name; dispose and create again when they change. */
export function watchPiFiles(targets: WatchTargets, handlers: WatchHandlers): vscode.Disposable {
  const disposables: vscode.Disposable[] = [];
  const add = (watcher: vscode.FileSystemWatcher, on: { change?: (uri: vscode.Uri) => void; create?: (uri: vscode.Uri) => void; remove?: (uri: vscode.Uri) => void }) => {
    disposables.push(watcher);
    if (on.change) disposables.push(watcher.onDidChange(on.change));
    if (on.create) disposables.push(watcher.onDidCreate(on.create));
    if (on.remove) disposables.push(watcher.onDidDelete(on.remove));
  };
  let settingsTimer: NodeJS.Timeout | undefined;
  const settingsChanged = () => {
    if (settingsTimer) return;
    settingsTimer = setTimeout(() => {
      settingsTimer = undefined;
      handlers.settingsChanged();
    }, 100);
  };

  if (targets.agentDirExists) {
    const agentDir = vscode.Uri.file(targets.agentDir);
    add(vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(agentDir, "sessions/**/*.jsonl")), {
      change: (uri) => handlers.sessionChanged(uri.fsPath),
      create: () => handlers.sessionsAddedOrRemoved(),
      remove: () => handlers.sessionsAddedOrRemoved(),
    });
    add(vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(agentDir, "settings.json")), {
      change: settingsChanged,
      create: settingsChanged,
      remove: settingsChanged,
    });
  } else {
    // Pi has not run here yet: notice when its agent dir appears.
    add(vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(dirname(targets.agentDir)), basename(targets.agentDir)), false, true, true), {
      create: () => handlers.agentDirAppeared(),
    });
  }
  // VS Code's watcher covers everything above but, for folders outside the workspace, can take a
  // while to start and batches its events; an OS watch on the session folders sees an append at once.
  // Both may report the same append: reading the tail twice costs nothing.
  for (const dir of targets.sessionDirs) {
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(dir, { persistent: false }, (_event, name) => {
        if (typeof name === "string" && name.endsWith(".jsonl")) handlers.sessionChanged(join(dir, name));
      });
      watcher.on("error", () => watcher?.close());
    } catch {
      continue; // gone already; the listing notices
    }
    const opened = watcher;
    disposables.push(new vscode.Disposable(() => opened.close()));
  }
  for (const folder of targets.folders) {
    if (folder.uri.scheme !== "file") continue;
    add(vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, ".pi/settings.json")), {
      change: settingsChanged,
      create: settingsChanged,
      remove: settingsChanged,
    });
  }
  return new vscode.Disposable(() => {
    if (settingsTimer) clearTimeout(settingsTimer);
    for (const d of disposables) d.dispose();
  });
}

/** The session folders of the scope that exist now. */
export function existingSessionDirs(agentDir: string, folders: readonly vscode.WorkspaceFolder[], all: boolean): string[] {
  const root = sessionsRoot(agentDir);
  let dirs: string[];
  if (all) {
    try {
      dirs = readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => join(root, d.name));
    } catch {
      dirs = [];
    }
  } else dirs = folders.map((f) => sessionDirFor(agentDir, f.uri.fsPath));
  return dirs.filter((d) => existsSync(d));
}
