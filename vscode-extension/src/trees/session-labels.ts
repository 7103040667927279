// What the Sessions view calls a summary and a branch, and how it gives a session's figures. Pure:
// the provider turns these into tree items. A session's row label comes from session-names.ts
// (the search results title their groups with it too).
import { firstWords, lastPromptOf, type SessionData, type SessionView, type SummaryView } from "@pi-pruner/core";
import { formatReclaim, oneLine } from "../text.ts";

/** Characters of a prompt in a summary's or a branch's label. */
const PROMPT_WORDS_MAX = 36;

/** Whether more is sent than Pi alone would send (the row's tooltip says why). */
export function sendsMoreThanRaw(rawChars: number, modelChars: number | undefined): boolean {
  return modelChars !== undefined && modelChars > rawChars;
}

/** `20k→561`, flagged when more is sent than raw. */
export function reclaimText(rawChars: number, modelChars: number | undefined): string {
  const text = formatReclaim(rawChars, modelChars, { compact: true });
  return sendsMoreThanRaw(rawChars, modelChars) ? `${text} · sent > raw` : text;
}

/** An estimated reclaim, marked as one until the session's view gives the figure: `≈20k→561`. */
export function estimateText(rawChars: number, modelChars: number): string {
  return `≈${formatReclaim(rawChars, modelChars, { compact: true })}`;
}

/**
 * A summary by the prompt its calls were made for and how many calls it covers: `fix the build · 3 calls`.
 * `calls` are those on the branch shown; a summary whose calls are not (the branch starts after them) says so.
 */
export function summaryLabel(summary: SummaryView, calls: number): string {
  const n = calls > 0 ? calls : summary.refs.length;
  const count = `${n} call${n === 1 ? "" : "s"}${calls === 0 && n > 0 ? " not on this branch" : ""}`;
  const prompt = oneLine(summary.prompt, 200);
  return prompt ? `${firstWords(prompt, PROMPT_WORDS_MAX)} · ${count}` : `summary · ${count}`;
}

/** A branch by the last prompt on it. */
export function branchLabel(data: SessionData, leafId: string | null): string {
  const prompt = oneLine(lastPromptOf(data, leafId), 200);
  return prompt ? firstWords(prompt, PROMPT_WORDS_MAX + 14) : "(no prompt on this branch)";
}

/** Which of the session's leaves the view shows: `branch 2 of 3 · latest`. */
export function branchDescription(view: SessionView, leaves: readonly string[], pinned: boolean): string {
  const at = leaves.indexOf(view.leafId ?? "");
  return `branch ${at + 1} of ${leaves.length}${pinned ? "" : " · latest"}`;
}
