// The diagnostic entries a writer left in the session, in a person's words and tied to the chain or
// the calls each concerns. pi-condense writes two kinds: `context-prune-diagnostic` when its render
// degraded (a chain range it could not find, tool results it swept, a chain it could not back
// fill) and one `context-prune-flush-metrics` entry per flush attempt (what triggered it: a final
// reply, the person, a budget; and its outcome: summarized, skipped, or an error such as a failed
// summarizer call). pi-pruner reports such things to the person as they happen and persists none.
import type { AnyEntry } from "../shapes/entries.ts";
import { isCustomEntry, isCustomEntryOf, PRUNE_INDEX } from "../shapes/entries.ts";
import { isRecord } from "../shapes/json.ts";
import { readIndexData } from "../shapes/read-payloads.ts";
import type { PruneIndex } from "../prune/prune-index.ts";
import { CONDENSE_DIAGNOSTIC, CONDENSE_FLUSH_METRICS } from "./session-writer.ts";

export interface DiagnosticView {
  /** The entry that holds it. */
  entryId: string;
  /** The writer's kind ("unresolved-range", "orphan-sweep", …), or "flush" for a flush record. */
  kind: string;
  severity: "warning" | "info";
  /** One line a person reads. */
  text: string;
  /** The writer's own words, as it wrote them. */
  detail: string;
  /** What the entry cannot say, when that matters ("the writer records no error text"). */
  note?: string;
  /** Block ids of the chains it concerns. */
  blockIds: string[];
  /** Occurrence keys of the calls it concerns. */
  callKeys: string[];
}

/** What a call needs to be tied to a diagnostic: its identity and where its result is on the branch. */
export interface DiagnosedCall {
  toolCallId: string;
  occurrenceKey: string;
  resultEntryId?: string;
  state: string;
}

const FLUSHES: Record<string, string> = {
  "message-end": "flush on the agent's final reply",
  manual: "flush the person asked for (/pruner now)",
  budget: "budget flush (the context reached autoBudgetThreshold)",
  delta: "budget flush (the context grew by budgetTurnDelta in one turn)",
  rearmed: "flush of work left pending before a reload",
};

const OUTCOMES: Record<string, string> = {
  empty: "nothing was pending",
  "skipped-trivial": "nothing summarized: the batches were below minBatchChars",
  "skipped-oversized": "nothing summarized: the summaries were not smaller than the outputs",
  "skipped-deduped": "nothing summarized: the outputs repeated earlier ones (aliased)",
};

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function blockIdIn(detail: string): string | undefined {
  return /blockId=(\S+)/.exec(detail)?.[1];
}

function diagnosticText(kind: string, detail: string): { text: string; severity: DiagnosticView["severity"]; blockIds: string[]; toolCallIds: string[] } {
  const block = blockIdIn(detail);
  const blockIds = block ? [block] : [];
  switch (kind) {
    case "unresolved-range": {
      const nests = /skipped: range nests inside blockId=(\S+)/.exec(detail);
      if (nests) return { text: `chain ${block} was skipped: its range lies inside chain ${nests[1]}'s`, severity: "info", blockIds: [...blockIds, nests[1]!], toolCallIds: [] };
      if (/skipped: range duplicates/.test(detail)) return { text: `chain ${block} was skipped: another chain starts at the same message`, severity: "info", blockIds, toolCallIds: [] };
      return { text: `chain ${block ?? "?"} was not found in the context it was rendered for (unresolved range): nothing was compressed for it`, severity: "warning", blockIds, toolCallIds: [] };
    }
    case "range-id-mismatch": {
      const m = /recorded=(\d+) actual=(\d+)/.exec(detail);
      return { text: `chain ${block ?? "?"}: its entry names ${m ? m[1] : "?"} calls, the range it compressed held ${m ? m[2] : "?"}`, severity: "info", blockIds, toolCallIds: [] };
    }
    case "orphan-sweep": {
      const m = /swept (\d+) orphan toolResult\(s\): (.*)$/.exec(detail);
      const ids = m ? m[2]!.replace(/ \.\.\. \+\d+ more$/, "").split(", ").filter(Boolean) : [];
      return { text: `the render dropped ${plural(m ? Number(m[1]) : ids.length, "tool result")} that did not follow their call`, severity: "warning", blockIds, toolCallIds: ids };
    }
    case "backfill-empty": {
      const m = /middles=(\d+)/.exec(detail);
      return { text: `a closed chain${m ? ` of ${plural(Number(m[1]), "call")}` : ""} was left uncompressed: none of its calls had or could get a record`, severity: "warning", blockIds, toolCallIds: [] };
    }
    default:
      return { text: `${kind}: ${detail}`, severity: "warning", blockIds, toolCallIds: [] };
  }
}

interface Flush {
  entryId: string;
  position: number;
  trigger: string;
  outcome: string;
  captured?: number;
  processed?: number;
}

function flushText(f: Flush): { text: string; severity: DiagnosticView["severity"]; note?: string } | undefined {
  const what = FLUSHES[f.trigger] ?? `flush (trigger "${f.trigger}")`;
  const batches = f.captured !== undefined ? plural(f.captured, "batch", "batches") : "its batches";
  if (f.outcome === "error") {
    const done = f.processed ? `${f.processed} of ${batches} done before it` : `${batches} stayed raw`;
    return { text: `${what} failed: ${done} (a summarizer call or a write failed)`, severity: "warning", note: "The writer records that the flush failed, not why (an HTTP error of the summarizer, a timeout, a write)." };
  }
  if (f.captured !== undefined && f.processed !== undefined && f.processed < f.captured) {
    return { text: `${what} stopped after ${f.processed} of ${batches}: a summarizer call failed, the rest stayed raw`, severity: "warning" };
  }
  // Every final reply records a flush, most with nothing to do: only those that did something, or
  // were not the ordinary end of a reply, are worth a line.
  if (f.outcome === "empty" && f.trigger === "message-end") return undefined;
  const outcome = f.outcome === "summarized" ? `${batches} summarized` : (OUTCOMES[f.outcome] ?? f.outcome);
  return { text: `${what}: ${outcome}`, severity: "info" };
}

/**
 * The writer's diagnostics on a branch, oldest first. `calls` are the branch's tool calls (the
 * session view's), `index` the branch's prune index (which entry indexed each call).
 */
export function writerDiagnostics(branch: readonly AnyEntry[], calls: readonly DiagnosedCall[], index: PruneIndex, positions?: ReadonlyMap<string, number>): DiagnosticView[] {
  // Where each entry is on the branch: made only for a branch that has diagnostics (most have none).
  let known = positions;
  const positionOf = (): ReadonlyMap<string, number> => {
    if (!known) {
      const made = new Map<string, number>();
      branch.forEach((entry, i) => made.set(entry.id, i));
      known = made;
    }
    return known;
  };
  const out: DiagnosticView[] = [];
  const flushes: Flush[] = [];
  branch.forEach((entry, i) => {
    if (!isCustomEntry(entry)) return;
    const { customType, data } = entry;
    if (!isRecord(data)) return;
    if (customType === CONDENSE_DIAGNOSTIC) {
      const kind = typeof data.kind === "string" ? data.kind : "diagnostic";
      const detail = typeof data.detail === "string" ? data.detail : "";
      const { text, severity, blockIds, toolCallIds } = diagnosticText(kind, detail);
      const ids = new Set(toolCallIds);
      // The results a sweep names were on the branch before it: the newest occurrence of each id.
      const keys = new Map<string, string>();
      for (const call of calls) {
        if (!ids.has(call.toolCallId)) continue;
        const at = call.resultEntryId !== undefined ? positionOf().get(call.resultEntryId) : undefined;
        if (at !== undefined && at < i) keys.set(call.toolCallId, call.occurrenceKey);
      }
      out.push({ entryId: entry.id, kind, severity, text, detail, blockIds, callKeys: [...keys.values()] });
    } else if (customType === CONDENSE_FLUSH_METRICS) {
      const count = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
      flushes.push({
        entryId: entry.id,
        position: i,
        trigger: typeof data.trigger === "string" ? data.trigger : "?",
        outcome: typeof data.outcome === "string" ? data.outcome : "?",
        captured: count(data.capturedBatches),
        processed: count(data.processedBatches),
      });
    }
  });
  if (out.length === 0 && flushes.length === 0) return out;
  const position = positionOf();
  if (flushes.length) out.push(...flushDiagnostics(flushes, calls, index, position, backfilledEntries(branch)));
  return out.sort((a, b) => position.get(a.entryId)! - position.get(b.entryId)!);
}

/** Index entries a chain compression wrote for calls no summary covered (pi-condense marks them). */
function backfilledEntries(branch: readonly AnyEntry[]): Set<string> {
  const out = new Set<string>();
  for (const entry of branch) {
    if (!isCustomEntryOf(entry, PRUNE_INDEX)) continue;
    const index = readIndexData(entry.data);
    if (typeof index !== "string" && index.backfilled === true) out.add(entry.id);
  }
  return out;
}

/**
 * A flush record is the last entry of its flush: the calls it summarized are those indexed since the
 * previous record; a failed one concerns the calls still waiting then (results after the last flush
 * that did something, not indexed before the failure, not protected).
 */
function flushDiagnostics(flushes: readonly Flush[], calls: readonly DiagnosedCall[], index: PruneIndex, position: ReadonlyMap<string, number>, backfilled: ReadonlySet<string>): DiagnosticView[] {
  const indexedAt = new Map<string, number>();
  for (const call of index.calls.values()) {
    // A spill is indexed when its turn ends, a chain's backfill when the chain is compressed: neither is a flush's summary.
    if (call.record.spillPath || (call.indexEntryId !== undefined && backfilled.has(call.indexEntryId))) continue;
    const at = call.indexEntryId !== undefined ? position.get(call.indexEntryId) : undefined;
    if (at !== undefined) indexedAt.set(call.key, at);
  }
  const out: DiagnosticView[] = [];
  let previous = -1;
  let lastWorked = -1;
  for (const f of flushes) {
    const shown = flushText(f);
    if (shown) {
      const failed = shown.severity === "warning";
      const callKeys = calls
        .filter((call) => {
          const indexed = indexedAt.get(call.occurrenceKey);
          if (!failed) return indexed !== undefined && indexed > previous && indexed < f.position;
          const result = call.resultEntryId !== undefined ? position.get(call.resultEntryId) : undefined;
          return result !== undefined && result > lastWorked && result < f.position && (indexed === undefined || indexed > f.position) && call.state !== "protected";
        })
        .map((call) => call.occurrenceKey);
      out.push({ entryId: f.entryId, kind: "flush", severity: shown.severity, text: shown.text, ...(shown.note ? { note: shown.note } : {}), detail: `trigger=${f.trigger} outcome=${f.outcome}${f.captured !== undefined ? ` capturedBatches=${f.captured}` : ""}${f.processed !== undefined ? ` processedBatches=${f.processed}` : ""}`, blockIds: [], callKeys });
    }
    if (f.outcome !== "error" && f.outcome !== "empty") lastWorked = f.position;
    previous = f.position;
  }
  return out;
}
