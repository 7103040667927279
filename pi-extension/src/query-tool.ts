// `context_tree_query`: the model pages pruned output back in by short ref or raw tool-call id.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { resolveRequest, type IndexedCall, type PruneIndex } from "@pi-pruner/core";
import { QUERY_TOOL, type SpillStorage } from "@pi-pruner/core";

export interface QueryHost {
  index(): PruneIndex;
  /** The session's spill storage: spilled output is read back only through it. */
  spill(): Pick<SpillStorage, "read">;
}

async function originalOutput(call: IndexedCall, spill: Pick<SpillStorage, "read">): Promise<string> {
  const path = call.record.spillPath;
  if (!path) return call.record.resultText ?? "";
  const read = await spill.read(path);
  if (read.ok) return read.text;
  return `[The spilled output could not be read: ${read.reason}. Its first part:]\n${call.record.resultPreview ?? ""}`;
}

export async function formatQueryResult(ids: readonly string[], index: PruneIndex, spill: Pick<SpillStorage, "read">): Promise<string> {
  const parts: string[] = [];
  // Unknown ids are listed first, so a long output cannot truncate them away.
  const unknown: string[] = [];
  for (const raw of ids) {
    const id = String(raw).trim().replace(/^`|`$/g, "");
    const calls = resolveRequest(index, id);
    if (!calls.length) {
      unknown.push(`## ${id}\nUnknown: no pruned output has this ref or tool-call id.`);
      continue;
    }
    for (const [i, call] of calls.entries()) {
      const r = call.record;
      const label = calls.length > 1 ? ` (occurrence ${i + 1} of ${calls.length})` : "";
      const header = [
        `## ${call.shortRef} — ${r.toolName}${label}`,
        `Tool call id: ${r.toolCallId}`,
        `Arguments: ${safeJson(r.args ?? {})}`,
        `Status: ${r.isError ? "error" : "ok"}`,
        r.turnIndex !== undefined ? `Turn: ${r.turnIndex}` : undefined,
      ].filter(Boolean);
      parts.push(`${header.join("\n")}\nOutput:\n${await originalOutput(call, spill)}`);
    }
  }
  const text = [...unknown, ...parts].join("\n\n");
  // Pi's own truncation, loaded when the tool first runs: a static import of Pi's package from the
  // extension bundle loads Pi's whole module graph a second time on every start.
  const { truncateHead, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES } = await import("@earendil-works/pi-coding-agent");
  const truncated = truncateHead(text, { maxLines: DEFAULT_MAX_LINES, maxBytes: DEFAULT_MAX_BYTES });
  if (!truncated.truncated) return text;
  return `${truncated.content}\n\n[Output truncated: ${truncated.outputLines} of ${truncated.totalLines} lines shown. Ask for fewer refs at a time to see more.]`;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return "{}";
  }
}

export function registerQueryTool(pi: ExtensionAPI, host: QueryHost): void {
  pi.registerTool({
    name: QUERY_TOOL,
    label: "Context tree query",
    description:
      "The full original output of pruned tool calls, by the refs in pruner summaries, stubs and <compressed-chain tools=\"…\"> blocks (e.g. t3) or by raw tool-call ids.",
    promptSnippet: "Recover the full output of pruned tool calls by ref (t1, t2, …)",
    promptGuidelines: [
      `When a pruner summary, stub or compressed chain is not enough, call ${QUERY_TOOL} with its refs (e.g. ["t3"]) instead of re-running the tool.`,
    ],
    parameters: Type.Object({
      toolCallIds: Type.Array(Type.String(), { description: "Short refs like t3, or raw tool-call ids", minItems: 1 }),
    }),
    prepareArguments(args: unknown) {
      // Some models send the list as a JSON string or a single string.
      if (args && typeof args === "object" && "toolCallIds" in args) {
        const v = (args as { toolCallIds: unknown }).toolCallIds;
        if (typeof v === "string") {
          try {
            const parsed = JSON.parse(v);
            if (Array.isArray(parsed)) return { toolCallIds: parsed.map(String) };
          } catch {
            return { toolCallIds: v.split(/[\s,]+/).filter(Boolean) };
          }
        }
      }
      return args as { toolCallIds: string[] };
    },
    async execute(_toolCallId, params) {
      const text = await formatQueryResult(params.toolCallIds, host.index(), host.spill());
      return { content: [{ type: "text", text }], details: { ids: params.toolCallIds } };
    },
  });
}
