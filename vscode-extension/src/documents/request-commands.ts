// Stepping through the requests a session sent, in its model view: Go to Request… (a quick pick of
// every request with its prompt and time), Previous Request and Next Request, and Compare with
// Previous Request (a diff of the two requests' model views, at the first change). They act on the
// model view in the active editor (its title bar shows them while one is), or open one for a session.
import * as vscode from "vscode";
import { firstWords, type ModelRequestRef } from "@pi-pruner/core";
import { COMPARE_WITH_PREVIOUS_REQUEST_COMMAND, GO_TO_REQUEST_COMMAND, NEXT_REQUEST_COMMAND, PREVIOUS_REQUEST_COMMAND, SHOW_MODEL_VIEW_COMMAND } from "../command-ids.ts";
import { pickSession, sessionPathOf, type SessionPickContext } from "../selection.ts";
import { sessionLabel } from "../session-names.ts";
import type { SessionState, SessionStore } from "../store/session-store.ts";
import { formatDateTime, oneLine } from "../text.ts";
import { requestCount } from "../view-lookup.ts";
import { documentUri, openDocument, parseDocumentUri, SCHEME, type DocumentRequest } from "./document-uri.ts";
import { requestChoiceOf, requestNumber, requestsOf, type RequestChoice } from "./model-requests.ts";
/** True while the active editor shows a model view (the title bar's step commands need it). */
const MODEL_VIEW_ACTIVE = "piPruner.modelViewActive";

export type RequestCommandContext = SessionPickContext;

/**
 * The model view a command acts on: the document an editor title button passes (its URI), else the
 * active editor's; its session file and which request it shows.
 */
function activeModelView(arg?: unknown): { file: string; choice: RequestChoice } | undefined {
  const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
  if (uri?.scheme !== SCHEME) return undefined;
  const request = parseDocumentUri(uri);
  return request?.kind === "model" ? { file: request.file, choice: requestChoiceOf(request.request) } : undefined;
}

/** How a choice reads in a tab's title. */
function choiceTitle(choice: RequestChoice, count: number): string {
  if (choice === "next") return "next request";
  if (choice === "last") return "last request sent";
  return `request ${choice} of ${count}`;
}

/** The model view of `file` at `choice`: what its document serves, and its tab's title. */
function modelView(state: SessionState, file: string, choice: RequestChoice): { request: DocumentRequest; title: string } {
  const count = state.data && state.view ? requestCount(state.data, state.view.leafId) : 0;
  return {
    request: { kind: "model", file, ...(choice === "last" ? {} : { request: choice }) },
    title: `model view ${sessionLabel(state)} · ${choiceTitle(choice, count)}`,
  };
}

/** Opens the model view of `file` at `choice` (the last request sent, a numbered one, or the next), in the preview tab. */
export async function openModelView(store: SessionStore, file: string, choice: RequestChoice): Promise<vscode.TextEditor | undefined> {
  const state = await store.load(file);
  if (!state) return undefined;
  const { request, title } = modelView(state, file, choice);
  return openDocument(request, title);
}

/** The line count of a model view's `#` header and the blank line after it: its messages start there. */
function bodyStart(lines: readonly string[]): number {
  const blank = lines.indexOf("");
  return blank < 0 ? lines.length : blank + 1;
}

/**
 * The first line of `after`'s messages that is not the same line of `before`'s (0-based, in the
 * whole of `after`): the headers differ by design (request number, cost), so only the messages are
 * compared. Where `after` only adds messages, the first one added; where nothing changed, the first.
 */
function firstChangedLine(before: string, after: string): number {
  const a = before.split("\n");
  const b = after.split("\n");
  const startA = bodyStart(a);
  const startB = bodyStart(b);
  let i = 0;
  while (startA + i < a.length && startB + i < b.length && a[startA + i] === b[startB + i]) i++;
  return Math.min(startB + i, Math.max(0, b.length - 1));
}

/** A quick-pick row for a request: its number and prompt, its time, what its answer did. */
function requestItem(request: ModelRequestRef, count: number, shown: number | undefined): vscode.QuickPickItem & { choice: RequestChoice } {
  const parts: string[] = [];
  if (request.timestamp !== undefined) parts.push(formatDateTime(request.timestamp, { seconds: true }));
  parts.push(request.toolCalls > 0 ? `${request.toolCalls} tool call${request.toolCalls === 1 ? "" : "s"}` : "reply");
  if (request.n === count) parts.push("last sent");
  if (request.n === shown) parts.push("shown");
  return {
    label: `${request.n}. ${request.prompt ? firstWords(oneLine(request.prompt, 200), 60) : "(before any prompt)"}`,
    description: parts.join(" · "),
    choice: request.n,
  };
}

export function registerRequestCommands(context: RequestCommandContext): vscode.Disposable[] {
  const { store } = context;
  const updateContext = () => void vscode.commands.executeCommand("setContext", MODEL_VIEW_ACTIVE, activeModelView() !== undefined);

  /** The shown view's place: which request of how many (undefined: the next one). */
  const placeOf = async (view: { file: string; choice: RequestChoice }) => {
    const state = await store.load(view.file);
    const count = state?.data && state.view ? requestCount(state.data, state.view.leafId) : 0;
    return { count, n: requestNumber(view.choice, count) };
  };

  const step = async (direction: 1 | -1, arg: unknown) => {
    const view = activeModelView(arg);
    if (!view) {
      const file = await pickSession(context, "Show the model view of…");
      return file ? openModelView(store, file, "last") : undefined;
    }
    const { count, n } = await placeOf(view);
    if (direction === 1) {
      if (n === undefined) return context.prompter().info("Pi Pruner: this is the next request; nothing after it was sent.");
      return openModelView(store, view.file, n >= count ? "next" : n + 1);
    }
    if (n === undefined) return count > 0 ? openModelView(store, view.file, count) : context.prompter().info("Pi Pruner: no request was sent on this branch yet.");
    if (n <= 1) return context.prompter().info("Pi Pruner: request 1 is the first this branch sent.");
    return openModelView(store, view.file, Math.min(n, count + 1) - 1);
  };

  return [
    vscode.window.onDidChangeActiveTextEditor(updateContext),
    // A session's model view opens on the last request it sent.
    vscode.commands.registerCommand(SHOW_MODEL_VIEW_COMMAND, async (arg?: unknown) => {
      const file = sessionPathOf(arg) ?? (await pickSession(context, "Show the model view of…"));
      return file ? openModelView(store, file, "last") : undefined;
    }),
    vscode.commands.registerCommand(NEXT_REQUEST_COMMAND, (arg?: unknown) => step(1, arg)),
    vscode.commands.registerCommand(PREVIOUS_REQUEST_COMMAND, (arg?: unknown) => step(-1, arg)),
    vscode.commands.registerCommand(COMPARE_WITH_PREVIOUS_REQUEST_COMMAND, async (arg?: unknown) => {
      const active = activeModelView(arg);
      const file = active?.file ?? (arg instanceof vscode.Uri ? undefined : sessionPathOf(arg)) ?? (await pickSession(context, "Compare the last request of…"));
      if (!file) return undefined;
      const state = await store.load(file);
      if (!state?.data || !state.view) return undefined;
      const count = requestCount(state.data, state.view.leafId);
      const n = requestNumber(active?.choice ?? "last", count);
      if (count === 0) return context.prompter().info("Pi Pruner: no request was sent on this branch yet; there is nothing to compare.");
      if (n === 1) return context.prompter().info("Pi Pruner: request 1 is the first this branch sent; there is no request before it to compare with.");
      if (n !== undefined && n > count) return context.prompter().info(`Pi Pruner: request ${n} is not on the branch shown; it sent ${count}.`);
      // Numbered on both sides (the next request excepted): a diff of "the last request" would move as Pi writes.
      const left = modelView(state, file, n === undefined ? count : n - 1);
      const right = modelView(state, file, n ?? "next");
      const leftUri = documentUri(left.request, left.title);
      const rightUri = documentUri(right.request, right.title);
      const [before, after] = await Promise.all([vscode.workspace.openTextDocument(leftUri), vscode.workspace.openTextDocument(rightUri)]);
      const line = firstChangedLine(before.getText(), after.getText());
      const title = `Request ${n === undefined ? count : n - 1} ↔ ${n ?? "next"} — ${sessionLabel(state)}`;
      await vscode.commands.executeCommand("vscode.diff", leftUri, rightUri, title, {
        preview: true,
        selection: new vscode.Range(line, 0, line, 0),
      } satisfies vscode.TextDocumentShowOptions);
      return vscode.window.activeTextEditor;
    }),
    vscode.commands.registerCommand(GO_TO_REQUEST_COMMAND, async (arg?: unknown) => {
      const active = activeModelView(arg);
      const file =
        (arg instanceof vscode.Uri ? undefined : sessionPathOf(arg)) ??
        active?.file ??
        (await pickSession(context, "Show a request of…"));
      if (!file) return undefined;
      const state = await store.load(file);
      if (!state?.data || !state.view) return undefined;
      const requests = requestsOf(state.data, state.view.leafId);
      const shown = active?.file === file ? requestNumber(active.choice, requests.length) : undefined;
      const next = { label: "Next request", description: `not sent yet: what the model is sent when the session goes on${active?.file === file && shown === undefined ? " · shown" : ""}`, choice: "next" as RequestChoice };
      // Newest first: the requests a person looks for are usually the recent ones.
      const items = [next, ...requests.map((r) => requestItem(r, requests.length, shown)).reverse()];
      const picked = await context.prompter().pick(items, { title: `Which request of ${sessionLabel(state)}? (${requests.length} sent on this branch)`, matchOnDescription: true });
      return picked ? openModelView(store, file, picked.choice) : undefined;
    }),
  ];
}
