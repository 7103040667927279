// The context timeline of a session in a webview panel, one panel per session. The panel works
// out the timeline in core, posts it to its page, and opens the model view of the request a
// person clicks. While Pi writes, the store reports the session changed and the panel posts the
// timeline again.
//
// No retainContextWhenHidden: a hidden panel's page is dropped and, shown again, asks for its data
// on load; the panel posts the timeline it last worked out, so nothing is computed again.
import * as vscode from "vscode";
import { BodyCache, branchPointsOf, buildTimeline, getBranch, type Timeline } from "@pi-pruner/core";
import { pickSession, sessionPathOf } from "../commands.ts";
import { openModelView } from "../request-commands.ts";
import type { Prompter } from "../settings-edit.ts";
import type { SessionStore } from "../session-store.ts";
import { sessionLabel } from "../trees/sessions-tree.ts";
import { isWebviewMessage, type TimelineMessage, type WebviewMessage } from "./protocol.ts";
import { timelineHtml } from "./timeline-html.ts";

export const SHOW_TIMELINE_COMMAND = "piPruner.showTimeline";
const VIEW_TYPE = "piPruner.timeline";
/** Pi writes in bursts: one update per burst. */
const UPDATE_DELAY_MS = 250;

interface OpenPanel {
  panel: vscode.WebviewPanel;
  message?: TimelineMessage;
  timer?: NodeJS.Timeout;
}

export class TimelinePanels implements vscode.Disposable {
  private readonly panels = new Map<string, OpenPanel>();
  private readonly bodies = new BodyCache();
  private readonly subscription: vscode.Disposable;
  private readonly store: SessionStore;
  private readonly extensionUri: vscode.Uri;

  constructor(store: SessionStore, extensionUri: vscode.Uri) {
    this.store = store;
    this.extensionUri = extensionUri;
    this.subscription = store.onDidChangeSession((path) => this.scheduleUpdate(path));
  }

  /** The timeline of the session's shown branch, its long bodies read back from disk. */
  async timelineOf(path: string): Promise<{ title: string; timeline: Timeline } | undefined> {
    const state = await this.store.load(path);
    if (!state?.data || !state.view) return undefined;
    const branch = getBranch(state.data, state.view.leafId);
    const entries = await this.bodies.withBodies(path, state.data.elided, branch.entries);
    const timeline = buildTimeline(entries, { config: this.store.configFor(state), branchPoints: branchPointsOf(state.data.entries) });
    return { title: `Context timeline · ${sessionLabel(state)}`, timeline };
  }

  /** Opens (or reveals) the timeline of a session. */
  async show(path: string): Promise<vscode.WebviewPanel | undefined> {
    const open = this.panels.get(path);
    if (open) {
      open.panel.reveal();
      return open.panel;
    }
    const data = await this.timelineOf(path);
    if (!data) return undefined;
    const root = vscode.Uri.joinPath(this.extensionUri, "dist", "timeline");
    const panel = vscode.window.createWebviewPanel(VIEW_TYPE, data.title, vscode.ViewColumn.Active, { enableScripts: true, localResourceRoots: [root] });
    const entry: OpenPanel = { panel, message: { type: "timeline", ...data } };
    this.panels.set(path, entry);
    const webview = panel.webview;
    webview.html = timelineHtml({
      cspSource: webview.cspSource,
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(root, "timeline-view.js")).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(root, "timeline-view.css")).toString(),
      title: data.title,
    });
    webview.onDidReceiveMessage((message: unknown) => {
      if (isWebviewMessage(message)) void this.handle(path, message);
    });
    panel.onDidDispose(() => {
      clearTimeout(entry.timer);
      this.panels.delete(path);
    });
    return panel;
  }

  /** What the page of a session's panel asked for; the page's messages come here. */
  async handle(path: string, message: WebviewMessage): Promise<vscode.TextEditor | undefined> {
    const open = this.panels.get(path);
    if (message.type === "ready") {
      if (open?.message) void open.panel.webview.postMessage(open.message);
      return undefined;
    }
    return openModelView(this.store, path, message.request);
  }

  /** The panel of a session and the data it last posted (for tests). */
  panelOf(path: string): { panel: vscode.WebviewPanel; message?: TimelineMessage } | undefined {
    return this.panels.get(path);
  }

  private scheduleUpdate(path: string): void {
    const open = this.panels.get(path);
    if (!open) return;
    clearTimeout(open.timer);
    open.timer = setTimeout(() => void this.update(path), UPDATE_DELAY_MS);
  }

  private async update(path: string): Promise<void> {
    const data = await this.timelineOf(path);
    const open = this.panels.get(path);
    if (!open || !data) return;
    open.message = { type: "timeline", ...data };
    open.panel.title = data.title;
    void open.panel.webview.postMessage(open.message);
  }

  dispose(): void {
    this.subscription.dispose();
    for (const open of this.panels.values()) {
      clearTimeout(open.timer);
      open.panel.dispose();
    }
    this.panels.clear();
  }
}

/** Show Context Timeline: on a session item, else the selected session or the one the person picks. */
export function registerTimelineCommand(panels: TimelinePanels, context: { store: SessionStore; prompter: () => Prompter; selectedSession: () => string | undefined }): vscode.Disposable {
  return vscode.commands.registerCommand(SHOW_TIMELINE_COMMAND, async (arg?: unknown) => {
    const file = sessionPathOf(arg) ?? (await pickSession(context, "Show the context timeline of…"));
    return file ? panels.show(file) : undefined;
  });
}
