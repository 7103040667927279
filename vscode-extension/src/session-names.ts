// What the editor calls a session, a call and a session's writer, wherever it names them: the
// Sessions view, search results, quick picks, document and panel titles, the status bar. A row's
// label is the session's name, as much of it as the side bar's width shows; sessions whose rows
// would begin alike begin with what tells them apart instead (when they began, or the words where
// their names part), so every row reads differently at the default width.
import { basename } from "node:path";
import { firstWords, type CallView, type SessionView } from "@pi-pruner/core";
import type { SessionState } from "./store/session-store.ts";
import { formatDateTime, oneLine } from "./text.ts";

/** Characters of a session's name in its row; the row itself cuts it where the side bar ends. */
export const SESSION_NAME_MAX = 120;
/**
 * Characters of a label that a row shows at the side bar's default width (300 px, after the
 * twistie and the icon; measured about 34): rows alike in these must begin with what differs.
 */
export const SHOWN_LABEL_CHARS = 28;
/** The fewest characters of a session id shown to tell sessions apart. */
const ID_PREFIX_MIN = 8;
/** A name's first word is kept before an elision when it is this short (a tag such as `[C1]`). */
const HEAD_WORD_MAX = 10;

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
    for (const [path, prefix] of twinPrefixes(group)) labels.set(path, `${prefix} · ${name}`);
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
    const common = longestSharedPrefixes(texts.map(foldedCase));
    group.forEach((path, i) => labels.set(path, partedLabel(texts[i]!, common[i]!)));
  }
  for (const [path, label] of labels) labels.set(path, firstWords(label, SESSION_NAME_MAX));
  return labels;
}

/**
 * For sessions of one name (by file path): when each began, or the shortest id prefix that tells
 * it from the others begun in the same minute (or from all of them when its own time is unknown).
 * Grouped by minute once, so a folder of hundreds of sessions with one name stays cheap.
 */
function twinPrefixes(group: readonly SessionState[]): Map<string, string> {
  const idOf = (s: SessionState) => s.head.id ?? basename(s.file.path, ".jsonl");
  const started = group.map((s) => (s.head.startedAt !== undefined ? formatDateTime(s.head.startedAt) : undefined));
  const byMinute = new Map<string, number[]>();
  started.forEach((at, i) => {
    if (at === undefined) return;
    const same = byMinute.get(at);
    if (same) same.push(i);
    else byMinute.set(at, [i]);
  });
  const prefixes = new Map<string, string>();
  const allIds = group.map(idOf);
  const allShared = longestSharedPrefixes(allIds);
  for (const same of byMinute.values()) {
    if (same.length === 1) {
      prefixes.set(group[same[0]!]!.file.path, started[same[0]!]!);
      continue;
    }
    const ids = same.map((i) => allIds[i]!);
    const shared = longestSharedPrefixes(ids);
    same.forEach((i, k) => prefixes.set(group[i]!.file.path, `id ${distinguishingPrefix(ids[k]!, shared[k]!)}`));
  }
  started.forEach((at, i) => {
    if (at === undefined) prefixes.set(group[i]!.file.path, `id ${distinguishingPrefix(allIds[i]!, allShared[i]!)}`);
  });
  return prefixes;
}

/**
 * For each text, the length of the longest prefix it shares with any other of `texts` (0 for a
 * text alone). The most alike of a set sorts next to it, so sorting once replaces comparing pairs.
 */
function longestSharedPrefixes(texts: readonly string[]): number[] {
  const order = texts.map((_, i) => i).sort((a, b) => (texts[a]! < texts[b]! ? -1 : texts[a]! > texts[b]! ? 1 : 0));
  const shared = new Array<number>(texts.length).fill(0);
  for (let k = 1; k < order.length; k++) {
    const a = texts[order[k - 1]!]!;
    const b = texts[order[k]!]!;
    let n = 0;
    while (n < a.length && n < b.length && a[n] === b[n]) n++;
    shared[order[k - 1]!] = Math.max(shared[order[k - 1]!]!, n);
    shared[order[k]!] = Math.max(shared[order[k]!]!, n);
  }
  return shared;
}

/** `text` in lower case unit by unit, so positions in it are positions in `text`. */
function foldedCase(text: string): string {
  let folded = "";
  for (const unit of text.split("")) {
    const lower = unit.toLowerCase();
    folded += lower.length === 1 ? lower : unit;
  }
  return folded;
}

/** `text` from the word before the one where it parts from the most alike of the others (`common` characters shared), after its first word when that is short. */
function partedLabel(text: string, common: number): string {
  // Back to the start of the word where they part, then one word more for its sense.
  let cut = text.lastIndexOf(" ", common - 1) + 1;
  if (cut > 0) cut = text.lastIndexOf(" ", cut - 2) + 1;
  const head = text.slice(0, text.indexOf(" ") + 1).trim();
  if (cut <= head.length + 1) return text;
  return head.length > 0 && head.length <= HEAD_WORD_MAX ? `${head} … ${text.slice(cut)}` : `… ${text.slice(cut)}`;
}

/** The shortest prefix of `id` (at least 8 characters) that no other shares, given the longest prefix it shares with any. */
function distinguishingPrefix(id: string, shared: number): string {
  return id.slice(0, Math.min(id.length, Math.max(ID_PREFIX_MIN, shared + 1)));
}
