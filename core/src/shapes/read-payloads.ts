// The pruner's persisted payloads read back from a session file, one reader a payload: each
// narrows what the file holds to its type in entries.ts, or says why it cannot. Session files are
// input (another writer's, an older version's, a hand edit): a field of the wrong type is left
// out, never trusted, and nothing here throws.
import type {
  ChainData,
  DedupAliasData,
  FrontierData,
  IndexData,
  SettingsData,
  StatsData,
  SummaryDetails,
  ToolCallRecord,
  ToolCallRef,
} from "./entries.ts";
import { isRecord } from "./json.ts";

const NOT_AN_OBJECT = "its data is not an object";

const isString = (value: unknown): value is string => typeof value === "string";

/** The string items of a list; undefined when it is no list (a list of no strings stays a list). */
function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.filter(isString) : undefined;
}

const isFiniteNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);

// ---- tool calls ----

/** A ref with a string toolCallId; a shortId that is not a non-empty string, or a resultTimestamp that is not a number, is left out. */
export function readToolCallRef(value: unknown): ToolCallRef | undefined {
  if (!isRecord(value) || !isString(value.toolCallId)) return undefined;
  const ref: ToolCallRef = { toolCallId: value.toolCallId };
  if (isString(value.shortId) && value.shortId) ref.shortId = value.shortId;
  if (typeof value.resultTimestamp === "number") ref.resultTimestamp = value.resultTimestamp;
  return ref;
}

/** Optional record fields and the type each must have. */
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
  supersededBy: "string",
};

const RECORD_FIELDS = Object.entries(RECORD_FIELD_TYPES);

function wrongRecordFields(value: Record<string, unknown>): string[] {
  const wrong: string[] = [];
  for (const [field, type] of RECORD_FIELDS) {
    const v = value[field];
    if (v !== undefined && !(type === "object" ? isRecord(v) : typeof v === type)) wrong.push(field);
  }
  return wrong;
}

function isToolCallRecord(value: Record<string, unknown>): value is Record<string, unknown> & ToolCallRecord {
  return isString(value.toolCallId) && isString(value.toolName) && wrongRecordFields(value).length === 0;
}

/**
 * A tool-call record with a string toolCallId and toolName. Its fields of the wrong type are left
 * out of a copy; a record with none comes back as the very object it was (other fields kept).
 */
export function readToolCallRecord(value: unknown): ToolCallRecord | undefined {
  if (!isRecord(value) || !isString(value.toolCallId) || !isString(value.toolName)) return undefined;
  if (isToolCallRecord(value)) return value;
  const copy = { ...value };
  for (const field of wrongRecordFields(value)) delete copy[field];
  return isToolCallRecord(copy) ? copy : undefined;
}

// ---- the payloads ----

/** An index entry's payload read back, with how many of its records could not be (no string toolCallId and toolName). */
export interface IndexRead extends IndexData {
  /** Absent when the payload holds no toolCalls list. */
  toolCalls?: ToolCallRecord[];
  refs?: ToolCallRef[];
  unreadableRecords: number;
}

/** `context-prune-index`: its records and refs, each read on its own (one that cannot be read is left out). */
export function readIndexData(data: unknown): IndexRead | string {
  if (!isRecord(data)) return NOT_AN_OBJECT;
  const out: IndexRead = { unreadableRecords: 0 };
  if (Array.isArray(data.toolCalls)) {
    out.toolCalls = [];
    for (const raw of data.toolCalls) {
      const record = readToolCallRecord(raw);
      if (record) out.toolCalls.push(record);
      else out.unreadableRecords++;
    }
  }
  if (Array.isArray(data.refs)) out.refs = data.refs.map(readToolCallRef).filter((ref): ref is ToolCallRef => ref !== undefined);
  if (typeof data.backfilled === "boolean") out.backfilled = data.backfilled;
  return out;
}

/**
 * A `context-prune-summary` message's details. A list field is there when the payload held a list
 * (so a summary written with refs is told from one written with bare ids), holding only the items
 * that can be read.
 */
export function readSummaryDetails(details: unknown): SummaryDetails | string {
  if (!isRecord(details)) return "its details are not an object";
  const out: SummaryDetails = {};
  if (Array.isArray(details.toolCallRefs)) out.toolCallRefs = details.toolCallRefs.map(readToolCallRef).filter((ref): ref is ToolCallRef => ref !== undefined);
  const ids = stringList(details.toolCallIds);
  if (ids) out.toolCallIds = ids;
  const names = stringList(details.toolNames);
  if (names) out.toolNames = names;
  if (typeof details.turnIndex === "number") out.turnIndex = details.turnIndex;
  if (typeof details.timestamp === "number") out.timestamp = details.timestamp;
  return out;
}

/** `context-prune-dedup-alias`: needs both call ids; a result timestamp that is not a number is left out. */
export function readDedupAliasData(data: unknown): DedupAliasData | string {
  if (!isRecord(data) || !isString(data.newToolCallId) || !isString(data.originalToolCallId)) return "without newToolCallId/originalToolCallId";
  const out: DedupAliasData = { newToolCallId: data.newToolCallId, originalToolCallId: data.originalToolCallId };
  if (typeof data.newResultTimestamp === "number") out.newResultTimestamp = data.newResultTimestamp;
  if (typeof data.originalResultTimestamp === "number") out.originalResultTimestamp = data.originalResultTimestamp;
  return out;
}

/** `context-prune-chain`: needs its block id and its start; lists hold only their string items. */
export function readChainData(data: unknown): ChainData | string {
  if (!isRecord(data) || !isString(data.blockId) || typeof data.startUserTimestamp !== "number") return "without blockId/startUserTimestamp";
  const out: ChainData = { blockId: data.blockId, startUserTimestamp: data.startUserTimestamp };
  if (typeof data.finalAssistantTimestamp === "number") out.finalAssistantTimestamp = data.finalAssistantTimestamp;
  for (const field of ["droppedToolCallIds", "droppedOccurrenceKeys", "protectedToolCallIds", "toolRefs"] as const) {
    const list = stringList(data[field]);
    if (list) out[field] = list;
  }
  if (typeof data.compressedAt === "number") out.compressedAt = data.compressedAt;
  if (isString(data.rangeSummaryText)) out.rangeSummaryText = data.rangeSummaryText;
  if (isString(data.bodySource)) out.bodySource = data.bodySource;
  return out;
}

/** The frontier's counts, in the order they are written. */
const FRONTIER_NUMBERS = ["lastAttemptedTurnIndex", "lastAttemptedTimestamp", "attemptedBatchCount", "attemptedToolCallCount", "rawCharCount", "summaryCharCount"] as const;

/** `context-prune-frontier`: only its fields of the right type, numbers finite. */
export function readFrontierData(data: unknown): FrontierData | string {
  if (!isRecord(data)) return NOT_AN_OBJECT;
  const out: FrontierData = {};
  if (isString(data.lastAttemptedToolCallId)) out.lastAttemptedToolCallId = data.lastAttemptedToolCallId;
  if (isString(data.lastAttemptedToolName)) out.lastAttemptedToolName = data.lastAttemptedToolName;
  for (const field of FRONTIER_NUMBERS) {
    const value = data[field];
    if (isFiniteNumber(value)) out[field] = value;
  }
  if (isString(data.outcome)) out.outcome = data.outcome;
  if (typeof data.keepsEpoch === "boolean") out.keepsEpoch = data.keepsEpoch;
  return out;
}

const STATS_NUMBERS = ["totalInputTokens", "totalOutputTokens", "totalCost", "callCount", "chainsCompressed", "rangesSummarized"] as const;

/** `context-prune-stats`: only its finite numbers. */
export function readStatsData(data: unknown): StatsData | string {
  if (!isRecord(data)) return NOT_AN_OBJECT;
  const out: StatsData = {};
  for (const field of STATS_NUMBERS) {
    const value = data[field];
    if (isFiniteNumber(value)) out[field] = value;
  }
  return out;
}

/** `context-prune-settings`: its writer's version and its `contextPrune` block (read through the settings validator by whoever uses it). */
export function readSettingsData(data: unknown): SettingsData | string {
  if (!isRecord(data)) return NOT_AN_OBJECT;
  const out: SettingsData = {};
  if (isString(data.version)) out.version = data.version;
  if (isRecord(data.config)) out.config = data.config;
  if (isFiniteNumber(data.contextWindow) && data.contextWindow > 0) out.contextWindow = data.contextWindow;
  return out;
}
