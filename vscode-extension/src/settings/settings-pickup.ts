// Whether a running Pi session took up a settings change the editor just wrote. The live pruner
// checks the settings files before each request and records the settings it applies in the
// session, before that request's answer; so a record written after the edit that holds the change
// says the session applies it, and from which request. The status bar says so until the next edit.
import * as vscode from "vscode";
import { configOfRecord, getBranch, modelRequests, settingsEntryData, type AnyEntry, type PruneConfig, type SessionData } from "@pi-pruner/core";

/**
 * What the pickup reads of the session store. settings/ sits below the store (the store reads the
 * settings), so it names no store type: extension.ts hands the store in.
 */
export interface SessionsRead {
  /** Fires with a session file's path whenever entries were read from it. */
  onDidReadEntries: vscode.Event<string>;
  sessions(): Iterable<{ file: { path: string } }>;
  get(path: string): { data?: SessionData; cwd?: string } | undefined;
}

/** A settings change the editor made, as the pickup looks for it. */
export interface SettingsEdit {
  /** The change in a person's words, e.g. "`docs/**` added to protectedPaths". */
  description: string;
  /** The workspace folder whose sessions would take it up. */
  cwd: string;
  /** When the file was written (epoch ms): only records written since count. */
  writtenAt: number;
  /** Whether settings a session recorded hold the change. */
  holds(config: PruneConfig): boolean;
}

/** Where a change stands: no session recorded it yet, or one applies it from request `request` on. */
export type PickupState = { kind: "waiting"; edit: SettingsEdit } | { kind: "applied"; edit: SettingsEdit; sessionPath: string; request: number };

/** How long the status bar says a change was applied before it hides again. */
const APPLIED_SHOWN_MS = 60_000;

/** A record in `entries` (newest last) written since `since` whose settings satisfy `holds`, newest first. */
function recordSince(entries: readonly AnyEntry[], since: number, holds: (config: PruneConfig) => boolean): AnyEntry | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    const time = typeof entry.timestamp === "string" ? Date.parse(entry.timestamp) : Number.NaN;
    // Pi writes entries in time order: everything before an older one is older still.
    if (Number.isFinite(time) && time < since) return undefined;
    const data = settingsEntryData(entry);
    if (data && Number.isFinite(time) && holds(configOfRecord(data).config)) return entry;
  }
  return undefined;
}

/** The number of the request a settings record applies to: the one its branch sends next. */
function requestAfter(data: SessionData, entryId: string): number {
  return modelRequests(getBranch(data, entryId).entries).length + 1;
}

/** The sentence for a state, as the status bar and the tests read it. */
function pickupMessage(state: PickupState): string {
  return state.kind === "applied" ? `applied by the running session at request ${state.request}` : "no running session has picked this up yet";
}

export class SettingsPickup implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("piPruner.settingsPickup", vscode.StatusBarAlignment.Left, 49);
  private readonly store: SessionsRead;
  private readonly subscription: vscode.Disposable;
  private current: PickupState | undefined;
  private hideTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly changed = new vscode.EventEmitter<PickupState | undefined>();
  readonly onDidChange = this.changed.event;

  constructor(store: SessionsRead) {
    this.store = store;
    this.item.name = "Pi Pruner settings change";
    this.subscription = store.onDidReadEntries((path) => this.check(path));
  }

  /** The latest change and where it stands (undefined before the first edit). */
  get state(): PickupState | undefined {
    return this.current;
  }

  /** The status bar's sentence, without its icon; undefined while hidden. */
  get text(): string | undefined {
    return this.current ? `Pi Pruner: ${pickupMessage(this.current)}` : undefined;
  }

  /** The editor wrote a change: look for it in the folder's sessions from now on (and in those already read). */
  track(edit: SettingsEdit): void {
    this.setState({ kind: "waiting", edit });
    for (const state of this.store.sessions()) this.check(state.file.path);
  }

  private check(path: string): void {
    const waiting = this.current;
    if (waiting?.kind !== "waiting") return;
    const state = this.store.get(path);
    if (!state?.data || state.cwd !== waiting.edit.cwd) return;
    const record = recordSince(state.data.entries, waiting.edit.writtenAt, waiting.edit.holds);
    if (record) this.setState({ kind: "applied", edit: waiting.edit, sessionPath: path, request: requestAfter(state.data, record.id) });
  }

  private setState(state: PickupState): void {
    this.current = state;
    clearTimeout(this.hideTimer);
    this.item.text = `${state.kind === "applied" ? "$(check)" : "$(clock)"} ${this.text}`;
    // Plain-string tooltips: a session path is shown, never rendered as markdown.
    this.item.tooltip =
      state.kind === "applied"
        ? `${state.edit.description}: the session ${state.sessionPath} recorded it and sends with it from request ${state.request} on.`
        : `${state.edit.description}. A Pi session running pi-pruner in ${state.edit.cwd} takes it up at its next request and records it; none has yet.`;
    this.item.show();
    if (state.kind === "applied") {
      this.hideTimer = setTimeout(() => {
        if (this.current !== state) return;
        this.current = undefined;
        this.item.hide();
        this.changed.fire(undefined);
      }, APPLIED_SHOWN_MS);
    }
    this.changed.fire(state);
  }

  dispose(): void {
    clearTimeout(this.hideTimer);
    this.subscription.dispose();
    this.changed.dispose();
    this.item.dispose();
  }
}
