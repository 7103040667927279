// The context timeline of a session in a webview panel, one panel per session. The panel works
// out the timeline in core a slice at a time (the extension host stays responsive on a long
// session, and the page draws the points built so far), with each request's cost beside it (read,
// written, uncached, and why it rewrote the cache) from the same render, posts it to its page, and
// opens the model view of the request a person clicks. While Pi writes, the store reports the
// session changed and the panel carries the timeline on over the new requests.
//
// The build starts with the command, while the page loads: a timeline complete before the page
// runs is posted at once, and the webview hands it over as the page finishes loading, so the page
// draws without asking and waiting for it.
//
// No retainContextWhenHidden: a hidden panel's page is dropped and, shown again, asks for its data
// on load; the panel posts the timeline it last worked out, so nothing is computed again.
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import * as vscode from "vscode";
import { BodyCache, BranchCostBuilder, branchPointsOf, causeText, getBranch, TimelineBuilder, type RequestCost } from "@pi-pruner/core";
import { SHOW_TIMELINE_COMMAND } from "../command-ids.ts";
import { openModelView } from "../documents/request-commands.ts";
import { pickSession, sessionPathOf, type SessionPickContext } from "../selection.ts";
import { sessionLabel } from "../session-names.ts";
import type { SessionStore } from "../store/session-store.ts";
import { columnsOf, isWebviewMessage, requestRow, type RequestBar, type TimelineData, type TimelineMessage, type WebviewMessage } from "./protocol.ts";
import { timelineHtml } from "./timeline-html.ts";
const VIEW_TYPE = "piPruner.timeline";
/** Pi writes in bursts: one update per burst. */
const UPDATE_DELAY_MS = 250;
/** The longest the timeline's build holds the extension host before it yields. */
const SLICE_MS = 25;
/** How often a timeline still being built is posted to its page. */
const PARTIAL_POST_MS = 200;

interface OpenPanel {
  panel: vscode.WebviewPanel;
  title: string;
  builder?: TimelineBuilder;
  /** The builder's requests' costs, one bar per point, added as it renders them. */
  bars: RequestBar[];
  costs?: BranchCostBuilder;
  /** What was last built; `wire`, the message made of it for the page (made once, posted again when the page asks). */
  message?: TimelineData;
  wire?: TimelineMessage;
  /** Counts the messages built, so the page can tell one it has drawn when it comes again. */
  version: number;
  timer?: NodeJS.Timeout;
  /** Bumped by every new build: a build that is no longer the newest stops. */
  generation: number;
  /** Resolves when the newest build has posted its complete timeline. */
  built?: Promise<void>;
  /**
   * The page has loaded and asked for its data; false again while the panel is hidden (its page is
   * dropped). Until then points are only kept: posted to a page still loading they queue up and
   * are each drawn in turn once it runs.
   */
  ready: boolean;
}

function barOf(cost: RequestCost): RequestBar {
  const bar: RequestBar = { n: cost.n, read: cost.read, written: cost.written, uncached: cost.uncached, estimated: cost.estimated, added: cost.added, rewritten: cost.rewritten };
  if (cost.rewritten > 0) bar.cause = causeText(cost);
  const kind = cost.rewritten > 0 ? cost.causes[0]?.kind : undefined;
  if (kind) bar.causeKind = kind;
  return bar;
}

/** The page's message: the totals, the marks, and each request's figures as columns. */
function wireOf(data: TimelineData): TimelineMessage {
  const { timeline, bars } = data;
  const rows = timeline.points.map((point, i) => requestRow(point, bars[i]!));
  return { type: "timeline", version: data.version, title: data.title, totals: timeline.totals, marks: timeline.marks, requests: columnsOf(rows), total: data.total };
}

const yieldToHost = () => new Promise<void>((resolve) => setImmediate(resolve));

export class TimelinePanels implements vscode.Disposable {
  private readonly panels = new Map<string, OpenPanel>();
  private readonly bodies = new BodyCache();
  private readonly subscription: vscode.Disposable;
  private readonly store: SessionStore;
  private readonly extensionUri: vscode.Uri;
  private page: Promise<{ script: string; style: string }> | undefined;

  constructor(store: SessionStore, extensionUri: vscode.Uri) {
    this.store = store;
    this.extensionUri = extensionUri;
    this.subscription = store.onDidChangeSession((path) => this.scheduleUpdate(path));
    // Read ahead (two small files): the first timeline's page is written without waiting for them.
    this.pageFiles().catch(() => {});
  }

  /** Opens (or reveals) the timeline of a session; its points follow as they are built. */
  async show(path: string): Promise<vscode.WebviewPanel | undefined> {
    const open = this.panels.get(path);
    if (open) {
      open.panel.reveal();
      return open.panel;
    }
    const [state, page] = await Promise.all([this.store.load(path), this.pageFiles()]);
    if (!state?.data || !state.view) return undefined;
    const title = `Context timeline · ${sessionLabel(state)}`;
    // The page is written whole into its HTML: it loads no file.
    const panel = vscode.window.createWebviewPanel(VIEW_TYPE, title, vscode.ViewColumn.Active, { enableScripts: true, localResourceRoots: [] });
    const entry: OpenPanel = { panel, title, bars: [], version: 0, generation: 0, ready: false };
    this.panels.set(path, entry);
    const webview = panel.webview;
    webview.html = timelineHtml({ ...page, cspSource: webview.cspSource, title });
    webview.onDidReceiveMessage((message: unknown) => {
      if (isWebviewMessage(message)) void this.handle(path, message);
    });
    panel.onDidChangeViewState(() => {
      if (!panel.visible) entry.ready = false;
    });
    panel.onDidDispose(() => {
      clearTimeout(entry.timer);
      entry.generation++;
      this.panels.delete(path);
    });
    entry.built = this.update(path);
    return panel;
  }

  /**
   * The page's bundle and CSS, read once from the extension's own folder with Node (the workspace's
   * file system API went through the workbench, and took a second on a busy one).
   */
  private pageFiles(): Promise<{ script: string; style: string }> {
    const read = (name: string) => readFile(vscode.Uri.joinPath(this.extensionUri, "dist", "timeline", name).fsPath, "utf8");
    this.page ??= Promise.all([read("timeline-view.js"), read("timeline-view.css")]).then(([script, style]) => ({ script, style }));
    return this.page;
  }

  /** What the page of a session's panel asked for; the page's messages come here. */
  async handle(path: string, message: WebviewMessage): Promise<vscode.TextEditor | undefined> {
    const open = this.panels.get(path);
    if (message.type === "ready") {
      if (!open) return undefined;
      open.ready = true;
      // Posted again even if it was posted while the page loaded: the webview drops what it queued for
      // a page it loads anew, and the page skips a version it has drawn.
      if (open.message) {
        open.wire ??= wireOf(open.message);
        void open.panel.webview.postMessage(open.wire);
      }
      return undefined;
    }
    return openModelView(this.store, path, message.request);
  }

  /** The panel of a session and the timeline it last built (for tests). */
  panelOf(path: string): { panel: vscode.WebviewPanel; message?: TimelineData } | undefined {
    return this.panels.get(path);
  }

  /** Resolves once the session's panel has posted its complete timeline (for tests). */
  async built(path: string): Promise<void> {
    for (let open = this.panels.get(path); open?.built; ) {
      const pending = open.built;
      await pending;
      if (open.built === pending) return;
    }
  }

  private scheduleUpdate(path: string): void {
    const open = this.panels.get(path);
    if (!open) return;
    clearTimeout(open.timer);
    open.timer = setTimeout(() => {
      open.built = this.update(path);
    }, UPDATE_DELAY_MS);
  }

  /** Builds the timeline of the session's shown branch (carrying on the last build when Pi only appended), posting it as it grows. */
  private async update(path: string): Promise<void> {
    const open = this.panels.get(path);
    if (!open) return;
    const generation = ++open.generation;
    const state = await this.store.load(path);
    if (!state?.data || !state.view || generation !== open.generation) return;
    const branch = getBranch(state.data, state.view.leafId);
    const entries = await this.bodies.withBodies(path, state.data.elided, branch.entries);
    if (generation !== open.generation) return;
    const options = { config: this.store.configFor(state), branchPoints: branchPointsOf(state.data.entries) };
    if (open.builder?.extend(entries, options.branchPoints)) open.costs?.carryOn(entries);
    else {
      const costs = new BranchCostBuilder(entries);
      const bars: RequestBar[] = [];
      open.costs = costs;
      open.bars = bars;
      open.builder = new TimelineBuilder(entries, options, (point, request, messages) => bars.push(barOf(costs.add(point, request, messages))));
    }
    const builder = open.builder;
    open.title = `Context timeline · ${sessionLabel(state)}`;
    open.panel.title = open.title;
    // The first slice's points are posted at once, so the chart is drawn early; the rest follow.
    let posted = -Infinity;
    while (!builder.step(SLICE_MS)) {
      if (performance.now() - posted >= PARTIAL_POST_MS) {
        this.post(open);
        posted = performance.now();
      }
      await yieldToHost();
      if (generation !== open.generation) return;
    }
    this.post(open);
  }

  /**
   * Posts the timeline built so far to a page that asked for it. A page still loading gets only a
   * complete one (the webview queues it until the page runs; partial ones would each be drawn).
   */
  private post(open: OpenPanel): void {
    if (!open.builder) return;
    const complete = open.builder.complete;
    const data: TimelineData = { version: ++open.version, title: open.title, timeline: open.builder.timeline(), bars: open.bars.slice(), total: open.builder.total };
    open.message = data;
    open.wire = open.ready || (complete && open.panel.visible) ? wireOf(data) : undefined;
    if (open.wire) void open.panel.webview.postMessage(open.wire);
  }

  dispose(): void {
    this.subscription.dispose();
    for (const open of this.panels.values()) {
      clearTimeout(open.timer);
      open.generation++;
      open.panel.dispose();
    }
    this.panels.clear();
  }
}

/** Show Context Timeline: on a session item, else the selected session or the one the person picks. */
export function registerTimelineCommand(panels: TimelinePanels, context: SessionPickContext): vscode.Disposable {
  return vscode.commands.registerCommand(SHOW_TIMELINE_COMMAND, async (arg?: unknown) => {
    const file = sessionPathOf(arg) ?? (await pickSession(context, "Show the context timeline of…"));
    return file ? panels.show(file) : undefined;
  });
}
