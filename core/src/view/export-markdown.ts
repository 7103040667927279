// A session exported to markdown: its model view, or its summaries with the calls under each. The
// text comes from a session file, so nothing of it may act when the markdown is rendered: every
// piece of session text sits in a fenced block whose fence is longer than any backtick run inside
// it, and only our fixed words stand outside the fences (no links, no HTML, no session names in
// headings), so no renderer turns a link into a command or runs markup.
import type { ModelView } from "./model-view.ts";
import { modelViewText } from "./model-view.ts";
import type { CallView, SessionView } from "./session-view.ts";
import { callStateText } from "./file-calls.ts";
import { shownValue } from "../shapes/deep-json.ts";

/** A fence for `text`: three backticks, or one more than its longest run of backticks. */
export function fenceFor(text: string): string {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return "`".repeat(Math.max(3, longest + 1));
}

/** `text` as a fenced block with no info string: shown as it is, never rendered. */
export function fenced(text: string): string {
  const fence = fenceFor(text);
  return `${fence}\n${text.endsWith("\n") ? text : `${text}\n`}${fence}\n`;
}

/** Where the exported text came from; every field is session text, so it is fenced too. */
export interface ExportSource {
  sessionFile: string;
  sessionName?: string;
  /** Which request the model view shows, in words ("request 3 of 5, as it was sent"). */
  shown?: string;
}

function sourceBlock(source: ExportSource, extra: string[] = []): string {
  const lines = [`Session file: ${source.sessionFile}`];
  if (source.sessionName) lines.push(`Session: ${source.sessionName}`);
  if (source.shown) lines.push(`Shown: ${source.shown}`);
  return fenced([...lines, ...extra].join("\n"));
}

/** The model view as markdown: where it came from, its sizes, then what the model is sent. */
export function modelViewMarkdown(view: Pick<ModelView, "messages" | "controls" | "rawChars" | "modelChars">, source: ExportSource): string {
  const parts = [
    "# Pi Pruner model view\n",
    sourceBlock(source, [`Characters: raw ${view.rawChars} → sent ${view.modelChars}`, `Messages sent: ${view.messages.length} (the system prompt is not included)`]),
    "\n## What the model is sent\n",
    fenced(modelViewText(view)),
  ];
  return parts.join("\n");
}

function callBlock(call: CallView): string {
  const lines = [
    `Tool: ${call.toolName}${call.shortRef ? ` · ref ${call.shortRef}` : ""}`,
    `Tool-call id: ${call.toolCallId}`,
    `State: ${callStateText(call)}`,
    `Raw output: ${call.rawChars} characters`,
    "Arguments:",
    JSON.stringify(shownValue(call.args), null, 2) ?? "{}",
  ];
  return fenced(lines.join("\n"));
}

/** The summaries of the branch shown, each with its text and the calls it stands for. */
export function summariesMarkdown(view: Pick<SessionView, "summaries" | "calls">, source: ExportSource): string {
  const byKey = new Map(view.calls.map((c) => [c.occurrenceKey, c]));
  const parts = ["# Pi Pruner summaries\n", sourceBlock(source, [`Summaries: ${view.summaries.length}`])];
  if (view.summaries.length === 0) parts.push("\nThis branch has no summaries.\n");
  view.summaries.forEach((summary, i) => {
    parts.push(`\n## Summary ${i + 1} of ${view.summaries.length}\n`);
    const about = [`Summary entry: ${summary.entryId}`, `Refs: ${summary.refs.join(", ") || "(none)"}`];
    if (summary.prompt) about.push(`For prompt ${summary.promptNumber ?? "?"}: ${summary.prompt}`);
    parts.push(fenced(about.join("\n")));
    parts.push("\n### Its text\n");
    parts.push(fenced(summary.text));
    const calls = summary.keys.map((key) => byKey.get(key)).filter((c): c is CallView => c !== undefined);
    parts.push(`\n### Its calls (${calls.length})\n`);
    for (const call of calls) parts.push(callBlock(call));
  });
  return parts.join("\n");
}
