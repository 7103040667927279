// Reads a branch's self-control markers (see control-entries.ts for their shapes) and resolves
// each to the messages it names, by identity.
import type { AnyEntry } from "../shapes/entries.ts";
import { isCustomEntry, isCustomMessageEntry, isLabelEntry } from "../shapes/entries.ts";
import { isRecord } from "../shapes/json.ts";
import { buildPiContext, type ContextMessage } from "../session/pi-context.ts";
import {
  CANCEL_ENTRY,
  CHECKPOINT_PREFIX,
  CONTROL_SCHEMA,
  CONTROL_VERSION,
  GRANULARITIES,
  NOTE_MESSAGE,
  REWIND_ENTRY,
  SHRINK_ENTRY,
  TURN_METRIC_ENTRY,
  EMPTY_CONTROLS,
  messageKey,
  type CancelData,
  type CancelReason,
  type ControlMarker,
  type ControlState,
  type FileLedger,
  type Granularity,
  type NoteInput,
  type RewindData,
  type RewindMarker,
  type ShrinkData,
  type ShrinkMarker,
  type ShrinkTarget,
  type TurnMetricData,
} from "./control-entries.ts";
import { resolveRewindSpan, resolveShrinkTarget, visibleContext } from "./spans.ts";

// ---- narrowing what a file holds ----

const str = (v: unknown): v is string => typeof v === "string";
const num = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

function envelopeProblem(data: unknown, kind: string): string | undefined {
  if (!isRecord(data)) return "its data is not an object";
  if (data.schema !== CONTROL_SCHEMA) return `its schema is ${JSON.stringify(data.schema)}, not "${CONTROL_SCHEMA}"`;
  if (!num(data.v) || data.v < 1) return "it has no version";
  if (data.v > CONTROL_VERSION) return `it is version ${data.v}, newer than this reader (${CONTROL_VERSION})`;
  if (data.kind !== kind) return `its kind is ${JSON.stringify(data.kind)}, not "${kind}"`;
  return undefined;
}

function readNote(raw: unknown): NoteInput | undefined {
  if (!isRecord(raw)) return undefined;
  const { what_happened, true_current_state, next } = raw;
  return str(what_happened) && str(true_current_state) && str(next) ? { what_happened, true_current_state, next } : undefined;
}

function stringList(raw: unknown): string[] {
  return Array.isArray(raw) ? raw.filter(str) : [];
}

function readLedger(raw: unknown): FileLedger | undefined {
  if (!isRecord(raw)) return undefined;
  return { readFiles: stringList(raw.readFiles), modifiedFiles: stringList(raw.modifiedFiles), bashSideEffects: stringList(raw.bashSideEffects) };
}

export function readShrinkTarget(raw: unknown): ShrinkTarget | undefined {
  if (!isRecord(raw)) return undefined;
  if (str(raw.by_tool_call_id)) return { by_tool_call_id: raw.by_tool_call_id };
  if (str(raw.by_tool_name)) return { by_tool_name: raw.by_tool_name, occurrence: raw.occurrence === "first" ? "first" : "last" };
  if (str(raw.by_content_includes)) return { by_content_includes: raw.by_content_includes };
  return undefined;
}

function readRewind(data: unknown): RewindData | string {
  const problem = envelopeProblem(data, "rewind");
  if (problem) return problem;
  const d = data as Record<string, unknown>;
  if (!str(d.id) || d.id === "") return "it has no id";
  const granularity = (GRANULARITIES as readonly unknown[]).includes(d.granularity) ? (d.granularity as Granularity) : undefined;
  if (!granularity) return `its granularity ${JSON.stringify(d.granularity)} is unknown`;
  const out: RewindData = { schema: CONTROL_SCHEMA, v: d.v as number, kind: "rewind", id: d.id, granularity, seq: num(d.seq) ? d.seq : 0, ts: num(d.ts) ? d.ts : 0 };
  if (str(d.checkpoint)) out.checkpoint = d.checkpoint;
  if (isRecord(d.options)) out.options = { protect: stringList(d.options.protect) };
  if (str(d.excludeToolCallId)) out.excludeToolCallId = d.excludeToolCallId;
  if (Array.isArray(d.hideEntryIds)) out.hideEntryIds = d.hideEntryIds.filter((id): id is string => str(id) && id !== "");
  const note = readNote(d.note);
  if (note) out.note = note;
  const ledger = readLedger(d.ledger);
  if (ledger) out.ledger = ledger;
  return out;
}

function readShrink(data: unknown): ShrinkData | string {
  const problem = envelopeProblem(data, "shrink");
  if (problem) return problem;
  const d = data as Record<string, unknown>;
  if (!str(d.id) || d.id === "") return "it has no id";
  const target = readShrinkTarget(d.target);
  if (!target) return "its target names nothing";
  if (!str(d.replacement)) return "it has no replacement";
  const out: ShrinkData = { schema: CONTROL_SCHEMA, v: d.v as number, kind: "shrink", id: d.id, target, replacement: d.replacement, seq: num(d.seq) ? d.seq : 0, ts: num(d.ts) ? d.ts : 0 };
  if (str(d.reason)) out.reason = d.reason;
  if (str(d.pinnedEntryId) && d.pinnedEntryId !== "") out.pinnedEntryId = d.pinnedEntryId;
  return out;
}

const CANCEL_REASONS: readonly CancelReason[] = ["agent", "person", "stale", "cap"];

function readCancel(data: unknown): CancelData | string {
  const problem = envelopeProblem(data, "cancel");
  if (problem) return problem;
  const d = data as Record<string, unknown>;
  if (!str(d.targetId) || d.targetId === "") return "it names no marker";
  const out: CancelData = { schema: CONTROL_SCHEMA, v: d.v as number, kind: "cancel", targetId: d.targetId, seq: num(d.seq) ? d.seq : 0, ts: num(d.ts) ? d.ts : 0 };
  if ((CANCEL_REASONS as readonly unknown[]).includes(d.reason)) out.reason = d.reason as CancelReason;
  return out;
}

function readMetric(data: unknown): TurnMetricData | string {
  const problem = envelopeProblem(data, "turn-metric");
  if (problem) return problem;
  const d = data as Record<string, unknown>;
  const out: TurnMetricData = { schema: CONTROL_SCHEMA, v: d.v as number, kind: "turn-metric", seq: num(d.seq) ? d.seq : 0, ts: num(d.ts) ? d.ts : 0, deltaTokens: num(d.deltaTokens) ? d.deltaTokens : null };
  if (typeof d.bloatHit === "boolean") out.bloatHit = d.bloatHit;
  if (num(d.turnIndex)) out.turnIndex = d.turnIndex;
  return out;
}

// ---- reading a branch ----

/**
 * Every self-control marker on a branch (root → leaf), each resolved to the messages it names.
 * A rewind written with entry ids hides those entries; one written without them (pi-mulligan from
 * before it pinned, or when its capture failed) is resolved once, from its granularity,
 * against the context as it stood where the marker was written, so later work never slides under it.
 * (That context is built without the protection settings, which the reader does not have: writers
 * that pinned nothing kept no protected output in their spans either.)
 * Never throws on what a file holds: unreadable markers are listed and skipped.
 */
export function readControls(branch: readonly AnyEntry[]): ControlState {
  const state: ControlState = { markers: [], checkpoints: [], nextSeq: 1, unreadable: [] };
  const byId = new Map<string, ControlMarker>();
  const labels = new Map<string, { labelEntryId: string; label: string | undefined }>();
  const notes = new Map<string, string>();
  let fullContext: ContextMessage[] | undefined;
  let keyOfEntry: Map<string, string> | undefined;
  const keys = () => {
    if (!keyOfEntry) {
      fullContext = buildPiContext(branch);
      keyOfEntry = new Map(fullContext.map((c) => [c.entryId, messageKey(c.message)]));
    }
    return keyOfEntry;
  };
  let maxSeq = 0;

  for (let i = 0; i < branch.length; i++) {
    const entry = branch[i]!;
    if (isLabelEntry(entry)) {
      const { targetId, label } = entry;
      if (str(targetId)) {
        // A label replaces the target's earlier one: the newest checkpoint of a name comes last.
        labels.delete(targetId);
        labels.set(targetId, { labelEntryId: entry.id, label: str(label) ? label : undefined });
      }
      continue;
    }
    if (isCustomMessageEntry(entry) && entry.customType === NOTE_MESSAGE) {
      const details = entry.details;
      if (isRecord(details) && str(details.rewindId)) notes.set(details.rewindId, entry.id);
      continue;
    }
    if (!isCustomEntry(entry)) continue;
    const { customType, data } = entry;
    if (typeof customType !== "string" || !customType.startsWith("mulligan:")) continue;
    const unreadable = (problem: string) => state.unreadable.push({ entryId: entry.id, customType, problem });
    if (customType === REWIND_ENTRY) {
      const read = readRewind(data);
      if (typeof read === "string") {
        unreadable(read);
        continue;
      }
      maxSeq = Math.max(maxSeq, read.seq);
      const pinned = (read.hideEntryIds?.length ?? 0) > 0;
      let hiddenEntryIds = read.hideEntryIds ?? [];
      if (!pinned) hiddenEntryIds = resolveUnpinnedRewind(branch, i, read, state);
      const marker: RewindMarker = { kind: "rewind", entryId: entry.id, id: read.id, seq: read.seq, ts: read.ts, state: "active", data: read, hiddenEntryIds, hidden: new Set(), pinned };
      state.markers.push(marker);
      byId.set(read.id, marker);
    } else if (customType === SHRINK_ENTRY) {
      const read = readShrink(data);
      if (typeof read === "string") {
        unreadable(read);
        continue;
      }
      maxSeq = Math.max(maxSeq, read.seq);
      const marker: ShrinkMarker = { kind: "shrink", entryId: entry.id, id: read.id, seq: read.seq, ts: read.ts, state: "active", data: read };
      marker.targetEntryId = read.pinnedEntryId ?? resolveUnpinnedShrink(branch, i, read, state);
      state.markers.push(marker);
      byId.set(read.id, marker);
    } else if (customType === CANCEL_ENTRY) {
      const read = readCancel(data);
      if (typeof read === "string") {
        unreadable(read);
        continue;
      }
      maxSeq = Math.max(maxSeq, read.seq);
      const target = byId.get(read.targetId);
      // Forward only, and idempotent: a cancel of a missing or retired marker changes nothing.
      if (target && target.state === "active") {
        const reason = read.reason ?? "agent";
        target.state = reason === "stale" ? "stale" : "cancelled";
        target.cancel = { entryId: entry.id, reason };
      }
    } else if (customType === TURN_METRIC_ENTRY) {
      const read = readMetric(data);
      if (typeof read === "string") {
        unreadable(read);
        continue;
      }
      maxSeq = Math.max(maxSeq, read.seq);
      state.lastMetric = read;
    }
  }

  for (const [targetEntryId, { labelEntryId, label }] of labels) {
    if (label?.startsWith(CHECKPOINT_PREFIX)) state.checkpoints.push({ name: label.slice(CHECKPOINT_PREFIX.length), labelEntryId, targetEntryId });
  }
  if (state.markers.length > 0) {
    const entryKeys = keys();
    for (const marker of state.markers) {
      if (marker.kind === "rewind") {
        for (const id of marker.hiddenEntryIds) {
          const key = entryKeys.get(id);
          if (key) marker.hidden.add(key);
        }
        // pi-mulligan names the rewind by its marker's entry id (or, failing that, its tool call); we name it by its id.
        const noteEntry = notes.get(marker.id) ?? notes.get(marker.entryId) ?? (marker.data.excludeToolCallId ? notes.get(marker.data.excludeToolCallId) : undefined);
        if (noteEntry) marker.noteKey = entryKeys.get(noteEntry);
      } else if (marker.targetEntryId) {
        marker.targetKey = entryKeys.get(marker.targetEntryId);
      }
    }
  }
  state.nextSeq = maxSeq + 1;
  return state;
}

/** The context as the agent saw it just before the entry at `position`, with the controls active then applied. */
function contextBefore(branch: readonly AnyEntry[], position: number, state: ControlState): ContextMessage[] {
  const before = buildPiContext(branch.slice(0, position));
  const keyed = new Map(before.map((c) => [c.entryId, messageKey(c.message)]));
  const partial: ControlState = { ...state, markers: state.markers.filter((m) => m.state === "active").map((m) => withKeys(m, keyed)) };
  return visibleContext(before, partial);
}

function withKeys(marker: ControlMarker, keyOfEntry: Map<string, string>): ControlMarker {
  if (marker.kind === "rewind") {
    const hidden = new Set<string>();
    for (const id of marker.hiddenEntryIds) {
      const key = keyOfEntry.get(id);
      if (key) hidden.add(key);
    }
    return { ...marker, hidden };
  }
  return { ...marker, targetKey: marker.targetEntryId ? keyOfEntry.get(marker.targetEntryId) : undefined };
}

function resolveUnpinnedRewind(branch: readonly AnyEntry[], position: number, data: RewindData, state: ControlState): string[] {
  const context = contextBefore(branch, position, state);
  let checkpointEntryId: string | undefined;
  if (data.granularity === "checkpoint") {
    // The label may have been cleared since (a rewind consumes its checkpoint): look at the labels written before the marker.
    for (let j = position - 1; j >= 0; j--) {
      const e = branch[j]!;
      if (isLabelEntry(e) && e.label === `${CHECKPOINT_PREFIX}${data.checkpoint ?? ""}`) {
        checkpointEntryId = e.targetId;
        break;
      }
    }
    if (!checkpointEntryId) return [];
  }
  const span = resolveRewindSpan(context, { granularity: data.granularity, excludeToolCallId: data.excludeToolCallId, checkpointEntryId });
  return span.ok ? span.entryIds : [];
}

function resolveUnpinnedShrink(branch: readonly AnyEntry[], position: number, data: ShrinkData, state: ControlState): string | undefined {
  return resolveShrinkTarget(contextBefore(branch, position, state), data.target)?.entryId;
}

/**
 * Whether an entry can change what readControls finds: a marker, a note or a label, and what
 * decides which of the messages they name are still in the context (a compaction, a context edit).
 */
function isControlEntry(entry: AnyEntry): boolean {
  if (entry.type === "label" || entry.type === "compaction" || entry.type === "context_edit") return true;
  if (!isCustomEntry(entry) && !isCustomMessageEntry(entry)) return false;
  const { customType } = entry;
  // A turn metric, written every turn, changes no marker: it is not watched.
  return typeof customType === "string" && customType.startsWith("mulligan:") && customType !== TURN_METRIC_ENTRY;
}

/**
 * readControls for a branch that grows between calls (Pi's `context` event): the state is read
 * again only when the branch's control entries differ from the previous call's, and otherwise the
 * same object comes back, so the render's memory of the previous request still applies. Turn
 * metrics alone do not make it read again: its `lastMetric` may be older than the branch's.
 */
export class ControlsReader {
  private signature = "";
  private state: ControlState = EMPTY_CONTROLS;
  /** How far the previous branch was scanned, and the id of its last entry: a grown branch is scanned from there. */
  private scanned = 0;
  private lastId: string | undefined;

  read(branch: readonly AnyEntry[]): ControlState {
    // Between two requests the branch only grows at its end: when it still holds the previous
    // one's last entry at the same place, only the entries after it are looked at.
    const grown = this.scanned > 0 && branch.length >= this.scanned && branch[this.scanned - 1]?.id === this.lastId;
    let signature = grown ? this.signature : "";
    for (let i = grown ? this.scanned : 0; i < branch.length; i++) {
      const entry = branch[i]!;
      if (isControlEntry(entry)) signature += `${entry.id}\n`;
    }
    this.scanned = branch.length;
    this.lastId = branch[branch.length - 1]?.id;
    if (signature !== this.signature) {
      this.signature = signature;
      this.state = signature === "" ? EMPTY_CONTROLS : readControls(branch);
    }
    return this.state;
  }

  /** The state last read. */
  current(): ControlState {
    return this.state;
  }
}

/**
 * The next free sequence number on a branch: one above every `mulligan:*` entry's, turn metrics
 * included (ControlsReader does not watch those, so its state's `nextSeq` can be behind).
 */
export function nextSeqOf(branch: readonly AnyEntry[]): number {
  let max = 0;
  for (const entry of branch) {
    if (!isCustomEntry(entry)) continue;
    const { customType, data } = entry;
    if (typeof customType !== "string" || !customType.startsWith("mulligan:") || !isRecord(data)) continue;
    if (typeof data.seq === "number" && Number.isFinite(data.seq)) max = Math.max(max, data.seq);
  }
  return max + 1;
}
