// The pruner's index, rebuilt from one branch's entries: which tool results were pruned, under
// which short ref, by which summary, which were aliased or spilled, and which chains were compressed.
// Short refs (tN) and block ids (bN) are numbered per branch, so an index is never shared across leaves.
import type { AnyEntry, ChainData, DedupAliasData, FrontierData, StatsData, SummaryDetails, ToolCallRecord, ToolCallRef } from "../shapes/entries.ts";
import { isCustomEntry, isCustomMessageEntry, isMessageEntry, PRUNE_CHAIN, PRUNE_DEDUP_ALIAS, PRUNE_FRONTIER, PRUNE_INDEX, PRUNE_STATS, PRUNE_SUMMARY } from "../shapes/entries.ts";
import { createHash } from "node:crypto";
import { contentText, occurrenceKey } from "../shapes/messages.ts";
import { readChainData, readDedupAliasData, readFrontierData, readIndexData, readStatsData, readSummaryDetails } from "../shapes/read-payloads.ts";

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

/**
 * A copy of `index` a plan may change without touching the original: its maps and lists are
 * copied, the records in them shared (a plan adds and replaces entries; it does not edit records).
 */
export function copyIndex(index: PruneIndex): PruneIndex {
  return {
    ...index,
    calls: new Map(index.calls),
    byToolCallId: new Map([...index.byToolCallId].map(([id, calls]) => [id, [...calls]])),
    byShortRef: new Map(index.byShortRef),
    byContentHash: new Map(index.byContentHash),
    unhashed: [...index.unhashed],
    aliases: new Map(index.aliases),
    aliasIdCounts: new Map(index.aliasIdCounts),
    summaries: [...index.summaries],
    chains: [...index.chains],
    frontier: index.frontier ? { ...index.frontier } : undefined,
    stats: { ...index.stats },
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

/** The results a summary covers: its refs, or the bare ids of sessions written before refs existed. */
function refsOfSummary(details: SummaryDetails | string): ToolCallRef[] {
  if (typeof details === "string") return [];
  if (details.toolCallRefs) return details.toolCallRefs;
  if (details.toolCallIds) return details.toolCallIds.map((toolCallId) => ({ toolCallId }));
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
 * summarized again, so such records are left out. Spilled and superseded records need no summary; records a
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
    if (typeof record.spillPath === "string" || typeof record.supersededBy === "string" || this.namedEarlier(record, key)) {
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

/** The pruner's summaries, aliases and chains, each payload read once, in branch order: what the second pass takes in. */
type OurEntry =
  | { kind: "summary"; entryId: string; text: string; details: SummaryDetails | string }
  | { kind: "alias"; entryId: string; alias: DedupAliasData | string }
  | { kind: "chain"; entryId: string; chain: ChainData | string };

/**
 * Rebuilds the index from a branch (root → leaf). Tolerant: payloads with missing or wrong
 * fields are skipped, never fatal. Returns the problems it skipped over.
 */
export function rebuildIndex(branch: readonly AnyEntry[]): { index: PruneIndex; problems: string[] } {
  const builder = new IndexBuilder();
  builder.addAll(branch);
  return { index: builder.index(), problems: builder.problems() };
}

/**
 * rebuildIndex of a branch that grows at its end, without reading it again: entries are added in
 * order, and `index()` is what rebuildIndex would give for the entries added so far. The entries
 * the pruner writes between two requests (an index entry and the summary that covers it, a chain,
 * an alias) only add to the index, so the calls and summaries already indexed are kept as they
 * are; an entry that reaches back (a summary that covers a record an earlier flush left raw, a
 * short ref given to a call already named, a call an earlier summary names) has the index built
 * again from what was read, still without reading the branch again.
 */
export class IndexBuilder {
  // What one pass over the entries collects (rebuildIndex's first pass).
  /** Refs named by summaries and index entries win over sequential numbering. */
  private readonly namedRefs = new Map<string, string>();
  /** Refs summaries and chains use: never handed out again. */
  private readonly refsInUse: string[] = [];
  private readonly pending: PendingRecord[] = [];
  private readonly coverage = new Coverage();
  /** The pruner's entries the second pass reads, in branch order (most of a branch is messages). */
  private readonly ours: OurEntry[] = [];
  private frontier: { entryId: string; data: FrontierData } | undefined;
  private stats: StatsData | undefined;
  private lastMessageTimestamp: number | undefined;
  private epoch: number | undefined;
  private readonly readProblems: string[] = [];

  // The index of what the second pass has taken in so far.
  private built: PruneIndex | undefined;
  private builtProblems: string[] = [];
  /** pending[0, keptUpTo) and ours[0, oursUpTo) are in `built`; refsInUse[0, refsUpTo) counted. */
  private keptUpTo = 0;
  private oursUpTo = 0;
  private refsUpTo = 0;
  /** Records in `built`'s range that no summary covered: one covered later reaches back. */
  private uncovered: PendingRecord[] = [];
  /** Every key, id and short ref the built summaries looked calls up by. */
  private readonly summaryNames = new Set<string>();
  /** Something added since `built` changes what it holds: it is built again. */
  private reachesBack = false;

  addAll(entries: readonly AnyEntry[]): void {
    for (const entry of entries) this.add(entry);
  }

  add(entry: AnyEntry): void {
    if (isMessageEntry(entry)) {
      const timestamp: unknown = entry.message?.timestamp;
      if (typeof timestamp === "number") this.lastMessageTimestamp = timestamp;
      return;
    }
    if (isCustomMessageEntry(entry)) {
      if (entry.customType === PRUNE_SUMMARY) this.addSummary(entry.id, contentText(entry.content), readSummaryDetails(entry.details));
      return;
    }
    if (!isCustomEntry(entry)) return;
    switch (entry.customType) {
      case PRUNE_FRONTIER: {
        // A flush ends with a frontier entry: it opens an epoch, but for a flush that changed only
        // stubs near the end (its frontier says so).
        const frontier = readFrontierData(entry.data);
        if (typeof frontier === "string" || frontier.keepsEpoch !== true) this.openEpoch();
        if (typeof frontier === "string") return;
        // How the flush was written is not part of what the index shows of it.
        const { keepsEpoch: _written, ...data } = frontier;
        this.frontier = { entryId: entry.id, data };
        return;
      }
      case PRUNE_STATS: {
        const stats = readStatsData(entry.data);
        if (typeof stats !== "string") this.stats = stats;
        return;
      }
      case PRUNE_INDEX:
        this.addIndexEntry(entry.id, entry.data);
        return;
      case PRUNE_DEDUP_ALIAS:
        this.ours.push({ kind: "alias", entryId: entry.id, alias: readDedupAliasData(entry.data) });
        return;
      case PRUNE_CHAIN: {
        // A compression ends with a chain entry: it opens an epoch.
        this.openEpoch();
        const chain = readChainData(entry.data);
        this.ours.push({ kind: "chain", entryId: entry.id, chain });
        if (typeof chain !== "string") this.addChainCoverage(chain);
        return;
      }
    }
  }

  private openEpoch(): void {
    if (this.lastMessageTimestamp !== undefined) this.epoch = this.lastMessageTimestamp;
  }

  private addSummary(entryId: string, text: string, details: SummaryDetails | string): void {
    this.ours.push({ kind: "summary", entryId, text, details });
    for (const ref of refsOfSummary(details)) {
      if (ref.shortId) {
        this.name(recordKey(ref), ref.shortId);
        this.refsInUse.push(ref.shortId);
      }
      this.coverage.cover(ref.toolCallId, ref.resultTimestamp === undefined ? undefined : recordKey(ref));
    }
  }

  private addIndexEntry(entryId: string, data: unknown): void {
    const read = readIndexData(data);
    if (typeof read === "string" || !read.toolCalls) {
      this.readProblems.push(`entry ${entryId}: ${PRUNE_INDEX} without a toolCalls list`);
      return;
    }
    for (const ref of read.refs ?? []) if (ref.shortId) this.name(recordKey(ref), ref.shortId);
    for (let i = 0; i < read.unreadableRecords; i++) this.readProblems.push(`entry ${entryId}: a tool-call record without toolCallId/toolName`);
    for (const record of read.toolCalls) {
      const item: PendingRecord = { record, key: recordKey(record), entryId, covered: false };
      this.pending.push(item);
      this.coverage.addRecord(item);
    }
  }

  private addChainCoverage(chain: ChainData): void {
    if (chain.droppedOccurrenceKeys) {
      for (const key of chain.droppedOccurrenceKeys) this.coverage.cover(key.includes("@") ? key.slice(0, key.lastIndexOf("@")) : key, key.includes("@") ? key : undefined);
    } else if (chain.droppedToolCallIds) {
      for (const id of chain.droppedToolCallIds) this.coverage.cover(id, undefined);
    }
    if (chain.toolRefs) this.refsInUse.push(...chain.toolRefs);
  }

  /** A short ref for an occurrence key; a built call whose ref it changes reaches back. */
  private name(key: string, ref: string): void {
    const built = this.built;
    if (built && !this.reachesBack && this.namedRefs.get(key) !== ref && (built.calls.has(key) || built.byToolCallId.has(key))) this.reachesBack = true;
    this.namedRefs.set(key, ref);
  }

  /** rebuildIndex's index of the entries added so far: a new object whenever asked (its maps may be shared with earlier ones, which it supersedes). */
  index(): PruneIndex {
    let built = this.reachesBack || !this.built || this.uncovered.some((p) => p.covered) ? this.buildAgain() : this.built;
    if (!this.takeIn(built)) {
      built = this.buildAgain();
      this.takeIn(built);
    }
    // The frontier, stats and epoch are the newest ones: set whole each time.
    if (this.epoch !== undefined) built.epoch = this.epoch;
    if (this.frontier) {
      built.frontier = { ...this.frontier.data };
      built.frontierEntryId = this.frontier.entryId;
    }
    if (this.stats) built.stats = { ...this.stats };
    return { ...built };
  }

  /** rebuildIndex's problems for the entries added so far. */
  problems(): string[] {
    this.index();
    const uncovered: string[] = [];
    for (const p of this.pending) {
      if (!p.covered) uncovered.push(`entry ${p.entryId}: ${p.key} was indexed but no summary covers it (an interrupted flush); left raw`);
    }
    return [...this.readProblems, ...uncovered, ...this.builtProblems];
  }

  private buildAgain(): PruneIndex {
    this.built = emptyIndex();
    this.builtProblems = [];
    this.keptUpTo = this.oursUpTo = this.refsUpTo = 0;
    this.uncovered = [];
    this.summaryNames.clear();
    this.reachesBack = false;
    return this.built;
  }

  /**
   * The second pass over what was read since `index` was built: the covered records, then the
   * summaries, aliases and chains. False, with nothing changed, when a covered record is one an
   * earlier summary looks up (by key, id or short ref): that summary would read differently.
   */
  private takeIn(index: PruneIndex): boolean {
    const kept: PendingRecord[] = [];
    const uncovered: PendingRecord[] = [];
    for (let i = this.keptUpTo; i < this.pending.length; i++) {
      const p = this.pending[i]!;
      (p.covered ? kept : uncovered).push(p);
    }
    const namedRef = ({ record, key }: PendingRecord) => this.namedRefs.get(key) ?? this.namedRefs.get(record.toolCallId);
    if (this.summaryNames.size > 0) {
      for (const p of kept) if (this.summaryNames.has(p.key) || this.summaryNames.has(namedRef(p) ?? p.record.toolCallId)) return false;
    }
    this.keptUpTo = this.pending.length;
    this.uncovered.push(...uncovered);
    for (; this.refsUpTo < this.refsInUse.length; this.refsUpTo++) index.lastRefNumber = Math.max(index.lastRefNumber, refNumber(this.refsInUse[this.refsUpTo]));
    for (const p of kept) {
      const ref = namedRef(p);
      if (ref) index.lastRefNumber = Math.max(index.lastRefNumber, refNumber(ref));
    }
    for (const p of kept) {
      // A record no summary or index entry gave a short ref (another writer's spill, say) is named by
      // its tool-call id, as that writer's stub named it: a `tN` made up here would be a ref nobody sent.
      addIndexedCall(index, { record: p.record, key: p.key, shortRef: namedRef(p) ?? p.record.toolCallId, indexEntryId: p.entryId });
    }
    for (; this.oursUpTo < this.ours.length; this.oursUpTo++) this.readOurs(index, this.ours[this.oursUpTo]!);
    return true;
  }

  private readOurs(index: PruneIndex, entry: OurEntry): void {
    const { entryId } = entry;
    if (entry.kind === "summary") {
      const { details } = entry;
      const keys: string[] = [];
      const refs = refsOfSummary(details).map((ref) => {
        const key = recordKey(ref);
        this.summaryNames.add(key).add(ref.toolCallId);
        if (ref.shortId) this.summaryNames.add(ref.shortId);
        const call = lookupRef(index, ref);
        if (call) {
          call.summaryEntryId ??= entryId;
          keys.push(call.key);
        } else keys.push(key);
        return { ...ref, shortId: ref.shortId ?? call?.shortRef ?? ref.toolCallId };
      });
      const read = typeof details === "string" ? {} : details;
      index.summaries.push({ entryId, text: entry.text, refs, keys, toolNames: read.toolNames ?? [], turnIndex: read.turnIndex, timestamp: read.timestamp });
    } else if (entry.kind === "alias") {
      const { alias } = entry;
      if (typeof alias === "string") {
        this.builtProblems.push(`entry ${entryId}: ${PRUNE_DEDUP_ALIAS} ${alias}`);
        return;
      }
      const newKey = occurrenceKey(alias.newToolCallId, alias.newResultTimestamp);
      const originalKey = occurrenceKey(alias.originalToolCallId, alias.originalResultTimestamp);
      addAlias(index, { entryId, newKey, originalKey, data: alias });
    } else {
      const { chain } = entry;
      if (typeof chain === "string") {
        this.builtProblems.push(`entry ${entryId}: ${PRUNE_CHAIN} ${chain}`);
        return;
      }
      index.chains.push({ ...chain, entryId });
      index.lastBlockNumber = Math.max(index.lastBlockNumber, blockNumber(chain.blockId));
    }
  }
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
