// The agent's self-control markers as a session holds them: rewinds, shrinks, cancels, turn
// metrics and checkpoints, in the entry shapes pi-mulligan writes (`mulligan:*` custom entries with
// a `{schema, v, kind}` envelope, `mulligan:note` custom messages, `mulligan:checkpoint:<name>`
// labels), so sessions written by either extension read alike.
//
// Every marker is resolved to the messages it names by identity (role, timestamp, tool-call id),
// never by position: Pi 1.6 keeps the system prompt as an entry that the `context` event leaves
// out, and mapping entries to messages by counting breaks on that.
import type { AgentMessage } from "../shapes/messages.ts";
import { MULLIGAN_CHECKPOINT_PREFIX, MULLIGAN_NOTE } from "../shapes/entries.ts";

export const CONTROL_SCHEMA = "pi-mulligan";
export const CONTROL_VERSION = 1;
export const REWIND_ENTRY = "mulligan:rewind";
export const SHRINK_ENTRY = "mulligan:shrink";
export const CANCEL_ENTRY = "mulligan:cancel";
export const TURN_METRIC_ENTRY = "mulligan:turn-metric";
export const NOTE_MESSAGE = MULLIGAN_NOTE;
export const CHECKPOINT_PREFIX = MULLIGAN_CHECKPOINT_PREFIX;
/** What a checkpoint may be called. */
export const CHECKPOINT_NAME = /^[a-z0-9_-]{1,40}$/;

export const GRANULARITIES = ["last_tool_call_group", "last_turn", "checkpoint"] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** The three fields a rewind must leave behind for the agent that resumes. */
export interface NoteInput {
  /** What went wrong, and the lesson. */
  what_happened: string;
  /** Where the task truly stands: progress, decisions, conclusions. */
  true_current_state: string;
  /** The immediate next action. */
  next: string;
}

/** What the hidden span did to the world, taken from its tool calls (not from the model). */
export interface FileLedger {
  readFiles: string[];
  modifiedFiles: string[];
  bashSideEffects: string[];
}

export type ShrinkTarget =
  | { by_tool_call_id: string }
  | { by_tool_name: string; occurrence: "first" | "last" }
  | { by_content_includes: string };

interface Envelope {
  schema: typeof CONTROL_SCHEMA;
  v: number;
}

export interface RewindData extends Envelope {
  kind: "rewind";
  id: string;
  granularity: Granularity;
  /** The checkpoint a `checkpoint` rewind went back to. */
  checkpoint?: string;
  options?: { protect?: string[] };
  /** The rewind's own tool call: its group is never part of what it hides. */
  excludeToolCallId?: string;
  /** The entries the rewind hides, fixed when it was made. */
  hideEntryIds?: string[];
  seq: number;
  note?: NoteInput;
  ledger?: FileLedger;
  ts: number;
}

export interface ShrinkData extends Envelope {
  kind: "shrink";
  id: string;
  target: ShrinkTarget;
  replacement: string;
  reason?: string;
  /** The entry the target matched when the shrink was made. */
  pinnedEntryId?: string;
  seq: number;
  ts: number;
}

/** Why a marker was retired: the agent's cancel, the person, or one of the automatic guards. */
export type CancelReason = "agent" | "person" | "stale" | "cap";

export interface CancelData extends Envelope {
  kind: "cancel";
  /** The `id` of the rewind or shrink it retires. */
  targetId: string;
  reason?: CancelReason;
  seq: number;
  ts: number;
}

export interface TurnMetricData extends Envelope {
  kind: "turn-metric";
  seq: number;
  ts: number;
  /** Growth of the agent-attributable context over the turn, in estimated tokens; null without a baseline. */
  deltaTokens: number | null;
  bloatHit?: boolean;
  bloatHits?: { toolName: string; approxTokens: number }[];
  grewOverThreshold?: boolean;
  turnIndex?: number;
}

export type MarkerState = "active" | "cancelled" | "stale";

interface MarkerBase {
  /** The session entry that holds the marker. */
  entryId: string;
  id: string;
  seq: number;
  ts: number;
  state: MarkerState;
  /** The cancel that retired it, when one did. */
  cancel?: { entryId: string; reason: CancelReason };
}

export interface RewindMarker extends MarkerBase {
  kind: "rewind";
  data: RewindData;
  /** The entries it hides: as written, or resolved at the marker's place when it was written without them. */
  hiddenEntryIds: string[];
  /** The message identities of those entries that are still in the context Pi builds. */
  hidden: Set<string>;
  /** False when the marker carried no entry ids and its span was resolved from its granularity. */
  pinned: boolean;
  /** The note's message identity, when its `mulligan:note` is on the branch. */
  noteKey?: string;
}

export interface ShrinkMarker extends MarkerBase {
  kind: "shrink";
  data: ShrinkData;
  /** The entry it replaces, when known. */
  targetEntryId?: string;
  /** That entry's message identity, when it is in the context Pi builds. */
  targetKey?: string;
}

export type ControlMarker = RewindMarker | ShrinkMarker;

export interface Checkpoint {
  name: string;
  /** The label entry that set it. */
  labelEntryId: string;
  /** The entry the checkpoint marks: a rewind to it hides what came after. */
  targetEntryId: string;
}

export interface ControlState {
  /** Rewinds and shrinks in the order they were written. */
  markers: ControlMarker[];
  checkpoints: Checkpoint[];
  /** The newest turn metric on the branch. */
  lastMetric?: TurnMetricData;
  /** The next free sequence number (one above every marker's). */
  nextSeq: number;
  /** Entries under a `mulligan:*` type that could not be read (bad envelope, unknown kind). */
  unreadable: { entryId: string; customType: string; problem: string }[];
}

export const EMPTY_CONTROLS: ControlState = Object.freeze({ markers: [], checkpoints: [], nextSeq: 1, unreadable: [] }) as ControlState;

/** A message's identity, the same in the session file and in every copy Pi makes of it. */
export function messageKey(message: AgentMessage): string {
  const id = message.role === "toolResult" ? message.toolCallId : message.role === "custom" ? message.customType : "";
  return `${message.role}\u0000${message.timestamp}\u0000${id}`;
}

/** The timestamp a message key was made from. */
export function keyTimestamp(key: string): number {
  return Number(key.slice(key.indexOf("\u0000") + 1, key.lastIndexOf("\u0000")));
}

export function activeRewinds(state: ControlState): RewindMarker[] {
  return state.markers.filter((m): m is RewindMarker => m.kind === "rewind" && m.state === "active");
}

export function activeShrinks(state: ControlState): ShrinkMarker[] {
  return state.markers.filter((m): m is ShrinkMarker => m.kind === "shrink" && m.state === "active");
}

export function hasActiveControls(state: ControlState): boolean {
  return state.markers.some((m) => m.state === "active");
}
