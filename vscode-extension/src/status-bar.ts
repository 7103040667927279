// The status-bar item: the reclaim of the session last selected in the Sessions view.
import * as vscode from "vscode";
import { formatSaving } from "@pi-pruner/core";
import { SHOW_MODEL_VIEW_COMMAND } from "./command-ids.ts";
import { sessionLabel } from "./session-names.ts";
import type { SessionState } from "./store/session-store.ts";
import { formatNumber, formatReclaim } from "./text.ts";

export class ReclaimStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("piPruner.reclaim", vscode.StatusBarAlignment.Left, 50);

  constructor() {
    this.item.name = "Pi Pruner reclaim";
  }

  /** The text shown, or undefined while hidden. */
  get text(): string | undefined {
    return this.shown ? this.item.text : undefined;
  }

  private shown = false;

  update(state: SessionState | undefined): void {
    const summary = state?.summary;
    if (!state || !summary) {
      this.item.hide();
      this.shown = false;
      return;
    }
    const saving = formatSaving(summary.rawChars, summary.modelChars);
    this.item.text = `$(fold) ${formatReclaim(summary.rawChars, summary.modelChars)}${saving ? ` (${saving})` : ""}`;
    // A plain-string tooltip: the session's label is untrusted text and is never rendered as markdown.
    this.item.tooltip =
      `Pi Pruner: ${sessionLabel(state)}\n` +
      `${formatNumber(summary.rawChars)} characters raw → ${formatNumber(summary.modelChars ?? summary.rawChars)} sent to the model ` +
      `(tokens ≈ characters / 4). Click for the model view.`;
    this.item.command = { command: SHOW_MODEL_VIEW_COMMAND, title: "Show Model View", arguments: [state.file.path] };
    this.item.show();
    this.shown = true;
  }

  dispose(): void {
    this.item.dispose();
  }
}
