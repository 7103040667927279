// What the Sessions view calls a session, a summary and a branch. Pure: the provider turns these
// into tree items. A row's label is the session's name, as much of it as the side bar's width
// shows; sessions whose rows would begin alike begin with what tells them apart instead (when they
// began, or the words where their names part), so every row reads differently at the default width.
import { basename } from "node:path";
import { firstWords, lastPromptOf, type SessionData, type SessionView, type SummaryView } from "@pi-pruner/core";
import { sessionName } from "../session-names.ts";
import type { SessionState } from "../store/session-store.ts";
import { formatDateTime, formatReclaim, oneLine } from "../text.ts";

/** Characters of a session's name in its row; the row itself cuts it where the side bar ends. */
export const SESSION_NAME_MAX = 120;
/**
 * Characters of a label that a row shows at the side bar's default width (300 px, after the
 * twistie and the icon; measured about 34): rows alike in these must begin with what differs.
 */
export const SHOWN_LABEL_CHARS = 28;
/** Characters of a prompt in a summary's or a branch's label. */
const PROMPT_WORDS_MAX = 36;
/** The fewest characters of a session id shown to tell sessions apart. */
const ID_PREFIX_MIN = 8;
/** A name's first word is kept before an elision when it is this short (a tag such as `[C1]`). */
const HEAD_WORD_MAX = 10;

/** Whether more is sent than Pi alone would send (the row's tooltip says why). */
export function sendsMoreThanRaw(rawChars: number, modelChars: number | undefined): boolean {
  return modelChars !== undefined && modelChars > rawChars;
}

/** `20k→561`, flagged when more is sent than raw. */
export function reclaimText(rawChars: number, modelChars: number | undefined): string {
  const text = formatReclaim(rawChars, modelChars, { compact: true });
  return sendsMoreThanRaw(rawChars, modelChars) ? `${text} · sent > raw` : text;
}

/**
 * Each session's row label (by file path). Sessions with the same name begin with when each began
 * (date and time), or, when another began in the same minute (or either time is unknown), with the
 * shortest prefix of its id (at least 8 characters) that none of those shares. Names that differ
 * only after what a default-width row shows keep their first word (when short) and go on from
 * the words where they part: `[C1] … the parser tests`. Every other session is its name.
 */
export function sessionRowLabels(states: readonly SessionState[]): Map<string, string> {
  const labels = new Map<string, string>();
  const byName = new Map<string, SessionState[]>();
  for (const state of states) {
    const name = sessionName(state);
    labels.set(state.file.path, name);
    const group = byName.get(name);
    if (group) group.push(state);
    else byName.set(name, [state]);
  }
  for (const [name, group] of byName) {
    if (group.length < 2) continue;
    for (const state of group) labels.set(state.file.path, `${twinPrefix(state, group)} · ${name}`);
  }
  // Labels that still begin alike: each goes on from where it parts from the others.
  const byStart = new Map<string, string[]>();
  for (const [path, label] of labels) {
    const start = label.slice(0, SHOWN_LABEL_CHARS).toLowerCase();
    const group = byStart.get(start);
    if (group) group.push(path);
    else byStart.set(start, [path]);
  }
  for (const group of byStart.values()) {
    if (group.length < 2) continue;
    const texts = group.map((path) => labels.get(path)!);
    group.forEach((path, i) => labels.set(path, partedLabel(texts[i]!, texts.filter((_, j) => j !== i))));
  }
  for (const [path, label] of labels) labels.set(path, firstWords(label, SESSION_NAME_MAX));
  return labels;
}

/** When the session began, or the shortest id prefix that tells it from the others begun in the same minute. */
function twinPrefix(state: SessionState, group: readonly SessionState[]): string {
  const started = (s: SessionState) => (s.head.startedAt !== undefined ? formatDateTime(s.head.startedAt) : undefined);
  const at = started(state);
  const sameMinute = group.filter((other) => other !== state && (at === undefined || started(other) === at));
  if (at !== undefined && sameMinute.length === 0) return at;
  const idOf = (s: SessionState) => s.head.id ?? basename(s.file.path, ".jsonl");
  return `id ${distinguishingPrefix(idOf(state), sameMinute.map(idOf))}`;
}

/** `text` from the word before the one where it parts from the most alike of `others`, after its first word when that is short. */
function partedLabel(text: string, others: readonly string[]): string {
  let common = 0;
  for (const other of others) {
    let i = 0;
    while (i < text.length && i < other.length && text[i]!.toLowerCase() === other[i]!.toLowerCase()) i++;
    common = Math.max(common, i);
  }
  // Back to the start of the word where they part, then one word more for its sense.
  let cut = text.lastIndexOf(" ", common - 1) + 1;
  if (cut > 0) cut = text.lastIndexOf(" ", cut - 2) + 1;
  const head = text.slice(0, text.indexOf(" ") + 1).trim();
  if (cut <= head.length + 1) return text;
  return head.length > 0 && head.length <= HEAD_WORD_MAX ? `${head} … ${text.slice(cut)}` : `… ${text.slice(cut)}`;
}

function distinguishingPrefix(id: string, others: readonly string[]): string {
  let length = Math.min(ID_PREFIX_MIN, id.length);
  while (length < id.length && others.some((o) => o.startsWith(id.slice(0, length)))) length++;
  return id.slice(0, length);
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
