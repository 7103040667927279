// From a branch of session entries to the messages Pi 1.6 sends for it — the input of the render.
// Mirrors Pi's buildSessionContext (tested against it as an oracle), minus system messages:
// Pi's `context` extension event never includes them.
import type { AnyEntry } from "../shapes/entries.ts";
import { isCompactionEntry } from "../shapes/entries.ts";
import { editedMessages, type ContextMessage } from "../shapes/entry-messages.ts";

export type { ContextMessage } from "../shapes/entry-messages.ts";

/** `branch` is root → leaf, as returned by getBranch. */
export function buildPiContext(branch: readonly AnyEntry[]): ContextMessage[] {
  const selected = selectContextEntries(branch);
  // An older compaction inside the newest one's kept range contributes nothing; the newest is first.
  // As in Pi, only the selected entries' edits count: edits cut away by a compaction no longer do.
  const contributing = selected.filter((entry, index) => index === 0 || !isCompactionEntry(entry));
  return editedMessages(contributing, selected).filter((c) => c.message.role !== "system");
}

/**
 * Without a compaction, the whole branch. With one, the newest: itself, then the entries from its
 * firstKeptEntryId up to it, then every entry after it. A firstKeptEntryId not on the branch
 * before it (a retain-none compaction stores its own id) keeps nothing. (Pi also leaves out the
 * kept system messages here; buildPiContext drops every system message anyway.)
 */
function selectContextEntries(branch: readonly AnyEntry[]): readonly AnyEntry[] {
  const compactionIndex = branch.findLastIndex(isCompactionEntry);
  const compaction = branch[compactionIndex];
  if (!compaction || !isCompactionEntry(compaction)) return branch;

  const selected: AnyEntry[] = [compaction];
  const firstKept = branch.findIndex((entry, i) => i < compactionIndex && entry.id === compaction.firstKeptEntryId);
  if (firstKept >= 0) selected.push(...branch.slice(firstKept, compactionIndex));
  selected.push(...branch.slice(compactionIndex + 1));
  return selected;
}
