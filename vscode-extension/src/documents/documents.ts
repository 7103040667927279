// Read-only documents under the `pi-pruner:` scheme: a pruned call with its full original output,
// a summary's markdown, the model view of a session (rewound spans and shrinks marked), the two
// sides of a chain review, a compaction, a rewind or shrink with its note or replacement, and a
// session's unreadable lines. Content is plain text built from the session
// file; nothing in it is interpreted, and a document is only ever opened by a person's click.
import * as vscode from "vscode";
import { contentText } from "@pi-pruner/core";
import type { AgentMessage, ToolResultMessage } from "@pi-pruner/core";
import { BodyCache } from "@pi-pruner/core";
import { buildModelViewWithBodies, modelViewText, NEXT_REQUEST_TITLE, NUDGES_NOT_SHOWN, settingsSourceText, type ModelView, type RequestView } from "@pi-pruner/core";
import { markerEffectText, markerStateText, type MarkerView } from "@pi-pruner/core";
import { fileSpillStorage } from "@pi-pruner/core";
import type { RenderConfig } from "@pi-pruner/core";
import { requestCostLine, sizesLine } from "@pi-pruner/core";
import type { CallView, SessionView } from "@pi-pruner/core";
import { buildChainReview } from "@pi-pruner/core";
import type { SessionState, SessionStore } from "../store/session-store.ts";
import { documentText, formatDateTime, formatNumber, oneLine } from "../text.ts";
import { findCall, findChain, findCompaction, findMarker, findSummary, requestCount } from "../view-lookup.ts";
import { parseDocumentUri, SCHEME, type DocumentRequest } from "./document-uri.ts";
import { requestChoiceOf, requestNumber, RequestViews } from "./model-requests.ts";
import { writerLines, writerTextDocument } from "./writer-documents.ts";

/** The call's tool result as stored, its output read back from the file when it was left there. */
async function resultMessage(state: SessionState, call: CallView, bodies: BodyCache): Promise<ToolResultMessage | undefined> {
  const entry = call.resultEntryId ? state.data?.byId.get(call.resultEntryId) : undefined;
  if (!entry) return undefined;
  const [full] = await bodies.withBodies(state.file.path, state.data?.elided, [entry]);
  const message = (full as { message?: AgentMessage } | undefined)?.message;
  return message?.role === "toolResult" ? message : undefined;
}

/** What the model is sent at the branch shown, with every body read back. */
function modelOf(state: SessionState, config: RenderConfig, bodies: BodyCache): Promise<ModelView> {
  return buildModelViewWithBodies(state.file.path, state.data!, { leafId: state.view!.leafId ?? undefined, config, cache: bodies });
}

/** Bodies read back for documents are kept this long after their last use. */
const BODIES_KEPT_MS = 60_000;

/** A call's ref as its writer named it: the short ref, or its tool-call id when it was given none. */
function refOf(call: CallView): string {
  return call.shortRef ?? `${call.toolCallId} (its tool-call id: it was given no short ref)`;
}

function describeState(call: CallView): string {
  switch (call.state) {
    case "summarized":
      return `summarized (ref ${refOf(call)}${call.summaryEntryId ? `, summary entry ${call.summaryEntryId}` : ""})`;
    case "superseded":
      return `superseded by ${call.supersededBy ?? "a later call"}: no summary needed, ref ${refOf(call)}`;
    case "deduped":
      return `deduplicated: the same output as ${call.aliasOf ?? "an earlier call"}, which stands in for it`;
    case "spilled":
      return `spilled to disk (${formatNumber(call.spillBytes ?? 0)} bytes), ref ${refOf(call)}`;
    case "compressed":
      return `inside compressed chain ${call.chainBlockId ?? "?"}`;
    case "protected":
      return call.protectedBy?.kind === "tool" ? `protected: tool \`${call.protectedBy.name}\` is in protectedTools` : `protected: path matches \`${call.protectedBy?.pattern ?? "?"}\``;
    case "raw":
      return "raw (not pruned)";
  }
}

async function callDocument(state: SessionState, call: CallView, bodies: BodyCache): Promise<string> {
  const lines: string[] = [];
  lines.push(`# ${call.toolName}${call.shortRef ? ` · ${call.shortRef}` : ""} · ${call.state}`);
  lines.push(`# Session: ${state.file.path}`);
  lines.push(`Tool:         ${call.toolName}`);
  lines.push(`Tool-call id: ${call.toolCallId}`);
  lines.push(`Occurrence:   ${call.occurrenceKey}`);
  lines.push(`Status:       ${call.isError ? "error" : "ok"}`);
  lines.push(`State:        ${describeState(call)}`);
  if (call.sent) lines.push(`Sent:         ${call.sent.text}`);
  if (call.unrecoverable) lines.push(`Recovery:     cannot be recovered: ${call.unrecoverable}`);
  lines.push("");
  lines.push("Arguments:");
  lines.push(JSON.stringify(call.args, null, 2) ?? "{}");
  lines.push("");

  const message = await resultMessage(state, call, bodies);
  const sessionText = message ? contentText(message.content) : undefined;
  const images = message && Array.isArray(message.content) ? message.content.filter((b) => b && b.type === "image").length : 0;
  let output = sessionText;
  let source = "as stored in the session file";
  if (call.spillPath) {
    const sessionId = state.head.id ?? state.data?.header?.id;
    // Core's reader refuses anything but a plain file inside the session's own blobs folder, and
    // opens without waiting, so a FIFO in a spill's place cannot block the extension host.
    const spill = await fileSpillStorage(state.file.path, sessionId).read(call.spillPath);
    if (spill.ok) {
      output = spill.text;
      source = `from the spill file ${spill.path}`;
    } else {
      lines.push(`Spill file not read: ${spill.reason}.`);
      source = sessionText !== undefined ? "as stored in the session file instead" : source;
    }
  }
  if (output === undefined) {
    lines.push("Output: the tool result is not in the session file.");
  } else {
    lines.push(`Output (${formatNumber(output.length)} characters, ${source}${images ? `; ${images} image(s) not shown` : ""}):`);
    lines.push("─".repeat(72));
    lines.push(output);
  }
  return documentText(lines.join("\n") + "\n");
}

/** The characters line of a model document's header. */

const STEPPING_LINE = "# Other requests: Previous Request, Next Request, Go to Request… and Compare with Previous Request in this editor's title bar.\n";

/** The model view of the next request: what the model is sent when the session goes on from the leaf. */
async function nextRequestDocument(state: SessionState, config: RenderConfig, bodies: BodyCache, sent: number): Promise<string> {
  const model = await modelOf(state, config, bodies);
  const header =
    `# Model view: ${NEXT_REQUEST_TITLE}\n` +
    `# ${sent > 0 ? `After request ${sent} of ${sent}, the last one sent` : "No request was sent on this branch yet"}; at leaf ${model.leafId ?? "(empty)"}.\n` +
    `# Session: ${state.file.path}\n` +
    writerLines(state.view!, model) +
    sizesLine(model) +
    `# ${model.messages.length} messages; the system prompt is not included.\n` +
    controlsLines(model) +
    (sent > 0 ? STEPPING_LINE : "") +
    "\n";
  return documentText(header + modelViewText(model));
}

/** When a request was answered, and the prompt it worked on. */
function requestContextLine(view: RequestView): string {
  const { request } = view;
  const parts = [request.prompt ? `for the prompt "${oneLine(request.prompt, 120)}"` : "before any prompt"];
  if (request.timestamp !== undefined) parts.push(`answered ${formatDateTime(request.timestamp, { seconds: true })}`);
  if (request.toolCalls > 0) parts.push(`the answer made ${request.toolCalls} tool call${request.toolCalls === 1 ? "" : "s"}`);
  return `# ${parts.join("; ")}.\n`;
}

async function modelDocument(state: SessionState, config: RenderConfig, bodies: BodyCache, views: RequestViews, choice: number | "next" | undefined): Promise<string> {
  const data = state.data!;
  const leafId = state.view!.leafId;
  const count = requestCount(data, leafId);
  const wanted = requestChoiceOf(choice);
  const n = requestNumber(wanted, count);
  if (n === undefined) return nextRequestDocument(state, config, bodies, count);
  if (n > count) return documentText(`# Request ${n} is not on the branch shown: it sent ${count} request${count === 1 ? "" : "s"}.\n# Session: ${state.file.path}\n`);
  const view = await views.render(state.file.path, data, leafId, n, config, bodies);
  const cost = await views.cost(state.file.path, data, leafId, n, config, bodies);
  const header =
    `# Model view: ${n === count ? "last request sent, " : ""}request ${n} of ${count}, as it was sent\n` +
    requestContextLine(view) +
    `# ${settingsSourceText(view.settings)}.\n` +
    // The same words as `pi-pruner view --request N`: tokens read, written and uncached, and what made it rewrite.
    (cost ? `# cost: ${requestCostLine(cost, formatNumber)}\n` : "") +
    `# Session: ${state.file.path}\n` +
    writerLines(state.view!, view, "sent") +
    sizesLine(view) +
    `# ${view.messages.length} messages; the system prompt is not included; ${NUDGES_NOT_SHOWN}.\n` +
    controlsLines(view) +
    STEPPING_LINE +
    "\n";
  return documentText(header + modelViewText(view));
}

/** A `#` line per rewind and shrink on the branch: the body marks where they apply. */
function controlsLines(model: Pick<ModelView, "controls">): string {
  const { markers, enabled } = model.controls;
  const lines = markers.map((m) => `# ${m.kind} ${m.markerId} · ${markerStateText(m)} · ${oneLine(markerEffectText(m), 160)}`);
  if (!enabled && markers.length > 0) lines.unshift("# Self-control is off (contextPrune.selfControl.enabled): these markers change nothing.");
  return lines.map((l) => `${l}\n`).join("");
}

function markerDocument(state: SessionState, marker: Exclude<MarkerView, { kind: "checkpoint" }>): string {
  const lines = [`# ${marker.kind} ${marker.markerId} · ${markerStateText(marker)}`, `# Session: ${state.file.path}`, `Marker entry: ${marker.entryId}`];
  if (marker.kind === "rewind") {
    lines.push(`Granularity:  ${marker.granularity}${marker.checkpoint ? ` (checkpoint ${marker.checkpoint})` : ""}`);
    lines.push(`Now:          ${markerEffectText(marker)}`);
    lines.push(`Entries it names: ${marker.hiddenEntries}`);
    lines.push("");
    if (marker.note) {
      lines.push("Note left for the agent:");
      lines.push(`  What happened:      ${marker.note.what_happened}`);
      lines.push(`  True current state: ${marker.note.true_current_state}`);
      lines.push(`  Next:               ${marker.note.next}`);
    } else lines.push("No note was left with this rewind.");
    const ledger = marker.ledger;
    if (ledger && (ledger.readFiles.length || ledger.modifiedFiles.length || ledger.bashSideEffects.length)) {
      lines.push("");
      lines.push("What the rewound span did (it stays done):");
      if (ledger.readFiles.length) lines.push(`  Read:     ${ledger.readFiles.join(", ")}`);
      if (ledger.modifiedFiles.length) lines.push(`  Modified: ${ledger.modifiedFiles.join(", ")}`);
      for (const command of ledger.bashSideEffects) lines.push(`  Ran:      ${command}`);
    }
  } else {
    lines.push(`Target:       ${marker.targetText}${marker.targetEntryId ? ` (entry ${marker.targetEntryId})` : ""}`);
    lines.push(`Now:          ${marker.applied ? "the model is sent the replacement instead of that message" : marker.state === "active" ? `not shown: ${marker.notApplied ?? "?"}` : "retired: the model is sent the message itself"}`);
    if (marker.reason) lines.push(`Reason:       ${marker.reason}`);
    lines.push("");
    lines.push(`Replacement (${formatNumber(marker.replacement.length)} characters):`);
    lines.push("─".repeat(72));
    lines.push(marker.replacement);
  }
  return documentText(lines.join("\n") + "\n");
}

export class PrunerDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly subscription: vscode.Disposable;
  /** Documents shown again while Pi writes read only the new lines; the bodies go a minute after the last use. */
  private readonly bodies = new BodyCache();
  private bodiesTimer: NodeJS.Timeout | undefined;
  /** Request views keep the bodies they were rendered from: they go with them. */
  private readonly requestViews = new RequestViews();

  private readonly store: SessionStore;

  constructor(store: SessionStore) {
    this.store = store;
    // Open documents of a session follow it while Pi writes (at most a few times a second).
    this.subscription = store.onDidChangeSession((file) => {
      if (this.timers.has(file)) return;
      this.timers.set(
        file,
        setTimeout(() => {
          this.timers.delete(file);
          for (const doc of vscode.workspace.textDocuments) {
            if (doc.uri.scheme === SCHEME && parseDocumentUri(doc.uri)?.file === file) this.changed.fire(doc.uri);
          }
        }, 300),
      );
    });
  }

  /** The body cache, kept for another BODIES_KEPT_MS. */
  private useBodies(): BodyCache {
    if (this.bodiesTimer) clearTimeout(this.bodiesTimer);
    this.bodiesTimer = setTimeout(() => {
      this.bodies.clear();
      this.requestViews.clear();
    }, BODIES_KEPT_MS);
    this.bodiesTimer.unref?.();
    return this.bodies;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const request = parseDocumentUri(uri);
    if (!request) return "This is not a Pi Pruner document.\n";
    const state = await this.store.load(request.file);
    if (!state) return `The session ${request.file} is no longer listed.\n`;
    if (!state.data || !state.view) return `The session ${request.file} could not be read: ${state.error ?? "unknown error"}\n`;
    try {
      return await this.content(request, state, state.view);
    } catch (error) {
      // Reading a body back failed: the file was rewritten since it was read (the store reads it
      // again on its next change), or it went away.
      return documentText(`The output could not be read back from ${request.file}: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }

  private async content(request: DocumentRequest, state: SessionState, view: SessionView): Promise<string> {
    switch (request.kind) {
      case "call": {
        const call = findCall(view, request.key);
        return call ? callDocument(state, call, this.useBodies()) : `The call ${request.key} is not on the branch shown for this session.\n`;
      }
      case "summary": {
        const summary = findSummary(view, request.entryId);
        if (!summary) return `The summary ${request.entryId} is not on the branch shown for this session.\n`;
        return documentText(`${summary.text}\n`);
      }
      case "model":
        return modelDocument(state, this.store.configFor(state), this.useBodies(), this.requestViews, request.request);
      case "chain": {
        const chain = findChain(view, request.entryId);
        if (!chain) return `The chain ${request.entryId} is not on the branch shown for this session.\n`;
        const review = buildChainReview(await modelOf(state, this.store.configFor(state), this.useBodies()), chain);
        return documentText(request.side === "original" ? review.original : review.compressed);
      }
      case "compaction": {
        const compaction = findCompaction(view, request.entryId);
        if (!compaction) return `The compaction ${request.entryId} is not on the branch shown for this session.\n`;
        const before = compaction.tokensBefore !== undefined ? ` (${formatNumber(compaction.tokensBefore)} tokens before, as Pi counted)` : "";
        return documentText(`# Pi compaction ${compaction.entryId}${before}\n# Kept from entry ${compaction.firstKeptEntryId ?? "?"}\n\n${compaction.summary}\n`);
      }
      case "marker": {
        const marker = findMarker(view, request.entryId);
        if (!marker || marker.kind === "checkpoint") return `The marker ${request.entryId} is not on the branch shown for this session.\n`;
        return markerDocument(state, marker);
      }
      case "writerText": {
        const chain = findChain(view, request.entryId);
        if (!chain?.writerText) return `The chain ${request.entryId} is not on the branch shown for this session.\n`;
        return writerTextDocument(state, view, chain);
      }
      case "badLines": {
        const lines = view.errors.map((e) => `line ${e.line}: ${e.message}`);
        const problems = view.problems.map((p) => `problem: ${p}`);
        return documentText(`# ${state.file.path}\n# What could not be read (everything else is shown)\n\n${[...lines, ...problems].join("\n")}\n`);
      }
    }
  }

  dispose(): void {
    if (this.bodiesTimer) clearTimeout(this.bodiesTimer);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.subscription.dispose();
    this.changed.dispose();
  }
}
