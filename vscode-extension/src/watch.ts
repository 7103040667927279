// File watching: session files under the agent dir (appends, new and removed sessions) and the
// settings files that decide protection (global and each folder's project file).
import { basename, dirname } from "node:path";
import * as vscode from "vscode";

export interface WatchTargets {
  agentDir: string;
  agentDirExists: boolean;
  folders: readonly vscode.WorkspaceFolder[];
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
