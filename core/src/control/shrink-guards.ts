// What a shrink may replace, how a new one is written, and which older ones give way to it.
import type { AgentMessage } from "../shapes/messages.ts";
import { toolCallsOf } from "../shapes/messages.ts";
import type { ContextMessage } from "../session/pi-context.ts";
import { isProtected, type ProtectionConfig } from "../settings/protection.ts";
import {
  CONTROL_SCHEMA,
  CONTROL_VERSION,
  activeShrinks,
  type CancelData,
  type CancelReason,
  type ControlState,
  type ShrinkData,
  type ShrinkMarker,
  type ShrinkTarget,
} from "./control-entries.ts";

/** A target in a few words, for the person and for the audit. */
export function describeShrinkTarget(target: ShrinkTarget): string {
  if ("by_tool_call_id" in target) return `the result of tool call ${target.by_tool_call_id}`;
  if ("by_tool_name" in target) return `the ${target.occurrence} ${target.by_tool_name} result`;
  const text = target.by_content_includes.replace(/\s+/g, " ");
  return `the first message containing ${JSON.stringify(text.length > 40 ? `${text.slice(0, 39)}…` : text)}`;
}

/** The arguments of the call a tool result answers: the nearest call with its id before it (providers repeat ids across responses). */
export function callArgumentsOf(messages: readonly AgentMessage[], position: number): unknown {
  const result = messages[position];
  if (!result || result.role !== "toolResult") return undefined;
  for (let i = position - 1; i >= 0; i--) {
    const call = toolCallsOf(messages[i]!).find((c) => c.id === result.toolCallId);
    if (call) return call.arguments;
  }
  return undefined;
}

/**
 * Why the message at `position` may not be shrunk, or undefined when it may: protected output
 * stays verbatim, and the person's first prompt (the task) and latest prompt (the current ask)
 * stay as they wrote them.
 */
export function shrinkRefusal(context: readonly ContextMessage[], position: number, config: ProtectionConfig): string | undefined {
  const messages = context.map((c) => c.message);
  const message = messages[position];
  if (!message) return "the target is not in the context";
  if (message.role === "toolResult" && isProtected(message.toolName, callArgumentsOf(messages, position), config)) {
    return `the ${message.toolName} result is protected (protectedTools / protectedPaths) and stays verbatim`;
  }
  if (message.role === "user") {
    const first = messages.findIndex((m) => m.role === "user");
    let latest = -1;
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i]!.role === "user") {
        latest = i;
        break;
      }
    }
    if (position === first) return "the person's first message (the task) stays as they wrote it";
    if (position === latest) return "the person's latest message (the current ask) stays as they wrote it";
  }
  return undefined;
}

/** A shrink marker's data, in the shape pi-mulligan writes. */
export function shrinkData(fields: { id: string; target: ShrinkTarget; replacement: string; reason?: string; pinnedEntryId?: string; seq: number; ts: number }): ShrinkData {
  const data: ShrinkData = { schema: CONTROL_SCHEMA, v: CONTROL_VERSION, kind: "shrink", id: fields.id, target: fields.target, replacement: fields.replacement, seq: fields.seq, ts: fields.ts };
  if (fields.reason) data.reason = fields.reason;
  if (fields.pinnedEntryId) data.pinnedEntryId = fields.pinnedEntryId;
  return data;
}

/** A cancel marker's data: it retires the rewind or shrink whose `id` is `targetId`. */
export function cancelData(targetId: string, reason: CancelReason, seq: number, ts: number): CancelData {
  return { schema: CONTROL_SCHEMA, v: CONTROL_VERSION, kind: "cancel", targetId, reason, seq, ts };
}

/** The oldest active shrinks that must be retired for one more to stay within `maxActive`. */
export function shrinksOverCap(controls: ControlState, maxActive: number): ShrinkMarker[] {
  const active = activeShrinks(controls).sort((a, b) => a.seq - b.seq);
  const excess = active.length + 1 - Math.max(1, Math.floor(maxActive));
  return excess > 0 ? active.slice(0, excess) : [];
}

/** `text` cut to `max` characters for a notification, saying how long it was. */
export function capForNotice(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, Math.max(0, max))}… (${text.length} characters in all)`;
}
