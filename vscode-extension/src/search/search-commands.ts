// The search commands: Search Sessions… (the Sessions view's title button and the palette), Clear
// Search, and opening a result.
import * as vscode from "vscode";
import { CLEAR_SEARCH_COMMAND, FOCUS_SEARCH_VIEW_COMMAND, OPEN_SEARCH_RESULT_COMMAND, SEARCH_COMMAND } from "../command-ids.ts";
import { openDocument } from "../documents/document-uri.ts";
import { openModelView } from "../documents/request-commands.ts";
import type { SessionStore } from "../store/session-store.ts";
import type { SearchHit } from "./search-index.ts";
import { hitLabel } from "./search-tree.ts";
import type { SessionSearch } from "./session-search.ts";
/** True while the results view has something to show. */
const SEARCH_ACTIVE = "piPruner.searchActive";

export function registerSearchCommands(store: SessionStore, search: SessionSearch): vscode.Disposable[] {
  let last = "";
  return [
    // A query given as the argument (tests, keybindings) skips the input box.
    vscode.commands.registerCommand(SEARCH_COMMAND, async (given?: unknown) => {
      const query =
        typeof given === "string"
          ? given
          : await vscode.window.showInputBox({ title: "Search Pi sessions", prompt: "Prompts, replies, tool arguments and outputs of the listed sessions", value: last, placeHolder: "words to find" });
      if (!query?.trim()) return;
      last = query;
      await vscode.commands.executeCommand("setContext", SEARCH_ACTIVE, true);
      void vscode.commands.executeCommand(FOCUS_SEARCH_VIEW_COMMAND);
      await search.search(query);
    }),
    vscode.commands.registerCommand(CLEAR_SEARCH_COMMAND, async () => {
      search.cancel();
      search.clear();
      await vscode.commands.executeCommand("setContext", SEARCH_ACTIVE, false);
    }),
    vscode.commands.registerCommand(OPEN_SEARCH_RESULT_COMMAND, (hit: SearchHit) => {
      if (hit.callKey) return openDocument({ kind: "call", file: hit.file, key: hit.callKey }, hitLabel(hit));
      return openModelView(store, hit.file, hit.request ?? "last");
    }),
  ];
}
