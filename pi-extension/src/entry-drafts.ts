// How the pruner's entries reach the session: as drafts of Pi's `turn_end` answer, or appended
// outside a turn.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { PersistEntry } from "@pi-pruner/core";

type EntryDraft = { type: "custom"; customType: string; data: unknown } | { type: "custom_message"; customType: string; content: string; display: boolean; details: unknown };

/** `turn_end`'s answer: the drafts Pi already holds with the pruner's entries after them, or nothing to change. */
export function withEntryDrafts<T>(existing: readonly T[], entries: readonly PersistEntry[]): { entries: (T | EntryDraft)[] } | undefined {
  if (!entries.length) return undefined;
  const drafts = entries.map((e): EntryDraft =>
    e.kind === "custom"
      ? { type: "custom", customType: e.customType, data: e.data }
      : { type: "custom_message", customType: e.customType, content: e.content, display: false, details: e.details },
  );
  return { entries: [...existing, ...drafts] };
}

/**
 * Appends the pruner's entries to the session outside a turn's answer (commands, session start, a
 * prompt's start), in order. A message never starts or steers a run: while Pi counts as busy (a
 * prompt's start) it is held and appended ahead of the prompt, after the custom entries before it.
 */
export function persistEntries(pi: Pick<ExtensionAPI, "appendEntry" | "sendMessage">, entries: readonly PersistEntry[]): void {
  for (const e of entries) {
    if (e.kind === "custom") pi.appendEntry(e.customType, e.data);
    else pi.sendMessage({ customType: e.customType, content: e.content, display: false, details: e.details }, { triggerTurn: false });
  }
}
