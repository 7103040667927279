// What the Sessions view calls a session, a summary and a branch. Pure: the provider turns these
// into tree items. A side bar is narrow, so a session's name is shortened and its age and reclaim
// come first in the description; sessions that would read alike are told apart there.
import { basename } from "node:path";
import { firstWords, lastPromptOf, type SessionData, type SessionView, type SummaryView } from "@pi-pruner/core";
import { sessionName } from "../session-names.ts";
import type { SessionState } from "../store/session-store.ts";
import { formatDateTime, formatReclaim, oneLine } from "../text.ts";

/**
 * Characters of a session's name in its row. A default-width side bar (300 px) shows about 36
 * characters of a row: the name's first words, then its age and reclaim (`2h ago · 21k→148`).
 */
export const SESSION_NAME_MAX = 16;
/** Characters of a prompt in a summary's or a branch's label. */
const PROMPT_WORDS_MAX = 36;
/** The fewest characters of a session id shown to tell sessions apart. */
const ID_PREFIX_MIN = 8;

/** The name as the row shows it: its first words. */
export function sessionRowLabel(state: SessionState): string {
  return firstWords(sessionName(state), SESSION_NAME_MAX);
}

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
 * For sessions whose names read the same, what tells each apart: when it began (date and time), or
 * when another began in the same minute (or either time is unknown), the shortest prefix of its id
 * (at least 8 characters) that none of those shares. Sessions with a name of their own get nothing.
 */
export function sessionTwins(states: readonly SessionState[]): Map<string, string> {
  const byName = new Map<string, SessionState[]>();
  for (const state of states) {
    const name = sessionName(state);
    const group = byName.get(name);
    if (group) group.push(state);
    else byName.set(name, [state]);
  }
  const out = new Map<string, string>();
  for (const group of byName.values()) {
    if (group.length < 2) continue;
    const started = (s: SessionState) => (s.head.startedAt !== undefined ? formatDateTime(s.head.startedAt) : undefined);
    for (const state of group) {
      const at = started(state);
      const sameMinute = group.filter((other) => other !== state && (at === undefined || started(other) === at));
      const id = state.head.id ?? basename(state.file.path, ".jsonl");
      out.set(state.file.path, sameMinute.length > 0 ? `id ${distinguishingPrefix(id, sameMinute.map((o) => o.head.id ?? basename(o.file.path, ".jsonl")))}` : `started ${at}`);
    }
  }
  return out;
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
