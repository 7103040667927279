// What the editor calls a session, a call and a session's writer, wherever it names them: the
// Sessions view, quick picks, document and panel titles, the status bar.
import { basename } from "node:path";
import type { CallView, SessionView } from "@pi-pruner/core";
import type { SessionState } from "./store/session-store.ts";
import { oneLine } from "./text.ts";

/** A session's whole name on one line: its `session_info` name, else its first prompt, else the file's name. */
export function sessionName(state: SessionState): string {
  const name = state.summary?.name ?? state.head.name;
  const prompt = state.summary?.firstPrompt ?? state.head.firstPrompt;
  return oneLine(name || prompt || basename(state.file.path), 200) || basename(state.file.path);
}

/** A session's name for quick picks, titles and the status bar (the tree's row shortens it further). */
export function sessionLabel(state: SessionState): string {
  return oneLine(sessionName(state), 70);
}

/** A short title for a call document. */
export function callTitle(call: CallView): string {
  return `${call.shortRef ?? call.toolName} ${call.toolName} ${oneLine(call.path ?? call.command ?? "", 40)}`;
}

/** The name a person reads for the session's writer, without the signs. */
export function writerName(view: SessionView): string {
  const writers = view.writer.writers.filter((w) => w.name !== "pi-pruner");
  return writers.length ? writers.map((w) => w.label).join(" and ") : view.writer.label;
}
