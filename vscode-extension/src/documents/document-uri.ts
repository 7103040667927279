// Where a document of the `pi-pruner:` scheme comes from: what it shows (a call, a summary, a
// request's model view, …) and its editor tab's title, both in its URI, so a document can be
// opened from a tree item's command, a quick pick or a test, and read back by the provider.
import * as vscode from "vscode";
import { uriSafeName } from "../text.ts";

export const SCHEME = "pi-pruner";

export type DocumentRequest =
  | { kind: "call"; file: string; key: string }
  | { kind: "summary"; file: string; entryId: string }
  /** `request`: a request already sent (1-based), or "next"; absent, the last request sent. */
  | { kind: "model"; file: string; request?: number | "next" }
  | { kind: "chain"; file: string; entryId: string; side: "original" | "compressed" }
  | { kind: "compaction"; file: string; entryId: string }
  | { kind: "marker"; file: string; entryId: string }
  | { kind: "badLines"; file: string }
  | { kind: "writerText"; file: string; entryId: string };

/**
 * The URI of a document; `title` becomes the editor tab's name. Every document is `.txt`, summaries
 * included: a `.md` name would hand the text to the markdown extension, whose link provider makes
 * a summary's `[x](command:…)` a Ctrl+click away from running.
 */
export function documentUri(request: DocumentRequest, title: string): vscode.Uri {
  return vscode.Uri.from({ scheme: SCHEME, path: `/${uriSafeName(title)}.txt`, query: JSON.stringify(request) });
}

export function parseDocumentUri(uri: vscode.Uri): DocumentRequest | undefined {
  try {
    const value: unknown = JSON.parse(uri.query);
    if (typeof value === "object" && value !== null && typeof (value as { kind?: unknown }).kind === "string" && typeof (value as { file?: unknown }).file === "string") {
      return value as DocumentRequest;
    }
  } catch {
    // Not one of ours.
  }
  return undefined;
}

export function openDocument(request: DocumentRequest, title: string): Thenable<vscode.TextEditor> {
  return vscode.window.showTextDocument(documentUri(request, title), { preview: true });
}
