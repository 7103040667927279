// The search results: one item per session with hits, best session first, titled as its row in the
// Sessions view (told apart from sessions of the same name), and under it the hits: each the line
// around the matched words with them highlighted, opening the call's document or the model view.
import * as vscode from "vscode";
import { OPEN_SEARCH_RESULT_COMMAND } from "../command-ids.ts";
import { sessionLabel } from "../session-names.ts";
import type { SessionStore } from "../store/session-store.ts";
import { oneLine, safeTooltip } from "../text.ts";
import { sessionRowLabels } from "../session-names.ts";
import type { SearchHit } from "./search-index.ts";
import type { SearchResults, SessionSearch } from "./session-search.ts";

export type SearchNode = { kind: "session"; file: string; hits: SearchHit[] } | { kind: "hit"; hit: SearchHit } | { kind: "status"; text: string };

const KIND_LABEL: Record<SearchHit["kind"], string> = { prompt: "prompt", reply: "reply", arguments: "call", output: "output" };
const KIND_ICON: Record<SearchHit["kind"], string> = { prompt: "account", reply: "comment", arguments: "tools", output: "output" };

/** Hits grouped by session, the sessions in the order of their best hit. */
function groupBySession(hits: readonly SearchHit[]): { file: string; hits: SearchHit[] }[] {
  const groups = new Map<string, SearchHit[]>();
  for (const hit of hits) {
    const group = groups.get(hit.file);
    if (group) group.push(hit);
    else groups.set(hit.file, [hit]);
  }
  return [...groups].map(([file, group]) => ({ file, hits: group }));
}

export function hitLabel(hit: SearchHit): string {
  return hit.toolName && hit.kind !== "prompt" && hit.kind !== "reply" ? `${KIND_LABEL[hit.kind]} ${hit.toolName}` : KIND_LABEL[hit.kind];
}

export class SearchTreeProvider implements vscode.TreeDataProvider<SearchNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<SearchNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private results: SearchResults | undefined;
  /** The listed sessions' row labels, worked out again with each new set of results. */
  private labels = new Map<string, string>();
  private readonly subscription: vscode.Disposable;
  private readonly store: SessionStore;

  constructor(store: SessionStore, search: SessionSearch) {
    this.store = store;
    this.subscription = search.onDidChange((results) => {
      this.results = results;
      this.labels = sessionRowLabels(store.sessions());
      this.changed.fire(undefined);
    });
  }

  getTreeItem(node: SearchNode): vscode.TreeItem {
    if (node.kind === "status") {
      const item = new vscode.TreeItem(node.text);
      item.iconPath = new vscode.ThemeIcon("info");
      return item;
    }
    if (node.kind === "session") {
      const state = this.store.get(node.file);
      const item = new vscode.TreeItem(this.labels.get(node.file) ?? (state ? sessionLabel(state) : node.file), vscode.TreeItemCollapsibleState.Expanded);
      item.description = `${node.hits.length} hit${node.hits.length === 1 ? "" : "s"}`;
      item.iconPath = new vscode.ThemeIcon("comment-discussion");
      item.contextValue = "searchSession";
      item.tooltip = safeTooltip(node.file);
      return item;
    }
    const { hit } = node;
    // The line is the label, so the matched words can be highlighted; what was matched follows.
    const item = new vscode.TreeItem({ label: hit.snippet.text, highlights: hit.snippet.highlights });
    item.description = hitLabel(hit);
    item.iconPath = new vscode.ThemeIcon(KIND_ICON[hit.kind]);
    item.tooltip = safeTooltip(hit.callKey ? "Opens the call's document." : "Opens the model view at this message.", { code: hit.preview });
    item.command = { command: OPEN_SEARCH_RESULT_COMMAND, title: "Open", arguments: [hit] };
    item.contextValue = "searchHit";
    return item;
  }

  getChildren(node?: SearchNode): SearchNode[] {
    if (node?.kind === "session") return node.hits.map((hit) => ({ kind: "hit", hit }));
    if (node) return [];
    const results = this.results;
    if (!results || !results.query) return [];
    const groups: SearchNode[] = groupBySession(results.hits).map((g) => ({ kind: "session", ...g }));
    const scanned = results.scanning ? `, ${results.indexed} of ${results.listed} sessions read so far` : "";
    if (groups.length === 0) return [{ kind: "status", text: `No results for "${oneLine(results.query, 40)}"${scanned}` }];
    return results.scanning ? [{ kind: "status", text: `Searching…${scanned}` }, ...groups] : groups;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
