// Pi's branch summary (`/tree` with a summary), sent the abandoned branch as the model last saw it
// and with its refs named by that branch. Pi hands its branch summarizer the raw entries of the
// branch left; their pruner summaries hold short refs (`t3`) numbered on that branch, which the
// summary keeps (Pi's prompt asks for exact names) and carries into a branch where `t3` is another
// output. Here the branch's context goes through the pruner's render as for Pi's compaction
// (compaction.ts), the part of it that the branch left adds is sent, its refs become `<leafId>/t3`, and
// Pi's own `generateBranchSummary` writes the summary, so the prompt and custom instructions stay
// Pi's. Anything unexpected returns nothing, and Pi's own summary runs as if the pruner were not there.
import type { ExtensionContext, SessionBeforeTreeEvent, SessionBeforeTreeResult, SessionEntry } from "@earendil-works/pi-coding-agent";
import type { AgentMessage, AnyEntry, PruneIndex } from "@pi-pruner/core";
import { branchRef, branchRefsOf, buildPiContext, canNameBranch, renameBranchRefs } from "@pi-pruner/core";
import { withinLimits, type CompactionHost } from "./compaction.ts";
import { piPackage } from "./pi-package.ts";

/** What the branch summary is given of the runtime. */
export interface BranchSummaryHost extends CompactionHost {
  /** The prune index of the branch being left (the session's branch until Pi moves the leaf). */
  index: PruneIndex;
  /** Pi's `branchSummary.reserveTokens` setting; Pi's default when absent. */
  reserveTokens: number | undefined;
}

/** What the pruner adds to the summary's `details` (beside Pi's `readFiles` and `modifiedFiles`). */
interface PrunedBranchSummaryData {
  version: 1;
  /** The branch the summary's refs name (`<branch>/tN`): the leaf left. */
  refsOf: string;
}

const PRUNED_SUMMARY_KEY = "piPruner";

/** What a ref of a branch that cannot be named in text becomes: no ref at all. */
const UNNAMED_REF = "(an output of another branch)";

/**
 * `session_before_tree`: Pi's branch summary written from the rendered branch with its refs named
 * by the branch, or nothing (Pi's own runs) when no summary is asked, the pruner is off, nothing
 * would change, or anything fails.
 */
export async function summarizePrunedBranch(event: SessionBeforeTreeEvent, ctx: ExtensionContext, host: BranchSummaryHost): Promise<SessionBeforeTreeResult | undefined> {
  try {
    const { preparation } = event;
    if (!host.enabled || !preparation.userWantsSummary || event.signal.aborted) return undefined;
    const model = ctx.model;
    const leafId = preparation.oldLeafId;
    if (!model || !leafId || preparation.entriesToSummarize.length === 0) return undefined;
    const branch = ctx.sessionManager.getBranch(leafId) as unknown as AnyEntry[];
    const sent = abandonedAsSent(branch, preparation.entriesToSummarize as unknown as AnyEntry[], host, leafId);
    if (sent === "mismatch") {
      host.report("branch-summary:mismatch", "pi-pruner: Pi's branch summary covers messages the pruner could not place in the context; Pi summarizes the branch as it is");
      return undefined;
    }
    if (!sent) return undefined;
    const { generateBranchSummary, prepareBranchEntries } = await piPackage();
    const entries = asEntries(sent, branch);
    const result = await withinLimits(event.signal, host, (signal, touch) =>
      generateBranchSummary(entries, {
        model,
        signal,
        thinkingLevel: ctx.thinkingLevel,
        customInstructions: preparation.customInstructions,
        replaceInstructions: preparation.replaceInstructions,
        reserveTokens: host.reserveTokens,
        streamFn: (summaryModel, request, options) => {
          const stream = ctx.modelRegistry.streamSimple(summaryModel, request, options);
          void (async () => {
            for await (const _event of stream) touch();
          })().catch(() => {});
          return stream;
        },
      }),
    );
    if (result.aborted || event.signal.aborted) return undefined;
    if (result.error || result.summary === undefined) throw new Error(result.error ?? "no summary");
    // A compressed chain sends no tool calls: the files come from the entries, as Pi's own summary takes them.
    const budget = (model.contextWindow || DEFAULT_CONTEXT_WINDOW) - (host.reserveTokens ?? DEFAULT_RESERVE_TOKENS);
    const files = withFileLists({ ...result, summary: result.summary }, prepareBranchEntries(preparation.entriesToSummarize, budget).fileOps);
    const data: PrunedBranchSummaryData = { version: 1, refsOf: leafId };
    const details = { readFiles: files.readFiles, modifiedFiles: files.modifiedFiles, [PRUNED_SUMMARY_KEY]: data };
    return { summary: { summary: files.summary, details, usage: result.usage } };
  } catch (error) {
    if (event.signal.aborted) return undefined;
    const why = (error as Error).message;
    host.report(`branch-summary:${why}`, `pi-pruner: could not send Pi's branch summary the pruned branch (${why}); Pi summarizes the branch as it is`);
    return undefined;
  }
}

/**
 * The messages of the branch left that the model saw, with the branch's refs named by it: the
 * render of the branch's context less the render of the part before the abandoned entries (a
 * compressed chain begun before the point returned to is part of what was left, and is sent whole).
 * Undefined when that is what Pi would send anyway; "mismatch" when the abandoned messages are not
 * the context's tail.
 */
function abandonedAsSent(branch: AnyEntry[], abandoned: readonly AnyEntry[], host: BranchSummaryHost, leafId: string): readonly AgentMessage[] | "mismatch" | undefined {
  const ids = new Set(abandoned.map((e) => e.id));
  const context = buildPiContext(branch);
  const start = context.findIndex((c) => ids.has(c.entryId));
  if (start < 0) return undefined;
  if (context.slice(start).some((c) => !ids.has(c.entryId))) return "mismatch";
  const messages = context.map((c) => c.message);
  const rendered = host.render(messages, branch);
  const before = host.render(messages.slice(0, start), branch);
  let shared = 0;
  while (shared < before.length && shared < rendered.length && sameMessage(before[shared]!, rendered[shared]!)) shared++;
  const tail = rendered.slice(shared);
  if (tail.length === 0) return "mismatch";
  const rename = canNameBranch(leafId) ? (ref: string) => branchRef(leafId, ref) : () => UNNAMED_REF;
  const named = renameBranchRefs(tail, branchRefsOf(host.index), rename);
  const unchanged = named === tail && tail.length === messages.length - start && tail.every((m, i) => m === messages[start + i]);
  return unchanged ? undefined : named;
}

/** The render passes a message it leaves alone through as it is; one it rewrites is a new object each time. */
function sameMessage(a: AgentMessage, b: AgentMessage): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** Pi's defaults for a model without a context window and for `branchSummary.reserveTokens`. */
const DEFAULT_CONTEXT_WINDOW = 128_000;
const DEFAULT_RESERVE_TOKENS = 16_384;

interface FileLists {
  summary: string;
  readFiles: string[];
  modifiedFiles: string[];
}

/**
 * The summary with the files of `fileOps` added to its lists, as Pi counts them (a file modified is
 * not listed as read). The lists Pi appended are replaced only when they are found as Pi writes
 * them; otherwise the summary stays as Pi wrote it.
 */
function withFileLists(result: { summary: string; readFiles?: string[]; modifiedFiles?: string[] }, fileOps: { read: Set<string>; edited: Set<string>; written: Set<string> }): FileLists {
  const shown = { summary: result.summary, readFiles: result.readFiles ?? [], modifiedFiles: result.modifiedFiles ?? [] };
  const modified = new Set([...shown.modifiedFiles, ...fileOps.edited, ...fileOps.written]);
  const modifiedFiles = [...modified].sort();
  const readFiles = [...new Set([...shown.readFiles, ...fileOps.read])].filter((f) => !modified.has(f)).sort();
  const written = fileListsText(shown.readFiles, shown.modifiedFiles);
  if (!shown.summary.endsWith(written)) return shown;
  return { summary: shown.summary.slice(0, shown.summary.length - written.length) + fileListsText(readFiles, modifiedFiles), readFiles, modifiedFiles };
}

/** The file lists as Pi appends them to a summary (its formatFileOperations, which Pi does not export). */
function fileListsText(readFiles: readonly string[], modifiedFiles: readonly string[]): string {
  const sections: string[] = [];
  if (readFiles.length > 0) sections.push(`<read-files>\n${readFiles.join("\n")}\n</read-files>`);
  if (modifiedFiles.length > 0) sections.push(`<modified-files>\n${modifiedFiles.join("\n")}\n</modified-files>`);
  return sections.length ? `\n\n${sections.join("\n\n")}` : "";
}

/**
 * The messages as session entries for Pi's `generateBranchSummary`, which reads entries. A branch
 * summary or compaction keeps its own entry's fields (a nested summary's file lists); one the
 * pruner wrote counts as Pi's, so Pi carries its file lists as it does its own.
 */
function asEntries(messages: readonly AgentMessage[], branch: AnyEntry[]): SessionEntry[] {
  const byId = new Map(branch.map((e) => [e.id, e]));
  // A summary message carries its entry's time: that finds the entry again after the refs were renamed.
  const sources = new Map<number, Record<string, unknown>>();
  for (const { message, entryId } of buildPiContext(branch)) if (message.role === "branchSummary") sources.set(message.timestamp, byId.get(entryId) as unknown as Record<string, unknown>);
  let parentId: string | null = null;
  return messages.map((message, i) => {
    const base = { id: `pruned-${i}`, parentId, timestamp: isoTime(message.timestamp) };
    parentId = base.id;
    switch (message.role) {
      case "custom":
        return { ...base, type: "custom_message", customType: message.customType, content: message.content, display: message.display, details: message.details } as unknown as SessionEntry;
      case "branchSummary": {
        const own = sources.get(message.timestamp);
        const fromHook = own?.fromHook === true && !isPrunedSummary(own.details);
        return { ...own, ...base, type: "branch_summary", fromId: message.fromId ?? "root", summary: message.summary, fromHook } as unknown as SessionEntry;
      }
      case "compactionSummary":
        return { ...base, type: "compaction", summary: message.summary, tokensBefore: message.tokensBefore, firstKeptEntryId: base.id } as unknown as SessionEntry;
      default:
        return { ...base, type: "message", message } as unknown as SessionEntry;
    }
  });
}

function isPrunedSummary(details: unknown): boolean {
  return typeof details === "object" && details !== null && typeof (details as Record<string, unknown>)[PRUNED_SUMMARY_KEY] === "object";
}

function isoTime(timestamp: number): string {
  const date = new Date(timestamp);
  return Number.isFinite(date.getTime()) ? date.toISOString() : new Date(0).toISOString();
}
