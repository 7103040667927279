// The Sessions tree's nodes for what another writer did: who wrote the session (shown when the
// views render another writer's entries, or the writer left diagnostics), the writer's diagnostic
// entries under it, and under a chain the text the writer persisted for its block and the
// diagnostics that concern it. Pure: no VS Code calls.
import type { ChainView, DiagnosticView, SessionView } from "@pi-pruner/core";

export type WriterNode =
  | { kind: "writer"; id: string; path: string }
  | { kind: "diagnostic"; id: string; path: string; entryId: string }
  | { kind: "writerText"; id: string; path: string; entryId: string };

/** The writer's node among a session's children, when there is something to say: another writer, or diagnostics. */
export function writerNodes(path: string, view: SessionView): WriterNode[] {
  return view.writer.foreign || view.diagnostics.length > 0 ? [{ kind: "writer", id: `${path}#writer`, path }] : [];
}

/** Under the writer: its diagnostics, oldest first. */
export function writerChildren(node: Extract<WriterNode, { kind: "writer" }>, view: SessionView): WriterNode[] {
  return view.diagnostics.map((d) => ({ kind: "diagnostic", id: `${node.id}/${d.entryId}`, path: node.path, entryId: d.entryId }));
}

/** Under a chain, before its calls: the writer's own text for the block, and the diagnostics that concern it. */
export function chainExtras(parentId: string, path: string, chain: ChainView): WriterNode[] {
  const nodes: WriterNode[] = [];
  if (chain.writerText !== undefined) nodes.push({ kind: "writerText", id: `${parentId}#writer-text`, path, entryId: chain.entryId });
  for (const entryId of chain.diagnostics) nodes.push({ kind: "diagnostic", id: `${parentId}/${entryId}`, path, entryId });
  return nodes;
}

export function findDiagnostic(view: SessionView, entryId: string): DiagnosticView | undefined {
  return view.diagnostics.find((d) => d.entryId === entryId);
}
