// `/pruner tree`: summaries and the calls each one pruned, as an indented outline.
import type { PruneIndex } from "../../core/src/records.ts";
import { describeTarget, stripFooter } from "../../core/src/summarize.ts";

function firstLine(text: string, max = 80): string {
  const line = text.split("\n").find((l) => l.trim()) ?? "";
  const flat = line.replace(/^[-*]\s*/, "").trim();
  return flat.length > max ? flat.slice(0, max - 1) + "…" : flat;
}

export function treeReport(index: PruneIndex): string {
  if (!index.summaries.length && !index.calls.size) return "pi-pruner: nothing pruned on this branch yet";
  const lines: string[] = [];
  const listed = new Set<string>();
  for (const summary of index.summaries) {
    lines.push(`▾ summary${summary.turnIndex !== undefined ? ` (turn ${summary.turnIndex})` : ""}, ${summary.keys.length} call(s): ${firstLine(stripFooter(summary.text))}`);
    for (const key of summary.keys) {
      const call = index.calls.get(key);
      if (!call) continue;
      listed.add(key);
      lines.push(`    ${call.shortRef.padEnd(5)} ${call.record.toolName.padEnd(10)} ${describeTarget(call.record.args ?? {})}`);
    }
  }
  const spilled = [...index.calls.values()].filter((c) => !listed.has(c.key));
  if (spilled.length) {
    lines.push(`▾ spilled to disk, ${spilled.length} call(s)`);
    for (const call of spilled) lines.push(`    ${call.shortRef.padEnd(5)} ${call.record.toolName.padEnd(10)} ${call.record.spillBytes ?? 0} bytes → ${call.record.spillPath}`);
  }
  if (index.aliases.size) lines.push(`▸ ${index.aliases.size} duplicate result(s) aliased to earlier refs`);
  return lines.join("\n");
}
