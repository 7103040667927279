// Lookups in a session's view model and parsed data that the Sessions view and the documents both
// make: a call, summary, chain, marker or compaction by its key, and how many requests a branch sent.
import { getBranch, isMessageEntry, type CallView, type ChainView, type CompactionView, type MarkerView, type SessionData, type SessionView, type SummaryView } from "@pi-pruner/core";

interface ViewIndex {
  calls: Map<string, CallView>;
  summaries: Map<string, SummaryView>;
}

/** Built once per view: a view is never changed, only replaced. */
const indexes = new WeakMap<SessionView, ViewIndex>();

function indexOf(view: SessionView): ViewIndex {
  let index = indexes.get(view);
  if (!index) {
    index = { calls: new Map(view.calls.map((call) => [call.occurrenceKey, call])), summaries: new Map(view.summaries.map((s) => [s.entryId, s])) };
    indexes.set(view, index);
  }
  return index;
}

/** A call by its occurrence key. */
export function findCall(view: SessionView, key: string): CallView | undefined {
  return indexOf(view).calls.get(key);
}

export function findSummary(view: SessionView, entryId: string): SummaryView | undefined {
  return indexOf(view).summaries.get(entryId);
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

const counted = new WeakMap<SessionData, { leafId: string | null; entries: number; count: number }>();

/**
 * How many model requests the branch that ends at `leafId` sent: one per assistant message on it,
 * as core's modelRequests numbers them, counted without listing them (worked out again only when
 * the file was read further).
 */
export function requestCount(data: SessionData, leafId: string | null): number {
  const known = counted.get(data);
  if (known && known.leafId === leafId && known.entries === data.entries.length) return known.count;
  let count = 0;
  if (leafId !== null) {
    for (const entry of getBranch(data, leafId).entries) {
      if (!isMessageEntry(entry)) continue;
      // Session files are input: a message entry may hold anything.
      const message: unknown = entry.message;
      if (message && typeof message === "object" && (message as { role?: unknown }).role === "assistant") count++;
    }
  }
  counted.set(data, { leafId, entries: data.entries.length, count });
  return count;
}
