// Which sessions the editor follows and the watches that keep them current: the scope comes from
// the settings (agent dir, all sessions or the open folders') and the workspace; the watches are
// made again whenever what there is to watch changes (a first session makes its folder, a
// project its `.pi/`, Pi its agent dir).
import * as vscode from "vscode";
import { editorSetting } from "../settings/editor-settings.ts";
import { resolveAgentDir, type AgentDir, type PruneSettings } from "../settings/prune-settings.ts";
import type { SessionStore } from "../store/session-store.ts";
import { watchPiFiles, watchState } from "./pi-files.ts";

interface Watched {
  agentDir: AgentDir;
  folders: vscode.WorkspaceFolder[];
  all: boolean;
  /** watchState's key when the watches were made. */
  key: string;
}

export class SessionWatcher implements vscode.Disposable {
  private readonly store: SessionStore;
  private readonly settings: PruneSettings;
  private watching: vscode.Disposable | undefined;
  private watched: Watched | undefined;

  constructor(store: SessionStore, settings: PruneSettings) {
    this.store = store;
    this.settings = settings;
  }

  /** Reads the scope from the settings and the workspace again, watches it and lists its sessions. */
  async rescope(): Promise<void> {
    const agentDir = resolveAgentDir(editorSetting("agentDir"));
    this.settings.setAgentDir(agentDir);
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file");
    const all = editorSetting("showAllSessions");
    this.watch(agentDir, folders, all);
    await this.store.setScope({ agentDir, folders: folders.map((f) => ({ name: f.name, path: f.uri.fsPath })), all });
  }

  private watch(agentDir: AgentDir, folders: vscode.WorkspaceFolder[], all: boolean): void {
    const now = watchState(agentDir.path, folders, all);
    this.watched = { agentDir, folders, all, key: now.key };
    this.watching?.dispose();
    this.watching = watchPiFiles(
      { agentDir: agentDir.path, agentDirExists: agentDir.exists, folders, sessionDirs: now.sessionDirs },
      {
        sessionChanged: (path) => void this.store.fileChanged(path),
        sessionsAddedOrRemoved: () => {
          void this.store.refresh();
          this.rewatch();
        },
        settingsChanged: () => this.settings.invalidate(),
        agentDirAppeared: () => void this.rescope(),
        layoutChanged: () => this.rewatch(),
      },
    );
  }

  /** Makes the watches again if what there is to watch changed since they were made. */
  private rewatch(): void {
    const watched = this.watched;
    if (!watched) return;
    if (watchState(watched.agentDir.path, watched.folders, watched.all).key !== watched.key) this.watch(watched.agentDir, watched.folders, watched.all);
  }

  dispose(): void {
    this.watching?.dispose();
  }
}
