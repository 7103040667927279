// What to do with a shown session view when Pi appends to its file: keep it, extend it by the fast
// path (appendToSessionView), or build it again, and what becomes of the branch a person pinned.
// Pure: the editor's session store reads the tail, asks here, and carries the answer out.
import type { AnyEntry } from "../shapes/entries.ts";

export interface AppendInput {
  /** The file was replaced or shrank: the tail reader read it again from the start. */
  reset: boolean;
  /** The view shown before the append; undefined when none was built yet. */
  shownView: { leafId: string | null } | undefined;
  /** Entries the tail read added, in file order. */
  entries: readonly AnyEntry[];
  /** Unreadable lines the tail read found. */
  badLines: number;
  /** The leaf a person chose; undefined follows the file's last entry, as Pi resumes. */
  pinnedLeaf: string | undefined;
  /** The file's last entry after the append (the leaf Pi resumes from). */
  defaultLeafId: string | null;
}

/** Build the view again from the whole file, with `pinnedLeaf` as the pin (dropped later if it is gone from the file). */
interface RebuildDecision {
  kind: "rebuild";
  pinnedLeaf: string | undefined;
}

export type AppendDecision =
  /** Nothing new was read: no change to show. */
  | { kind: "nothing-new" }
  /** Another branch grew while a leaf is pinned: the pinned branch, and so the view, is unchanged. */
  | { kind: "unchanged" }
  /** Only unreadable lines arrived: the bad-line count changes, the view does not. */
  | { kind: "bad-lines" }
  /**
   * The new entries continue the shown leaf: try the fast path. If it applies, the pin becomes
   * `pinnedLeaf`; if it declines, build again as `ifDeclined` says.
   */
  | { kind: "fast-path"; pinnedLeaf: string | undefined; ifDeclined: RebuildDecision }
  | RebuildDecision;

export function decideAppend(input: AppendInput): AppendDecision {
  const { shownView, entries, pinnedLeaf } = input;
  if (input.reset || !shownView) return { kind: "rebuild", pinnedLeaf };
  if (entries.length === 0) return input.badLines > 0 ? { kind: "bad-lines" } : { kind: "nothing-new" };
  const extendsShownLeaf = entries[0]!.parentId === shownView.leafId;
  if (!extendsShownLeaf) {
    // A pinned branch is not the one that grew; an unpinned view follows the file's new last entry.
    return pinnedLeaf ? { kind: "unchanged" } : { kind: "rebuild", pinnedLeaf: undefined };
  }
  // The fast path only applies when the new entries form one chain from the shown leaf, so the
  // shown branch ends at the last of them; a pin on the grown branch follows it, and becomes
  // "follow the last entry" again when that is where the branch ends.
  const grownLeaf = entries[entries.length - 1]!.id;
  const pinAfter = pinnedLeaf && grownLeaf !== input.defaultLeafId ? grownLeaf : undefined;
  // Declined: the pin on the branch that grew is dropped, and the view follows the file's last entry.
  return { kind: "fast-path", pinnedLeaf: pinAfter, ifDeclined: { kind: "rebuild", pinnedLeaf: undefined } };
}
