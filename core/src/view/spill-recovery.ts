// Whether the spilled calls of a session can still be given back, and from where: their files looked
// up in the session's blobs folder (by the recorded path, or by its name when the folder moved),
// nothing outside it looked at; else the session file's own copy of the result. Pi writes every tool
// result whole into the session file (the spill is a second copy, so the index need not hold the
// text), and a fork or clone copies those results into its new file, but not the spill files, which
// stay in the parent's blobs folder under the parent's id. The session view answers the rest from
// the entries (CallView.unrecoverable).
import { locateSpillFile } from "../session/blobs.ts";
import { withBodies } from "../session/lazy-bodies.ts";
import type { SessionData } from "../session/session-reader.ts";
import { isMessageEntry, type AnyEntry } from "../shapes/entries.ts";
import { contentText } from "../shapes/messages.ts";
import type { CallView } from "./session-view.ts";
import { isPrunedState } from "./call-state.ts";

/** What identifies a spilled output: its occurrence, and the size its record gives the spill. */
interface SpilledOutput {
  toolCallId: string;
  resultTimestamp?: number;
  spillBytes?: number;
}

/**
 * The spilled output as the entries hold it: the tool result of the same occurrence, taken only
 * when it has exactly as many bytes as the record says the spill had (a record without a size
 * has no copy: nothing tells that the result is the output it spilled).
 */
export function spillCopyOnBranch(entries: readonly AnyEntry[], spilled: SpilledOutput): string | undefined {
  const bytes: unknown = spilled.spillBytes;
  if (typeof bytes !== "number") return undefined;
  for (const entry of entries) {
    if (!isMessageEntry(entry)) continue;
    const message = entry.message;
    if (message.role !== "toolResult" || message.toolCallId !== spilled.toolCallId) continue;
    if (spilled.resultTimestamp !== undefined && message.timestamp !== spilled.resultTimestamp) continue;
    const text = contentText(message.content);
    if (Buffer.byteLength(text, "utf8") === bytes) return text;
  }
  return undefined;
}

type CheckedCall = Pick<CallView, "occurrenceKey" | "spillPath" | "state" | "toolCallId" | "resultTimestamp" | "spillBytes" | "resultEntryId">;

/**
 * For each spilled call (by occurrence key) whose output cannot be given back, why: its file is not
 * in the blobs folder and the session file holds no copy of it. `data` is the session the calls
 * come from, read with lazy bodies or not (undefined: only the blobs folder is looked at).
 */
export async function spillRecovery(calls: readonly CheckedCall[], sessionFile: string, sessionId: string | undefined, data: Pick<SessionData, "byId" | "elided"> | undefined): Promise<Map<string, string>> {
  const checks = new Map<string, Promise<{ ok: true } | { ok: false; reason: string }>>();
  const lost: { call: CheckedCall; reason: string }[] = [];
  for (const call of calls) {
    if (!call.spillPath || !isPrunedState(call.state)) continue;
    let check = checks.get(call.spillPath);
    if (!check) checks.set(call.spillPath, (check = locateSpillFile(sessionFile, sessionId, call.spillPath)));
    const found = await check;
    if (!found.ok) lost.push({ call, reason: found.reason });
  }
  const copied = data && lost.length ? await callsWithCopies(lost.map((l) => l.call), sessionFile, data) : new Set<string>();
  const out = new Map<string, string>();
  for (const { call, reason } of lost) if (!copied.has(call.occurrenceKey)) out.set(call.occurrenceKey, `its spill file cannot be read back: ${reason}`);
  return out;
}

/** The occurrence keys of the calls whose output the session file holds: their result lines read back, once. */
async function callsWithCopies(calls: readonly CheckedCall[], sessionFile: string, data: Pick<SessionData, "byId" | "elided">): Promise<Set<string>> {
  const sized = calls.filter((c) => typeof c.spillBytes === "number" && c.resultEntryId !== undefined);
  const entries = sized.flatMap((c) => data.byId.get(c.resultEntryId!) ?? []);
  let full: AnyEntry[];
  try {
    full = await withBodies(sessionFile, data.elided, entries);
  } catch {
    // The file changed since it was read: what it holds now is not what the view shows.
    return new Set();
  }
  const byId = new Map(full.map((e) => [e.id, e]));
  const out = new Set<string>();
  for (const call of sized) {
    const entry = byId.get(call.resultEntryId!);
    if (entry && spillCopyOnBranch([entry], call) !== undefined) out.add(call.occurrenceKey);
  }
  return out;
}
