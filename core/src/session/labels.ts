// What a person reads a session by: its name, its first prompt, the prompt a branch ends with,
// and markdown turned into the plain words a one-line label can hold.
import type { AnyEntry } from "../shapes/entries.ts";
import { isMessageEntry, isSessionInfoEntry } from "../shapes/entries.ts";
import { contentText } from "../shapes/messages.ts";
import type { SessionData } from "./session-reader.ts";

/** A session's first prompt as a one-line label. */
export function promptLabel(content: Parameters<typeof contentText>[0]): string {
  return contentText(content).replace(/\s+/g, " ").trim().slice(0, 200);
}

/** The session's name (the last `session_info`) and its first user prompt, from entries in order. */
export function sessionLabels(entries: readonly AnyEntry[]): { name?: string; firstPrompt?: string } {
  let name: string | undefined;
  let firstPrompt: string | undefined;
  for (const entry of entries) {
    if (isSessionInfoEntry(entry) && typeof entry.name === "string") name = entry.name;
    if (firstPrompt === undefined && isMessageEntry(entry) && entry.message.role === "user") firstPrompt = promptLabel(entry.message.content);
  }
  return { name, firstPrompt };
}

/** The user prompt of a message entry, as a label; undefined for any other entry. */
export function userPromptOf(entry: AnyEntry): string | undefined {
  if (!isMessageEntry(entry)) return undefined;
  const message = entry.message;
  return message && message.role === "user" ? promptLabel(message.content) : undefined;
}

/**
 * The newest user prompt on the branch that ends at `leafId`, walking back from the leaf (a
 * branch is shown by what it was last asked). Stops at a parent cycle or a missing parent.
 */
export function lastPromptOf(data: Pick<SessionData, "byId">, leafId: string | null | undefined): string | undefined {
  const seen = new Set<string>();
  for (let id = leafId ?? null; id !== null && !seen.has(id); ) {
    seen.add(id);
    const entry = data.byId.get(id);
    if (!entry) return undefined;
    const prompt = userPromptOf(entry);
    if (prompt !== undefined) return prompt;
    id = entry.parentId;
  }
  return undefined;
}

/**
 * Markdown as the words it shows, on one line: headings, rules, list and quote markers, emphasis,
 * code ticks and fences, and link and image syntax (their text kept) removed, whitespace collapsed.
 * For labels only: nothing here makes text safe to render, it makes it read well.
 */
export function markdownToPlain(markdown: string): string {
  return markdown
    .replace(/^\s*(```|~~~).*$/gm, " ")
    .replace(/^\s{0,3}([-*_])(\s*\1){2,}\s*$/gm, " ")
    .replace(/^\s{0,3}#{1,6}\s+/gm, "")
    .replace(/^\s*(>\s*)+/gm, "")
    .replace(/^\s*([-*+]|\d+[.)])\s+/gm, "")
    .replace(/!?\[([^\]\n]*)\]\([^)\n]*\)/g, "$1")
    .replace(/(\*\*|__)(?=\S)([^\n]*?\S)\1/g, "$2")
    .replace(/(^|[^\w*])\*(?=\S)([^*\n]*?\S)\*(?!\w)/g, "$1$2")
    .replace(/`+/g, "")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * The first words of `text` that fit in `max` characters, cut at a word boundary with "…" when
 * it goes on (a long first word is cut where it must).
 */
export function firstWords(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  const room = flat.slice(0, Math.max(1, max - 1));
  const space = room.lastIndexOf(" ");
  const cut = space >= max / 2 ? room.slice(0, space) : room;
  return `${cut.replace(/[\s,;:.\-–—]+$/, "")}…`;
}
