// Pi Pruner for VS Code: wires the session store, the two tree views, the documents, the file
// decorations, the status-bar item, the watchers and the commands together. No logic lives here.
import { performance } from "node:perf_hooks";
import * as vscode from "vscode";
import { registerCommands } from "./commands.ts";
import { PrunerDecorations } from "./decorations.ts";
import { SCHEME } from "./documents/document-uri.ts";
import { PrunerDocuments } from "./documents/documents.ts";
import { registerExportCommands, saveDialog, type SaveTarget } from "./documents/export.ts";
import { registerRequestCommands } from "./documents/request-commands.ts";
import { registerFileSessionCommands } from "./file-sessions.ts";
import type { Prompter } from "./prompter.ts";
import { registerSearchCommands } from "./search/search-commands.ts";
import { SearchTreeProvider, type SearchNode } from "./search/search-tree.ts";
import { SessionSearch } from "./search/session-search.ts";
import { movedSessionsMessage, sessionMove } from "./moved-sessions.ts";
import { BranchMemory, SessionSelection, sessionCwd } from "./selection.ts";
import { CopiedPatterns } from "./settings/copied-patterns.ts";
import { affectsEditorSetting, editorSetting } from "./settings/editor-settings.ts";
import { ProtectedPathsEditor } from "./settings/protected-paths-editor.ts";
import { PruneSettings, resolveAgentDir } from "./settings/prune-settings.ts";
import { SettingsPickup } from "./settings/settings-pickup.ts";
import { ReclaimStatus } from "./status-bar.ts";
import { SessionStore } from "./store/session-store.ts";
import { registerTimelineCommand, TimelinePanels } from "./timeline/timeline-panel.ts";
import { ProtectedTreeProvider } from "./trees/protected-tree.ts";
import type { SessionNode } from "./trees/session-nodes.ts";
import { SessionsTreeProvider } from "./trees/sessions-tree.ts";
import { SessionWatcher } from "./watch/session-watcher.ts";
import { WorkspaceFiles } from "./watch/workspace-files.ts";

/** What activate() returns: the extension's parts, for its integration tests. */
export interface PiPrunerApi {
  store: SessionStore;
  settings: PruneSettings;
  sessionsTree: SessionsTreeProvider;
  protectedTree: ProtectedTreeProvider;
  decorations: PrunerDecorations;
  documents: PrunerDocuments;
  status: ReclaimStatus;
  /** Whether a running session took up the last settings change the editor made. */
  settingsPickup: SettingsPickup;
  sessionsView: vscode.TreeView<SessionNode>;
  search: SessionSearch;
  searchTree: SearchTreeProvider;
  timelines: TimelinePanels;
  /** Replaces the quick picks and messages of the commands (tests answer them). */
  setPrompter(prompter: Prompter | undefined): void;
  /** Replaces the export's save dialog (tests answer it). */
  setSaveTarget(target: SaveTarget | undefined): void;
  /** Chooses the session whose reclaim the status bar shows and whose pruned reads are marked. */
  selectSession(path: string | undefined): Promise<void>;
  selectedSession(): string | undefined;
  /** Resolves once no listing, parse or append is in flight. */
  settled(): Promise<void>;
  /** performance.now() when activate() began. */
  activatedAt: number;
}

/** How long the full parses wait at most for the Sessions view to ask for the rows it repaints. */
const ROWS_SHOWN_WAIT_MS = 300;

export function activate(context: vscode.ExtensionContext): PiPrunerApi {
  const activatedAt = performance.now();
  const settings = new PruneSettings(resolveAgentDir(editorSetting("agentDir")));
  const store = new SessionStore(settings);
  const selection = new SessionSelection(store, context.workspaceState);
  const branches = new BranchMemory(store, context.workspaceState);
  const watcher = new SessionWatcher(store, settings);
  const files = new WorkspaceFiles();
  const sessionsTree = new SessionsTreeProvider(store);
  const copiedPatterns = new CopiedPatterns(context.globalState);
  const protectedTree = new ProtectedTreeProvider(settings, files, copiedPatterns);
  const decorations = new PrunerDecorations(settings);
  const documents = new PrunerDocuments(store);
  const timelines = new TimelinePanels(store, context.extensionUri);
  const status = new ReclaimStatus();
  const settingsPickup = new SettingsPickup(store);
  const editor = new ProtectedPathsEditor(settings, copiedPatterns, settingsPickup);
  const defaultPrompter = editor.prompter;
  let saveTarget = saveDialog;
  const search = new SessionSearch(store);
  const searchTree = new SearchTreeProvider(store, search);
  const searchView = vscode.window.createTreeView<SearchNode>("piPruner.search", { treeDataProvider: searchTree, showCollapseAll: true });
  const sessionsView = vscode.window.createTreeView("piPruner.sessions", { treeDataProvider: sessionsTree, showCollapseAll: true });
  // The rows' estimated reclaim is drawn before the full parses keep the host busy (a hidden view draws nothing: no wait).
  store.rowsShown = () => (sessionsView.visible ? sessionsTree.rowsAsked(ROWS_SHOWN_WAIT_MS) : Promise.resolve());
  const protectedView = vscode.window.createTreeView("piPruner.protected", { treeDataProvider: protectedTree, showCollapseAll: true });
  const updateContext = () => void vscode.commands.executeCommand("setContext", "piPruner.state", store.state);
  // Sessions recorded in another folder: the view says so, and how their files are matched.
  const updateMovedMessage = () => {
    const message = movedSessionsMessage(store.sessions());
    if (sessionsView.message !== message) sessionsView.message = message;
  };

  context.subscriptions.push(
    store,
    selection,
    branches,
    watcher,
    files,
    copiedPatterns,
    sessionsTree,
    protectedTree,
    decorations,
    documents,
    status,
    settingsPickup,
    sessionsView,
    protectedView,
    settings,
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, documents),
    vscode.window.registerFileDecorationProvider(decorations),
    store.onDidChangeList(updateContext),
    store.onDidChangeList(updateMovedMessage),
    store.onDidChangeSession(updateMovedMessage),
    selection.onDidChange((state) => {
      status.update(state);
      decorations.setSelectedSession(state?.view, sessionCwd(state), sessionMove(state));
    }),
    sessionsView.onDidChangeSelection((event) => {
      const node = event.selection[0];
      if (node) void selection.select(node.path);
    }),
    sessionsView.onDidExpandElement((event) => store.setInUse(event.element.path, true)),
    sessionsView.onDidCollapseElement((event) => {
      if (event.element.kind === "session" && event.element.path !== selection.path) store.setInUse(event.element.path, false);
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void watcher.rescope()),
    // A workspace's own piPruner.agentDir counts only once the workspace is trusted.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void watcher.rescope()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (affectsEditorSetting(event, "agentDir", "showAllSessions")) void watcher.rescope();
      if (affectsEditorSetting(event, "decorations.enabled")) decorations.setEnabled(editorSetting("decorations.enabled"));
      if (affectsEditorSetting(event, "protectedFiles.maxFilesPerPattern")) {
        protectedTree.maxFilesPerPattern = editorSetting("protectedFiles.maxFilesPerPattern");
        protectedTree.refresh();
      }
    }),
    ...registerCommands({
      store,
      editor,
      prompter: () => editor.prompter,
      refresh: async () => {
        settings.invalidate();
        await watcher.rescope();
      },
    }),
    ...registerRequestCommands({ store, prompter: () => editor.prompter, selectedSession: () => selection.path }),
    search,
    searchTree,
    searchView,
    ...registerSearchCommands(store, search),
    timelines,
    registerTimelineCommand(timelines, { store, prompter: () => editor.prompter, selectedSession: () => selection.path }),
    ...registerFileSessionCommands({ store, prompter: () => editor.prompter }),
    ...registerExportCommands({ store, prompter: () => editor.prompter, selectedSession: () => selection.path, saveTarget: () => saveTarget }),
  );

  updateContext();
  void watcher.rescope().then(() => selection.restore());

  return {
    store,
    settings,
    sessionsTree,
    protectedTree,
    decorations,
    documents,
    status,
    settingsPickup,
    sessionsView,
    timelines,
    search,
    searchTree,
    setPrompter: (prompter) => {
      editor.prompter = prompter ?? defaultPrompter;
    },
    setSaveTarget: (target) => {
      saveTarget = target ?? saveDialog;
    },
    selectSession: (path) => selection.select(path),
    selectedSession: () => selection.path,
    settled: () => store.settled(),
    activatedAt,
  };
}

export function deactivate(): void {}
