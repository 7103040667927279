// What a rewind hides and what a shrink replaces, worked out on the context as the agent sees it.
// Both work on units: an assistant turn with tool calls together with the results that follow it,
// or one other message. A unit is hidden whole or not at all, so no call loses its result.
import type { AgentMessage } from "../shapes/messages.ts";
import { contentText, occurrenceKey, toolCallsOf } from "../shapes/messages.ts";
import { PRUNE_SUMMARY } from "../shapes/entries.ts";
import { readSummaryDetails } from "../shapes/read-payloads.ts";
import { escapePrunerTags } from "../shapes/text.ts";
import type { ContextMessage } from "../session/pi-context.ts";
import type { ControlState, Granularity, ShrinkMarker, ShrinkTarget } from "./control-entries.ts";
import { NOTE_MESSAGE, activeRewinds, activeShrinks, messageKey } from "./control-entries.ts";

/** The wrapper a shrunk message's replacement is shown in, so the agent can tell it shrank it. */
export function shrunkText(replacement: string): string {
  return `<context-shrunk>\n${escapePrunerTags(replacement)}\n</context-shrunk>`;
}

export interface Unit {
  /** Positions of the unit's messages: the assistant first, then its results. */
  positions: number[];
  /** The tool-call ids of an assistant unit. */
  callIds: string[];
}

/**
 * The units of a message list, in order. The results that answer an assistant turn's calls belong
 * to it: those right after it, and those a notice or other custom message separates from it, up
 * to the next user or assistant message. A result that answers no such turn is a unit of its own.
 */
export function unitsOf(messages: readonly AgentMessage[]): Unit[] {
  const units: Unit[] = [];
  const claimed = new Set<number>();
  for (let i = 0; i < messages.length; i++) {
    if (claimed.has(i)) continue;
    const message = messages[i]!;
    const calls = message.role === "assistant" ? toolCallsOf(message).map((c) => c.id) : [];
    if (calls.length === 0) {
      units.push({ positions: [i], callIds: [] });
      continue;
    }
    const unit: Unit = { positions: [i], callIds: calls };
    const ids = new Set(calls);
    for (let j = i + 1; j < messages.length; j++) {
      const next = messages[j]!;
      if (next.role === "user" || next.role === "assistant") break;
      if (next.role === "toolResult" && ids.has(next.toolCallId)) {
        unit.positions.push(j);
        claimed.add(j);
      }
    }
    units.push(unit);
  }
  return units;
}

/** The text a message carries, as a content search sees it. */
export function searchableText(message: AgentMessage): string {
  switch (message.role) {
    case "user":
    case "toolResult":
    case "custom":
      return contentText(message.content);
    case "assistant":
      return contentText(message.content);
    case "bashExecution":
      return `${message.command}\n${message.output}`;
    case "branchSummary":
    case "compactionSummary":
      return message.summary;
    default:
      return "";
  }
}

export interface RewindRequest {
  granularity: Granularity;
  /** The rewind's own tool call, whose unit is never hidden. */
  excludeToolCallId?: string;
  /** For a checkpoint rewind: the entry the checkpoint marks. */
  checkpointEntryId?: string;
}

export type RewindSpan =
  | { ok: true; entryIds: string[]; positions: number[] }
  | { ok: false; reason: string };

function isNote(message: AgentMessage): boolean {
  return message.role === "custom" && message.customType === NOTE_MESSAGE;
}

/**
 * The span a rewind hides, on the context the agent sees now (earlier rewinds already applied).
 * `last_tool_call_group`: the newest tool-call unit but the rewind's own. `last_turn`: the agent's
 * own messages after the newest user message. `checkpoint`: everything after the checkpoint's
 * message. Never the rewind's own unit, a rewind note, or the first user message.
 */
export function resolveRewindSpan(context: readonly ContextMessage[], request: RewindRequest): RewindSpan {
  const messages = context.map((c) => c.message);
  const units = unitsOf(messages);
  const own = (unit: Unit) => request.excludeToolCallId !== undefined && unit.callIds.includes(request.excludeToolCallId);
  const firstUser = messages.findIndex((m) => m.role === "user");
  let chosen: Unit[] = [];

  if (request.granularity === "last_tool_call_group") {
    for (let u = units.length - 1; u >= 0; u--) {
      const unit = units[u]!;
      if (unit.callIds.length === 0 || own(unit)) continue;
      chosen = [unit];
      break;
    }
    if (chosen.length === 0) return { ok: false, reason: "there is no earlier tool call to rewind" };
  } else {
    let start: number;
    if (request.granularity === "last_turn") {
      let lastUser = -1;
      for (let i = messages.length - 1; i >= 0; i--) {
        if (messages[i]!.role === "user") {
          lastUser = i;
          break;
        }
      }
      if (lastUser < 0) return { ok: false, reason: "there is no user message to go back to" };
      start = lastUser + 1;
    } else {
      if (!request.checkpointEntryId) return { ok: false, reason: "no checkpoint was named" };
      const at = context.map((c) => c.entryId).lastIndexOf(request.checkpointEntryId);
      if (at < 0) return { ok: false, reason: "the checkpoint's message is no longer in the context (a compaction may have removed it)" };
      start = at + 1;
    }
    for (const unit of units) {
      if (unit.positions[0]! < start || own(unit)) continue;
      const first = messages[unit.positions[0]!]!;
      if (isNote(first)) continue;
      // last_turn sheds only the agent's own work (a `!command` the person ran is theirs); a
      // checkpoint was set by the person, who agreed to more.
      if (request.granularity === "last_turn" && first.role !== "assistant" && first.role !== "toolResult") continue;
      chosen.push(unit);
    }
  }
  const positions = chosen
    .flatMap((u) => u.positions)
    .filter((p) => p !== firstUser)
    .sort((a, b) => a - b);
  if (positions.length === 0) return { ok: false, reason: "there is nothing to rewind" };
  const entryIds = [...new Set(positions.map((p) => context[p]!.entryId))];
  return { ok: true, entryIds, positions };
}

/** The message a shrink target names in the context the agent sees now, or undefined. An empty substring names nothing. */
export function resolveShrinkTarget(context: readonly ContextMessage[], target: ShrinkTarget): { position: number; entryId: string } | undefined {
  const found = (position: number) => (position < 0 ? undefined : { position, entryId: context[position]!.entryId });
  if ("by_tool_call_id" in target) {
    for (let i = context.length - 1; i >= 0; i--) {
      const m = context[i]!.message;
      if (m.role === "toolResult" && m.toolCallId === target.by_tool_call_id) return found(i);
    }
    return undefined;
  }
  if ("by_tool_name" in target) {
    const matches: number[] = [];
    context.forEach((c, i) => {
      if (c.message.role === "toolResult" && c.message.toolName === target.by_tool_name) matches.push(i);
    });
    if (matches.length === 0) return undefined;
    return found(target.occurrence === "first" ? matches[0]! : matches[matches.length - 1]!);
  }
  if (target.by_content_includes === "") return undefined;
  return found(context.findIndex((c) => searchableText(c.message).includes(target.by_content_includes)));
}

export interface ControlPlan {
  /** Positions the active rewinds hide. */
  hidden: Set<number>;
  /** Position → the shrink that replaces it. */
  shrunk: Map<number, ShrinkMarker>;
  /** Active shrinks whose target is not among the messages. */
  missing: ShrinkMarker[];
  /** Units of a rewound span kept because they hold protected output. */
  keptProtected: number;
}

/**
 * Where the active markers apply in `messages`, by identity. A rewind hides a unit only when it
 * names the unit's first message (a result never goes without its call, nor a call without its
 * results); `protects` keeps protected output out of every rewind and shrink. A pruner summary
 * follows the results it names: it stays while one of them is shown (their stubs point the agent
 * to it), even inside a rewound span, and leaves when a rewind hid them all.
 */
export function planControls(
  messages: readonly AgentMessage[],
  state: ControlState,
  protects?: (toolName: string, args: unknown) => boolean,
): ControlPlan {
  const plan: ControlPlan = { hidden: new Set(), shrunk: new Map(), missing: [], keptProtected: 0 };
  const rewinds = activeRewinds(state);
  const shrinks = activeShrinks(state);
  if (rewinds.length === 0 && shrinks.length === 0) return plan;
  const hiddenKeys = new Set<string>();
  for (const rewind of rewinds) for (const key of rewind.hidden) hiddenKeys.add(key);
  // Applied in the order written: of two shrinks of one message, the newer shows.
  const shrinkByKey = new Map<string, ShrinkMarker>();
  for (const shrink of shrinks.slice().sort((a, b) => a.seq - b.seq)) if (shrink.targetKey) shrinkByKey.set(shrink.targetKey, shrink);
  const argsOf = new Map<string, unknown>();
  const summaries: number[] = [];
  const rewoundSummaries = new Set<number>();
  const keyOf = (p: number) => messageKey(messages[p]!);

  for (const unit of unitsOf(messages)) {
    const head = messages[unit.positions[0]!]!;
    for (const call of toolCallsOf(head)) argsOf.set(call.id, call.arguments);
    const isProtectedResult = (p: number) => {
      const m = messages[p]!;
      return !!protects && m.role === "toolResult" && protects(m.toolName, argsOf.get(m.toolCallId));
    };
    if (isPruneSummary(head)) summaries.push(unit.positions[0]!);
    if (hiddenKeys.size > 0 && hiddenKeys.has(keyOf(unit.positions[0]!))) {
      if (isPruneSummary(head)) rewoundSummaries.add(unit.positions[0]!);
      else if (unit.positions.some(isProtectedResult)) plan.keptProtected++;
      else {
        for (const p of unit.positions) plan.hidden.add(p);
        continue;
      }
    }
    if (shrinkByKey.size === 0) continue;
    for (const p of unit.positions) {
      const shrink = shrinkByKey.get(keyOf(p));
      if (shrink && !isProtectedResult(p)) plan.shrunk.set(p, shrink);
    }
  }
  if (summaries.length > 0 && (plan.hidden.size > 0 || rewoundSummaries.size > 0)) hideOrphanedSummaries(messages, summaries, rewoundSummaries, plan);
  if (shrinks.length > 0) {
    // Missing means absent from the messages; a target a rewind hides is there, only unseen.
    const present = new Set(messages.map(messageKey));
    for (const shrink of shrinks) if (!shrink.targetKey || !present.has(shrink.targetKey)) plan.missing.push(shrink);
  }
  return plan;
}

function isPruneSummary(message: AgentMessage): boolean {
  return message.role === "custom" && message.customType === PRUNE_SUMMARY;
}

/** The summaries in a rewound span, or naming results a rewind hid, that name no result still shown leave too. */
function hideOrphanedSummaries(messages: readonly AgentMessage[], summaries: readonly number[], rewound: ReadonlySet<number>, plan: ControlPlan): void {
  const shown = new Set<string>();
  const hidden = new Set<string>();
  messages.forEach((m, p) => {
    if (m.role !== "toolResult") return;
    const into = plan.hidden.has(p) ? hidden : shown;
    into.add(m.toolCallId);
    into.add(occurrenceKey(m.toolCallId, m.timestamp));
  });
  for (const p of summaries) {
    const refs = summaryRefs(messages[p]!);
    if (refs.some((ref) => shown.has(ref))) continue;
    if (rewound.has(p) || refs.some((ref) => hidden.has(ref))) plan.hidden.add(p);
  }
}

/** The results a pruner summary names: occurrence keys, or bare call ids in sessions from before them. */
function summaryRefs(message: AgentMessage): string[] {
  const details = readSummaryDetails(message.role === "custom" ? message.details : undefined);
  if (typeof details === "string") return [];
  const refs = (details.toolCallRefs ?? []).map((r) => occurrenceKey(r.toolCallId, r.resultTimestamp));
  return details.toolCallIds ? [...refs, ...details.toolCallIds] : refs;
}

/** The message with its content replaced by a shrink's, everything that pairs it kept. */
export function shrunkMessage(message: AgentMessage, replacement: string): AgentMessage {
  const text = shrunkText(replacement);
  switch (message.role) {
    case "user":
    case "custom":
    case "toolResult":
    case "assistant": {
      if (message.role === "assistant") {
        // Tool calls must stay with their results, and thinking goes whole or not at all (a
        // provider wants it back unchanged in the tool loop): only the text gives way.
        const thinking = message.content.filter((b) => b.type === "thinking");
        return { ...message, content: [...thinking, { type: "text", text }, ...toolCallsOf(message)] };
      }
      return { ...message, content: [{ type: "text", text }] } as AgentMessage;
    }
    case "bashExecution":
      return { ...message, output: text };
    case "branchSummary":
    case "compactionSummary":
      return { ...message, summary: text };
    default:
      return message;
  }
}

/**
 * The context with the active markers applied: what the agent sees, each message still tied to its
 * entry. Pass the render's `protects` (isProtected with the settings) to see exactly what it sends:
 * without it, protected output in a rewound span or under a shrink is treated like any other.
 */
export function visibleContext(context: readonly ContextMessage[], state: ControlState, protects?: (toolName: string, args: unknown) => boolean): ContextMessage[] {
  const plan = planControls(
    context.map((c) => c.message),
    state,
    protects,
  );
  if (plan.hidden.size === 0 && plan.shrunk.size === 0) return context.slice();
  const out: ContextMessage[] = [];
  context.forEach((c, i) => {
    if (plan.hidden.has(i)) return;
    const shrink = plan.shrunk.get(i);
    out.push(shrink ? { entryId: c.entryId, message: shrunkMessage(c.message, shrink.data.replacement) } : c);
  });
  return out;
}
