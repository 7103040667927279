// The nodes of the Sessions tree, derived from a session's view model. Pure: no VS Code calls, so
// what a session shows is decided in one place and the provider only turns nodes into tree items.
import type { CallView, ChainView, SessionView, SummaryView } from "@pi-pruner/core";
import { findCall } from "../view-lookup.ts";
import { chainExtras, writerNodes, type WriterNode } from "./diagnostic-nodes.ts";

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
  | { kind: "message"; id: string; path: string; text: string }
  | WriterNode;

export const GROUP_LABELS: Record<GroupKind, string> = {
  summaries: "Summaries",
  other: "Pruned without a summary",
  chains: "Compressed chains",
  protected: "Protected calls",
  markers: "Self-control markers",
  compactions: "Pi compactions",
};

/** Which calls go where in a session's tree, worked out once per view (a view is never changed, only replaced). */
interface Placement {
  bySummary: Map<string, CallView[]>;
  withoutSummary: CallView[];
  byChain: Map<string, CallView[]>;
  protectedCalls: CallView[];
}

const placements = new WeakMap<SessionView, Placement>();

function placement(view: SessionView): Placement {
  let placed = placements.get(view);
  if (placed) return placed;
  const aliasesByRef = new Map<string, CallView[]>();
  const byChain = new Map<string, CallView[]>();
  const protectedCalls: CallView[] = [];
  for (const call of view.calls) {
    if (call.state === "deduped" && call.aliasOf !== undefined) {
      const list = aliasesByRef.get(call.aliasOf);
      if (list) list.push(call);
      else aliasesByRef.set(call.aliasOf, [call]);
    }
    if (call.chainBlockId !== undefined) {
      const list = byChain.get(call.chainBlockId);
      if (list) list.push(call);
      else byChain.set(call.chainBlockId, [call]);
    }
    if (call.state === "protected") protectedCalls.push(call);
  }
  const position = new Map(view.calls.map((call, index) => [call, index]));
  const bySummary = new Map<string, CallView[]>();
  const covered = new Set<CallView>();
  for (const summary of view.summaries) {
    const calls = new Set<CallView>();
    for (const key of summary.keys) {
      const call = findCall(view, key);
      if (call) calls.add(call);
    }
    for (const ref of summary.refs) for (const alias of aliasesByRef.get(ref) ?? []) calls.add(alias);
    // In the order of the session, as the calls were made.
    const ordered = [...calls].sort((a, b) => position.get(a)! - position.get(b)!);
    bySummary.set(summary.entryId, ordered);
    for (const call of ordered) covered.add(call);
  }
  const withoutSummary = view.calls.filter((c) => (c.state === "summarized" || c.state === "superseded" || c.state === "spilled" || c.state === "deduped") && !covered.has(c));
  placed = { bySummary, withoutSummary, byChain, protectedCalls };
  placements.set(view, placed);
  return placed;
}

/** The calls a summary covers, and the duplicates that stand for them, in session order. */
export function callsOfSummary(view: SessionView, summary: SummaryView): CallView[] {
  return placement(view).bySummary.get(summary.entryId) ?? [];
}

/** Pruned calls that no summary lists: spills, and duplicates of them. */
function callsWithoutSummary(view: SessionView): CallView[] {
  return placement(view).withoutSummary;
}

function callsOfChain(view: SessionView, chain: ChainView): CallView[] {
  return placement(view).byChain.get(chain.blockId) ?? [];
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
      return placement(view).protectedCalls.length;
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
  nodes.push(...writerNodes(path, view));
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
      return placement(view).protectedCalls.map((c) => callNode(id, path, c));
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
  return chain ? [...chainExtras(node.id, node.path, chain), ...callsOfChain(view, chain).map((c) => callNode(node.id, node.path, c))] : [];
}
