// Session file entry shapes (Pi 1.6, version 3) and the pruner's persisted payloads.
// Every payload field written by older tools is optional here: readers narrow, never assume.
import type { AgentMessage, TextContent, ImageContent } from "./messages.ts";

export interface SessionHeader {
  type: "session";
  version?: number;
  id: string;
  timestamp?: string;
  cwd?: string;
  parentSession?: string;
}

interface EntryBase {
  id: string;
  parentId: string | null;
  timestamp: string;
}

export interface MessageEntry extends EntryBase {
  type: "message";
  message: AgentMessage;
}
export interface CustomEntry extends EntryBase {
  type: "custom";
  customType: string;
  data?: unknown;
}
export interface CustomMessageEntry extends EntryBase {
  type: "custom_message";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  display?: boolean;
  details?: unknown;
}
interface CompactionEntry extends EntryBase {
  type: "compaction";
  summary: string;
  firstKeptEntryId: string;
  tokensBefore?: number;
  systemMessage?: AgentMessage;
  details?: unknown;
}
interface BranchSummaryEntry extends EntryBase {
  type: "branch_summary";
  fromId?: string | null;
  summary: string;
}
interface ContextEditEntry extends EntryBase {
  type: "context_edit";
  targetId: string;
  replacement: unknown;
}
interface LabelEntry extends EntryBase {
  type: "label";
  targetId: string;
  label?: string;
}
interface SessionInfoEntry extends EntryBase {
  type: "session_info";
  name?: string;
}
/** model_change, thinking_level_change, usage and any type a future Pi adds. */
interface OtherEntry extends EntryBase {
  type: string;
  [key: string]: unknown;
}

export type SessionEntry =
  | MessageEntry
  | CustomEntry
  | CustomMessageEntry
  | CompactionEntry
  | BranchSummaryEntry
  | ContextEditEntry
  | LabelEntry
  | SessionInfoEntry;

export type AnyEntry = SessionEntry | OtherEntry;

// ---- narrowing an entry by its type ----
// `OtherEntry`'s type is any string, so `entry.type === "message"` alone does not narrow an
// `AnyEntry`: these guards do. The type is all they look at: the session reader refuses a known
// type without the fields it needs (a message entry without a message object and its role, a
// custom entry without its customType), and Pi's own entries always have them.

function entryGuard<T extends SessionEntry["type"]>(type: T): (entry: AnyEntry) => entry is Extract<SessionEntry, { type: T }> {
  return (entry): entry is Extract<SessionEntry, { type: T }> => entry.type === type;
}

export const isMessageEntry = entryGuard("message");
export const isCustomEntry = entryGuard("custom");
export const isCustomMessageEntry = entryGuard("custom_message");
export const isCompactionEntry = entryGuard("compaction");
export const isBranchSummaryEntry = entryGuard("branch_summary");
export const isContextEditEntry = entryGuard("context_edit");
export const isLabelEntry = entryGuard("label");
export const isSessionInfoEntry = entryGuard("session_info");

/** A `custom` entry (hidden from the model) of this customType: how the pruner's and the markers' payload entries are found. */
export function isCustomEntryOf(entry: AnyEntry, customType: string): entry is CustomEntry {
  return isCustomEntry(entry) && entry.customType === customType;
}

// ---- the pruner's payloads (compatible with pi-condense 2.x) ----

export const PRUNE_SUMMARY = "context-prune-summary";
export const PRUNE_INDEX = "context-prune-index";
export const PRUNE_DEDUP_ALIAS = "context-prune-dedup-alias";
export const PRUNE_CHAIN = "context-prune-chain";
export const PRUNE_FRONTIER = "context-prune-frontier";
export const PRUNE_STATS = "context-prune-stats";
/** Our own entry (pi-condense writes none): the settings the render read from here on. */
export const PRUNE_SETTINGS = "context-prune-settings";

/** The tool the model calls to read a pruned output back. Its name is part of what sessions and stubs say. */
export const QUERY_TOOL = "context_tree_query";

export interface ToolCallRef {
  shortId?: string;
  toolCallId: string;
  resultTimestamp?: number;
}

export interface SummaryDetails {
  toolCallRefs?: ToolCallRef[];
  /** Sessions written before refs existed carry bare ids. */
  toolCallIds?: string[];
  toolNames?: string[];
  turnIndex?: number;
  timestamp?: number;
}

export interface ToolCallRecord {
  toolCallId: string;
  toolName: string;
  args?: Record<string, unknown>;
  resultText?: string;
  isError?: boolean;
  turnIndex?: number;
  timestamp?: number;
  resultTimestamp?: number;
  spillPath?: string;
  spillBytes?: number;
  resultPreview?: string;
  contentHash?: string;
  /**
   * Set when a later call made this output stale (a later edit, write or read of the file, the
   * same command run again): the record is then its own cover, no summary names it, and its stub
   * reads "superseded by …" with this text, e.g. `t15 (edit src/x.ts)`.
   */
  supersededBy?: string;
}

export interface IndexData {
  toolCalls?: ToolCallRecord[];
  backfilled?: boolean;
  refs?: ToolCallRef[];
}

export interface DedupAliasData {
  newToolCallId: string;
  originalToolCallId: string;
  newResultTimestamp?: number;
  originalResultTimestamp?: number;
}

export interface ChainData {
  blockId: string;
  startUserTimestamp: number;
  finalAssistantTimestamp?: number;
  droppedToolCallIds?: string[];
  droppedOccurrenceKeys?: string[];
  protectedToolCallIds?: string[];
  toolRefs?: string[];
  compressedAt?: number;
  rangeSummaryText?: string;
  bodySource?: string;
}

export type FrontierOutcome = "summarized" | "superseded" | "skipped-oversized" | "skipped-trivial" | "skipped-deduped";

export interface FrontierData {
  lastAttemptedToolCallId?: string;
  lastAttemptedToolName?: string;
  lastAttemptedTurnIndex?: number;
  lastAttemptedTimestamp?: number;
  attemptedBatchCount?: number;
  attemptedToolCallCount?: number;
  rawCharCount?: number;
  summaryCharCount?: number;
  outcome?: FrontierOutcome | string;
  /** A flush that changed only stubs near the end of history: it opens no epoch. */
  keepsEpoch?: boolean;
}

export interface StatsData {
  totalInputTokens?: number;
  totalOutputTokens?: number;
  totalCost?: number;
  callCount?: number;
  chainsCompressed?: number;
  rangesSummarized?: number;
}

/**
 * The settings in force from this entry on, so a past request can be rendered as it was sent.
 * `config` is a `contextPrune` block holding only the keys the render reads (read back through
 * the settings validator, like any settings file).
 */
export interface SettingsData {
  /** Version of the pi-pruner package that wrote the entry. */
  version?: string;
  config?: Record<string, unknown>;
  /** The session model's context window (tokens) when recorded: what bounded the protected output re-sent after Pi's compaction. */
  contextWindow?: number;
}

/** What the wiring must persist, in order. `custom` entries are hidden from the model; `message` entries are seen by it. */
export type PersistEntry =
  | { kind: "custom"; customType: string; data: unknown }
  | { kind: "message"; customType: string; content: string; details: unknown };

// ---- spill storage ----

/** What writing a spill needs of a captured tool call: its identity and its output. */
export interface SpillCall {
  toolCallId: string;
  resultTimestamp: number;
  resultText: string;
}

/**
 * A spill read back: its text and where it was found; when the caller set a bound and the file
 * holds more, only its first `maxBytes` bytes, with `truncated` and the file's whole size in `bytes`.
 */
export type SpillRead = { ok: true; text: string; path: string; bytes?: number; truncated?: boolean } | { ok: false; reason: string };

export interface SpillReadOptions {
  /** Read at most this many bytes: what the caller cannot use is never loaded. */
  maxBytes?: number;
}

/**
 * Where oversized tool output goes instead of the session file (`ToolCallRecord.spillPath`).
 * The type lives here so the flush pipeline and the session's blobs folder share it without
 * importing each other; core/src/session/blobs.ts implements it.
 */
export interface SpillStorage {
  /** Writes the call's output and returns the path its record keeps. Throws on failure. */
  write(call: SpillCall): string;
  /** Reads a spilled output back; refuses any path this storage does not own. */
  read(spillPath: string, options?: SpillReadOptions): Promise<SpillRead>;
}

// ---- pi-mulligan markers (read only) ----

export const MULLIGAN_NOTE = "mulligan:note";
export const MULLIGAN_CHECKPOINT_PREFIX = "mulligan:checkpoint:";
