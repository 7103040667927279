// Tree items for what another writer did (see diagnostic-nodes.ts), and what chain and call items
// add to their description and tooltip when the render did something else than their entries say:
// a chain removed by Pi's compaction or not applied, a block built without a summarizer, a result
// sent raw or not at all, an output that cannot be recovered, the writer's diagnostics.
import * as vscode from "vscode";
import type { CallView, ChainView, SessionData, SessionView } from "@pi-pruner/core";
import { spillRecovery } from "@pi-pruner/core";
import { OPEN_DOCUMENT_COMMAND } from "../command-ids.ts";
import { writerName } from "../session-names.ts";
import { oneLine, safeTooltip } from "../text.ts";
import { findDiagnostic, type WriterNode } from "./diagnostic-nodes.ts";

function icon(id: string, color?: string): vscode.ThemeIcon {
  return new vscode.ThemeIcon(id, color ? new vscode.ThemeColor(color) : undefined);
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/** The item of a writer, diagnostic or writer's-text node. */
export function writerItem(node: WriterNode, view: SessionView, file: string): vscode.TreeItem {
  switch (node.kind) {
    case "writer": {
      const { writer, fidelity, diagnostics } = view;
      const item = new vscode.TreeItem(`Written by ${writerName(view)}`, diagnostics.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
      const warnings = diagnostics.filter((d) => d.severity === "warning").length;
      const parts: string[] = [];
      if (!fidelity.exact) parts.push("shown in pi-pruner's wording");
      if (diagnostics.length) parts.push(`${plural(diagnostics.length, "diagnostic")}${warnings ? ` (${warnings} warning${warnings === 1 ? "" : "s"})` : ""}`);
      item.description = parts.join(" · ");
      item.iconPath = icon(fidelity.exact ? "info" : "warning", fidelity.exact ? undefined : "list.warningForeground");
      const signs = writer.writers.map((w) => `${w.label}: ${w.signs.join("; ")}`).join("\n");
      item.tooltip = safeTooltip(`Written by ${writer.label}.\n${signs ? `Recognised from ${signs}\n` : ""}`, fidelity.lines.length ? `\n${fidelity.lines.join("\n")}` : "");
      item.contextValue = "writer";
      return item;
    }
    case "diagnostic": {
      const d = findDiagnostic(view, node.entryId);
      if (!d) return new vscode.TreeItem("(diagnostic not on this branch)");
      const item = new vscode.TreeItem(oneLine(d.text, 120), vscode.TreeItemCollapsibleState.None);
      item.description = d.kind === "flush" ? "flush record" : d.kind;
      item.iconPath = icon(d.severity === "warning" ? "warning" : "info", d.severity === "warning" ? "list.warningForeground" : undefined);
      item.tooltip = safeTooltip(`${d.text}${d.note ? `\n${d.note}` : ""}\n\nThe writer's entry ${d.entryId} says:\n`, { code: `${d.kind}: ${d.detail}` });
      item.contextValue = `diagnostic.${d.severity}`;
      return item;
    }
    case "writerText": {
      const chain = view.chains.find((c) => c.entryId === node.entryId);
      if (!chain?.writerText) return new vscode.TreeItem("(chain not on this branch)");
      const item = new vscode.TreeItem(`As ${writerName(view)} persisted it`, vscode.TreeItemCollapsibleState.None);
      item.description = oneLine(chain.writerText, 80);
      item.iconPath = icon("quote");
      item.tooltip = safeTooltip("The text the writer kept in its chain entry for this block's body (what it sent between the block's tags, protected outputs aside):\n", { code: chain.writerText.slice(0, 1500) });
      item.command = { command: OPEN_DOCUMENT_COMMAND, title: "Open", arguments: [{ kind: "writerText", file, entryId: chain.entryId }, `${chain.blockId} as ${writerName(view)} persisted it`] };
      item.contextValue = "writerText";
      return item;
    }
  }
}

/** The start of a chain item's description, its icon and tooltip lines, where it was not sent as a block or was built without a summarizer. */
export function chainNotes(chain: ChainView): { description: string[]; icon?: vscode.ThemeIcon; tooltip: string } {
  const description: string[] = [];
  if (chain.state !== "compressed") description.push(chain.stateText);
  if (chain.withoutSummarizer) description.push("no summarizer");
  const tooltip = `${chain.stateText[0]!.toUpperCase()}${chain.stateText.slice(1)}. Body: ${chain.bodyText}.${chain.diagnostics.length ? ` ${plural(chain.diagnostics.length, "diagnostic")} of the writer concern it.` : ""}\n\n`;
  return { description, icon: chain.state === "compressed" ? undefined : icon("archive", "disabledForeground"), tooltip };
}

/**
 * What a call item adds: how it was sent where that differs from its state, whether its output can
 * come back (`spillReason`: neither its spill file nor a copy in the session file was found, from the disk check), the writer's
 * diagnostics about it.
 */
export function callNotes(call: CallView, view: SessionView, spillReason: string | undefined): { description: string[]; warn: boolean; tooltip: string } {
  const description: string[] = [];
  const lines: string[] = [];
  if (call.sent) {
    description.push(call.sent.as === "not-in-context" ? "not sent" : call.sent.as === "raw" ? "sent raw" : call.sent.as === "stub" ? "sent as a stub" : "left out");
    lines.push(call.sent.text);
  }
  const lost = call.unrecoverable ?? spillReason;
  if (lost) {
    description.push("cannot be recovered");
    lines.push(`Cannot be recovered: ${lost}`);
  }
  for (const id of call.diagnostics ?? []) {
    const d = findDiagnostic(view, id);
    if (d) lines.push(`The writer's ${d.kind === "flush" ? "flush record" : "diagnostic"}: ${d.text}`);
  }
  return { description, warn: lost !== undefined || (call.diagnostics ?? []).some((id) => findDiagnostic(view, id)?.severity === "warning"), tooltip: lines.length ? `${lines.join("\n")}\n\n` : "" };
}

// Whether a spilled call's output can still be given back needs the disk (its file, else the
// session file's copy of it): checked once per view, when its calls are first listed, and read
// back as their items are drawn.
const spillReasons = new WeakMap<SessionView, Map<string, string>>();
const spillChecks = new WeakMap<SessionView, Promise<void>>();

export function checkSpills(view: SessionView, file: string, sessionId: string | undefined, data: SessionData | undefined): Promise<void> {
  let check = spillChecks.get(view);
  if (!check) {
    check = spillRecovery(view.calls, file, sessionId, data).then(
      (reasons) => void spillReasons.set(view, reasons),
      () => undefined,
    );
    spillChecks.set(view, check);
  }
  return check;
}

/** Why a call's spilled output cannot be given back, once checkSpills has looked. */
export function spillReason(view: SessionView, occurrenceKey: string): string | undefined {
  return spillReasons.get(view)?.get(occurrenceKey);
}
