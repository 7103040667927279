// The pruner's index, rebuilt from one branch's entries: which tool results were pruned, under
// which short ref, by which summary, which were aliased or spilled, and which chains were compressed.
// Short refs (tN) and block ids (bN) are numbered per branch, so an index is never shared across leaves.
import type {
  AnyEntry,
  ChainData,
  DedupAliasData,
  FrontierData,
  IndexData,
  StatsData,
  SummaryDetails,
  ToolCallRecord,
  ToolCallRef,
} from "../shapes/entries.ts";
import { PRUNE_CHAIN, PRUNE_DEDUP_ALIAS, PRUNE_FRONTIER, PRUNE_INDEX, PRUNE_STATS, PRUNE_SUMMARY } from "../shapes/entries.ts";
import { createHash } from "node:crypto";
import { contentText, occurrenceKey } from "../shapes/messages.ts";
import { isRecord } from "../shapes/json.ts";

export interface IndexedCall {
  record: ToolCallRecord;
  /** Occurrence key `toolCallId@resultTimestamp` (bare id on records written before keys existed). */
  key: string;
  shortRef: string;
  indexEntryId?: string;
  summaryEntryId?: string;
}

export interface SummaryInfo {
  entryId: string;
  text: string;
  refs: (ToolCallRef & { shortId: string })[];
  /** Occurrence keys of the results this summary covers. */
  keys: string[];
  toolNames: string[];
  turnIndex?: number;
  timestamp?: number;
}

export interface AliasInfo {
  entryId: string;
  newKey: string;
  originalKey: string;
  data: DedupAliasData;
}

export interface ChainInfo extends ChainData {
  entryId: string;
}

export interface PruneIndex {
  calls: Map<string, IndexedCall>;
  /** Raw provider id → every indexed occurrence with that id, oldest first. */
  byToolCallId: Map<string, IndexedCall[]>;
  byShortRef: Map<string, IndexedCall>;
  /** Content hash → the first indexed call with that content (for dedup). Read it through `callWithContentHash`. */
  byContentHash: Map<string, IndexedCall>;
  /** Calls whose record carries no hash (older tools), in index order: hashed on the first dedup lookup. */
  unhashed: IndexedCall[];
  /** Occurrence key of a duplicate result → key of the original it aliases. */
  aliases: Map<string, AliasInfo>;
  /** How many aliases each duplicate's raw id has: lets a lookup skip building keys for ids without one. */
  aliasIdCounts: Map<string, number>;
  summaries: SummaryInfo[];
  chains: ChainInfo[];
  frontier?: FrontierData;
  frontierEntryId?: string;
  stats: StatsData;
  /** Highest tN number in use on this branch. */
  lastRefNumber: number;
  /** Highest bN number in use on this branch. */
  lastBlockNumber: number;
  /**
   * The newest flush on the branch, as the timestamp of the last message before it: the render's
   * time-dependent steps count turns only up to there. Undefined until the first flush.
   */
  epoch?: number;
}

export function emptyIndex(): PruneIndex {
  return {
    calls: new Map(),
    byToolCallId: new Map(),
    byShortRef: new Map(),
    byContentHash: new Map(),
    unhashed: [],
    aliases: new Map(),
    aliasIdCounts: new Map(),
    summaries: [],
    chains: [],
    stats: {},
    lastRefNumber: 0,
    lastBlockNumber: 0,
  };
}

export function recordKey(record: Pick<ToolCallRecord, "toolCallId" | "resultTimestamp">): string {
  return occurrenceKey(record.toolCallId, typeof record.resultTimestamp === "number" ? record.resultTimestamp : undefined);
}

/** N of a name "<prefix>N" (t12 → 12 for prefix "t"); 0 for anything else. */
function numberAfter(prefix: string, name: string | undefined): number {
  if (!name || name.length <= prefix.length || !name.startsWith(prefix)) return 0;
  let n = 0;
  for (let i = prefix.length; i < name.length; i++) {
    const digit = name.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return 0;
    n = n * 10 + digit;
  }
  return n;
}

function refNumber(ref: string | undefined): number {
  return numberAfter("t", ref);
}

function blockNumber(id: string | undefined): number {
  return numberAfter("b", id);
}

/** Optional record fields and the type each must have; a field of another type is dropped (session files are input). */
const RECORD_FIELD_TYPES: Readonly<Record<string, "string" | "number" | "boolean" | "object">> = {
  args: "object",
  resultText: "string",
  isError: "boolean",
  turnIndex: "number",
  timestamp: "number",
  resultTimestamp: "number",
  spillPath: "string",
  spillBytes: "number",
  resultPreview: "string",
  contentHash: "string",
};

const RECORD_FIELDS = Object.entries(RECORD_FIELD_TYPES);

function asRecord(value: unknown): ToolCallRecord | undefined {
  if (!isRecord(value) || typeof value.toolCallId !== "string" || typeof value.toolName !== "string") return undefined;
  let record: Record<string, unknown> | undefined;
  for (const [field, type] of RECORD_FIELDS) {
    const v = value[field];
    if (v === undefined || (type === "object" ? isRecord(v) : typeof v === type)) continue;
    record ??= { ...value };
    delete record[field];
  }
  return (record ?? value) as unknown as ToolCallRecord;
}

/** A ref with a string toolCallId; a shortId or resultTimestamp of the wrong type is left out. */
function asRef(value: unknown): ToolCallRef | undefined {
  if (!isRecord(value) || typeof value.toolCallId !== "string") return undefined;
  const ref: ToolCallRef = { toolCallId: value.toolCallId };
  if (typeof value.shortId === "string" && value.shortId) ref.shortId = value.shortId;
  if (typeof value.resultTimestamp === "number") ref.resultTimestamp = value.resultTimestamp;
  return ref;
}

/** Only the fields of a known type: stats and frontier payloads are summed and shown. */
function typedFields<T>(data: Record<string, unknown>, types: Readonly<Record<string, "string" | "number">>): T {
  const out: Record<string, unknown> = {};
  for (const [field, type] of Object.entries(types)) {
    const v = data[field];
    if (typeof v === type && (type !== "number" || Number.isFinite(v))) out[field] = v;
  }
  return out as T;
}

const FRONTIER_FIELD_TYPES = {
  lastAttemptedToolCallId: "string",
  lastAttemptedToolName: "string",
  lastAttemptedTurnIndex: "number",
  lastAttemptedTimestamp: "number",
  attemptedBatchCount: "number",
  attemptedToolCallCount: "number",
  rawCharCount: "number",
  summaryCharCount: "number",
  outcome: "string",
} as const;

const STATS_FIELD_TYPES = {
  totalInputTokens: "number",
  totalOutputTokens: "number",
  totalCost: "number",
  callCount: "number",
  chainsCompressed: "number",
  rangesSummarized: "number",
} as const;

function refsOfSummary(details: SummaryDetails | undefined): ToolCallRef[] {
  if (!details) return [];
  if (Array.isArray(details.toolCallRefs)) {
    return details.toolCallRefs.map(asRef).filter((r): r is ToolCallRef => r !== undefined);
  }
  if (Array.isArray(details.toolCallIds)) {
    return details.toolCallIds.filter((id): id is string => typeof id === "string").map((toolCallId) => ({ toolCallId }));
  }
  return [];
}

/** Adds a call to the index (used by the rebuild and by the live pruner when it indexes a batch). */
export function addIndexedCall(index: PruneIndex, call: IndexedCall): void {
  index.calls.set(call.key, call);
  const list = index.byToolCallId.get(call.record.toolCallId);
  if (list) {
    if (!list.includes(call)) list.push(call);
  } else index.byToolCallId.set(call.record.toolCallId, [call]);
  index.byShortRef.set(call.shortRef, call);
  index.lastRefNumber = Math.max(index.lastRefNumber, refNumber(call.shortRef));
  // Records written by older tools may lack a hash: hashing waits for the first dedup lookup (a view
  // never needs it). A spilled one without a hash has no text to hash.
  const hash = call.record.contentHash;
  if (index.unhashed.length > 0 || (hash === undefined && !call.record.spillPath)) index.unhashed.push(call);
  else if (hash && !index.byContentHash.has(hash)) index.byContentHash.set(hash, call);
}

/** The first indexed call whose output has this content hash. */
export function callWithContentHash(index: PruneIndex, hash: string): IndexedCall | undefined {
  if (index.unhashed.length > 0) {
    // In index order, so the first call with a given content stays the one found.
    for (const call of index.unhashed) {
      const h = call.record.contentHash ?? (call.record.spillPath ? undefined : contentHash(call.record.toolName, call.record.resultText ?? ""));
      if (h && !index.byContentHash.has(h)) index.byContentHash.set(h, call);
    }
    index.unhashed = [];
  }
  return index.byContentHash.get(hash);
}

/** sha1 of `toolName \0 normalised text`; normalisation only removes what never changes meaning. */
export function contentHash(toolName: string, text: string): string {
  const normalized = text
    .replace(/\r\n/g, "\n")
    .split("\n")
    .map((line) => line.replace(/\s+$/, ""))
    .join("\n")
    .trim();
  return createHash("sha1").update(toolName).update("\0").update(normalized).digest("hex");
}

/** Registers a dedup alias (the rebuild, and the live pruner when it aliases a duplicate). */
export function addAlias(index: PruneIndex, alias: AliasInfo): void {
  if (!index.aliases.has(alias.newKey)) {
    const id = alias.data.newToolCallId;
    index.aliasIdCounts.set(id, (index.aliasIdCounts.get(id) ?? 0) + 1);
  }
  index.aliases.set(alias.newKey, alias);
}

export function removeAlias(index: PruneIndex, newKey: string): void {
  const alias = index.aliases.get(newKey);
  if (!alias) return;
  index.aliases.delete(newKey);
  const id = alias.data.newToolCallId;
  const left = (index.aliasIdCounts.get(id) ?? 1) - 1;
  if (left > 0) index.aliasIdCounts.set(id, left);
  else index.aliasIdCounts.delete(id);
}

export function nextShortRef(index: PruneIndex): string {
  index.lastRefNumber += 1;
  return `t${index.lastRefNumber}`;
}

export function nextBlockId(index: PruneIndex): string {
  index.lastBlockNumber += 1;
  return `b${index.lastBlockNumber}`;
}

interface PendingRecord {
  record: ToolCallRecord;
  key: string;
  entryId: string;
  /** Spilled, or named by a summary or a chain: only such records are indexed. */
  covered: boolean;
}

/**
 * Which records a summary or a chain vouches for. A summarized batch is persisted as an index
 * entry, then its summary: a process killed between the two leaves records no summary covers.
 * Their results must stay raw (a stub would point at a summary that does not exist) and be
 * summarized again, so such records are left out. Spilled records need no summary; records a
 * compressed chain added are covered by the chain entry that follows them.
 */
class Coverage {
  /** Index records not covered yet, by occurrence key (a later index entry for the same key supersedes). */
  private readonly awaiting = new Map<string, PendingRecord>();
  /** What summaries and chains seen so far named (a backfilled index may come after its summary). */
  private readonly keys = new Set<string>();
  private readonly bareIds = new Set<string>();
  private readonly anyIds = new Set<string>();

  addRecord(pending: PendingRecord): void {
    const { record, key } = pending;
    if (typeof record.spillPath === "string" || this.namedEarlier(record, key)) {
      pending.covered = true;
      return;
    }
    this.awaiting.set(key, pending); // an earlier uncovered record of this key stays uncovered
  }

  /** A ref with a result timestamp names one occurrence; a bare id (older tools) every occurrence of that id. */
  cover(toolCallId: string, key: string | undefined): void {
    this.anyIds.add(toolCallId);
    if (key === undefined) this.bareIds.add(toolCallId);
    else this.keys.add(key);
    for (const [k, pending] of this.awaiting) {
      const matches = key === undefined ? pending.record.toolCallId === toolCallId : k === key || (k === toolCallId && pending.record.resultTimestamp === undefined);
      if (matches) {
        pending.covered = true;
        this.awaiting.delete(k);
      }
    }
  }

  private namedEarlier(record: ToolCallRecord, key: string): boolean {
    return this.keys.has(key) || this.bareIds.has(record.toolCallId) || (record.resultTimestamp === undefined && this.anyIds.has(record.toolCallId));
  }
}

/**
 * Rebuilds the index from a branch (root → leaf). Tolerant: payloads with missing or wrong
 * fields are skipped, never fatal. Returns the problems it skipped over.
 */
export function rebuildIndex(branch: readonly AnyEntry[]): { index: PruneIndex; problems: string[] } {
  const index = emptyIndex();
  const problems: string[] = [];
  // Refs named by summaries and index entries win over sequential numbering.
  const namedRefs = new Map<string, string>();
  /** Refs summaries and chains use: never handed out again. */
  const refsInUse = new Set<string>();
  const pending: PendingRecord[] = [];
  const coverage = new Coverage();
  /** The pruner's entries the second pass reads, in branch order (most of a branch is messages). */
  const ours: AnyEntry[] = [];
  let frontierEntry: AnyEntry | undefined;
  let statsEntry: AnyEntry | undefined;
  let lastMessageTimestamp: number | undefined;

  for (const entry of branch) {
    if (entry.type === "message") {
      const timestamp = (entry as { message?: { timestamp?: unknown } }).message?.timestamp;
      if (typeof timestamp === "number") lastMessageTimestamp = timestamp;
      continue;
    }
    if (entry.type !== "custom" && entry.type !== "custom_message") continue;
    const customType = (entry as { customType?: unknown }).customType;
    // A flush ends with a frontier entry, a compression with a chain entry: either opens an epoch,
    // but for a flush that changed only stubs near the end (its frontier says so).
    const keepsEpoch = customType === PRUNE_FRONTIER && isRecord((entry as { data?: unknown }).data) && ((entry as { data: Record<string, unknown> }).data.keepsEpoch === true);
    if (entry.type === "custom" && (customType === PRUNE_FRONTIER || customType === PRUNE_CHAIN) && !keepsEpoch && lastMessageTimestamp !== undefined) {
      index.epoch = lastMessageTimestamp;
    }
    if (entry.type === "custom" && customType === PRUNE_FRONTIER) {
      if (isRecord((entry as { data?: unknown }).data)) frontierEntry = entry;
      continue;
    }
    if (entry.type === "custom" && customType === PRUNE_STATS) {
      if (isRecord((entry as { data?: unknown }).data)) statsEntry = entry;
      continue;
    }
    if (customType === PRUNE_SUMMARY || customType === PRUNE_DEDUP_ALIAS || customType === PRUNE_CHAIN) ours.push(entry);
    if (entry.type === "custom_message" && customType === PRUNE_SUMMARY) {
      const details = (entry as { details?: unknown }).details;
      for (const ref of refsOfSummary(isRecord(details) ? (details as SummaryDetails) : undefined)) {
        if (ref.shortId) {
          namedRefs.set(recordKey(ref), ref.shortId);
          refsInUse.add(ref.shortId);
        }
        coverage.cover(ref.toolCallId, ref.resultTimestamp === undefined ? undefined : recordKey(ref));
      }
    } else if (entry.type === "custom" && customType === PRUNE_INDEX) {
      const data = (entry as { data?: unknown }).data;
      if (!isRecord(data) || !Array.isArray((data as IndexData).toolCalls)) {
        problems.push(`entry ${entry.id}: ${PRUNE_INDEX} without a toolCalls list`);
        continue;
      }
      const refs = (data as IndexData).refs;
      if (Array.isArray(refs)) {
        for (const ref of refs.map(asRef)) if (ref?.shortId) namedRefs.set(recordKey(ref), ref.shortId);
      }
      for (const raw of (data as IndexData).toolCalls ?? []) {
        const record = asRecord(raw);
        if (!record) {
          problems.push(`entry ${entry.id}: a tool-call record without toolCallId/toolName`);
          continue;
        }
        const item: PendingRecord = { record, key: recordKey(record), entryId: entry.id, covered: false };
        pending.push(item);
        coverage.addRecord(item);
      }
    } else if (entry.type === "custom" && customType === PRUNE_CHAIN) {
      const data = (entry as { data?: unknown }).data;
      if (!isRecord(data)) continue;
      const keys = data.droppedOccurrenceKeys;
      if (Array.isArray(keys)) {
        for (const key of keys) if (typeof key === "string") coverage.cover(key.includes("@") ? key.slice(0, key.lastIndexOf("@")) : key, key.includes("@") ? key : undefined);
      } else if (Array.isArray(data.droppedToolCallIds)) {
        for (const id of data.droppedToolCallIds) if (typeof id === "string") coverage.cover(id, undefined);
      }
      if (Array.isArray(data.toolRefs)) for (const ref of data.toolRefs) if (typeof ref === "string") refsInUse.add(ref);
    }
  }

  const kept = pending.filter((p) => p.covered);
  for (const p of pending) {
    if (!p.covered) problems.push(`entry ${p.entryId}: ${p.key} was indexed but no summary covers it (an interrupted flush); left raw`);
  }
  for (const ref of refsInUse) index.lastRefNumber = Math.max(index.lastRefNumber, refNumber(ref));
  for (const { record, key } of kept) {
    const ref = namedRefs.get(key) ?? namedRefs.get(record.toolCallId);
    if (ref) index.lastRefNumber = Math.max(index.lastRefNumber, refNumber(ref));
  }
  for (const { record, key, entryId } of kept) {
    // A record no summary or index entry gave a short ref (another writer's spill, say) is named by
    // its tool-call id, as that writer's stub named it: a `tN` made up here would be a ref nobody sent.
    const shortRef = namedRefs.get(key) ?? namedRefs.get(record.toolCallId) ?? record.toolCallId;
    addIndexedCall(index, { record, key, shortRef, indexEntryId: entryId });
  }

  for (const entry of ours) {
    const customType = (entry as { customType?: unknown }).customType;
    if (entry.type === "custom_message" && customType === PRUNE_SUMMARY) {
      const e = entry as { id: string; content?: unknown; details?: unknown };
      const details = isRecord(e.details) ? (e.details as SummaryDetails) : undefined;
      const refs = refsOfSummary(details);
      const keys: string[] = [];
      const normalized = refs.map((ref) => {
        const call = lookupRef(index, ref);
        if (call) {
          call.summaryEntryId ??= e.id;
          keys.push(call.key);
        } else keys.push(recordKey(ref));
        return { ...ref, shortId: ref.shortId ?? call?.shortRef ?? ref.toolCallId };
      });
      index.summaries.push({
        entryId: e.id,
        text: contentText(e.content as string),
        refs: normalized,
        keys,
        toolNames: Array.isArray(details?.toolNames) ? details.toolNames.filter((n): n is string => typeof n === "string") : [],
        turnIndex: typeof details?.turnIndex === "number" ? details.turnIndex : undefined,
        timestamp: typeof details?.timestamp === "number" ? details.timestamp : undefined,
      });
    } else if (entry.type === "custom" && customType === PRUNE_DEDUP_ALIAS) {
      const data = (entry as { data?: unknown }).data;
      if (!isRecord(data) || typeof data.newToolCallId !== "string" || typeof data.originalToolCallId !== "string") {
        problems.push(`entry ${entry.id}: ${PRUNE_DEDUP_ALIAS} without newToolCallId/originalToolCallId`);
        continue;
      }
      const alias = data as unknown as DedupAliasData;
      const newKey = occurrenceKey(alias.newToolCallId, numberOr(alias.newResultTimestamp));
      const originalKey = occurrenceKey(alias.originalToolCallId, numberOr(alias.originalResultTimestamp));
      addAlias(index, { entryId: entry.id, newKey, originalKey, data: alias });
    } else if (entry.type === "custom" && customType === PRUNE_CHAIN) {
      const data = (entry as { data?: unknown }).data;
      if (!isRecord(data) || typeof data.blockId !== "string" || typeof data.startUserTimestamp !== "number") {
        problems.push(`entry ${entry.id}: ${PRUNE_CHAIN} without blockId/startUserTimestamp`);
        continue;
      }
      const chain = data as unknown as ChainData;
      index.chains.push({ ...chain, entryId: entry.id });
      index.lastBlockNumber = Math.max(index.lastBlockNumber, blockNumber(chain.blockId));
    }
  }
  // The last frontier and stats entries on the branch are the current ones.
  if (frontierEntry) {
    index.frontier = typedFields<FrontierData>((frontierEntry as { data: Record<string, unknown> }).data, FRONTIER_FIELD_TYPES);
    index.frontierEntryId = frontierEntry.id;
  }
  if (statsEntry) index.stats = typedFields<StatsData>((statsEntry as { data: Record<string, unknown> }).data, STATS_FIELD_TYPES);
  return { index, problems };
}

function numberOr(v: unknown): number | undefined {
  return typeof v === "number" ? v : undefined;
}

function lookupRef(index: PruneIndex, ref: ToolCallRef): IndexedCall | undefined {
  return index.calls.get(recordKey(ref)) ?? (ref.shortId ? index.byShortRef.get(ref.shortId) : undefined) ?? index.calls.get(ref.toolCallId);
}

/**
 * The indexed call that covers the tool result with this id and timestamp, following dedup
 * aliases to their original. Exact occurrence keys first; a bare-id record (older sessions)
 * matches only when no keyed record exists for that id.
 */
export function findCallForResult(index: PruneIndex, toolCallId: string, resultTimestamp: number): { call: IndexedCall; aliased: boolean } | undefined {
  // This runs for every tool result on every request: look up by id (lists of one, nearly always)
  // rather than building an occurrence-key string per result.
  const occurrences = index.byToolCallId.get(toolCallId);
  if (occurrences) {
    for (const call of occurrences) if (call.record.resultTimestamp === resultTimestamp) return { call, aliased: false };
  }
  if (index.aliasIdCounts.has(toolCallId)) {
    const alias = index.aliases.get(occurrenceKey(toolCallId, resultTimestamp)) ?? index.aliases.get(toolCallId);
    if (alias) {
      const original = index.calls.get(alias.originalKey) ?? firstById(index, alias.data.originalToolCallId);
      if (original) return { call: original, aliased: true };
    }
  }
  if (occurrences) {
    for (const call of occurrences) if (typeof call.record.resultTimestamp !== "number") return { call, aliased: false };
  }
  return undefined;
}

function firstById(index: PruneIndex, toolCallId: string): IndexedCall | undefined {
  return index.byToolCallId.get(toolCallId)?.[0];
}

/**
 * Resolves what the model asked for: a short ref or a raw tool-call id. A raw id may name
 * several occurrences (ids repeat across responses); each is returned.
 */
export function resolveRequest(index: PruneIndex, idOrRef: string): IndexedCall[] {
  const byRef = index.byShortRef.get(idOrRef);
  if (byRef) return [byRef];
  const byKey = index.calls.get(idOrRef);
  if (byKey) return [byKey];
  const occurrences = index.byToolCallId.get(idOrRef);
  if (occurrences?.length) return [...occurrences];
  // A duplicate's id resolves to its original.
  const out: IndexedCall[] = [];
  for (const alias of index.aliases.values()) {
    if (alias.data.newToolCallId === idOrRef || alias.newKey === idOrRef) {
      const original = index.calls.get(alias.originalKey) ?? firstById(index, alias.data.originalToolCallId);
      if (original && !out.includes(original)) out.push(original);
    }
  }
  return out;
}
