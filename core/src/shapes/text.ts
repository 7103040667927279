// Text on one line, for labels and summaries of something longer; text made safe inside the
// pruner's own markup.

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

// The tag names of the pruner's own markup in what the model is sent. `protected-output` also
// covers `protected-outputs`: a name is matched as a start.
const PRUNER_TAG_START = /<(?=\s*\/?\s*(?:compressed-chain|protected-output|context-shrunk|purged-errored-args))/gi;

/**
 * `text` (a summary, a tool output, a path: anything the summarizer, the agent or a session wrote)
 * made safe to put between the pruner's own tags: the `<` that would open or close one of them
 * (in any case, with spaces or a slash before the name) becomes `&lt;`, so the text can neither
 * end the block it stands in nor start one. Nothing else changes: ordinary text, code and
 * markdown read as they were, and the same text always gives the same bytes.
 */
export function escapePrunerTags(text: string): string {
  return text.replace(PRUNER_TAG_START, "&lt;");
}

/** `value` inside a double-quoted attribute of the pruner's markup: `&`, `"` and `<` as entities. */
export function escapeAttribute(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}
