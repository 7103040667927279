// The Sessions view's tree items: what each node of a session shows (label, description, icon,
// tooltip, the command a click runs, the context value its menus match), built from the session's
// state and view model. The provider (sessions-tree.ts) hands nodes and their state in.
import * as vscode from "vscode";
import type { CallState, CallView, MarkerView, SessionView } from "@pi-pruner/core";
import { firstWords, formatSaving, isPrunedState, markerEffectText, markerStateText } from "@pi-pruner/core";
import { CHOOSE_BRANCH_COMMAND, OPEN_DOCUMENT_COMMAND, REVIEW_CHAIN_COMMAND, SHOW_MODEL_VIEW_COMMAND } from "../command-ids.ts";
import { callTitle, sessionName } from "../session-names.ts";
import type { SessionState } from "../store/session-store.ts";
import { formatAge, formatDateTime, formatNumber, oneLine, safeTooltip } from "../text.ts";
import { findCall, findChain, findCompaction, findMarker, findSummary, requestCount } from "../view-lookup.ts";
import { callNotes, chainNotes, spillReason, writerItem } from "./diagnostic-items.ts";
import { branchDescription, branchLabel, estimateText, reclaimText, sendsMoreThanRaw, summaryLabel } from "./session-labels.ts";
import { callsOfSummary, chainChildren, GROUP_LABELS, groupSize, type SessionNode } from "./session-nodes.ts";

const STATE_ICONS: Record<CallState, [string, string | undefined]> = {
  summarized: ["fold", "charts.blue"],
  superseded: ["history", "charts.blue"],
  deduped: ["copy", "charts.purple"],
  spilled: ["save-as", "charts.orange"],
  compressed: ["archive", "charts.yellow"],
  protected: ["shield", "charts.green"],
  raw: ["circle-outline", undefined],
};

const GROUP_ICONS = {
  summaries: "note",
  other: "save-as",
  chains: "archive",
  protected: "shield",
  markers: "bookmark",
  compactions: "layers",
} as const;

const MARKER_ICONS = { rewind: "debug-step-back", shrink: "fold-down", checkpoint: "bookmark" } as const;

/** What an item needs of the other sessions and of the parsed file, besides its own state. */
export interface SessionItemContext {
  /** Leaves of a parsed session (entries no other entry continues), newest last. */
  leavesOf(path: string): string[];
  /** The session's row label, told apart from the others' (session-names.ts). */
  labelOf(path: string): string | undefined;
}

function icon(id: string, color?: string): vscode.ThemeIcon {
  return new vscode.ThemeIcon(id, color ? new vscode.ThemeColor(color) : undefined);
}

function callLabel(call: CallView): string {
  const target = call.path ?? call.command;
  return target ? `${call.toolName} ${oneLine(target, 60)}` : call.toolName;
}

function callDescription(call: CallView): string {
  // A pruned call no entry gave a short ref is named by its tool-call id, as its writer named it.
  const ref = call.shortRef ?? (isPrunedState(call.state) ? call.toolCallId : "");
  const parts = [ref, call.state === "deduped" && call.aliasOf ? `duplicate of ${call.aliasOf}` : call.state];
  if (call.isError) parts.push("error");
  parts.push(`${formatNumber(call.rawChars)} chars`);
  return parts.filter(Boolean).join(" · ");
}

/** The tree item of a node of the Sessions view; `state` is its session's, when still listed. */
export function sessionTreeItem(node: SessionNode, state: SessionState | undefined, context: SessionItemContext): vscode.TreeItem {
  if (node.kind === "session") return sessionItem(node, state, context);
  const view = state?.view;
  if (!state || !view) return new vscode.TreeItem("(no longer available)");
  return childItem(node, state, view, context);
}

function sessionItem(node: SessionNode, state: SessionState | undefined, context: SessionItemContext): vscode.TreeItem {
  if (!state) return new vscode.TreeItem("(session removed)");
  const item = new vscode.TreeItem(context.labelOf(state.file.path) ?? sessionName(state), vscode.TreeItemCollapsibleState.Collapsed);
  item.id = node.id;
  const summary = state.summary;
  // After the name, which the row cuts where the side bar ends: shown in full when it is wide.
  const parts = [formatAge(state.file.mtimeMs)];
  if (summary) {
    parts.push(reclaimText(summary.rawChars, summary.modelChars));
    if (summary.badLines) parts.push(`${summary.badLines} bad line${summary.badLines === 1 ? "" : "s"}`);
  } else if (state.error) parts.push("unreadable");
  else if (state.estimate) parts.push(estimateText(state.estimate.rawChars, state.estimate.modelChars));
  else parts.push("…");
  item.description = parts.join(" · ");
  // A warning where the figures need a reason (bad lines, more sent than raw): the row may be too narrow to say it.
  const warn = state.error || summary?.badLines || (summary && sendsMoreThanRaw(summary.rawChars, summary.modelChars));
  item.iconPath = icon(warn ? "warning" : "comment-discussion", warn ? "list.warningForeground" : undefined);
  const leaves = state.data ? context.leavesOf(node.path).length : 0;
  item.contextValue = leaves > 1 ? "session branched" : "session";
  item.tooltip = safeTooltip(
    sessionName(state),
    { md: "\n\n" },
    `${totalsText(state)}\n\nFile: ${state.file.path}\nSession id: ${state.head.id ?? "?"}\nWorking directory: ${state.head.cwd ?? "?"}\n` +
      `${state.head.startedAt !== undefined ? `Started: ${formatDateTime(state.head.startedAt)}\n` : ""}Modified: ${formatDateTime(state.file.mtimeMs)}`,
  );
  return item;
}

function childItem(node: SessionNode, state: SessionState, view: SessionView, context: SessionItemContext): vscode.TreeItem {
  const file = state.file.path;
  const none = vscode.TreeItemCollapsibleState.None;
  const collapsed = vscode.TreeItemCollapsibleState.Collapsed;
  let item: vscode.TreeItem;
  switch (node.kind) {
    case "badLines": {
      const lines = view.errors.map((e) => e.line);
      const shown = lines.slice(0, 12).join(", ") + (lines.length > 12 ? ", …" : "");
      item = new vscode.TreeItem(`${lines.length} unreadable line${lines.length === 1 ? "" : "s"}: ${shown}`, none);
      item.iconPath = icon("warning", "list.warningForeground");
      item.tooltip = safeTooltip(view.errors.slice(0, 30).map((e) => `line ${e.line}: ${e.message}`).join("\n"));
      item.command = { command: OPEN_DOCUMENT_COMMAND, title: "Show", arguments: [{ kind: "badLines", file }, "unreadable lines"] };
      item.contextValue = "badLines";
      break;
    }
    case "problems": {
      item = new vscode.TreeItem(`${view.problems.length} problem${view.problems.length === 1 ? "" : "s"} in the session's structure`, none);
      item.iconPath = icon("warning", "list.warningForeground");
      item.tooltip = safeTooltip(view.problems.join("\n"));
      item.command = { command: OPEN_DOCUMENT_COMMAND, title: "Show", arguments: [{ kind: "badLines", file }, "session problems"] };
      break;
    }
    case "modelView": {
      item = new vscode.TreeItem("Model view", none);
      const sent = state.data ? requestCount(state.data, view.leafId) : 0;
      item.description = sent > 0 ? `last request sent · ${sent} of ${sent}` : "next request · none sent yet";
      item.iconPath = icon("eye");
      const { rawChars, modelChars } = view.totals;
      item.tooltip = safeTooltip(
        `${sent > 0 ? `Opens on the last request this branch sent (request ${sent} of ${sent}), as it was sent; Previous Request, Next Request and Go to Request… in the editor's title bar step to any other.` : "No request was sent on this branch yet: it opens on the next request."}\n\n` +
          `The next request (what the model is sent when the session goes on from here): ${formatNumber(rawChars)} → ${formatNumber(modelChars ?? rawChars)} characters ${formatSaving(rawChars, modelChars)}`.trim(),
      );
      item.command = { command: SHOW_MODEL_VIEW_COMMAND, title: "Show Model View", arguments: [file] };
      item.contextValue = "modelView";
      break;
    }
    case "branch": {
      const leaves = context.leavesOf(file);
      item = new vscode.TreeItem(state.data ? branchLabel(state.data, view.leafId) : "Branch", none);
      item.description = branchDescription(view, leaves, state.pinnedLeaf !== undefined);
      item.iconPath = icon("git-branch");
      item.tooltip = safeTooltip(`This session has ${leaves.length} branches; the one shown ends at entry ${view.leafId ?? "?"}${state.pinnedLeaf ? ", as chosen" : ", the newest"}. Click to choose which one to show.`);
      item.command = { command: CHOOSE_BRANCH_COMMAND, title: "Choose Branch", arguments: [file] };
      item.contextValue = "branch";
      break;
    }
    case "group": {
      item = new vscode.TreeItem(GROUP_LABELS[node.group], collapsed);
      item.description = String(groupSize(view, node.group));
      item.iconPath = icon(GROUP_ICONS[node.group]);
      item.contextValue = `group.${node.group}`;
      break;
    }
    case "summary": {
      const summary = findSummary(view, node.entryId);
      if (!summary) return new vscode.TreeItem("(summary not on this branch)");
      const calls = callsOfSummary(view, summary).length;
      const label = summaryLabel(summary, calls);
      item = new vscode.TreeItem(label, calls > 0 ? collapsed : none);
      item.description = firstWords(oneLine(summary.preview, 400), 80);
      item.iconPath = icon("note");
      const made = summary.prompt ? `Summary of ${calls} call${calls === 1 ? "" : "s"} made for prompt ${summary.promptNumber ?? "?"}: ${oneLine(summary.prompt, 300)}\n` : "";
      item.tooltip = safeTooltip(made, { code: summary.text.slice(0, 2000) });
      item.command = { command: OPEN_DOCUMENT_COMMAND, title: "Open Summary", arguments: [{ kind: "summary", file, entryId: summary.entryId }, `summary ${label}`] };
      item.contextValue = "summary";
      break;
    }
    case "call": {
      const call = findCall(view, node.key);
      if (!call) return new vscode.TreeItem("(call not on this branch)");
      item = new vscode.TreeItem(callLabel(call), none);
      const notes = callNotes(call, view, spillReason(view, call.occurrenceKey));
      item.description = [callDescription(call), ...notes.description].join(" · ");
      const [iconId, color] = STATE_ICONS[call.state];
      // A call that needs a look keeps its state's icon, tinted as a warning.
      item.iconPath = call.isError ? icon("error", "list.errorForeground") : icon(iconId, notes.warn ? "list.warningForeground" : color);
      item.tooltip = safeTooltip(`${call.toolName} · ${call.state}${call.shortRef ? ` · ${call.shortRef}` : ""}\n`, notes.tooltip, { code: JSON.stringify(call.args, null, 2).slice(0, 1500) });
      item.command = { command: OPEN_DOCUMENT_COMMAND, title: "Open Call", arguments: [{ kind: "call", file, key: call.occurrenceKey }, callTitle(call)] };
      item.contextValue = `call.${call.state}`;
      break;
    }
    case "chain": {
      const chain = findChain(view, node.entryId);
      if (!chain) return new vscode.TreeItem("(chain not on this branch)");
      const calls = chainChildren(node, view).length;
      item = new vscode.TreeItem(chain.blockId, calls > 0 ? collapsed : none);
      const kept = chain.protectedToolCallIds.length;
      const notes = chainNotes(chain);
      item.description = [...notes.description, chain.toolRefs.join(", "), kept ? `${kept} protected output${kept === 1 ? "" : "s"} kept` : ""].filter(Boolean).join(" · ");
      item.iconPath = notes.icon ?? icon("archive", "charts.yellow");
      item.tooltip = safeTooltip(notes.tooltip, chain.rangeSummaryText ? `${chain.rangeSummaryText.slice(0, 1500)}\n\n` : "", "Click to review: the original span beside what the model is sent.");
      item.command = { command: REVIEW_CHAIN_COMMAND, title: "Review Chain", arguments: [file, chain.entryId] };
      item.contextValue = "chain";
      break;
    }
    case "marker": {
      const marker = findMarker(view, node.entryId);
      if (!marker) return new vscode.TreeItem("(marker not on this branch)");
      item = new vscode.TreeItem(`${marker.kind} ${oneLine(marker.markerId, 40)}`, none);
      item.description = markerDescription(marker);
      const retired = marker.kind !== "checkpoint" && marker.state !== "active";
      item.iconPath = icon(MARKER_ICONS[marker.kind], retired ? "disabledForeground" : marker.kind !== "checkpoint" && marker.notApplied ? "list.warningForeground" : undefined);
      item.tooltip = markerTooltip(marker);
      if (marker.kind !== "checkpoint") {
        item.command = { command: OPEN_DOCUMENT_COMMAND, title: "Open Marker", arguments: [{ kind: "marker", file, entryId: marker.entryId }, `${marker.kind} ${marker.markerId}`] };
      }
      item.contextValue = marker.kind === "checkpoint" ? "marker.checkpoint" : `marker.${marker.kind}.${marker.state}`;
      break;
    }
    case "compaction": {
      const compaction = findCompaction(view, node.entryId);
      if (!compaction) return new vscode.TreeItem("(compaction not on this branch)");
      item = new vscode.TreeItem("Compaction", none);
      item.description = [compaction.tokensBefore !== undefined ? `${formatNumber(compaction.tokensBefore)} tokens before` : "", oneLine(compaction.summary, 60)].filter(Boolean).join(" · ");
      item.iconPath = icon("layers");
      item.tooltip = safeTooltip({ code: compaction.summary.slice(0, 2000) });
      item.command = { command: OPEN_DOCUMENT_COMMAND, title: "Open Compaction", arguments: [{ kind: "compaction", file, entryId: compaction.entryId }, `compaction ${compaction.entryId}`] };
      item.contextValue = "compaction";
      break;
    }
    case "writer":
    case "diagnostic":
    case "writerText":
      item = writerItem(node, view, file);
      break;
    case "message": {
      item = new vscode.TreeItem(oneLine(node.text, 100), none);
      item.iconPath = icon("warning", "list.warningForeground");
      break;
    }
    case "session":
      return sessionItem(node, state, context);
  }
  item.id = node.id;
  return item;
}

/** The state first (active, cancelled, stale), then what the marker does now. */
function markerDescription(marker: MarkerView): string {
  if (marker.kind === "checkpoint") return "set";
  return `${markerStateText(marker)} · ${oneLine(markerEffectText(marker), 120)}`;
}

function markerTooltip(marker: MarkerView): vscode.MarkdownString {
  if (marker.kind === "checkpoint") {
    return safeTooltip(`Checkpoint ${marker.markerId}, set by the person at entry ${marker.targetEntryId}: the agent may rewind back to it until it is used or revoked.`);
  }
  const head = `${marker.kind} ${marker.markerId} · ${markerStateText(marker)}\n${markerEffectText(marker)}\n\n`;
  if (marker.kind === "shrink") return safeTooltip(head, "Replacement (what the model is sent instead):\n", { code: marker.replacement.slice(0, 1500) });
  if (!marker.note) return safeTooltip(head, "No note was left with this rewind.");
  const { what_happened, true_current_state, next } = marker.note;
  return safeTooltip(head, { code: `What happened: ${what_happened}\nTrue current state: ${true_current_state}\nNext: ${next}`.slice(0, 1500) });
}

/** The session's sizes in words: raw → sent, what rewinds account for, and why when more is sent than raw. */
function totalsText(state: SessionState): string {
  const summary = state.summary;
  if (!summary && state.estimate) {
    const { rawChars, modelChars } = state.estimate;
    return `About ${formatNumber(rawChars)} characters raw → ${formatNumber(modelChars)} sent ${formatSaving(rawChars, modelChars)}: estimated from the file while the session is read in full.`;
  }
  if (!summary) return "Not read yet.";
  const lines = [
    `${formatNumber(summary.rawChars)} characters raw → ${formatNumber(summary.modelChars ?? summary.rawChars)} sent ${formatSaving(summary.rawChars, summary.modelChars)} (tokens ≈ characters / 4). ${summary.calls} tool calls, ${summary.pruned} pruned.`,
  ];
  const totals = summary.reclaim;
  if (totals?.rewoundChars) lines.push(`The agent's rewinds leave ${formatNumber(totals.rewoundChars)} characters of it out.`);
  if (totals?.rewindsNotApplied) lines.push(`${totals.rewindsNotApplied} active rewind${totals.rewindsNotApplied === 1 ? " leaves" : "s leave"} nothing out now (see Self-control markers for why).`);
  if (summary.modelChars !== undefined && summary.modelChars > summary.rawChars && totals?.excess) lines.push(`More is sent than raw: ${totals.excess}.`);
  else if (totals?.cutAt) lines.push(`Counted from entry ${totals.cutAt}: the branch is cut there (see the session's problems).`);
  return lines.join("\n");
}
