// The sessions the editor shows and their view models. Files are listed cheaply (stat and the
// first bytes for a label); the newest get a reclaim estimated in one quick pass over each file,
// drawn before any is parsed in full; a session is parsed in full when it is shown, and afterwards
// kept up to date by reading only the bytes Pi appends. Parsed sessions beyond a few are dropped
// again (their totals stay), so a long list of large sessions does not pile up in memory.
import { stat } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import * as vscode from "vscode";
import { estimateReclaim, readSessionFile, readSessionHead, readSessionTail, type SessionFileInfo, type SessionHead } from "@pi-pruner/core";
import type { PruneSettings } from "../settings/prune-settings.ts";
import { ExactTotalsScheduler } from "./exact-totals.ts";
import { ParsedSessions } from "./parsed-sessions.ts";
import { listScopeSessions, type SessionScope } from "./session-listing.ts";
import { applyAppend, leavesOf, rebuildView, type SessionModel } from "./session-model.ts";
import { Stopwatch, StoreTimer, type StoreMarks } from "./store-marks.ts";
import { WorkQueue } from "./work-queue.ts";

export interface SessionState extends SessionModel {
  file: SessionFileInfo;
  head: SessionHead;
  /** Working directory whose settings apply: the workspace folder, else the session's own cwd. */
  cwd: string;
  error?: string;
}

export type ScopeState = "noWorkspace" | "noAgentDir" | "noSessions" | "ready";

/** Sessions parsed in the background after a listing, newest first, for their totals. */
const PARSE_AHEAD = 12;
/** The newest session's estimate is waited for before the list is shown up to this size (a few tens of ms to read). */
const EARLY_ESTIMATE_BYTES = 16_000_000;

export class SessionStore implements vscode.Disposable {
  private scope: SessionScope | undefined;
  private states = new Map<string, SessionState>();
  private order: string[] = [];
  private readonly parsed = new ParsedSessions();
  private readonly work = new WorkQueue();
  private readonly exactTotals = new ExactTotalsScheduler();
  private readonly timer = new StoreTimer();
  private listing: Promise<void> | undefined;
  private relist = false;
  private readonly listChanged = new vscode.EventEmitter<void>();
  private readonly sessionChanged = new vscode.EventEmitter<string>();
  readonly onDidChangeList = this.listChanged.event;
  /** A session's data or view changed (its path). */
  readonly onDidChangeSession = this.sessionChanged.event;
  private readonly entriesRead = new vscode.EventEmitter<string>();
  /** Entries of a session were read (its first parse, or what Pi appended), whatever they changed in its view (its path). */
  readonly onDidReadEntries = this.entriesRead.event;
  readonly marks: StoreMarks = this.timer.marks;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly settings: PruneSettings;
  /** The branch a person chose for a session earlier, for a session listed afresh (undefined: follow its last entry). */
  chosenLeafOf: (path: string) => string | undefined = () => undefined;
  /**
   * Resolves once the rows' estimates are on their way to the screen: the full parses that follow
   * keep the host's thread busy, and the rows should not wait for them (the tree view says when).
   */
  rowsShown: () => Promise<void> = () => Promise.resolve();

  constructor(settings: PruneSettings) {
    this.settings = settings;
    this.disposables.push(
      settings.onDidChange(() => {
        // Protection decides call states: every parsed session's view is built again.
        for (const state of this.states.values()) {
          if (!state.data) continue;
          state.view = undefined;
          void this.load(state.file.path);
        }
        this.listChanged.fire();
      }),
    );
  }

  get currentScope(): SessionScope | undefined {
    return this.scope;
  }

  get state(): ScopeState {
    const scope = this.scope;
    if (!scope) return "noSessions";
    if (!scope.all && scope.folders.length === 0) return "noWorkspace";
    if (!scope.agentDir.exists) return "noAgentDir";
    return this.order.length === 0 ? "noSessions" : "ready";
  }

  setScope(scope: SessionScope): Promise<void> {
    this.scope = scope;
    this.timer.scopeSet();
    this.exactTotals.clear();
    this.states.clear();
    this.order = [];
    this.parsed.clear();
    return this.refresh();
  }

  /** Session files newest first. */
  sessions(): SessionState[] {
    return this.order.map((p) => this.states.get(p)!).filter(Boolean);
  }

  get(path: string): SessionState | undefined {
    return this.states.get(path);
  }

  /** Lists the session files again (new, removed and changed files). */
  refresh(): Promise<void> {
    if (this.listing) {
      this.relist = true;
      return this.listing;
    }
    const run = async () => {
      do {
        this.relist = false;
        await this.list();
      } while (this.relist);
    };
    this.listing = this.work.track(run().finally(() => (this.listing = undefined)));
    return this.listing;
  }

  /** Resolves once nothing is loading, listing or waiting to be applied. */
  settled(): Promise<void> {
    return this.work.settled();
  }

  /** Sessions the UI shows expanded or selected keep their parsed data. */
  setInUse(path: string, used: boolean): void {
    this.parsed.setInUse(path, used);
  }

  /** The session with its parsed data and an up-to-date view. */
  load(path: string): Promise<SessionState | undefined> {
    return this.work.serial(path, () => this.loadNow(path));
  }

  /** Pi appended to (or rewrote) a session file. */
  fileChanged(path: string): Promise<void> {
    if (!this.states.has(path)) return this.refresh();
    return this.work.serial(path, () => this.applyChange(path));
  }

  /** Chooses the branch shown for a session (undefined: follow the last entry). */
  async setLeaf(path: string, leafId: string | undefined): Promise<void> {
    await this.work.serial(path, async () => {
      const state = this.states.get(path);
      if (!state) return;
      state.pinnedLeaf = leafId;
      state.view = undefined;
      await this.loadNow(path);
    });
  }

  /** Leaves of a parsed session (entries no other entry continues), newest last. */
  leavesOf(path: string): string[] {
    const data = this.states.get(path)?.data;
    return data ? leavesOf(data) : [];
  }

  configFor(state: SessionState) {
    return this.settings.forCwd(state.cwd).loaded.config;
  }

  // ------------------------------------------------------------------ internals

  private async list(): Promise<void> {
    const scope = this.scope;
    if (!scope || !scope.agentDir.exists) {
      this.states.clear();
      this.order = [];
      this.listChanged.fire();
      return;
    }
    const files = await listScopeSessions(scope);
    if (scope !== this.scope) return;
    const next = new Map<string, SessionState>();
    await Promise.all(
      files.map(async ({ info, cwd }) => {
        const known = this.states.get(info.path);
        if (known) {
          const grew = known.file.size !== info.size || known.file.mtimeMs !== info.mtimeMs;
          known.file = info;
          next.set(info.path, known);
          if (grew && known.data) void this.fileChanged(info.path);
          else if (grew) forgetTotals(known);
          return;
        }
        const head = await readSessionHead(info.path);
        next.set(info.path, { file: info, head, cwd: cwd ?? head.cwd ?? scope.agentDir.path, modelCharsEstimated: false, pinnedLeaf: this.chosenLeafOf(info.path) });
      }),
    );
    if (scope !== this.scope) return;
    this.states = next;
    this.order = files.map((f) => f.info.path).filter((p) => next.has(p));
    this.parsed.retain((p) => next.has(p));
    this.timer.listed();
    // The newest row is drawn whole in its first paint: its estimate first, where its file is quick to read.
    const newest = this.order[0];
    const first = newest === undefined ? undefined : next.get(newest);
    let estimated = !!first && !first.summary && !first.data && first.file.size <= EARLY_ESTIMATE_BYTES && (await this.work.serial(newest!, () => this.estimate(newest!)));
    if (scope !== this.scope) return;
    this.listChanged.fire();
    // Totals for the newest sessions: first estimated, then built one at a time so the first one is ready soonest.
    void this.work.track(
      (async () => {
        for (const path of this.order.slice(0, PARSE_AHEAD)) {
          if (scope !== this.scope) return;
          if (await this.work.serial(path, () => this.estimate(path))) estimated = true;
        }
        if (estimated) await this.rowsShown();
        for (const path of this.order.slice(0, PARSE_AHEAD)) {
          const state = this.states.get(path);
          if (state && !state.summary && !state.error && scope === this.scope) await this.load(path);
        }
      })(),
    );
  }

  /** A reclaim for the session's row, estimated from its file, where no figure is known yet; whether it got one. */
  private async estimate(path: string): Promise<boolean> {
    const state = this.states.get(path);
    if (!state || state.summary || state.estimate || state.error || state.data) return false;
    let estimate;
    try {
      estimate = await estimateReclaim(path);
    } catch {
      // Unreadable: the full read says why, or the row waits for it.
      return false;
    }
    if (!estimate || state.summary || this.states.get(path) !== state) return false;
    state.estimate = estimate;
    this.timer.estimated();
    this.sessionChanged.fire(path);
    return true;
  }

  private async loadNow(path: string): Promise<SessionState | undefined> {
    const state = this.states.get(path);
    if (!state) return undefined;
    try {
      if (!state.data) {
        // Long bodies stay on disk: the tree needs their sizes; documents read them back.
        const watch = new Stopwatch();
        state.data = await readSessionFile(path, { lazyBodies: true });
        this.timer.parsed(watch);
        state.view = undefined;
        state.error = undefined;
        this.entriesRead.fire(path);
      }
      if (!state.view) this.rebuild(state);
      this.touch(path);
      return state;
    } catch (error) {
      state.error = `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
      state.data = undefined;
      state.view = undefined;
      this.sessionChanged.fire(path);
      return state;
    }
  }

  /** Builds the session's view from its parsed data, timed, and tells that it changed. */
  private rebuild(state: SessionState): void {
    const config = this.configFor(state);
    const watch = new Stopwatch();
    rebuildView(state, config);
    state.lastBuildMs = this.timer.built(watch);
    this.timer.viewShown(state.file.path);
    this.sessionChanged.fire(state.file.path);
  }

  private async applyChange(path: string): Promise<void> {
    const state = this.states.get(path);
    if (!state) return;
    try {
      const s = await stat(path);
      state.file = { ...state.file, size: s.size, mtimeMs: s.mtimeMs };
    } catch {
      // Deleted: the listing drops it.
      void this.refresh();
      return;
    }
    if (!state.data) {
      // Not parsed: its totals are stale; parse again only if it is shown among the newest.
      forgetTotals(state);
      if (this.order.indexOf(path) < PARSE_AHEAD) await this.loadNow(path);
      else this.sessionChanged.fire(path);
      this.moveToFront(path);
      return;
    }
    const t0 = performance.now();
    const tail = await readSessionTail(path, state.data);
    const t1 = performance.now();
    if (tail.entries.length > 0) this.entriesRead.fire(path);
    const outcome = applyAppend(state, tail, this.configFor(state));
    if (outcome.kind === "rebuild") this.rebuild(state);
    else if (outcome.kind !== "none") this.sessionChanged.fire(path);
    if (outcome.kind === "extended" && outcome.modelCharsEstimated) this.scheduleExactTotals(path);
    if (tail.reset || tail.entries.length > 0 || tail.errors.length > 0) {
      const fastPath = outcome.kind === "extended";
      this.timer.appended({ path, tailMs: t1 - t0, updateMs: performance.now() - t1, fastPath, entries: tail.entries.length });
    }
    this.moveToFront(path);
  }

  private scheduleExactTotals(path: string): void {
    this.exactTotals.schedule(path, this.states.get(path)?.lastBuildMs ?? 0, () => {
      void this.work.serial(path, async () => {
        const state = this.states.get(path);
        if (state?.data && state.modelCharsEstimated) this.rebuild(state);
      });
    });
  }

  /** A session Pi just wrote to is the newest: it moves to the top of the list. */
  private moveToFront(path: string): void {
    const index = this.order.indexOf(path);
    if (index <= 0) return;
    const state = this.states.get(path)!;
    const newest = this.states.get(this.order[0]!)!;
    if (state.file.mtimeMs < newest.file.mtimeMs) return;
    this.order.splice(index, 1);
    this.order.unshift(path);
    this.listChanged.fire();
  }

  /** Marks a session as recently used and drops the parsed data of the least recently used ones. */
  private touch(path: string): void {
    for (const p of this.parsed.touch(path, (p) => this.states.get(p)?.data !== undefined)) {
      const state = this.states.get(p)!;
      state.data = undefined;
      state.view = undefined;
    }
  }

  dispose(): void {
    this.exactTotals.clear();
    this.listChanged.dispose();
    this.sessionChanged.dispose();
    this.entriesRead.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** The file changed: what its row showed no longer holds. */
function forgetTotals(state: SessionState): void {
  state.summary = undefined;
  state.estimate = undefined;
}
