// What the pruner's persisted entries must satisfy, stated independently of core: used by the
// real-Pi fault and crash tests on the entries of a (linear) session, in file order.
import { existsSync } from "node:fs";
import type { JsonRecord } from "./jsonl-records.ts";

const PRUNE_PREFIX = "context-prune-";

/** The settings the pruner records for its render: written at a session's start and on a change, no part of its index. */
const SETTINGS_RECORD = "context-prune-settings";

/** The pruner's own entries of its index, in order. */
export function pruneEntries(entries: readonly JsonRecord[]): JsonRecord[] {
  return entries.filter((e) => (e.type === "custom" || e.type === "custom_message") && typeof e.customType === "string" && e.customType.startsWith(PRUNE_PREFIX) && e.customType !== SETTINGS_RECORD);
}

const keyOf = (r: JsonRecord) => (typeof r.resultTimestamp === "number" ? `${r.toolCallId}@${r.resultTimestamp}` : String(r.toolCallId));

/** Tool results of the session by occurrence key. */
function toolResultKeys(entries: readonly JsonRecord[]): Set<string> {
  const keys = new Set<string>();
  for (const e of entries) if (e.type === "message" && e.message?.role === "toolResult") keys.add(`${e.message.toolCallId}@${e.message.timestamp}`);
  return keys;
}

/**
 * Problems with the persisted entries (empty = all good):
 * - every summarized record (not spilled) has a summary after its index entry that names it;
 * - every ref a summary names is a record indexed before it, with the same short ref;
 * - no tool result is indexed twice and no short ref is used twice;
 * - every record, alias and frontier points at a tool result of the session;
 * - with `files`, every spilled record's sidecar exists.
 */
export function persistedProblems(entries: readonly JsonRecord[], opts: { files?: boolean; ignoreUncovered?: boolean } = {}): string[] {
  const problems: string[] = [];
  const results = toolResultKeys(entries);
  const indexed = new Map<string, { shortId?: string; spilled: boolean; entryId: string }>();
  const refOwners = new Map<string, string>();
  const covered = new Set<string>();
  const prune = pruneEntries(entries);
  // With ignoreUncovered, records of an interrupted flush (no summary names them before the same
  // result is indexed again, or at all) are not counted: a reader must ignore them.
  const abandoned = opts.ignoreUncovered ? abandonedRecords(prune) : new Set<JsonRecord>();
  for (const e of prune) {
    if (e.customType === "context-prune-index") {
      const refs = new Map<string, string>((e.data?.refs ?? []).map((r: JsonRecord) => [keyOf(r), r.shortId]));
      for (const record of e.data?.toolCalls ?? []) {
        if (abandoned.has(record)) continue;
        const key = keyOf(record);
        if (indexed.has(key)) problems.push(`${key} is indexed twice (entries ${indexed.get(key)!.entryId} and ${e.id})`);
        if (!results.has(key)) problems.push(`index entry ${e.id}: ${key} is not a tool result of this session`);
        const shortId = refs.get(key);
        if (shortId) {
          if (refOwners.has(shortId) && refOwners.get(shortId) !== key) problems.push(`short ref ${shortId} names both ${refOwners.get(shortId)} and ${key}`);
          refOwners.set(shortId, key);
        }
        indexed.set(key, { shortId, spilled: typeof record.spillPath === "string", entryId: e.id });
        if (record.spillPath && opts.files && !existsSync(record.spillPath)) problems.push(`${key}: spill file ${record.spillPath} is missing`);
      }
    } else if (e.customType === "context-prune-summary") {
      for (const ref of e.details?.toolCallRefs ?? []) {
        const key = keyOf(ref);
        const record = indexed.get(key);
        if (!record) problems.push(`summary ${e.id}: ref ${ref.shortId} (${key}) has no index record before it`);
        else if (record.shortId && ref.shortId !== record.shortId) problems.push(`summary ${e.id}: ${key} is ${ref.shortId} here but ${record.shortId} in the index`);
        if (covered.has(key)) problems.push(`${key} is summarized twice`);
        covered.add(key);
      }
    } else if (e.customType === "context-prune-dedup-alias") {
      const key = `${e.data?.newToolCallId}@${e.data?.newResultTimestamp}`;
      if (!results.has(key)) problems.push(`alias ${e.id}: ${key} is not a tool result of this session`);
    } else if (e.customType === "context-prune-frontier") {
      const id = e.data?.lastAttemptedToolCallId;
      if (![...results].some((k) => k.startsWith(`${id}@`))) problems.push(`frontier ${e.id}: ${id} is not a tool call of this session`);
    }
  }
  if (!opts.ignoreUncovered) {
    for (const [key, record] of indexed) if (!record.spilled && !covered.has(key)) problems.push(`${key} is indexed (entry ${record.entryId}) but no summary covers it`);
  }
  return problems;
}

/** Summarized (not spilled) records that no summary or chain entry names before the result is indexed again. */
function abandonedRecords(prune: readonly JsonRecord[]): Set<JsonRecord> {
  const abandoned = new Set<JsonRecord>();
  const open = new Map<string, JsonRecord>();
  for (const e of prune) {
    if (e.customType === "context-prune-index") {
      for (const record of e.data?.toolCalls ?? []) {
        if (typeof record.spillPath === "string") continue;
        const key = keyOf(record);
        const earlier = open.get(key);
        if (earlier) abandoned.add(earlier);
        open.set(key, record);
      }
    } else if (e.customType === "context-prune-summary") {
      for (const ref of e.details?.toolCallRefs ?? []) open.delete(keyOf(ref));
    } else if (e.customType === "context-prune-chain") {
      for (const key of e.data?.droppedOccurrenceKeys ?? []) open.delete(key);
    }
  }
  for (const record of open.values()) abandoned.add(record);
  return abandoned;
}
