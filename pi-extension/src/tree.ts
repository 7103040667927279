// `/pruner tree`: summaries and the calls each one pruned, spilled outputs, aliases and compressed chains — as
// foldable nodes for the terminal overlay, or as an indented outline elsewhere.
import type { PruneIndex } from "@pi-pruner/core";
import { describeTarget, shownValue, stripFooter } from "@pi-pruner/core";
import { FoldableTree, type TreeNode } from "./tree-model.ts";

function firstLine(text: string, max = 80): string {
  const line = text.split("\n").find((l) => l.trim()) ?? "";
  const flat = line.replace(/^[-*]\s*/, "").trim();
  return flat.length > max ? flat.slice(0, max - 1) + "…" : flat;
}

export function treeNodes(index: PruneIndex): TreeNode[] {
  const roots: TreeNode[] = [];
  const listed = new Set<string>();
  index.summaries.forEach((summary, i) => {
    const children: TreeNode[] = [];
    for (const key of summary.keys) {
      const call = index.calls.get(key);
      if (!call) continue;
      listed.add(key);
      children.push({
        id: `call:${key}`,
        label: `${call.shortRef.padEnd(5)} ${call.record.toolName.padEnd(10)} ${describeTarget(call.record.args ?? {})}`.trimEnd(),
        detail: `${call.shortRef} · ${call.record.toolName}\nArguments: ${JSON.stringify(shownValue(call.record.args ?? {}))}\n\n${call.record.resultText ?? ""}`,
        children: [],
      });
    }
    roots.push({
      id: `summary:${i}`,
      label: `summary${summary.turnIndex !== undefined ? ` (turn ${summary.turnIndex})` : ""}, ${summary.keys.length} call(s): ${firstLine(stripFooter(summary.text))}`,
      detail: summary.text,
      children,
    });
  });
  const spilled = [...index.calls.values()].filter((c) => !listed.has(c.key));
  if (spilled.length) {
    roots.push({
      id: "spilled",
      label: `spilled to disk, ${spilled.length} call(s)`,
      children: spilled.map((call) => ({
        id: `call:${call.key}`,
        label: `${call.shortRef.padEnd(5)} ${call.record.toolName.padEnd(10)} ${call.record.spillBytes ?? 0} bytes → ${call.record.spillPath}`,
        detail: call.record.resultPreview,
        children: [],
      })),
    });
  }
  if (index.aliases.size) roots.push({ id: "aliases", label: `${index.aliases.size} duplicate result(s) aliased to earlier refs`, children: [] });
  if (index.chains.length) {
    roots.push({
      id: "chains",
      label: `compressed chains, ${index.chains.length}`,
      children: index.chains.map((chain) => {
        const refs = Array.isArray(chain.toolRefs) ? chain.toolRefs.join(",") : "";
        const kept = Array.isArray(chain.protectedToolCallIds) && chain.protectedToolCallIds.length ? `, ${chain.protectedToolCallIds.length} protected output(s) kept` : "";
        return {
          id: `chain:${chain.blockId}:${chain.startUserTimestamp}`,
          label: `${chain.blockId.padEnd(5)} ${refs || "(no refs)"} · ${chain.bodySource ?? "chain"}${kept}`,
          detail: chain.rangeSummaryText,
          children: [],
        };
      }),
    });
  }
  return roots;
}

export function treeReport(index: PruneIndex): string {
  const roots = treeNodes(index);
  if (!roots.length) return "pi-pruner: nothing pruned on this branch yet";
  const tree = new FoldableTree(roots);
  tree.expandAll();
  return tree.toLines().join("\n");
}
