// Which session a view or a command is about. The selected session: the one whose reclaim the
// status bar shows and whose pruned reads the explorer marks; remembered per workspace, kept parsed
// while selected, dropped when its file goes. A command's session: the one its argument names, else
// the selected one, else the one the person picks. And the branch a person chose for each session.
import * as vscode from "vscode";
import type { Prompter } from "./prompter.ts";
import { sessionLabel } from "./session-names.ts";
import type { SessionState, SessionStore } from "./store/session-store.ts";
import { formatDateTime } from "./text.ts";

const SELECTED_KEY = "piPruner.selectedSession";

export class SessionSelection implements vscode.Disposable {
  private selected: string | undefined;
  private readonly store: SessionStore;
  private readonly memory: vscode.Memento;
  private readonly changed = new vscode.EventEmitter<SessionState | undefined>();
  /** Another session was selected, or the selected one changed (its state; undefined: none selected or listed). */
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[];

  constructor(store: SessionStore, memory: vscode.Memento) {
    this.store = store;
    this.memory = memory;
    this.selected = memory.get<string>(SELECTED_KEY);
    this.disposables = [
      this.changed,
      store.onDidChangeList(() => {
        if (this.selected && !store.get(this.selected)) void this.select(undefined);
        else this.fire();
      }),
      store.onDidChangeSession((path) => {
        if (path === this.selected) this.fire();
      }),
    ];
  }

  get path(): string | undefined {
    return this.selected;
  }

  async select(path: string | undefined): Promise<void> {
    if (this.selected && this.selected !== path) this.store.setInUse(this.selected, false);
    this.selected = path;
    await this.memory.update(SELECTED_KEY, path);
    if (path) {
      this.store.setInUse(path, true);
      await this.store.load(path);
    }
    this.fire();
  }

  /** Once the sessions are listed: selects again the session remembered from the last run, if it is still there. */
  async restore(): Promise<void> {
    if (this.selected && this.store.get(this.selected)) await this.select(this.selected);
  }

  private fire(): void {
    this.changed.fire(this.selected ? this.store.get(this.selected) : undefined);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/** The working directory whose protected patterns mark files for a session: its own cwd once known, else its folder's. */
export function sessionCwd(state: SessionState | undefined): string | undefined {
  return state?.view?.session.cwd ?? state?.head.cwd ?? state?.cwd;
}

/** A command argument naming a session: a tree node (anything with a `path`) or a file path. */
export function sessionPathOf(arg: unknown): string | undefined {
  if (typeof arg === "string") return arg;
  if (arg && typeof arg === "object" && typeof (arg as { path?: unknown }).path === "string") return (arg as { path: string }).path;
  return undefined;
}

export interface SessionPickContext {
  store: SessionStore;
  prompter: () => Prompter;
  selectedSession: () => string | undefined;
}

/** The selected session, else the one the person picks. */
export async function pickSession(context: SessionPickContext, title: string): Promise<string | undefined> {
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

const BRANCHES_KEY = "piPruner.chosenBranches";
/** Sessions whose chosen branch is remembered at most; the least recently chosen go first. */
const BRANCHES_KEPT = 200;

/**
 * The branch a person chose for each session, remembered per workspace across reloads, keyed by
 * the session file. It follows the store: a choice, a pinned branch that grew, a chosen leaf gone
 * from the file (forgotten), and hands the choice back when a session is listed afresh.
 */
export class BranchMemory implements vscode.Disposable {
  private readonly store: SessionStore;
  private readonly memory: vscode.Memento;
  private readonly subscription: vscode.Disposable;

  constructor(store: SessionStore, memory: vscode.Memento) {
    this.store = store;
    this.memory = memory;
    store.chosenLeafOf = (path) => this.recall(path);
    this.subscription = store.onDidChangeSession((path) => void this.follow(path));
  }

  recall(path: string): string | undefined {
    return this.chosen()[path];
  }

  private chosen(): Record<string, string> {
    const value = this.memory.get<unknown>(BRANCHES_KEY);
    return value && typeof value === "object" ? (value as Record<string, string>) : {};
  }

  /** Records the session's shown branch once its file has been read (only then is a missing leaf known to be gone). */
  private async follow(path: string): Promise<void> {
    const state = this.store.get(path);
    if (!state?.data) return;
    const chosen = this.chosen();
    if (chosen[path] === state.pinnedLeaf) return;
    const next = { ...chosen };
    delete next[path];
    if (state.pinnedLeaf !== undefined) next[path] = state.pinnedLeaf;
    const paths = Object.keys(next);
    for (const old of paths.slice(0, Math.max(0, paths.length - BRANCHES_KEPT))) delete next[old];
    await this.memory.update(BRANCHES_KEY, next);
  }

  dispose(): void {
    this.subscription.dispose();
  }
}
