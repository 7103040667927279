// What a person sees of the agent's self-control markers at a leaf: every rewind and shrink with
// its state and what it does to what the model is sent now, the checkpoints, and where each
// rewound span was among the sent messages. Worked out with the render's own plan (planControls,
// the same protection check), so it says what the render did, not what the marker asked for.
import type { AgentMessage } from "../shapes/messages.ts";
import type { ContextMessage } from "../session/pi-context.ts";
import { DEFAULT_CONFIG } from "../settings/config.ts";
import { isProtected } from "../settings/protection.ts";
import type { RenderConfig } from "../render/render.ts";
import {
  messageKey,
  type CancelReason,
  type ControlState,
  type FileLedger,
  type Granularity,
  type MarkerState,
  type NoteInput,
  type RewindMarker,
  type ShrinkMarker,
  type ShrinkTarget,
} from "../control/control-entries.ts";
import { planControls, unitsOf, type ControlPlan } from "../control/spans.ts";
import { describeShrinkTarget } from "../control/shrink-guards.ts";
import { messageChars } from "../shapes/size.ts";

interface ControlMarkerViewBase {
  /** The session entry that holds the marker. */
  entryId: string;
  /** The marker's own id, as the agent and `context_cancel` name it. */
  markerId: string;
  seq: number;
  state: MarkerState;
  /** Why it was retired, when a cancel retired it. */
  cancelReason?: CancelReason;
  /** Why an active marker changes nothing in what the model is sent now. */
  notApplied?: string;
}

export interface RewindView extends ControlMarkerViewBase {
  kind: "rewind";
  granularity: Granularity;
  /** The checkpoint a `checkpoint` rewind went back to. */
  checkpoint?: string;
  /** Entries the marker names. */
  hiddenEntries: number;
  /** Messages it leaves out of what the model is sent now (none unless it is active). */
  hiddenMessages: number;
  /** Characters of those messages: what the rewind takes off the request. */
  hiddenChars: number;
  /** Tool-using turns it names that stay, because they hold protected output. */
  keptProtected: number;
  note?: NoteInput;
  ledger?: FileLedger;
}

export interface ShrinkView extends ControlMarkerViewBase {
  kind: "shrink";
  target: ShrinkTarget;
  /** The target in words, as the agent's audit names it: "the last read result", … */
  targetText: string;
  replacement: string;
  reason?: string;
  /** The entry whose message it replaces, when known. */
  targetEntryId?: string;
  /** Its replacement is what the model is sent in place of that message. */
  applied: boolean;
}

interface CheckpointView {
  kind: "checkpoint";
  /** The label entry that set it. */
  entryId: string;
  /** The checkpoint's name. */
  markerId: string;
  /** The entry it marks: a rewind to it hides what came after. */
  targetEntryId: string;
}

export type MarkerView = RewindView | ShrinkView | CheckpointView;

/** One run of messages a rewind left out, located among the sent messages. */
export interface RewoundSpan {
  markerId: string;
  /** The index in the sent messages after which the span was; -1 when it was before the first. */
  after: number;
  /** Messages the run left out. */
  messages: number;
  /** The rewind's first run (a span the pruner's own steps split shows as several). */
  first: boolean;
}

export interface ControlsView {
  /** Rewinds and shrinks in the order they were written. */
  markers: (RewindView | ShrinkView)[];
  rewinds: RewindView[];
  shrinks: ShrinkView[];
  checkpoints: CheckpointView[];
  /** Where the rewound spans were, in the order of the sent messages. */
  rewoundSpans: RewoundSpan[];
  /** The sent messages that show a shrink's replacement: their index, and the shrink. */
  shrunkMessages: { at: number; markerId: string }[];
  /** `selfControl.enabled`: with it off the render passes every marker by. */
  enabled: boolean;
  /** Entries under a `mulligan:*` type that could not be read, and why. */
  unreadable: { entryId: string; customType: string; problem: string }[];
}

function base(marker: RewindMarker | ShrinkMarker): ControlMarkerViewBase {
  const out: ControlMarkerViewBase = { entryId: marker.entryId, markerId: marker.id, seq: marker.seq, state: marker.state };
  if (marker.cancel) out.cancelReason = marker.cancel.reason;
  return out;
}

/**
 * `context` is Pi's context for the branch (the render's input), `sent` what the render made of it;
 * `rendered` is false when the render failed and the messages went out unchanged; `inert` says why
 * markers that are on did nothing when they were sent (their writer's filter failed on that host).
 */
export function describeControls(
  context: readonly ContextMessage[],
  controls: ControlState,
  config: RenderConfig,
  sent: readonly AgentMessage[],
  rendered = true,
  inert?: string,
): ControlsView {
  const enabled = (config.selfControl ?? DEFAULT_CONFIG.selfControl).enabled;
  const checkpoints: CheckpointView[] = controls.checkpoints.map((c) => ({ kind: "checkpoint", entryId: c.labelEntryId, markerId: c.name, targetEntryId: c.targetEntryId }));
  const view: ControlsView = { markers: [], rewinds: [], shrinks: [], checkpoints, rewoundSpans: [], shrunkMessages: [], enabled, unreadable: controls.unreadable.slice() };
  if (controls.markers.length === 0) return view;

  const messages = context.map((c) => c.message);
  const applies = enabled && rendered && inert === undefined;
  const plan: ControlPlan = applies
    ? planControls(messages, controls, (toolName, args) => isProtected(toolName, args, config))
    : { hidden: new Set(), shrunk: new Map(), missing: [], keptProtected: 0 };
  const offReason = !enabled ? "self-control is off (contextPrune.selfControl.enabled)" : !rendered ? "the render failed, so the messages go out unchanged" : (inert ?? "");

  // Where each context message is among the sent ones, by identity (stubs keep it; chain blocks do not).
  const sentAt = new Map<string, number>();
  sent.forEach((m, i) => {
    const key = messageKey(m);
    if (!sentAt.has(key)) sentAt.set(key, i);
  });
  const keyOf = (p: number) => messageKey(messages[p]!);

  const rewinds = new Map<RewindMarker, RewindView>();
  for (const marker of controls.markers) {
    if (marker.kind !== "rewind") continue;
    const v: RewindView = {
      ...base(marker),
      kind: "rewind",
      granularity: marker.data.granularity,
      hiddenEntries: marker.hiddenEntryIds.length,
      hiddenMessages: 0,
      hiddenChars: 0,
      keptProtected: 0,
    };
    if (marker.data.checkpoint !== undefined) v.checkpoint = marker.data.checkpoint;
    if (marker.data.note) v.note = marker.data.note;
    if (marker.data.ledger) v.ledger = marker.data.ledger;
    rewinds.set(marker, v);
    view.rewinds.push(v);
  }

  // A unit goes with the first active rewind, in written order, that names its first message.
  const activeRewinds = [...rewinds.keys()].filter((m) => m.state === "active");
  const ownerOf = (key: string) => activeRewinds.find((m) => m.hidden.has(key));
  let run: { owner: RewindMarker; span: RewoundSpan } | undefined;
  const started = new Set<RewindMarker>();
  const lastSentBefore = (position: number): number => {
    for (let p = position - 1; p >= 0; p--) {
      if (plan.hidden.has(p)) continue;
      const at = sentAt.get(keyOf(p));
      if (at !== undefined) return at;
    }
    return -1;
  };
  for (const unit of applies && activeRewinds.length > 0 ? unitsOf(messages) : []) {
    const head = unit.positions[0]!;
    const owner = ownerOf(keyOf(head));
    if (!owner) {
      run = undefined;
      continue;
    }
    const v = rewinds.get(owner)!;
    if (!plan.hidden.has(head)) {
      v.keptProtected++;
      run = undefined;
      continue;
    }
    v.hiddenMessages += unit.positions.length;
    for (const p of unit.positions) v.hiddenChars += messageChars(messages[p]!);
    if (run && run.owner === owner) {
      run.span.messages += unit.positions.length;
      continue;
    }
    const span: RewoundSpan = { markerId: owner.id, after: lastSentBefore(head), messages: unit.positions.length, first: !started.has(owner) };
    started.add(owner);
    view.rewoundSpans.push(span);
    run = { owner, span };
  }
  for (const [marker, v] of rewinds) {
    if (marker.state !== "active" || v.hiddenMessages > 0) continue;
    if (!applies) v.notApplied = offReason;
    else if (marker.hiddenEntryIds.length === 0) v.notApplied = "its span matched nothing when it was made";
    else if (marker.hidden.size === 0) v.notApplied = "its messages are no longer in the context (a compaction may have removed them)";
    else if (v.keptProtected > 0) v.notApplied = "every turn it names holds protected output, which is never rewound";
    else v.notApplied = "an earlier rewind already leaves its messages out";
  }

  const positionOfKey = new Map<string, number>();
  messages.forEach((m, p) => {
    const key = messageKey(m);
    if (!positionOfKey.has(key)) positionOfKey.set(key, p);
  });
  for (const marker of controls.markers) {
    if (marker.kind !== "shrink") continue;
    const v: ShrinkView = {
      ...base(marker),
      kind: "shrink",
      target: marker.data.target,
      targetText: describeShrinkTarget(marker.data.target),
      replacement: marker.data.replacement,
      applied: false,
    };
    if (marker.data.reason !== undefined) v.reason = marker.data.reason;
    if (marker.targetEntryId !== undefined) v.targetEntryId = marker.targetEntryId;
    view.shrinks.push(v);
    if (marker.state !== "active") continue;
    const position = marker.targetKey === undefined ? undefined : positionOfKey.get(marker.targetKey);
    if (!applies) v.notApplied = offReason;
    else if (marker.targetEntryId === undefined) v.notApplied = "its target matched no message when it was made";
    else if (position === undefined) v.notApplied = "its message is no longer in the context (a compaction may have removed it)";
    else if (plan.shrunk.get(position) === marker) {
      v.applied = true;
      const at = sentAt.get(marker.targetKey!);
      if (at !== undefined) view.shrunkMessages.push({ at, markerId: marker.id });
    } else if (plan.shrunk.has(position)) v.notApplied = `a newer shrink (${plan.shrunk.get(position)!.id}) of the same message shows instead`;
    else if (plan.hidden.has(position)) v.notApplied = "a rewind leaves its message out";
    else v.notApplied = "its message is protected output, which is never shrunk";
  }
  const viewOf = new Map<string, RewindView | ShrinkView>([...view.rewinds, ...view.shrinks].map((v) => [v.entryId, v]));
  for (const marker of controls.markers) {
    const v = viewOf.get(marker.entryId);
    if (v) view.markers.push(v);
  }
  // The pruner's own steps keep the order of what they pass through; sorted all the same, stably.
  view.rewoundSpans.sort((a, b) => a.after - b.after);
  view.shrunkMessages.sort((a, b) => a.at - b.at);
  return view;
}

/** A rewind's note on one line: its three fields, named. */
export function noteOneLine(note: NoteInput): string {
  const flat = (text: string) => text.replace(/\s+/g, " ").trim();
  return `what happened: ${flat(note.what_happened)} · true current state: ${flat(note.true_current_state)} · next: ${flat(note.next)}`;
}

/** The line that stands where a rewound span was, in the model view's text. */
export function rewoundSpanLine(span: RewoundSpan, rewind: RewindView | undefined): string {
  const count = `${span.messages} message${span.messages === 1 ? "" : "s"}`;
  if (!span.first) return `[rewound ${span.markerId}, continued: ${count}]`;
  const kept = rewind && rewind.keptProtected > 0 ? ` (${rewind.keptProtected} turn${rewind.keptProtected === 1 ? "" : "s"} with protected output kept)` : "";
  const note = rewind?.note ? ` — note: ${noteOneLine(rewind.note)}` : "";
  return `[rewound ${span.markerId}: ${count}${kept}${note}]`;
}

/** A marker's state in words: "active", "cancelled (person)", "stale". */
export function markerStateText(marker: MarkerView): string {
  if (marker.kind === "checkpoint") return "set";
  if (marker.state === "cancelled" && marker.cancelReason && marker.cancelReason !== "agent") return `cancelled (${marker.cancelReason})`;
  return marker.state;
}

/** What a rewind or shrink does now, in a few words: the description of its line in the CLI and the editor. */
export function markerEffectText(marker: RewindView | ShrinkView): string {
  if (marker.kind === "rewind") {
    const parts = [marker.granularity === "checkpoint" && marker.checkpoint ? `checkpoint ${marker.checkpoint}` : marker.granularity];
    if (marker.state === "active") parts.push(marker.notApplied ? `leaves nothing out: ${marker.notApplied}` : `${marker.hiddenMessages} message${marker.hiddenMessages === 1 ? "" : "s"} left out`);
    else parts.push(`${marker.hiddenEntries} entr${marker.hiddenEntries === 1 ? "y" : "ies"} named`);
    if (marker.keptProtected > 0 && !marker.notApplied) parts.push(`${marker.keptProtected} protected turn${marker.keptProtected === 1 ? "" : "s"} kept`);
    return parts.join(" · ");
  }
  const parts = [marker.targetText];
  if (marker.state === "active" && marker.notApplied) parts.push(`not shown: ${marker.notApplied}`);
  return parts.join(" · ");
}
