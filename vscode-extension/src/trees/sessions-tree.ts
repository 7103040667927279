// The Sessions view: the workspace's Pi sessions, newest first; under each, what the pruner did.
// The provider hands out the nodes (session-nodes.ts) and keeps each one's parent for reveal; what
// an item shows is built in session-items.ts.
import * as vscode from "vscode";
import type { SessionStore } from "../store/session-store.ts";
import { writerChildren } from "./diagnostic-nodes.ts";
import { checkSpills } from "./diagnostic-items.ts";
import { sessionTreeItem, type SessionItemContext } from "./session-items.ts";
import { sessionRowLabels } from "../session-names.ts";
import { chainChildren, groupChildren, sessionChildren, summaryChildren, type SessionNode } from "./session-nodes.ts";

export class SessionsTreeProvider implements vscode.TreeDataProvider<SessionNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<SessionNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  /** Nodes handed out, by id: the same object for the same id, and each one's parent. */
  private readonly nodes = new Map<string, SessionNode>();
  private readonly parents = new Map<string, SessionNode | undefined>();
  private readonly subscriptions: vscode.Disposable[] = [];
  /** The sessions' row labels, told apart; worked out again when the list or a name may have changed. */
  private labels: Map<string, string> | undefined;
  /** Waiting for VS Code to ask for a session row's item (rowsAsked). */
  private waitingForRows: (() => void)[] = [];

  private readonly store: SessionStore;
  private readonly items: SessionItemContext = {
    leavesOf: (path) => this.store.leavesOf(path),
    labelOf: (path) => this.rowLabels().get(path),
  };

  constructor(store: SessionStore) {
    this.store = store;
    this.subscriptions.push(
      store.onDidChangeList(() => {
        this.labels = undefined;
        this.changed.fire(undefined);
      }),
      store.onDidChangeSession((path) => {
        const before = this.labels;
        this.labels = undefined;
        // A session's name can arrive with its parse (a `session_info` past the file's head): the rows it resembles repaint too.
        if (before && !sameMap(before, this.rowLabels())) return this.changed.fire(undefined);
        const node = this.nodes.get(path);
        if (node) this.changed.fire(node);
      }),
    );
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  private rowLabels(): Map<string, string> {
    this.labels ??= sessionRowLabels(this.store.sessions());
    return this.labels;
  }

  private remember<T extends SessionNode>(node: T, parent: SessionNode | undefined): T {
    const known = this.nodes.get(node.id);
    if (known && known.kind === node.kind) {
      this.parents.set(node.id, parent);
      return known as T;
    }
    this.nodes.set(node.id, node);
    this.parents.set(node.id, parent);
    return node;
  }

  /** The node for a session file (for reveal and for commands given a path). */
  sessionNode(path: string): SessionNode {
    return this.remember({ kind: "session", id: path, path }, undefined);
  }

  getParent(node: SessionNode): SessionNode | undefined {
    return this.parents.get(node.id);
  }

  async getChildren(node?: SessionNode): Promise<SessionNode[]> {
    if (!node) {
      return this.store.sessions().map((s) => this.sessionNode(s.file.path));
    }
    const state = await this.store.load(node.path);
    if (!state) return [];
    if (!state.view) return [this.remember({ kind: "message", id: `${node.id}#error`, path: node.path, text: state.error ?? "could not be read" }, node)];
    const view = state.view;
    let children: SessionNode[];
    switch (node.kind) {
      case "session":
        children = sessionChildren(node.path, view, this.store.leavesOf(node.path).length);
        break;
      case "group":
        children = groupChildren(node, view);
        break;
      case "summary":
        children = summaryChildren(node, view);
        break;
      case "chain":
        children = chainChildren(node, view);
        break;
      case "writer":
        children = writerChildren(node, view);
        break;
      default:
        children = [];
    }
    // The calls about to be drawn: whether their spill files are still there is looked up once per view.
    if (node.kind !== "session") await checkSpills(view, node.path, state.head.id ?? state.data?.header?.id, state.data);
    return children.map((child) => this.remember(child, node));
  }

  getTreeItem(node: SessionNode): vscode.TreeItem {
    if (node.kind === "session" && this.waitingForRows.length > 0) {
      for (const resolve of this.waitingForRows.splice(0)) resolve();
    }
    return sessionTreeItem(node, this.store.get(node.path), this.items);
  }

  /**
   * Resolves once VS Code has asked for a session row's item (the rows it repaints are then on their
   * way to the screen, once this turn of the event loop hands them over), or after `timeoutMs`.
   */
  rowsAsked(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      function done() {
        clearTimeout(timer);
        // The items go out when the provider's answer is sent, after this turn.
        setTimeout(resolve, 0);
      }
      this.waitingForRows.push(done);
    });
  }

  dispose(): void {
    for (const resolve of this.waitingForRows.splice(0)) resolve();
    for (const s of this.subscriptions) s.dispose();
    this.changed.dispose();
  }
}

function sameMap(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) if (b.get(key) !== value) return false;
  return true;
}
