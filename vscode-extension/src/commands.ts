// The extension's commands. Each is declared once in package.json and placed there through menus;
// the ones that act on a tree item take the item (or a session file path) as their argument.
import * as vscode from "vscode";
import { getBranch, lastPromptOf } from "@pi-pruner/core";
import { documentUri, type DocumentRequest } from "./documents.ts";
import type { SessionStore } from "./session-store.ts";
import type { ProtectedPathsEditor, Prompter } from "./settings-edit.ts";
import { formatDateTime, oneLine } from "./text.ts";
import type { ProtectedNode } from "./trees/protected-tree.ts";
import type { SessionNode } from "./trees/session-nodes.ts";
import { CHOOSE_BRANCH_COMMAND, OPEN_DOCUMENT_COMMAND, REVIEW_CHAIN_COMMAND, sessionLabel } from "./trees/sessions-tree.ts";

export interface CommandContext {
  store: SessionStore;
  editor: ProtectedPathsEditor;
  prompter: () => Prompter;
  selectedSession: () => string | undefined;
  refresh: () => Promise<void>;
}

/** A command argument naming a session: a tree node or a file path. */
export function sessionPathOf(arg: unknown): string | undefined {
  if (typeof arg === "string") return arg;
  if (arg && typeof arg === "object" && typeof (arg as SessionNode).path === "string") return (arg as SessionNode).path;
  return undefined;
}

/** The selected session, else the one the person picks. */
export async function pickSession(context: Pick<CommandContext, "store" | "prompter" | "selectedSession">, title: string): Promise<string | undefined> {
  const selected = context.selectedSession();
  if (selected) return selected;
  const sessions = context.store.sessions();
  if (sessions.length === 0) {
    context.prompter().info("Pi Pruner: no sessions to show.");
    return undefined;
  }
  const picked = await context.prompter().pick(
    sessions.map((s) => ({ label: sessionLabel(s), description: formatDateTime(s.file.mtimeMs), path: s.file.path })),
    { title },
  );
  return picked?.path;
}

export function openDocument(request: DocumentRequest, title: string): Thenable<vscode.TextEditor> {
  return vscode.window.showTextDocument(documentUri(request, title), { preview: true });
}

export function registerCommands(context: CommandContext): vscode.Disposable[] {
  const { store, editor } = context;
  return [
    vscode.commands.registerCommand("piPruner.refresh", () => context.refresh()),

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

    vscode.commands.registerCommand("piPruner.openSessionFile", (arg: unknown) => {
      const path = sessionPathOf(arg);
      // Only a session file the store lists: the argument may come from a command link elsewhere.
      if (path && store.get(path)) return vscode.window.showTextDocument(vscode.Uri.file(path), { preview: true });
      return undefined;
    }),

    vscode.commands.registerCommand("piPruner.addToProtectedPaths", (uri?: vscode.Uri) => editor.add(uri instanceof vscode.Uri ? uri : undefined)),

    vscode.commands.registerCommand("piPruner.removeFromProtectedPaths", (node?: ProtectedNode) => editor.remove(node && node.kind === "pattern" ? node : undefined)),

    vscode.commands.registerCommand("piPruner.showAllSessions", () => vscode.workspace.getConfiguration("piPruner").update("showAllSessions", true, vscode.ConfigurationTarget.Global)),
    vscode.commands.registerCommand("piPruner.showWorkspaceSessions", () => vscode.workspace.getConfiguration("piPruner").update("showAllSessions", false, vscode.ConfigurationTarget.Global)),
  ];
}
