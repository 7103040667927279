// The note a rewind leaves behind: checked before anything is hidden, because the agent that
// resumes knows only what the note tells it, and written as the newest message it reads.
import { isRecord } from "../shapes/json.ts";
import type { FileLedger, Granularity, NoteInput } from "./control-entries.ts";
import { hasMutations } from "./ledger.ts";

export type NoteCheck = { ok: true; note: NoteInput } | { ok: false; reason: string };

const NOTE_FIELDS = ["what_happened", "true_current_state", "next"] as const;

/** Shortest useful field, in words and in characters. */
const MIN_WORDS = 3;
const MIN_CHARS = 12;

/** Placeholders that carry nothing, compared lower-case with punctuation and spaces squeezed out. */
const VACUOUS = new Set([
  "na", "none", "nothing", "nil", "null", "empty", "todo", "tbd", "tba", "same", "sameasabove", "seeabove",
  "asabove", "ditto", "idk", "unknown", "notsure", "ok", "okay", "done", "continue", "x", "xxx", "etc",
  "placeholder", "whatever", "nochange", "nochanges", "nothinghappened", "noneyet", "tobedetermined",
  "nothingtoreport", "seenote", "seeprevious", "",
]);

const squeeze = (text: string) => text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");

/**
 * The note as the rewind tool received it, checked. `raw` may be the object or its JSON text.
 *
 * The rule: `what_happened`, `true_current_state` and `next` are all required strings. After
 * trimming, each must be at least 12 characters and 3 words long and must not be a placeholder
 * ("n/a", "none", "-", "todo", "...", "same", "see above", "idk" and the like, or text that starts
 * with TODO, TBD or FIXME; compared without case, punctuation or spaces, so "N/A." is "na"). No two fields may say the same thing (equal once
 * squeezed the same way): a copied field tells the resumed agent nothing new. The refusal names
 * the first field that fails and why. The note returned holds the trimmed fields.
 */
export function validateNote(raw: unknown): NoteCheck {
  let value = raw;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return { ok: false, reason: "the note must be an object with what_happened, true_current_state and next" };
    }
  }
  if (!isRecord(value)) return { ok: false, reason: "the note must be an object with what_happened, true_current_state and next" };
  const note: Partial<NoteInput> = {};
  for (const field of NOTE_FIELDS) {
    const text = value[field];
    if (typeof text !== "string" || text.trim() === "") return { ok: false, reason: `note.${field} is missing or empty` };
    const trimmed = text.trim();
    const squeezed = squeeze(trimmed);
    if (VACUOUS.has(squeezed) || /^(todo|tbd|fixme)/.test(squeezed)) return { ok: false, reason: `note.${field} is a placeholder (${JSON.stringify(trimmed)}); say what is true` };
    const words = trimmed.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
    if (words < MIN_WORDS || trimmed.length < MIN_CHARS) {
      return { ok: false, reason: `note.${field} is too short to help the agent that resumes (at least ${MIN_WORDS} words and ${MIN_CHARS} characters)` };
    }
    note[field] = trimmed;
  }
  for (let a = 0; a < NOTE_FIELDS.length; a++) {
    for (let b = a + 1; b < NOTE_FIELDS.length; b++) {
      const first = NOTE_FIELDS[a]!;
      const second = NOTE_FIELDS[b]!;
      if (squeeze(note[first]!) === squeeze(note[second]!)) return { ok: false, reason: `note.${second} repeats note.${first}; each field answers its own question` };
    }
  }
  return { ok: true, note: note as NoteInput };
}

export interface NoteOptions {
  /** Add the warning line when the span changed files or ran side-effecting commands (selfControl.mutationWarning). */
  mutationWarning: boolean;
  /** The checkpoint a checkpoint rewind went back to. */
  checkpoint?: string;
  /** Messages the rewind hid. */
  hiddenCount?: number;
}

/** The warning line of a note (and of the rewind's result) when the hidden span changed the world. */
export const MUTATION_WARNING =
  "Warning: the hidden work changed files or ran commands with side effects (listed above). Those changes are still on disk: check the current state before redoing any of it.";

const GRANULARITY_TEXT: Record<Granularity, string> = {
  last_tool_call_group: "your last tool call group",
  last_turn: "your work since the latest user message",
  checkpoint: "everything after the checkpoint",
};

/**
 * The note's text, as the agent reads it right after the rewind: what it rewound, what happened,
 * the true state, what the hidden span touched (from its tool calls, each list only when
 * non-empty), the warning when the span changed things, and the next action last.
 */
export function renderNote(note: NoteInput, ledger: FileLedger, granularity: Granularity, options: NoteOptions): string {
  const what = granularity === "checkpoint" && options.checkpoint ? `everything after checkpoint "${options.checkpoint}"` : GRANULARITY_TEXT[granularity];
  const count = options.hiddenCount !== undefined ? ` (${options.hiddenCount} message${options.hiddenCount === 1 ? "" : "s"})` : "";
  const parts = [
    `## Rewind note (${granularity})`,
    `You rewound ${what}${count}: it is no longer in your context, and the session keeps it for the person. This note is what you left yourself.`,
    `What happened: ${note.what_happened}`,
    `True current state: ${note.true_current_state}`,
  ];
  const block = (tag: string, items: readonly string[]) => {
    if (items.length > 0) parts.push(`<${tag}>\n${items.join("\n")}\n</${tag}>`);
  };
  block("files-read", ledger.readFiles);
  block("files-modified", ledger.modifiedFiles);
  block("side-effects", ledger.bashSideEffects);
  if (options.mutationWarning && hasMutations(ledger)) parts.push(MUTATION_WARNING);
  parts.push(`Next: ${note.next}`);
  return parts.join("\n\n");
}
