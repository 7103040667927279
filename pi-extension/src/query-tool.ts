// `context_tree_query`: the model pages pruned output back in by short ref or raw tool-call id.
import { Type } from "typebox";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { branchRef, canNameBranch, describeTarget, mentionsRef, parseBranchRef, resolveRequest, shownValue, type IndexedCall, type PruneIndex } from "@pi-pruner/core";
import { QUERY_TOOL, type SpillStorage } from "@pi-pruner/core";
import { piPackage } from "./pi-package.ts";

export interface QueryHost {
  index(): PruneIndex;
  /** The session's spill storage: spilled output is read back only through it. */
  spill(): Pick<SpillStorage, "read">;
  /**
   * Outputs no index holds, by id: the protected outputs of a tool call id (the re-sent block after
   * Pi's compaction names those it left out) and a stubbed shell command's output (`shell@<timestamp>`).
   */
  unindexedOutputs(ctx: ExtensionContext, id: string): IndexedCall[];
  /** The branch's own copy of a spilled output (a fork or clone has its parent's results, not its spill files). */
  spillCopy(ctx: ExtensionContext, record: IndexedCall["record"]): string | undefined;
  /** The refs of other branches: see OtherBranches. */
  otherBranches(ctx: ExtensionContext): OtherBranches;
}

/** Other branches of the session, as refs named by their branch (`<leafId>/t3`) and branch summaries reach them. */
export interface OtherBranches {
  /** The prune index of the branch that ends at entry `branchId`; undefined when the session has no such entry. */
  index(branchId: string): PruneIndex | undefined;
  /** The branch summaries in the context of the current branch: the branch each summarizes, and its text. */
  summaries: readonly { fromId: string; summary: string }[];
}

const NO_OTHER_BRANCHES: OtherBranches = { index: () => undefined, summaries: [] };

/** What one asked id resolves to: the calls, how each is named in the answer, and what the model must know of it first. */
interface Lookup {
  calls: IndexedCall[];
  refOf: (call: IndexedCall) => string;
  unknown?: string;
  note?: string;
}

const describeCall = (call: IndexedCall): string => `${call.record.toolName} ${describeTarget(call.record.args ?? {})}`.trim();

/**
 * An asked id on this branch or, named by its branch, on another. A bare ref that a branch summary
 * in this context also names, meaning another output on the branch it summarizes, is answered with
 * a note that says so and how to ask for that one; when this branch has no such ref, the answer is
 * the summarized branch's output, named by its branch.
 */
function lookUp(id: string, index: PruneIndex, unindexed: (id: string) => IndexedCall[], branches: OtherBranches): Lookup {
  const here = (call: IndexedCall) => call.shortRef;
  const named = parseBranchRef(id);
  if (named) {
    const other = branches.index(named.branchId);
    const calls = other ? resolveRequest(other, named.ref) : [];
    const unknown = other ? undefined : `## ${id}\nUnknown: no branch of this session ends at entry ${named.branchId}.`;
    return { calls, refOf: (call) => branchRef(named.branchId, call.shortRef), unknown };
  }
  const indexed = resolveRequest(index, id);
  const calls = indexed.length ? indexed : unindexed(id);
  const elsewhere: { branchId: string; call: IndexedCall }[] = [];
  for (const { fromId, summary } of branches.summaries) {
    if (!canNameBranch(fromId) || !mentionsRef(summary, id) || elsewhere.some((e) => e.branchId === fromId)) continue;
    const call = branches.index(fromId)?.byShortRef.get(id);
    if (call && !calls.some((c) => c.key === call.key)) elsewhere.push({ branchId: fromId, call });
  }
  if (!elsewhere.length) return { calls, refOf: here };
  const others = elsewhere.map((e) => `\`${branchRef(e.branchId, e.call.shortRef)}\` (${describeCall(e.call)})`).join(", ");
  if (calls.length) {
    return { calls, refOf: here, note: `## ${id}\nNote: a branch summary in this context names \`${id}\` of another branch, where it is another output: ${others}; ask for that ref to read it. The output below is this branch's \`${id}\`.` };
  }
  const [first] = elsewhere;
  return {
    calls: [first!.call],
    refOf: (call) => branchRef(first!.branchId, call.shortRef),
    note: `## ${id}\nNote: \`${id}\` is not a ref of this branch; the branch summary in this context names it for another branch, where it is ${others}. The output below is that branch's.`,
  };
}

/** The session file's copy of a spilled output, when it holds one: asked when the spill file cannot be read. */
type SpillCopy = (record: IndexedCall["record"]) => string | undefined;

/** A call's original output, at most `maxBytes` bytes of it: a spill is read back only that far. */
async function originalOutput(call: IndexedCall, spill: Pick<SpillStorage, "read">, maxBytes: number, spillCopy: SpillCopy): Promise<string> {
  const path = call.record.spillPath;
  if (!path) return boundedText(call.record.resultText ?? "", maxBytes);
  const read = await spill.read(path, { maxBytes });
  if (read.ok) return read.truncated ? withRestNote(read.text, read.bytes) : read.text;
  const copy = spillCopy(call.record);
  if (copy !== undefined) return boundedText(copy, maxBytes);
  return `[The spilled output could not be read: ${read.reason}. Its first part:]\n${call.record.resultPreview ?? ""}`;
}

/** A text held in memory, cut to `maxBytes` bytes with the note that says it goes on. */
function boundedText(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  return bytes.length <= maxBytes ? text : withRestNote(bytes.subarray(0, maxBytes).toString("utf8").replace(/\uFFFD+$/, ""), bytes.length);
}

/** Bytes kept free in the answer for the note after a cut output. */
const NOTE_ROOM = 200;

function withRestNote(head: string, totalBytes: number | undefined): string {
  const shown = Buffer.byteLength(head, "utf8");
  return `${head}\n[Output truncated: the first ${shown} of ${totalBytes ?? "more"} bytes shown; the rest does not fit in one answer.]`;
}

/**
 * The answer to a `context_tree_query` call. Each distinct ref is looked up once and each call's
 * output read once, and reading stops when the answer holds as much as Pi will pass on (it
 * truncates a tool result at `maxBytes`): whatever the model asks for, this reads and holds
 * about that much, not the outputs themselves. An id the index does not know is looked up with
 * `unindexed` (protected outputs and the person's shell output on the branch); a spill whose file
 * cannot be read, with `spillCopy`.
 */
export async function formatQueryResult(
  ids: readonly string[],
  index: PruneIndex,
  spill: Pick<SpillStorage, "read">,
  unindexed: (id: string) => IndexedCall[] = () => [],
  branches: OtherBranches = NO_OTHER_BRANCHES,
  spillCopy: SpillCopy = () => undefined,
): Promise<string> {
  // Pi's own truncation, loaded when the tool first runs.
  const { truncateHead, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES } = await piPackage();
  const wanted = [...new Set(ids.map((raw) => String(raw).trim().replace(/^`|`$/g, "")))];
  // Unknown ids and notes are listed first, so a long output cannot truncate them away.
  const unknown: string[] = [];
  const found: { id: string; calls: IndexedCall[]; refOf: (call: IndexedCall) => string }[] = [];
  const seen = new Set<string>();
  for (const id of wanted) {
    const { calls, refOf, unknown: why, note } = lookUp(id, index, unindexed, branches);
    if (note) unknown.push(note);
    if (!calls.length) unknown.push(why ?? `## ${id}\nUnknown: no pruned output has this ref or tool-call id.`);
    const fresh = calls.filter((c) => !seen.has(c.key));
    for (const c of fresh) seen.add(c.key);
    if (fresh.length) found.push({ id, calls: fresh, refOf });
  }
  const parts: string[] = [];
  let used = Buffer.byteLength(unknown.join("\n\n"), "utf8");
  const notRead: string[] = [];
  for (const { calls, refOf } of found) {
    for (const [i, call] of calls.entries()) {
      if (DEFAULT_MAX_BYTES - used < 2 * NOTE_ROOM) {
        notRead.push(refOf(call));
        continue;
      }
      const r = call.record;
      const label = calls.length > 1 ? ` (occurrence ${i + 1} of ${calls.length})` : "";
      const header = [
        `## ${refOf(call)} — ${r.toolName}${label}`,
        `Tool call id: ${r.toolCallId}`,
        `Arguments: ${safeJson(r.args ?? {})}`,
        `Status: ${r.isError ? "error" : "ok"}`,
        r.turnIndex !== undefined ? `Turn: ${r.turnIndex}` : undefined,
      ].filter(Boolean);
      const head = `${header.join("\n")}\nOutput:\n`;
      // Room is kept for the note that says the output goes on, so Pi's truncation does not cut it off.
      const room = Math.max(0, DEFAULT_MAX_BYTES - used - Buffer.byteLength(head, "utf8") - NOTE_ROOM);
      const part = head + (await originalOutput(call, spill, room, spillCopy));
      parts.push(part);
      used += Buffer.byteLength(part, "utf8") + 2;
    }
  }
  const text = [...unknown, ...parts].join("\n\n");
  const rest = notRead.length ? `\n\n[Not read, the answer being full: ${notRead.join(", ")}. Ask for them in another call.]` : "";
  const truncated = truncateHead(text, { maxLines: DEFAULT_MAX_LINES, maxBytes: DEFAULT_MAX_BYTES });
  if (!truncated.truncated) return text + rest;
  return `${truncated.content}\n\n[Output truncated: ${truncated.outputLines} of ${truncated.totalLines} lines shown. Ask for fewer refs at a time to see more.]${rest}`;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(shownValue(value));
  } catch {
    return "{}";
  }
}

export function registerQueryTool(pi: ExtensionAPI, host: QueryHost): void {
  pi.registerTool({
    name: QUERY_TOOL,
    label: "Context tree query",
    description:
      "The full original output of pruned tool calls, by the refs in pruner summaries, stubs and <compressed-chain tools=\"…\"> blocks (e.g. t3), by the refs of another branch as a branch summary names them (e.g. 1a2b3c4d/t3), or by raw tool-call ids; also, by their tool call ids, the protected outputs that the block re-sent after a compaction names as left out, and by the id its stub names (e.g. shell@1765432100000), the pruned output of a shell command the user ran.",
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
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      const text = await formatQueryResult(
        params.toolCallIds,
        host.index(),
        host.spill(),
        (id) => host.unindexedOutputs(ctx, id),
        host.otherBranches(ctx),
        (record) => host.spillCopy(ctx, record),
      );
      return { content: [{ type: "text", text }], details: { ids: params.toolCallIds } };
    },
  });
}
