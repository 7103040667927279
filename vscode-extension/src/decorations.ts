// File decorations in the explorer: files the effective protectedPaths protect get a badge and a
// tooltip naming the pattern; files whose reads were pruned in the selected session get a quieter
// mark, a pair of scissors (a dot there reads as VS Code's unsaved-changes mark, in tabs above all).
// A session recorded in another folder marks the open folder's files by their path inside that one.
import { isAbsolute, resolve } from "node:path";
import * as vscode from "vscode";
import { isPrunedState, type CallView, type SessionView } from "@pi-pruner/core";
import { editorSetting } from "./settings/editor-settings.ts";
import { toOpenFolder, type SessionMove } from "./moved-sessions.ts";
import type { PruneSettings } from "./settings/prune-settings.ts";

export const PROTECTED_BADGE = "P";
/** Scissors, drawn as text (the variation selector keeps emoji fonts from colouring it). */
export const PRUNED_BADGE = "\u2702\uFE0E";

export class PrunerDecorations implements vscode.FileDecorationProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri | vscode.Uri[] | undefined>();
  readonly onDidChangeFileDecorations = this.changed.event;
  /** Absolute path → the selected session's pruned calls that read it. */
  private pruned = new Map<string, CallView[]>();
  /** The calls last marked, and the session's folder they were resolved against. */
  private shown: { calls: readonly CallView[]; cwd: string | undefined; move: SessionMove | undefined } | undefined;
  private enabled = editorSetting("decorations.enabled");
  private readonly subscription: vscode.Disposable;

  private readonly settings: PruneSettings;

  constructor(settings: PruneSettings) {
    this.settings = settings;
    this.subscription = settings.onDidChange(() => this.changed.fire(undefined));
  }

  setEnabled(enabled: boolean): void {
    if (this.enabled === enabled) return;
    this.enabled = enabled;
    this.changed.fire(undefined);
  }

  /**
   * The selected session changed (or grew): mark the files its pruned calls read. `move` maps the
   * folder it was recorded in onto the open folder it is listed for.
   */
  setSelectedSession(view: SessionView | undefined, sessionCwd: string | undefined, move?: SessionMove): void {
    const calls = view?.calls ?? [];
    // A live append keeps the earlier calls (the same objects) and adds raw ones at the end: only
    // the added calls need a look. Anything else (another session, a rebuild) starts over.
    const previous = this.shown;
    const sameMove = previous?.move?.recorded === move?.recorded && previous?.move?.open === move?.open;
    const grew = previous !== undefined && sessionCwd === previous.cwd && sameMove && calls.length >= previous.calls.length && previous.calls.every((call, i) => calls[i] === call);
    this.shown = { calls, cwd: sessionCwd, move };
    if (grew && calls.length === previous.calls.length) return;
    const next = grew ? new Map(this.pruned) : new Map<string, CallView[]>();
    for (let i = grew ? previous.calls.length : 0; i < calls.length; i++) {
      const call = calls[i]!;
      if (!call.path || !isPrunedState(call.state)) continue;
      if (!isAbsolute(call.path) && !sessionCwd) continue;
      const absolute = toOpenFolder(resolve(sessionCwd ?? "/", call.path), move);
      // Only files the explorer can show: a session's `../../etc/passwd` or `/etc/hosts` is not marked.
      if (!vscode.workspace.getWorkspaceFolder(vscode.Uri.file(absolute))) continue;
      const list = next.get(absolute);
      if (list) next.set(absolute, [...list, call]);
      else next.set(absolute, [call]);
    }
    const touched = new Set([...this.pruned.keys(), ...next.keys()]);
    const same = touched.size === next.size && [...next].every(([k, v]) => this.pruned.get(k)?.length === v.length);
    this.pruned = next;
    if (!same) this.changed.fire([...touched].map((p) => vscode.Uri.file(p)));
  }

  provideFileDecoration(uri: vscode.Uri): vscode.FileDecoration | undefined {
    if (!this.enabled || uri.scheme !== "file") return undefined;
    const folder = vscode.workspace.getWorkspaceFolder(uri);
    if (folder) {
      const effective = this.settings.forCwd(folder.uri.fsPath);
      const relative = vscode.workspace.asRelativePath(uri, false).replace(/\\/g, "/");
      const pattern = effective.match(relative) ?? effective.match(uri.fsPath);
      if (pattern !== undefined) {
        return {
          badge: PROTECTED_BADGE,
          tooltip: `protected from pruning by \`${pattern}\``,
          color: new vscode.ThemeColor("piPruner.protectedFileForeground"),
          propagate: false,
        };
      }
    }
    const calls = this.pruned.get(uri.fsPath);
    if (calls) {
      const refs = calls.map((c) => `${c.shortRef ?? c.toolName} (${c.state})`).join(", ");
      return { badge: PRUNED_BADGE, tooltip: `✂ pruned: Pi read this file in the selected session, and the model is sent less of it: ${refs}`, propagate: false };
    }
    return undefined;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
