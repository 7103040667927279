// Text on one line, for labels and summaries of something longer.

/**
 * `text` on one line of at most `max` characters: every run of whitespace (newlines included)
 * becomes one space, the ends are trimmed, and a longer line is cut to `max - 1` characters and
 * "…". Nothing else is touched: this does not make text from a session file safe to show (the
 * editor strips escape sequences and control characters for that).
 */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
