// One session's parsed data and the view model built from it: built in full, or extended by what
// Pi appends (the fast path where decideAppend allows it and appendToSessionView agrees). Pure: the
// store decides when to build and times it.
import { appendToSessionView, buildSessionView, decideAppend, defaultLeafId, isPrunedState, type ReclaimEstimate, type ReclaimTotals, type RenderConfig, type SessionData, type SessionView, type TailResult } from "@pi-pruner/core";

/** What stays known about a session after its parsed data is dropped. */
interface SessionSummary {
  name?: string;
  firstPrompt?: string;
  rawChars: number;
  modelChars?: number;
  badLines: number;
  calls: number;
  pruned: number;
  /** What explains the reclaim (rewound spans, a cut branch, more sent than raw): kept for the row's tooltip. */
  reclaim: Pick<ReclaimTotals, "rewoundChars" | "rewindsNotApplied" | "cutAt" | "excess">;
}

export interface SessionModel {
  data?: SessionData;
  view?: SessionView;
  summary?: SessionSummary;
  /** The reclaim estimated in one quick pass over the file, shown as such until `summary` is known. */
  estimate?: ReclaimEstimate;
  /** The leaf chosen by a person; undefined follows the file's last entry, as Pi resumes. */
  pinnedLeaf?: string;
  /** The model characters of `view` were estimated by the fast append path. */
  modelCharsEstimated: boolean;
  /** How long the last full build of `view` took (the store measures it). */
  lastBuildMs?: number;
}

/** What an append did to the view. */
export type AppendOutcome =
  /** Nothing to show: nothing new, or another branch grew while a leaf is pinned. */
  | { kind: "none" }
  /** To be built again from the whole file (with rebuildView): what the append means is not known without it. */
  | { kind: "rebuild" }
  /** Extended by the fast path; its model characters are estimated when new messages came. */
  | { kind: "extended"; modelCharsEstimated: boolean }
  /** Only unreadable lines arrived: the summary's count changed. */
  | { kind: "counted" };

function summaryOf(view: SessionView): SessionSummary {
  return {
    name: view.session.name,
    firstPrompt: view.session.firstPrompt,
    rawChars: view.totals.rawChars,
    modelChars: view.totals.modelChars,
    badLines: view.errors.length,
    calls: view.calls.length,
    pruned: view.calls.filter((c) => isPrunedState(c.state)).length,
    reclaim: { rewoundChars: view.totals.rewoundChars, rewindsNotApplied: view.totals.rewindsNotApplied, cutAt: view.totals.cutAt, excess: view.totals.excess },
  };
}

/** Builds the view from the parsed data (which must be there); a pinned leaf gone from the file is dropped. */
export function rebuildView(model: SessionModel, config: RenderConfig): void {
  const data = model.data!;
  if (model.pinnedLeaf && !data.byId.has(model.pinnedLeaf)) model.pinnedLeaf = undefined;
  const view = buildSessionView(data, { leafId: model.pinnedLeaf, config });
  model.view = view;
  model.modelCharsEstimated = false;
  model.summary = summaryOf(view);
}

/** Applies a tail read of the session's file (already added to its parsed data) to the view, where it can without a full build. */
export function applyAppend(model: SessionModel, tail: TailResult, config: RenderConfig): AppendOutcome {
  const data = model.data!;
  const decision = decideAppend({
    reset: tail.reset,
    shownView: model.view,
    entries: tail.entries,
    badLines: tail.errors.length,
    pinnedLeaf: model.pinnedLeaf,
    defaultLeafId: defaultLeafId(data),
  });
  if (decision.kind === "nothing-new" || decision.kind === "unchanged") return { kind: "none" };
  if (decision.kind === "bad-lines") {
    model.summary = summaryOf(model.view!);
    return { kind: "counted" };
  }
  if (decision.kind === "fast-path") {
    const applied = appendToSessionView(model.view!, data, tail.entries, config);
    if (applied) {
      model.view = applied.view;
      model.pinnedLeaf = decision.pinnedLeaf;
      model.summary = summaryOf(applied.view);
      if (applied.modelCharsEstimated) model.modelCharsEstimated = true;
      return { kind: "extended", modelCharsEstimated: applied.modelCharsEstimated };
    }
    model.pinnedLeaf = decision.ifDeclined.pinnedLeaf;
  } else model.pinnedLeaf = decision.pinnedLeaf;
  return { kind: "rebuild" };
}

const knownLeaves = new WeakMap<SessionData, { bytes: number; count: number; leaves: string[] }>();

/** Entries no other entry continues, in file order (newest last). */
export function leavesOf(data: SessionData): string[] {
  // Asked for by every paint of the session's row: worked out again only when the file was read further.
  const known = knownLeaves.get(data);
  if (known && known.bytes === data.bytes && known.count === data.entries.length) return known.leaves;
  const parents = new Set<string>();
  for (const entry of data.entries) if (entry.parentId) parents.add(entry.parentId);
  const leaves = data.entries.filter((e) => !parents.has(e.id)).map((e) => e.id);
  knownLeaves.set(data, { bytes: data.bytes, count: data.entries.length, leaves });
  return leaves;
}
