// Pi's compaction, sent the history as the model last saw it. Pi hands its summarizer the messages
// it built from the session: every raw output the pruner had long replaced by a stub, a summary or
// a compressed chain. Here the whole context goes through the pruner's render, the part Pi is about
// to summarize is taken from that render, and Pi's own `compact()` writes the summary from it, so
// the prompt, the previous summary, the custom instructions and the file lists stay Pi's. Anything
// unexpected returns nothing, and Pi's own compaction runs as if the pruner were not there.
import type { ExtensionContext, SessionBeforeCompactEvent, SessionBeforeCompactResult } from "@earendil-works/pi-coding-agent";
import type { AgentMessage, AnyEntry } from "@pi-pruner/core";
import { buildPiContext, messageKey, messagesChars } from "@pi-pruner/core";
import { piPackage } from "./pi-package.ts";

type Preparation = SessionBeforeCompactEvent["preparation"];

/** What the compaction (and the branch summary, branch-summary.ts) is given of the runtime. */
export interface CompactionHost {
  enabled: boolean;
  /** The summarizer's limits (silence, and the whole call); past either, Pi's own compaction runs. */
  idleTimeoutMs: number;
  timeoutMs: number;
  /** The messages a request would send for `messages`, the whole context of `branch`. */
  render(messages: AgentMessage[], branch: AnyEntry[]): AgentMessage[];
  /** Reports a failure once; Pi's own compaction runs after it. */
  report(key: string, message: string): void;
}

/** What the pruner adds to Pi's `details` (its `readFiles` and `modifiedFiles` stay as they are). */
interface PrunedCompactionData {
  version: 1;
  /** Characters of the messages Pi would have summarized, and of what it was sent instead. */
  rawChars: number;
  sentChars: number;
}

const PRUNED_COMPACTION_KEY = "piPruner";

/** The history and the split turn's prefix as the model last saw them. */
interface RenderedParts {
  history: AgentMessage[];
  turnPrefix: AgentMessage[];
}

const BEFORE = 0;
const HISTORY = 1;
const PREFIX = 2;
const KEPT = 3;

/**
 * `session_before_compact`: Pi's compaction written from the rendered history, or nothing (Pi's own
 * runs) when the pruner is off, nothing Pi would summarize was pruned, or anything fails.
 */
export async function compactPrunedHistory(event: SessionBeforeCompactEvent, ctx: ExtensionContext, host: CompactionHost): Promise<SessionBeforeCompactResult | undefined> {
  try {
    carryFileLists(event);
    if (!host.enabled || event.signal.aborted) return undefined;
    const model = ctx.model;
    if (!model) return undefined;
    const branch = event.branchEntries as unknown as AnyEntry[];
    const context = buildPiContext(branch).map((c) => c.message);
    const parts = renderedParts(context, host.render(context, branch), event.preparation);
    if (parts === "mismatch") {
      host.report("compaction:mismatch", "pi-pruner: Pi's compaction summarizes messages the pruner could not place in the context; Pi compacts the history as it is");
      return undefined;
    }
    if (!parts) return undefined;
    const preparation: Preparation = {
      ...event.preparation,
      messagesToSummarize: parts.history as unknown as Preparation["messagesToSummarize"],
      turnPrefixMessages: parts.turnPrefix as unknown as Preparation["turnPrefixMessages"],
    };
    const { compact } = await piPackage();
    const result = await withinLimits(event.signal, host, (signal, touch) =>
      compact(preparation, model, undefined, undefined, event.customInstructions, signal, ctx.thinkingLevel, (summaryModel, request, options) => {
        const stream = ctx.modelRegistry.streamSimple(summaryModel, request, options);
        void (async () => {
          for await (const _event of stream) touch();
        })().catch(() => {});
        return stream;
      }),
    );
    const raw = [...event.preparation.messagesToSummarize, ...event.preparation.turnPrefixMessages] as unknown as AgentMessage[];
    const data: PrunedCompactionData = { version: 1, rawChars: messagesChars(raw), sentChars: messagesChars([...parts.history, ...parts.turnPrefix]) };
    const details = { ...(result.details as object | undefined), [PRUNED_COMPACTION_KEY]: data };
    return { compaction: { ...result, details } };
  } catch (error) {
    if (event.signal.aborted) return undefined;
    const why = (error as Error).message;
    host.report(`compaction:${why}`, `pi-pruner: could not send Pi's compaction the pruned history (${why}); Pi compacts the history as it is`);
    return undefined;
  }
}

/**
 * Pi carries the file lists of the previous compaction into the next one only when Pi wrote it; one
 * this module wrote (an extension's, to Pi) holds the same lists, so they are added here and the
 * next summary, Pi's own or ours, still names every file the session touched.
 */
function carryFileLists(event: SessionBeforeCompactEvent): void {
  const previous = event.branchEntries.findLast((e) => e.type === "compaction");
  if (!previous || previous.type !== "compaction" || !previous.fromHook) return;
  const details = previous.details as Record<string, unknown> | undefined;
  if (!details || typeof details[PRUNED_COMPACTION_KEY] !== "object") return;
  const { read, edited } = event.preparation.fileOps;
  for (const file of stringsOf(details.readFiles)) read.add(file);
  for (const file of stringsOf(details.modifiedFiles)) edited.add(file);
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/**
 * The part of the rendered context that Pi is about to summarize, split as Pi splits it (the history,
 * then the split turn's prefix). Each rendered message belongs where its source message was: the
 * same object, a copy with the same key (a stub), or a block made at a message's timestamp (a
 * compressed chain at its first prompt's). Undefined when the render changed nothing there;
 * "mismatch" when Pi's messages are not all in the context or the parts would come out of order.
 */
export function renderedParts(context: readonly AgentMessage[], rendered: readonly AgentMessage[], preparation: Pick<Preparation, "messagesToSummarize" | "turnPrefixMessages">): RenderedParts | "mismatch" | undefined {
  const history = preparation.messagesToSummarize as unknown as AgentMessage[];
  const prefix = preparation.turnPrefixMessages as unknown as AgentMessage[];
  const historyKeys = new Set(history.map(messageKey));
  const prefixKeys = new Set(prefix.map(messageKey));
  const bySource = new Map<AgentMessage, number>();
  const byKey = new Map<string, number>();
  const byTime = new Map<number, number>();
  const counts = [0, 0, 0, 0];
  let last = BEFORE;
  for (const m of context) {
    const key = messageKey(m);
    const part = historyKeys.has(key) ? HISTORY : prefixKeys.has(key) ? PREFIX : last === BEFORE ? BEFORE : KEPT;
    if (part < last) return "mismatch";
    last = part;
    counts[part]!++;
    bySource.set(m, part);
    if (!byKey.has(key)) byKey.set(key, part);
    if (!byTime.has(m.timestamp)) byTime.set(m.timestamp, part);
  }
  if (counts[HISTORY] !== history.length || counts[PREFIX] !== prefix.length) return "mismatch";

  const parts: RenderedParts = { history: [], turnPrefix: [] };
  let changed = false;
  last = BEFORE;
  for (const m of rendered) {
    const passed = bySource.get(m);
    const part = passed ?? byKey.get(messageKey(m)) ?? byTime.get(m.timestamp) ?? last;
    if (part < last) return "mismatch";
    last = part;
    if (part === HISTORY || part === PREFIX) {
      (part === HISTORY ? parts.history : parts.turnPrefix).push(m);
      if (passed === undefined) changed = true;
    }
  }
  if (!changed && parts.history.length === history.length && parts.turnPrefix.length === prefix.length) return undefined;
  if (history.length > 0 && parts.history.length === 0) return "mismatch";
  if (prefix.length > 0 && parts.turnPrefix.length === 0) return "mismatch";
  return parts;
}

/** Runs `work` with a signal that aborts when Pi cancels, after `idleTimeoutMs` of silence, or after `timeoutMs`. */
export async function withinLimits<T>(cancel: AbortSignal, limits: Pick<CompactionHost, "idleTimeoutMs" | "timeoutMs">, work: (signal: AbortSignal, touch: () => void) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let reason = "";
  const abort = (why: string) => {
    if (!reason) reason = why;
    controller.abort();
  };
  const onCancel = () => abort("cancelled");
  cancel.addEventListener("abort", onCancel, { once: true });
  const ceiling = setTimeout(() => abort(`no summary within ${limits.timeoutMs} ms`), limits.timeoutMs);
  let idle = setTimeout(() => abort(`silent for ${limits.idleTimeoutMs} ms`), limits.idleTimeoutMs);
  const touch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => abort(`silent for ${limits.idleTimeoutMs} ms`), limits.idleTimeoutMs);
  };
  const aborted = new Promise<never>((_, reject) => {
    controller.signal.addEventListener("abort", () => reject(new Error(reason || "aborted")), { once: true });
  });
  try {
    return await Promise.race([work(controller.signal, touch), aborted]);
  } finally {
    clearTimeout(ceiling);
    clearTimeout(idle);
    cancel.removeEventListener("abort", onCancel);
  }
}
