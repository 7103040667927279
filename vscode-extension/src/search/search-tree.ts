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

/** The query, whether the status row shows, and the hits as their rows show them, in order. */
function shownKey(results: SearchResults): string {
  const rows = results.hits.map((hit) => `${hit.file}\0${hit.partId}\0${hit.snippet.text}\0${hit.snippet.highlights.join(",")}`);
  return `${results.query}\n${results.scanning}\n${rows.join("\n")}`;
}

export function hitLabel(hit: SearchHit): string {
  return hit.toolName && hit.kind !== "prompt" && hit.kind !== "reply" ? `${KIND_LABEL[hit.kind]} ${hit.toolName}` : KIND_LABEL[hit.kind];
}

export class SearchTreeProvider implements vscode.TreeDataProvider<SearchNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<SearchNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private results: SearchResults | undefined;
  /** What the rows other than the status row show, to repaint only the status row when only it changed. */
  private shown = "";
  /** The status row is this one object, so it can be repainted alone. */
  private readonly status: SearchNode & { kind: "status" } = { kind: "status", text: "" };
  /**
   * The listed sessions' row labels, worked out when a group is drawn after the listing or a
   * session changed: telling many alike sessions apart takes long, and results change often.
   */
  private labels: Map<string, string> | undefined;
  private readonly subscriptions: vscode.Disposable[];
  private readonly store: SessionStore;

  constructor(store: SessionStore, search: SessionSearch) {
    this.store = store;
    const forgetLabels = () => (this.labels = undefined);
    this.subscriptions = [
      search.onDidChange((results) => {
        this.results = results;
        // While a scan runs the best hits often stay the same: then only the count of sessions read changes.
        const shown = shownKey(results);
        const statusOnly = shown === this.shown && results.scanning && results.hits.length > 0;
        this.shown = shown;
        this.changed.fire(statusOnly ? this.status : undefined);
      }),
      store.onDidChangeList(forgetLabels),
      store.onDidChangeSession(forgetLabels),
    ];
  }

  getTreeItem(node: SearchNode): vscode.TreeItem {
    if (node.kind === "status") {
      if (node === this.status) node.text = this.statusText();
      const item = new vscode.TreeItem(node.text);
      item.iconPath = new vscode.ThemeIcon("info");
      return item;
    }
    if (node.kind === "session") {
      const state = this.store.get(node.file);
      this.labels ??= sessionRowLabels(this.store.sessions());
      const item = new vscode.TreeItem(this.labels.get(node.file) ?? (state ? sessionLabel(state) : node.file), vscode.TreeItemCollapsibleState.Expanded);
      item.description = `${node.hits.length} hit${node.hits.length === 1 ? "" : "s"}`;
      item.iconPath = new vscode.ThemeIcon("comment-discussion");
      item.contextValue = "searchSession";
      return item;
    }
    const { hit } = node;
    // The line is the label, so the matched words can be highlighted; what was matched follows.
    const item = new vscode.TreeItem({ label: hit.snippet.text, highlights: hit.snippet.highlights });
    item.description = hitLabel(hit);
    item.iconPath = new vscode.ThemeIcon(KIND_ICON[hit.kind]);
    item.command = { command: OPEN_SEARCH_RESULT_COMMAND, title: "Open", arguments: [hit] };
    item.contextValue = "searchHit";
    return item;
  }

  /** Tooltips are made when a row is hovered, not for every row each time results change. */
  resolveTreeItem(item: vscode.TreeItem, node: SearchNode): vscode.TreeItem {
    if (node.kind === "session") item.tooltip = safeTooltip(node.file);
    else if (node.kind === "hit") item.tooltip = safeTooltip(node.hit.callKey ? "Opens the call's document." : "Opens the model view at this message.", { code: node.hit.preview });
    return item;
  }

  getChildren(node?: SearchNode): SearchNode[] {
    if (node?.kind === "session") return node.hits.map((hit) => ({ kind: "hit", hit }));
    if (node) return [];
    const results = this.results;
    if (!results || !results.query) return [];
    const groups: SearchNode[] = groupBySession(results.hits).map((g) => ({ kind: "session", ...g }));
    if (groups.length === 0) return [this.status];
    return results.scanning ? [this.status, ...groups] : groups;
  }

  private statusText(): string {
    const results = this.results;
    if (!results) return "";
    const scanned = results.scanning ? `, ${results.indexed} of ${results.listed} sessions read so far` : "";
    return results.hits.length === 0 ? `No results for "${oneLine(results.query, 40)}"${scanned}` : `Searching…${scanned}`;
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.changed.dispose();
  }
}
