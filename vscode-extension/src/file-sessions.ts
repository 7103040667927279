// Explorer → "Pi Pruner: Sessions That Read This File": every call of the listed sessions that
// names the file (a read, edit, write, grep or a bash command mentioning it), grouped by session in
// a quick pick with each call's state; choosing one opens the call's document. Core finds the calls.
import * as vscode from "vscode";
import { callsNamingFile, getBranch, rewoundEntries, type FileCall, type FileQuery } from "@pi-pruner/core";
import { SESSIONS_THAT_READ_FILE_COMMAND } from "./command-ids.ts";
import { openDocument } from "./documents/document-uri.ts";
import { sessionMove, toRecordedFolder } from "./moved-sessions.ts";
import type { Prompter } from "./prompter.ts";
import { callTitle, sessionLabel } from "./session-names.ts";
import type { SessionState, SessionStore } from "./store/session-store.ts";
import { formatDateTime, oneLine } from "./text.ts";

export interface FileSessionsContext {
  store: SessionStore;
  prompter: () => Prompter;
}

/** A session that named the file, with its calls that did. */
interface FileSession {
  state: SessionState;
  calls: FileCall[];
}

interface FileCallItem extends vscode.QuickPickItem {
  file?: string;
  key?: string;
}

/** The file as core matches it: its absolute path, and its path inside the workspace folder holding it. */
function fileQueryOf(uri: vscode.Uri): FileQuery {
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  return folder ? { absolute: uri.fsPath, relative: vscode.workspace.asRelativePath(uri, false) } : { absolute: uri.fsPath };
}

/** Reads every listed session (newest first) and keeps those with calls naming the file. */
async function sessionsNamingFile(store: SessionStore, file: FileQuery, token?: vscode.CancellationToken, progress?: (done: number, total: number) => void): Promise<FileSession[]> {
  const sessions = store.sessions();
  const found: FileSession[] = [];
  for (const [i, listed] of sessions.entries()) {
    if (token?.isCancellationRequested) break;
    const state = await store.load(listed.file.path);
    progress?.(i + 1, sessions.length);
    if (!state?.view || !state.data) continue;
    // The rewinds' spans are read from the branch only where one hides something now.
    const hides = state.view.markers.some((m) => m.kind === "rewind" && m.state === "active" && m.hiddenMessages > 0);
    const rewound = hides ? rewoundEntries(getBranch(state.data, state.view.leafId).entries) : undefined;
    // A session recorded in another folder named the file by its path inside that folder.
    const move = sessionMove(state);
    const calls = callsNamingFile(state.view, move ? { ...file, absolute: toRecordedFolder(file.absolute, move) } : file, rewound);
    if (calls.length > 0) found.push({ state, calls });
  }
  return found;
}

/** The quick pick's rows: a separator per session, then a row per call. */
function fileCallItems(found: readonly FileSession[]): FileCallItem[] {
  const items: FileCallItem[] = [];
  for (const { state, calls } of found) {
    items.push({ label: `${sessionLabel(state)} · ${formatDateTime(state.file.mtimeMs)}`, kind: vscode.QuickPickItemKind.Separator });
    for (const { call, stateText, match } of calls) {
      items.push({
        label: `${call.toolName}${call.shortRef ? ` ${call.shortRef}` : ""}: ${oneLine(match === "command" ? call.command : call.path, 70)}`,
        description: stateText,
        ...(call.resultTimestamp !== undefined ? { detail: formatDateTime(call.resultTimestamp, { seconds: true }) } : {}),
        file: state.file.path,
        key: call.occurrenceKey,
      });
    }
  }
  return items;
}

export function registerFileSessionCommands(context: FileSessionsContext): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand(SESSIONS_THAT_READ_FILE_COMMAND, async (arg?: unknown) => {
      const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
      if (uri?.scheme !== "file") {
        context.prompter().info("Pi Pruner: choose a file in the Explorer to see the sessions that read it.");
        return;
      }
      const query = fileQueryOf(uri);
      const found = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: "Pi Pruner: reading the sessions", cancellable: true },
        (progress, token) => {
          let reported = 0;
          return sessionsNamingFile(context.store, query, token, (done, total) => {
            const now = Math.floor((done / total) * 100);
            progress.report({ increment: now - reported, message: `${done} of ${total}` });
            reported = now;
          });
        },
      );
      const name = vscode.workspace.asRelativePath(uri, false);
      if (found.length === 0) {
        context.prompter().info(`Pi Pruner: no listed session names ${name}.`);
        return;
      }
      const count = found.reduce((sum, s) => sum + s.calls.length, 0);
      const picked = await context.prompter().pick(fileCallItems(found), {
        title: `${count} call${count === 1 ? "" : "s"} in ${found.length} session${found.length === 1 ? "" : "s"} name ${name}`,
        matchOnDescription: true,
      });
      if (!picked?.file || !picked.key) return;
      const call = found.find((s) => s.state.file.path === picked.file)?.calls.find((c) => c.call.occurrenceKey === picked.key)?.call;
      if (call) await openDocument({ kind: "call", file: picked.file, key: picked.key }, callTitle(call));
    }),
  ];
}
