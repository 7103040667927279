// Pi Pruner for VS Code: wires the session store, the two tree views, the documents, the file
// decorations, the status-bar item, the watchers and the commands together. No logic lives here.
import { performance } from "node:perf_hooks";
import * as vscode from "vscode";
import { registerCommands } from "./commands.ts";
import { PrunerDecorations } from "./decorations.ts";
import { PrunerDocuments, SCHEME } from "./documents.ts";
import { PruneSettings, resolveAgentDir, type AgentDir } from "./prune-settings.ts";
import { SessionStore } from "./session-store.ts";
import { ProtectedPathsEditor, type Prompter } from "./settings-edit.ts";
import { ReclaimStatus } from "./status-bar.ts";
import { ProtectedTreeProvider } from "./trees/protected-tree.ts";
import type { SessionNode } from "./trees/session-nodes.ts";
import { SessionsTreeProvider, SHOW_MODEL_VIEW_COMMAND } from "./trees/sessions-tree.ts";
import { watchPiFiles, watchState } from "./watch.ts";
import { WorkspaceFiles } from "./workspace-files.ts";

const SELECTED_KEY = "piPruner.selectedSession";

/** What activate() returns: the extension's parts, for its integration tests. */
export interface PiPrunerApi {
  store: SessionStore;
  settings: PruneSettings;
  sessionsTree: SessionsTreeProvider;
  protectedTree: ProtectedTreeProvider;
  decorations: PrunerDecorations;
  documents: PrunerDocuments;
  status: ReclaimStatus;
  sessionsView: vscode.TreeView<SessionNode>;
  /** Replaces the quick picks and messages of the commands (tests answer them). */
  setPrompter(prompter: Prompter | undefined): void;
  /** Chooses the session whose reclaim the status bar shows and whose pruned reads are marked. */
  selectSession(path: string | undefined): Promise<void>;
  selectedSession(): string | undefined;
  /** Resolves once no listing, parse or append is in flight. */
  settled(): Promise<void>;
  /** performance.now() when activate() began. */
  activatedAt: number;
}

export function activate(context: vscode.ExtensionContext): PiPrunerApi {
  const activatedAt = performance.now();
  const config = () => vscode.workspace.getConfiguration("piPruner");
  const settings = new PruneSettings(resolveAgentDir(config().get<string>("agentDir")));
  const store = new SessionStore(settings);
  const files = new WorkspaceFiles();
  const sessionsTree = new SessionsTreeProvider(store);
  const protectedTree = new ProtectedTreeProvider(settings, files);
  const decorations = new PrunerDecorations(settings);
  const documents = new PrunerDocuments(store);
  const status = new ReclaimStatus(SHOW_MODEL_VIEW_COMMAND);
  const editor = new ProtectedPathsEditor(settings);
  const defaultPrompter = editor.prompter;
  const sessionsView = vscode.window.createTreeView("piPruner.sessions", { treeDataProvider: sessionsTree, showCollapseAll: true });
  const protectedView = vscode.window.createTreeView("piPruner.protected", { treeDataProvider: protectedTree, showCollapseAll: true });
  decorations.setEnabled(config().get<boolean>("decorations.enabled", true));
  protectedTree.maxFilesPerPattern = config().get<number>("protectedFiles.maxFilesPerPattern", 200);

  let selected: string | undefined = context.workspaceState.get<string>(SELECTED_KEY);
  const showSelected = () => {
    const state = selected ? store.get(selected) : undefined;
    status.update(state);
    decorations.setSelectedSession(state?.view, state?.view?.session.cwd ?? state?.head.cwd ?? state?.cwd);
  };
  const selectSession = async (path: string | undefined) => {
    if (selected && selected !== path) store.setInUse(selected, false);
    selected = path;
    await context.workspaceState.update(SELECTED_KEY, path);
    if (path) {
      store.setInUse(path, true);
      await store.load(path);
    }
    showSelected();
  };

  let watching: vscode.Disposable | undefined;
  let watchedKey = "";
  const watchFiles = (agentDir: AgentDir, folders: vscode.WorkspaceFolder[], all: boolean) => {
    const now = watchState(agentDir.path, folders, all);
    watchedKey = now.key;
    // A first session creates its folder (and maybe sessions/), a project its .pi/: watch those too.
    const rewatch = () => {
      if (watchState(agentDir.path, folders, all).key !== watchedKey) watchFiles(agentDir, folders, all);
    };
    watching?.dispose();
    watching = watchPiFiles(
      { agentDir: agentDir.path, agentDirExists: agentDir.exists, folders, sessionDirs: now.sessionDirs },
      {
        sessionChanged: (path) => void store.fileChanged(path),
        sessionsAddedOrRemoved: () => {
          void store.refresh();
          rewatch();
        },
        settingsChanged: () => settings.invalidate(),
        agentDirAppeared: () => void scope(),
        layoutChanged: () => rewatch(),
      },
    );
  };
  const scope = async () => {
    const agentDir = resolveAgentDir(config().get<string>("agentDir"));
    settings.setAgentDir(agentDir);
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file");
    const all = config().get<boolean>("showAllSessions", false);
    watchFiles(agentDir, folders, all);
    await store.setScope({ agentDir, folders: folders.map((f) => ({ name: f.name, path: f.uri.fsPath })), all });
  };
  const updateContext = () => void vscode.commands.executeCommand("setContext", "piPruner.state", store.state);

  context.subscriptions.push(
    store,
    files,
    sessionsTree,
    protectedTree,
    decorations,
    documents,
    status,
    sessionsView,
    protectedView,
    settings,
    new vscode.Disposable(() => watching?.dispose()),
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, documents),
    vscode.window.registerFileDecorationProvider(decorations),
    store.onDidChangeList(() => {
      updateContext();
      if (selected && !store.get(selected)) void selectSession(undefined);
      else showSelected();
    }),
    store.onDidChangeSession((path) => {
      if (path === selected) showSelected();
    }),
    sessionsView.onDidChangeSelection((event) => {
      const node = event.selection[0];
      if (node) void selectSession(node.path);
    }),
    sessionsView.onDidExpandElement((event) => store.setInUse(event.element.path, true)),
    sessionsView.onDidCollapseElement((event) => {
      if (event.element.kind === "session" && event.element.path !== selected) store.setInUse(event.element.path, false);
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void scope()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("piPruner.agentDir") || event.affectsConfiguration("piPruner.showAllSessions")) void scope();
      if (event.affectsConfiguration("piPruner.decorations.enabled")) decorations.setEnabled(config().get<boolean>("decorations.enabled", true));
      if (event.affectsConfiguration("piPruner.protectedFiles.maxFilesPerPattern")) {
        protectedTree.maxFilesPerPattern = config().get<number>("protectedFiles.maxFilesPerPattern", 200);
        protectedTree.refresh();
      }
    }),
    ...registerCommands({
      store,
      editor,
      prompter: () => editor.prompter,
      selectedSession: () => selected,
      refresh: async () => {
        settings.invalidate();
        await scope();
      },
    }),
  );

  updateContext();
  void scope().then(() => {
    if (selected && store.get(selected)) return selectSession(selected);
    return undefined;
  });

  return {
    store,
    settings,
    sessionsTree,
    protectedTree,
    decorations,
    documents,
    status,
    sessionsView,
    setPrompter: (prompter) => {
      editor.prompter = prompter ?? defaultPrompter;
    },
    selectSession,
    selectedSession: () => selected,
    settled: () => store.settled(),
    activatedAt,
  };
}

export function deactivate(): void {}
