// Export a session to a markdown file the person chooses: its model view (the last request sent,
// or the request the active model view shows), or its summaries with the calls under each. Core
// writes the markdown, every piece of session text fenced so that nothing in it acts when rendered.
import * as vscode from "vscode";
import { BodyCache, buildModelViewWithBodies, modelViewMarkdown, summariesMarkdown, type ExportSource } from "@pi-pruner/core";
import { EXPORT_SESSION_COMMAND } from "../command-ids.ts";
import { pickSession, sessionPathOf, type SessionPickContext } from "../selection.ts";
import { sessionLabel } from "../session-names.ts";
import type { SessionState } from "../store/session-store.ts";
import { uriSafeName } from "../text.ts";
import { requestCount } from "../view-lookup.ts";
import { parseDocumentUri, SCHEME } from "./document-uri.ts";
import { requestChoiceOf, requestNumber, RequestViews, type RequestChoice } from "./model-requests.ts";

/** Where the markdown goes: the save dialog, unless a test answers instead. */
export type SaveTarget = (defaultUri: vscode.Uri | undefined) => Promise<vscode.Uri | undefined>;

export const saveDialog: SaveTarget = (defaultUri) =>
  Promise.resolve(vscode.window.showSaveDialog({ ...(defaultUri ? { defaultUri } : {}), filters: { Markdown: ["md"] }, title: "Export the session to markdown", saveLabel: "Export" }));

export interface ExportContext extends SessionPickContext {
  saveTarget: () => SaveTarget;
}

type ExportKind = "model" | "summaries";

/** The session and request the command acts on: a model view passed or active, a session item, the selection, or the person's pick. */
async function exportSubject(context: ExportContext, arg: unknown): Promise<{ file: string; choice?: RequestChoice } | undefined> {
  const uri = arg instanceof vscode.Uri ? arg : arg === undefined ? vscode.window.activeTextEditor?.document.uri : undefined;
  if (uri?.scheme === SCHEME) {
    const request = parseDocumentUri(uri);
    if (request?.kind === "model") return { file: request.file, choice: requestChoiceOf(request.request) };
  }
  const file = sessionPathOf(arg) ?? (await pickSession(context, "Export which session?"));
  return file ? { file } : undefined;
}

/** The markdown of the session's model view at `choice`: a request already sent, or the next one. */
async function modelMarkdown(context: ExportContext, state: SessionState, choice: RequestChoice, source: ExportSource): Promise<string> {
  const data = state.data!;
  const leafId = state.view!.leafId;
  const config = context.store.configFor(state);
  const bodies = new BodyCache();
  const count = requestCount(data, leafId);
  const n = requestNumber(choice, count);
  if (n === undefined || n > count) {
    const next = await buildModelViewWithBodies(state.file.path, data, { leafId: leafId ?? undefined, config, cache: bodies });
    return modelViewMarkdown(next, { ...source, shown: "the next request (what the model is sent when the session goes on)" });
  }
  const view = await new RequestViews().render(state.file.path, data, leafId, n, config, bodies);
  return modelViewMarkdown(view, { ...source, shown: `request ${n} of ${count}, as it was sent` });
}

export function registerExportCommands(context: ExportContext): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand(EXPORT_SESSION_COMMAND, async (arg?: unknown) => {
      const subject = await exportSubject(context, arg);
      if (!subject) return;
      // Only a session the store lists: the argument may come from a command link elsewhere.
      const state = context.store.get(subject.file) ? await context.store.load(subject.file) : undefined;
      if (!state?.data || !state.view) {
        context.prompter().error(`Pi Pruner: the session ${subject.file} could not be read${state?.error ? `: ${state.error}` : ""}.`);
        return;
      }
      const picked = await context.prompter().pick<vscode.QuickPickItem & { what: ExportKind }>(
        [
          { label: "Model view", description: subject.choice === undefined ? "the last request sent" : "the request shown", what: "model" },
          { label: "Summaries with their calls", description: `${state.view.summaries.length} on the branch shown`, what: "summaries" },
        ],
        { title: "Export what to markdown?" },
      );
      if (!picked) return;
      const label = sessionLabel(state);
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
      const name = `${uriSafeName(label, 50)} ${picked.what === "model" ? "model view" : "summaries"}.md`;
      const target = await context.saveTarget()(folder ? vscode.Uri.joinPath(folder, name) : undefined);
      if (!target) return;
      const source: ExportSource = { sessionFile: state.file.path, sessionName: label };
      const markdown = picked.what === "model" ? await modelMarkdown(context, state, subject.choice ?? "last", source) : summariesMarkdown(state.view, source);
      await vscode.workspace.fs.writeFile(target, new TextEncoder().encode(markdown));
      context.prompter().info(`Pi Pruner: exported to ${vscode.workspace.asRelativePath(target, false)}.`);
    }),
  ];
}
