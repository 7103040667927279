// The sessions the editor shows and their view models. Files are listed cheaply (stat and the
// first bytes for a label); a session is parsed in full when it is shown, and afterwards kept up to
// date by reading only the bytes Pi appends. Parsed sessions beyond a few are dropped again (their
// totals stay), so a long list of large sessions does not pile up in memory.
import { stat } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import * as vscode from "vscode";
import { readSessionFile, readSessionTail, defaultLeafId, type SessionData } from "@pi-pruner/core";
import { buildSessionView, type SessionView } from "@pi-pruner/core";
import { appendToSessionView } from "@pi-pruner/core";
import {
  listAllSessionFiles,
  listSessionFiles,
  readSessionHead,
  sessionDirFor,
  type SessionFileInfo,
  type SessionHead,
} from "@pi-pruner/core";
import type { AgentDir, PruneSettings } from "./prune-settings.ts";

export interface WorkspaceFolderRef {
  name: string;
  path: string;
}

export interface SessionScope {
  agentDir: AgentDir;
  folders: WorkspaceFolderRef[];
  /** Every session under the agent dir, not only the open folders'. */
  all: boolean;
}

/** What stays known about a session after its parsed data is dropped. */
export interface SessionSummary {
  name?: string;
  firstPrompt?: string;
  rawChars: number;
  modelChars?: number;
  badLines: number;
  calls: number;
  pruned: number;
}

export interface SessionState {
  file: SessionFileInfo;
  head: SessionHead;
  /** Working directory whose settings apply: the workspace folder, else the session's own cwd. */
  cwd: string;
  data?: SessionData;
  view?: SessionView;
  summary?: SessionSummary;
  /** The leaf chosen by a person; undefined follows the file's last entry, as Pi resumes. */
  pinnedLeaf?: string;
  /** The model characters of `view` were estimated by the fast append path. */
  modelCharsEstimated: boolean;
  /** How long the last full build of `view` took. */
  lastBuildMs?: number;
  error?: string;
}

export type ScopeState = "noWorkspace" | "noAgentDir" | "noSessions" | "ready";

/** Sessions whose parsed data is kept (besides those in use). */
const KEEP_PARSED = 4;
/** Sessions parsed in the background after a listing, newest first, for their totals. */
const PARSE_AHEAD = 12;
/**
 * After the fast append path, the exact model view is recomputed at most this often, and at most
 * EXACT_TOTALS_SHARE of the time: a session whose full build takes 400 ms (100 MB) is recomputed
 * every 4 s while Pi writes, not every second.
 */
const EXACT_TOTALS_DELAY_MS = 1000;
const EXACT_TOTALS_SHARE = 0.1;

/** CPU time of this thread in ms, where Node has process.threadCpuUsage (23.9+). */
function threadCpuMs(): number | undefined {
  const usage = (process as { threadCpuUsage?: () => { user: number; system: number } }).threadCpuUsage?.();
  return usage ? (usage.user + usage.system) / 1000 : undefined;
}

export interface StoreMarks {
  /** performance.now() when the store got its scope. */
  scopeSetAt?: number;
  listedAt?: number;
  /** First session whose view was built after the scope was set. */
  firstViewAt?: number;
  firstViewPath?: string;
  /** How long the first session took to parse, and its view model to build. */
  firstParseMs?: number;
  firstBuildMs?: number;
  /** CPU time of the extension host's thread during the first parse (where Node can tell): wall time minus this is waiting. */
  firstParseCpuMs?: number;
  /** performance.now() when the first parse began. */
  firstParseStartedAt?: number;
  /** CPU time of the thread during the first view model build (synchronous: wall time minus this is the OS running something else). */
  firstBuildCpuMs?: number;
  lastAppend?: { path: string; tailMs: number; updateMs: number; fastPath: boolean; entries: number };
}

export class SessionStore implements vscode.Disposable {
  private scope: SessionScope | undefined;
  private states = new Map<string, SessionState>();
  private order: string[] = [];
  private readonly inUse = new Set<string>();
  private recent: string[] = [];
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly exactTimers = new Map<string, NodeJS.Timeout>();
  private readonly leaves = new WeakMap<SessionData, { bytes: number; count: number; leaves: string[] }>();
  private listing: Promise<void> | undefined;
  private relist = false;
  private pending = new Set<Promise<unknown>>();
  private readonly listChanged = new vscode.EventEmitter<void>();
  private readonly sessionChanged = new vscode.EventEmitter<string>();
  readonly onDidChangeList = this.listChanged.event;
  /** A session's data or view changed (its path). */
  readonly onDidChangeSession = this.sessionChanged.event;
  readonly marks: StoreMarks = {};
  private readonly disposables: vscode.Disposable[] = [];

  private readonly settings: PruneSettings;

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
    this.marks.scopeSetAt = performance.now();
    this.marks.firstViewAt = undefined;
    this.marks.listedAt = undefined;
    for (const timer of this.exactTimers.values()) clearTimeout(timer);
    this.exactTimers.clear();
    this.states.clear();
    this.order = [];
    this.recent = [];
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
    this.listing = this.track(run().finally(() => (this.listing = undefined)));
    return this.listing;
  }

  /** Resolves once nothing is loading, listing or waiting to be applied. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** Sessions the UI shows expanded or selected keep their parsed data. */
  setInUse(path: string, used: boolean): void {
    if (used) this.inUse.add(path);
    else this.inUse.delete(path);
  }

  /** The session with its parsed data and an up-to-date view. */
  load(path: string): Promise<SessionState | undefined> {
    return this.serial(path, () => this.loadNow(path));
  }

  /** Pi appended to (or rewrote) a session file. */
  fileChanged(path: string): Promise<void> {
    if (!this.states.has(path)) return this.refresh();
    return this.serial(path, () => this.applyChange(path));
  }

  /** Chooses the branch shown for a session (undefined: follow the last entry). */
  async setLeaf(path: string, leafId: string | undefined): Promise<void> {
    await this.serial(path, async () => {
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
    if (!data) return [];
    // Asked for by every paint of the session's row: worked out again only when the file was read further.
    const known = this.leaves.get(data);
    if (known && known.bytes === data.bytes && known.count === data.entries.length) return known.leaves;
    const parents = new Set<string>();
    for (const entry of data.entries) if (entry.parentId) parents.add(entry.parentId);
    const leaves = data.entries.filter((e) => !parents.has(e.id)).map((e) => e.id);
    this.leaves.set(data, { bytes: data.bytes, count: data.entries.length, leaves });
    return leaves;
  }

  configFor(state: SessionState) {
    return this.settings.forCwd(state.cwd).loaded.config;
  }

  // ------------------------------------------------------------------ internals

  private track<T>(promise: Promise<T>): Promise<T> {
    this.pending.add(promise);
    promise.finally(() => this.pending.delete(promise)).catch(() => {});
    return promise;
  }

  /** Operations on one file run one after another (tail reads must not overlap). */
  private serial<T>(path: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(path) ?? Promise.resolve();
    const next = previous.then(operation, operation);
    const settledNext = next.catch(() => undefined);
    this.queues.set(path, settledNext);
    settledNext.then(() => {
      if (this.queues.get(path) === settledNext) this.queues.delete(path);
    });
    return this.track(next);
  }

  private async list(): Promise<void> {
    const scope = this.scope;
    if (!scope || !scope.agentDir.exists) {
      this.states.clear();
      this.order = [];
      this.listChanged.fire();
      return;
    }
    let files: { info: SessionFileInfo; cwd?: string }[];
    if (scope.all) {
      files = (await listAllSessionFiles(scope.agentDir.path)).map((info) => ({ info }));
    } else {
      const perFolder = await Promise.all(
        scope.folders.map(async (folder) => (await listSessionFiles(sessionDirFor(scope.agentDir.path, folder.path))).map((info) => ({ info, cwd: folder.path }))),
      );
      files = perFolder.flat().sort((a, b) => b.info.mtimeMs - a.info.mtimeMs);
    }
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
          else if (grew) known.summary = undefined;
          return;
        }
        const head = await readSessionHead(info.path);
        next.set(info.path, { file: info, head, cwd: cwd ?? head.cwd ?? scope.agentDir.path, modelCharsEstimated: false });
      }),
    );
    if (scope !== this.scope) return;
    this.states = next;
    this.order = files.map((f) => f.info.path).filter((p) => next.has(p));
    this.recent = this.recent.filter((p) => next.has(p));
    this.marks.listedAt ??= performance.now();
    this.listChanged.fire();
    // Totals for the newest sessions, one at a time so the first one is ready soonest.
    void this.track(
      (async () => {
        for (const path of this.order.slice(0, PARSE_AHEAD)) {
          const state = this.states.get(path);
          if (state && !state.summary && !state.error && scope === this.scope) await this.load(path);
        }
      })(),
    );
  }

  private async loadNow(path: string): Promise<SessionState | undefined> {
    const state = this.states.get(path);
    if (!state) return undefined;
    try {
      if (!state.data) {
        const started = performance.now();
        const cpuBefore = threadCpuMs();
        // Long bodies stay on disk: the tree needs their sizes; documents read them back.
        state.data = await readSessionFile(path, { lazyBodies: true });
        if (this.marks.firstParseMs === undefined) {
          this.marks.firstParseStartedAt = started;
          this.marks.firstParseMs = performance.now() - started;
          const cpuAfter = threadCpuMs();
          if (cpuBefore !== undefined && cpuAfter !== undefined) this.marks.firstParseCpuMs = cpuAfter - cpuBefore;
        }
        state.view = undefined;
        state.error = undefined;
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

  private rebuild(state: SessionState): void {
    const data = state.data!;
    if (state.pinnedLeaf && !data.byId.has(state.pinnedLeaf)) state.pinnedLeaf = undefined;
    const started = performance.now();
    const cpuBefore = threadCpuMs();
    state.view = buildSessionView(data, { leafId: state.pinnedLeaf, config: this.configFor(state) });
    state.lastBuildMs = performance.now() - started;
    if (this.marks.firstBuildMs === undefined) {
      this.marks.firstBuildMs = state.lastBuildMs;
      const cpuAfter = threadCpuMs();
      if (cpuBefore !== undefined && cpuAfter !== undefined) this.marks.firstBuildCpuMs = cpuAfter - cpuBefore;
    }
    state.modelCharsEstimated = false;
    this.summarize(state);
    if (this.marks.firstViewAt === undefined) {
      this.marks.firstViewAt = performance.now();
      this.marks.firstViewPath = state.file.path;
    }
    this.sessionChanged.fire(state.file.path);
  }

  private summarize(state: SessionState): void {
    const view = state.view!;
    state.summary = {
      name: view.session.name,
      firstPrompt: view.session.firstPrompt,
      rawChars: view.totals.rawChars,
      modelChars: view.totals.modelChars,
      badLines: view.errors.length,
      calls: view.calls.length,
      pruned: view.calls.filter((c) => c.state !== "raw" && c.state !== "protected").length,
    };
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
      state.summary = undefined;
      if (this.order.indexOf(path) < PARSE_AHEAD) await this.loadNow(path);
      else this.sessionChanged.fire(path);
      this.moveToFront(path);
      return;
    }
    const t0 = performance.now();
    const tail = await readSessionTail(path, state.data);
    const t1 = performance.now();
    const view = state.view;
    let fastPath = false;
    if (tail.reset || !view) {
      this.rebuild(state);
    } else if (tail.entries.length > 0) {
      const data = state.data;
      const extendsShownLeaf = tail.entries[0]!.parentId === view.leafId;
      if (state.pinnedLeaf && !extendsShownLeaf) {
        // Another branch grew: the pinned branch is unchanged.
      } else {
        const applied = extendsShownLeaf ? appendToSessionView(view, data, tail.entries, this.configFor(state)) : undefined;
        if (applied) {
          fastPath = true;
          state.view = applied.view;
          if (state.pinnedLeaf) state.pinnedLeaf = applied.view.leafId === defaultLeafId(data) ? undefined : (applied.view.leafId ?? undefined);
          this.summarize(state);
          if (applied.modelCharsEstimated) {
            state.modelCharsEstimated = true;
            this.scheduleExactTotals(path);
          }
          this.sessionChanged.fire(path);
        } else {
          if (state.pinnedLeaf && extendsShownLeaf) state.pinnedLeaf = undefined;
          this.rebuild(state);
        }
      }
    } else if (tail.errors.length > 0) {
      this.summarize(state);
      this.sessionChanged.fire(path);
    }
    if (tail.reset || tail.entries.length > 0 || tail.errors.length > 0) {
      this.marks.lastAppend = { path, tailMs: t1 - t0, updateMs: performance.now() - t1, fastPath, entries: tail.entries.length };
    }
    this.moveToFront(path);
  }

  private scheduleExactTotals(path: string): void {
    if (this.exactTimers.has(path)) return;
    const lastBuildMs = this.states.get(path)?.lastBuildMs ?? 0;
    const timer = setTimeout(() => {
      this.exactTimers.delete(path);
      void this.serial(path, async () => {
        const state = this.states.get(path);
        if (state?.data && state.modelCharsEstimated) this.rebuild(state);
      });
    }, Math.max(EXACT_TOTALS_DELAY_MS, lastBuildMs / EXACT_TOTALS_SHARE));
    this.exactTimers.set(path, timer);
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
    this.recent = [path, ...this.recent.filter((p) => p !== path)];
    let kept = 0;
    for (const p of this.recent) {
      const state = this.states.get(p);
      if (!state?.data) continue;
      if (this.inUse.has(p) || kept < KEEP_PARSED) {
        if (!this.inUse.has(p)) kept++;
        continue;
      }
      state.data = undefined;
      state.view = undefined;
    }
  }

  dispose(): void {
    for (const timer of this.exactTimers.values()) clearTimeout(timer);
    this.listChanged.dispose();
    this.sessionChanged.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
