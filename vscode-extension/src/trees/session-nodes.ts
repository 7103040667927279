// The nodes of the Sessions tree, derived from a session's view model. Pure: no VS Code calls, so
// what a session shows is decided in one place and the provider only turns nodes into tree items.
import type { CallView, ChainView, CompactionView, MarkerView, SessionView, SummaryView } from "../../../core/src/view.ts";

export type GroupKind = "summaries" | "other" | "chains" | "protected" | "markers" | "compactions";

export type SessionNode =
  | { kind: "session"; id: string; path: string }
  | { kind: "badLines"; id: string; path: string }
  | { kind: "problems"; id: string; path: string }
  | { kind: "modelView"; id: string; path: string }
  | { kind: "branch"; id: string; path: string }
  | { kind: "group"; id: string; path: string; group: GroupKind }
  | { kind: "summary"; id: string; path: string; entryId: string }
  | { kind: "call"; id: string; path: string; key: string }
  | { kind: "chain"; id: string; path: string; entryId: string; blockId: string }
  | { kind: "marker"; id: string; path: string; entryId: string }
  | { kind: "compaction"; id: string; path: string; entryId: string }
  | { kind: "message"; id: string; path: string; text: string };

export const GROUP_LABELS: Record<GroupKind, string> = {
  summaries: "Summaries",
  other: "Pruned without a summary",
  chains: "Compressed chains",
  protected: "Protected calls",
  markers: "pi-mulligan markers",
  compactions: "Pi compactions",
};

export function callsOfSummary(view: SessionView, summary: SummaryView): CallView[] {
  const keys = new Set(summary.keys);
  const refs = new Set(summary.refs);
  return view.calls.filter((c) => keys.has(c.occurrenceKey) || (c.state === "deduped" && c.aliasOf !== undefined && refs.has(c.aliasOf)));
}

/** Pruned calls that no summary lists: spills, and duplicates of them. */
export function callsWithoutSummary(view: SessionView): CallView[] {
  const covered = new Set<string>();
  for (const s of view.summaries) for (const c of callsOfSummary(view, s)) covered.add(c.occurrenceKey);
  return view.calls.filter((c) => (c.state === "summarized" || c.state === "spilled" || c.state === "deduped") && !covered.has(c.occurrenceKey));
}

export function callsOfChain(view: SessionView, chain: ChainView): CallView[] {
  return view.calls.filter((c) => c.chainBlockId === chain.blockId);
}

export function groupSize(view: SessionView, group: GroupKind): number {
  switch (group) {
    case "summaries":
      return view.summaries.length;
    case "other":
      return callsWithoutSummary(view).length;
    case "chains":
      return view.chains.length;
    case "protected":
      return view.calls.filter((c) => c.state === "protected").length;
    case "markers":
      return view.markers.length;
    case "compactions":
      return view.compactions.length;
  }
}

const GROUP_ORDER: GroupKind[] = ["summaries", "other", "chains", "protected", "markers", "compactions"];

/** The children of a session: warnings first, the model view, the branch, then the non-empty groups. */
export function sessionChildren(path: string, view: SessionView, leafCount: number): SessionNode[] {
  const base = path;
  const nodes: SessionNode[] = [];
  if (view.errors.length > 0) nodes.push({ kind: "badLines", id: `${base}#bad-lines`, path });
  if (view.problems.length > 0) nodes.push({ kind: "problems", id: `${base}#problems`, path });
  nodes.push({ kind: "modelView", id: `${base}#model-view`, path });
  if (leafCount > 1) nodes.push({ kind: "branch", id: `${base}#branch`, path });
  for (const group of GROUP_ORDER) {
    if (groupSize(view, group) > 0) nodes.push({ kind: "group", id: `${base}#${group}`, path, group });
  }
  return nodes;
}

const callNode = (parentId: string, path: string, call: CallView): SessionNode => ({ kind: "call", id: `${parentId}/${call.occurrenceKey}`, path, key: call.occurrenceKey });

export function groupChildren(node: Extract<SessionNode, { kind: "group" }>, view: SessionView): SessionNode[] {
  const { path, id } = node;
  switch (node.group) {
    case "summaries":
      return view.summaries.map((s) => ({ kind: "summary", id: `${id}/${s.entryId}`, path, entryId: s.entryId }));
    case "other":
      return callsWithoutSummary(view).map((c) => callNode(id, path, c));
    case "chains":
      return view.chains.map((c) => ({ kind: "chain", id: `${id}/${c.entryId}`, path, entryId: c.entryId, blockId: c.blockId }));
    case "protected":
      return view.calls.filter((c) => c.state === "protected").map((c) => callNode(id, path, c));
    case "markers":
      return view.markers.map((m) => ({ kind: "marker", id: `${id}/${m.entryId}`, path, entryId: m.entryId }));
    case "compactions":
      return view.compactions.map((c) => ({ kind: "compaction", id: `${id}/${c.entryId}`, path, entryId: c.entryId }));
  }
}

export function summaryChildren(node: Extract<SessionNode, { kind: "summary" }>, view: SessionView): SessionNode[] {
  const summary = view.summaries.find((s) => s.entryId === node.entryId);
  return summary ? callsOfSummary(view, summary).map((c) => callNode(node.id, node.path, c)) : [];
}

export function chainChildren(node: Extract<SessionNode, { kind: "chain" }>, view: SessionView): SessionNode[] {
  const chain = view.chains.find((c) => c.entryId === node.entryId);
  return chain ? callsOfChain(view, chain).map((c) => callNode(node.id, node.path, c)) : [];
}

export function findCall(view: SessionView, key: string): CallView | undefined {
  return view.calls.find((c) => c.occurrenceKey === key);
}

export function findSummary(view: SessionView, entryId: string): SummaryView | undefined {
  return view.summaries.find((s) => s.entryId === entryId);
}

export function findChain(view: SessionView, entryId: string): ChainView | undefined {
  return view.chains.find((c) => c.entryId === entryId);
}

export function findMarker(view: SessionView, entryId: string): MarkerView | undefined {
  return view.markers.find((m) => m.entryId === entryId);
}

export function findCompaction(view: SessionView, entryId: string): CompactionView | undefined {
  return view.compactions.find((c) => c.entryId === entryId);
}
