// When a rewind is refused. The bounds keep an agent from rewinding in a loop (each rewind costs a
// request and leaves a marker for good), and the span checks keep it from hiding what the person
// said: a rewind sheds the agent's own work, the task it was given stays.
import type { ContextMessage } from "../session/pi-context.ts";
import { toolCallsOf } from "../shapes/messages.ts";
import type { SelfControlConfig } from "../settings/config.ts";
import { CHECKPOINT_NAME, activeRewinds, keyTimestamp, messageKey, type Checkpoint, type ControlState, type Granularity } from "./control-entries.ts";
import { resolveRewindSpan, unitsOf } from "./spans.ts";

export interface RewindCheckInput {
  /** The branch's markers now. */
  controls: ControlState;
  /** The context the agent sees now (active markers applied), each message tied to its entry. */
  context: readonly ContextMessage[];
  granularity: Granularity;
  /** The checkpoint's name, for a `checkpoint` rewind. */
  checkpoint?: string;
  /** The rewind's own tool call: its unit is never hidden. */
  excludeToolCallId?: string;
  config: Pick<SelfControlConfig, "maxActiveRewinds" | "maxRewindsPerPrompt" | "refuseRewindAtFraction">;
  /** Estimated tokens of what the model is sent now (after the render). */
  contextTokens: number;
  /** The model's window in tokens; unknown (or 0) skips the fraction guard. */
  contextWindow: number | undefined;
  /** The identity (messageKey) of the latest user message the agent sees; by default found in `context`. */
  latestUserKey?: string;
  /** Whether a call's output is protected (protectedTools, protectedPaths): the render never hides it, so the span leaves it out. */
  protects?: (toolName: string, args: unknown) => boolean;
}

export type RewindCheck =
  | {
      ok: true;
      /** What the rewind hides: entry ids to write on the marker, positions in `context`. */
      span: { entryIds: string[]; positions: number[] };
      /** The checkpoint a checkpoint rewind goes back to (the one nearest the end when a name is set twice). */
      checkpoint?: Checkpoint;
      /** Tool-call units of the span left visible because they hold protected output. */
      keptProtected: number;
    }
  | { ok: false; reason: string };

/**
 * Whether a rewind may go ahead, and what it hides. Refused, in this order, when: as many rewinds
 * are active as selfControl.maxActiveRewinds allows; as many active rewinds were written since the
 * latest user message (each landed back at that prompt: their `ts` is not older than its
 * timestamp) as maxRewindsPerPrompt allows; the rendered context is at refuseRewindAtFraction of
 * the window or more; a checkpoint rewind names no valid checkpoint, one not set, or one whose
 * message is no longer in the context; there is nothing to hide; the span would hold the first
 * user message; a `last_tool_call_group` or `last_turn` span would hold any user message; or all
 * of the span is protected output (a unit holding some stays visible, as the render keeps it).
 */
export function checkRewind(input: RewindCheckInput): RewindCheck {
  const { controls, context, granularity, config } = input;
  const active = activeRewinds(controls);
  if (active.length >= config.maxActiveRewinds) {
    return {
      ok: false,
      reason: `${active.length} rewind${active.length === 1 ? " is" : "s are"} already active (selfControl.maxActiveRewinds is ${config.maxActiveRewinds}); cancel one with context_cancel, or shrink a result instead`,
    };
  }

  const latestUserKey = input.latestUserKey ?? latestUser(context);
  if (latestUserKey !== undefined) {
    const since = keyTimestamp(latestUserKey);
    const again = active.filter((r) => r.ts >= since).length;
    if (again >= config.maxRewindsPerPrompt) {
      return {
        ok: false,
        reason: `${again} rewind${again === 1 ? " has" : "s have"} already landed back at the latest user message (selfControl.maxRewindsPerPrompt is ${config.maxRewindsPerPrompt}); go on from the current state, ask the person, or shrink a result instead`,
      };
    }
  }

  if (input.contextWindow && input.contextWindow > 0) {
    const share = input.contextTokens / input.contextWindow;
    if (share >= config.refuseRewindAtFraction) {
      return {
        ok: false,
        reason: `the context is at ${Math.round(share * 100)}% of the window (selfControl.refuseRewindAtFraction is ${config.refuseRewindAtFraction}); this close to the limit shrink the largest results with context_shrink instead`,
      };
    }
  }

  let checkpoint: Checkpoint | undefined;
  if (granularity === "checkpoint") {
    const name = input.checkpoint?.trim() ?? "";
    if (name === "") return { ok: false, reason: "a checkpoint rewind needs the checkpoint's name" };
    if (!CHECKPOINT_NAME.test(name)) return { ok: false, reason: `${JSON.stringify(name)} is not a checkpoint name (lower-case letters, digits, - and _, at most 40)` };
    const named = controls.checkpoints.filter((c) => c.name === name);
    if (named.length === 0) return { ok: false, reason: `no checkpoint named "${name}" is set (the person sets one with /pruner checkpoint ${name}; a rewind to it uses it up)` };
    const entryIds = context.map((c) => c.entryId);
    let at = -1;
    for (const candidate of named) {
      const position = entryIds.lastIndexOf(candidate.targetEntryId);
      if (position > at) {
        at = position;
        checkpoint = candidate;
      }
    }
    if (!checkpoint) return { ok: false, reason: `checkpoint "${name}" marks a message that is no longer in the context (a compaction or an earlier rewind removed it)` };
  }

  const span = resolveRewindSpan(context, { granularity, excludeToolCallId: input.excludeToolCallId, checkpointEntryId: checkpoint?.targetEntryId });
  if (!span.ok) return { ok: false, reason: span.reason };
  const firstUser = context.findIndex((c) => c.message.role === "user");
  if (firstUser >= 0 && span.positions.includes(firstUser)) return { ok: false, reason: "the span would hide the first user message (the task itself)" };
  if (granularity !== "checkpoint" && span.positions.some((p) => context[p]!.message.role === "user")) {
    return { ok: false, reason: `a ${granularity} rewind never hides a user message` };
  }
  const { positions, keptProtected } = withoutProtected(context, span.positions, input.protects);
  if (positions.length === 0) return { ok: false, reason: "everything in the span is protected output (protectedTools, protectedPaths), which is never rewound" };
  const entryIds = [...new Set(positions.map((p) => context[p]!.entryId))];
  return { ok: true, span: { entryIds, positions }, ...(checkpoint ? { checkpoint } : {}), keptProtected };
}

/** The span's positions without the tool-call units that hold protected output. */
function withoutProtected(context: readonly ContextMessage[], positions: number[], protects: RewindCheckInput["protects"]): { positions: number[]; keptProtected: number } {
  if (!protects) return { positions, keptProtected: 0 };
  const inSpan = new Set(positions);
  const dropped = new Set<number>();
  let keptProtected = 0;
  const messages = context.map((c) => c.message);
  for (const unit of unitsOf(messages)) {
    if (unit.callIds.length === 0 || !inSpan.has(unit.positions[0]!)) continue;
    const args = new Map(toolCallsOf(messages[unit.positions[0]!]!).map((call) => [call.id, call.arguments]));
    const holdsProtected = unit.positions.some((p) => {
      const m = messages[p]!;
      return m.role === "toolResult" && protects(m.toolName, args.get(m.toolCallId));
    });
    if (!holdsProtected) continue;
    keptProtected++;
    for (const p of unit.positions) dropped.add(p);
  }
  return { positions: positions.filter((p) => !dropped.has(p)), keptProtected };
}

function latestUser(context: readonly ContextMessage[]): string | undefined {
  for (let i = context.length - 1; i >= 0; i--) if (context[i]!.message.role === "user") return messageKey(context[i]!.message);
  return undefined;
}
