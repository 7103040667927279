// The commands of the Sessions and Protected Files views: refresh, open a document or the session
// file, review a chain, choose a branch, add or remove a protected pattern, all or the workspace's
// sessions. Each is declared once in package.json and placed there through menus; the ones that act
// on a tree item take the item (or a session file path) as their argument. The model view's,
// search's, timeline's, export's and the explorer's commands are registered next to what they show.
import * as vscode from "vscode";
import { getBranch, lastPromptOf } from "@pi-pruner/core";
import {
  ADD_TO_PROTECTED_PATHS_COMMAND,
  CHOOSE_BRANCH_COMMAND,
  OPEN_DOCUMENT_COMMAND,
  OPEN_SESSION_FILE_COMMAND,
  REFRESH_COMMAND,
  REMOVE_FROM_PROTECTED_PATHS_COMMAND,
  REVIEW_CHAIN_COMMAND,
  SHOW_ALL_SESSIONS_COMMAND,
  SHOW_WORKSPACE_SESSIONS_COMMAND,
} from "./command-ids.ts";
import { documentUri, openDocument, type DocumentRequest } from "./documents/document-uri.ts";
import type { Prompter } from "./prompter.ts";
import { sessionPathOf } from "./selection.ts";
import type { ProtectedPathsEditor } from "./settings/protected-paths-editor.ts";
import type { SessionStore } from "./store/session-store.ts";
import { oneLine } from "./text.ts";
import type { ProtectedNode } from "./trees/protected-tree.ts";
import type { SessionNode } from "./trees/session-nodes.ts";

export interface CommandContext {
  store: SessionStore;
  editor: ProtectedPathsEditor;
  prompter: () => Prompter;
  refresh: () => Promise<void>;
}

export function registerCommands(context: CommandContext): vscode.Disposable[] {
  const { store, editor } = context;
  return [
    vscode.commands.registerCommand(REFRESH_COMMAND, () => context.refresh()),

    vscode.commands.registerCommand(OPEN_DOCUMENT_COMMAND, (request: DocumentRequest, title: string) => openDocument(request, title ?? request.kind)),

    vscode.commands.registerCommand(REVIEW_CHAIN_COMMAND, async (arg: unknown, entryId?: string) => {
      const path = sessionPathOf(arg);
      let id = entryId;
      if (arg && typeof arg === "object" && (arg as SessionNode).kind === "chain") id = (arg as Extract<SessionNode, { kind: "chain" }>).entryId;
      if (!path || !id) return;
      const state = await store.load(path);
      const chain = state?.view?.chains.find((c) => c.entryId === id);
      const blockId = chain?.blockId ?? id;
      const left = documentUri({ kind: "chain", file: path, entryId: id, side: "original" }, `${blockId} original`);
      const right = documentUri({ kind: "chain", file: path, entryId: id, side: "compressed" }, `${blockId} sent`);
      await vscode.commands.executeCommand("vscode.diff", left, right, `Chain ${blockId}: original ↔ what the model is sent`, { preview: true });
    }),

    vscode.commands.registerCommand(CHOOSE_BRANCH_COMMAND, async (arg: unknown) => {
      const path = sessionPathOf(arg);
      if (!path) return;
      const state = await store.load(path);
      if (!state?.data) return;
      const data = state.data;
      const leaves = store.leavesOf(path);
      const latest = leaves[leaves.length - 1];
      const items = leaves
        .slice()
        .reverse()
        .map((leaf) => {
          const branch = getBranch(data, leaf).entries;
          const lastPrompt = lastPromptOf(data, leaf);
          return {
            label: oneLine(lastPrompt || `(no prompt) ${leaf}`, 80),
            description: `leaf ${oneLine(leaf, 24)} · ${branch.length} entries${leaf === latest ? " · latest" : ""}${leaf === state.view?.leafId ? " · shown" : ""}`,
            leaf,
          };
        });
      const picked = await context.prompter().pick(items, { title: "Show which branch of this session?" });
      if (!picked) return;
      await store.setLeaf(path, picked.leaf === latest ? undefined : picked.leaf);
    }),

    vscode.commands.registerCommand(OPEN_SESSION_FILE_COMMAND, (arg: unknown) => {
      const path = sessionPathOf(arg);
      // Only a session file the store lists: the argument may come from a command link elsewhere.
      if (path && store.get(path)) return vscode.window.showTextDocument(vscode.Uri.file(path), { preview: true });
      return undefined;
    }),

    vscode.commands.registerCommand(ADD_TO_PROTECTED_PATHS_COMMAND, (uri?: vscode.Uri) => editor.add(uri instanceof vscode.Uri ? uri : undefined)),

    vscode.commands.registerCommand(REMOVE_FROM_PROTECTED_PATHS_COMMAND, (node?: ProtectedNode) => editor.remove(node && node.kind === "pattern" ? node : undefined)),

    vscode.commands.registerCommand(SHOW_ALL_SESSIONS_COMMAND, () => vscode.workspace.getConfiguration("piPruner").update("showAllSessions", true, vscode.ConfigurationTarget.Global)),
    vscode.commands.registerCommand(SHOW_WORKSPACE_SESSIONS_COMMAND, () => vscode.workspace.getConfiguration("piPruner").update("showAllSessions", false, vscode.ConfigurationTarget.Global)),
  ];
}
