// A search result's line of text: the words around the first match, on one line, with where every
// matched word sits in it, so a result list shows the match near its start and can highlight it.

export interface SearchSnippet {
  text: string;
  /** [start, end) of each matched word in `text`, in order, not overlapping. */
  highlights: [number, number][];
}

export interface SnippetOptions {
  /** Characters of context before the first match: a side bar's result row shows about 30 of a line. */
  before?: number;
  /** Characters of the line, ellipses aside. */
  width?: number;
}

/** Letters, digits and marks: a match with none of them on either side is a whole word. */
const WORD_CHAR = /[\p{L}\p{N}\p{M}]/u;

function isWholeWord(text: string, at: number, length: number): boolean {
  return !WORD_CHAR.test(text[at - 1] ?? "") && !WORD_CHAR.test(text[at + length] ?? "");
}

/** Every occurrence of the terms in `lower` (already lower case), whole words where a term has any. */
function occurrences(lower: string, terms: readonly string[]): [number, number][] {
  const found: [number, number][] = [];
  for (const term of new Set(terms.map((t) => t.toLowerCase()).filter(Boolean))) {
    const all: [number, number][] = [];
    for (let i = lower.indexOf(term); i >= 0; i = lower.indexOf(term, i + term.length)) all.push([i, i + term.length]);
    const whole = all.filter(([start]) => isWholeWord(lower, start, term.length));
    found.push(...(whole.length > 0 ? whole : all));
  }
  found.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  // Overlaps (a term inside a longer one) merge.
  const merged: [number, number][] = [];
  for (const range of found) {
    const last = merged.at(-1);
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else merged.push([range[0], range[1]]);
  }
  return merged;
}

/**
 * The line of `text` (whitespace collapsed) that starts a little before the first of `terms` found
 * (case-insensitive; whole words preferred), at a word boundary when one is near, with "…" where it
 * is cut; the beginning of the text when no term is in it.
 */
export function searchSnippetAround(text: string, terms: readonly string[], options: SnippetOptions = {}): SearchSnippet {
  const before = options.before ?? 12;
  const width = options.width ?? 90;
  const flat = text.replace(/\s+/g, " ").trim();
  const found = occurrences(flat.toLowerCase(), terms);
  const first = found[0]?.[0] ?? 0;
  // A match already near the start is shown from the beginning.
  let start = first <= before + 4 ? 0 : first - before;
  if (start > 0) {
    // Begin at the next word when one starts before the match.
    const space = flat.indexOf(" ", start);
    if (space >= 0 && space < first) start = space + 1;
  }
  const end = Math.min(flat.length, start + width);
  const lead = start > 0 ? "…" : "";
  const highlights: [number, number][] = [];
  for (const [from, to] of found) {
    if (from < start || from >= end) continue;
    highlights.push([from - start + lead.length, Math.min(to, end) - start + lead.length]);
  }
  return { text: `${lead}${flat.slice(start, end)}${end < flat.length ? "…" : ""}`, highlights };
}
