// The nudges that ride requests already being made: a reminder appended to one bloated tool
// result, a note when the agent's own context kept growing turn after turn, and a one-time note
// when the context first crosses a share of the window. All pure: the Pi extension decides when
// to ask and where the text goes.
import type { AgentMessage } from "../shapes/messages.ts";
import type { AnyEntry, CustomEntry } from "../shapes/entries.ts";
import { isRecord } from "../shapes/json.ts";
import { estimateTokens, formatNumber, messageChars } from "../shapes/size.ts";
import type { SelfControlConfig } from "../settings/config.ts";
import { CONTROL_SCHEMA, TURN_METRIC_ENTRY } from "./control-entries.ts";

/** The bytes of one tool result above which the reminder is appended: the tool's own threshold, else the global one. */
export function bloatThreshold(toolName: string | undefined, config: Pick<SelfControlConfig, "bloatThresholdBytes" | "bloatThresholdBytesByTool">): number {
  const byTool = config.bloatThresholdBytesByTool;
  // Own keys only: a tool called "constructor" must not find Object's.
  if (toolName && byTool && Object.prototype.hasOwnProperty.call(byTool, toolName)) {
    const value = byTool[toolName];
    if (typeof value === "number" && Number.isFinite(value)) return value;
  }
  return config.bloatThresholdBytes;
}

const utf8 = new TextEncoder();

/** UTF-8 bytes of a result's text blocks, plus the encoded length of its images: what one result carries. */
export function contentBytes(content: unknown): number {
  if (typeof content === "string") return utf8.encode(content).length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const block of content) {
    if (!isRecord(block)) continue;
    if (block.type === "text" && typeof block.text === "string") n += utf8.encode(block.text).length;
    else if (block.type === "image" && typeof block.data === "string") n += block.data.length;
  }
  return n;
}

/** The one line appended to a result over its tool's threshold. It names the result, so the agent can act on it at once. */
export function bloatReminder(toolName: string, bytes: number, toolCallId: string): string {
  const tokens = estimateTokens(bytes);
  return (
    `[pi-pruner] This ${toolName} result is ${formatNumber(bytes)} bytes (~${formatNumber(tokens)} tokens) and is sent again with every request. ` +
    `If you need only part of it, keep your own summary with context_shrink {"target":{"by_tool_call_id":${JSON.stringify(toolCallId)}},"replacement":"…"}; ` +
    `if the call was a mistake, context_rewind drops it.`
  );
}

/** Estimated tokens of the messages the agent itself added: everything but the person's prompts and shell commands. */
export function agentAttributableTokens(messages: readonly AgentMessage[]): number {
  let chars = 0;
  for (const m of messages) if (m.role !== "user" && m.role !== "bashExecution") chars += messageChars(m);
  return estimateTokens(chars);
}

/** One turn's recorded growth, as the branch holds it. */
export interface TurnGrowth {
  /** The entry that holds the metric. */
  entryId: string;
  /** null when the turn had no baseline to measure against (the first turn, a reload, a branch switch). */
  deltaTokens: number | null;
}

/** The turn metrics on a branch, oldest first. Entries that are not readable metrics are skipped. */
export function turnGrowthOf(branch: readonly AnyEntry[]): TurnGrowth[] {
  const out: TurnGrowth[] = [];
  for (const entry of branch) {
    if (entry.type !== "custom" || (entry as CustomEntry).customType !== TURN_METRIC_ENTRY) continue;
    const data = (entry as CustomEntry).data;
    if (!isRecord(data) || data.schema !== CONTROL_SCHEMA || data.kind !== "turn-metric") continue;
    const delta = typeof data.deltaTokens === "number" && Number.isFinite(data.deltaTokens) ? data.deltaTokens : null;
    out.push({ entryId: entry.id, deltaTokens: delta });
  }
  return out;
}

/**
 * The drift note, when the agent's own context grew by at least `driftThresholdTokens` a turn on
 * average over the last `driftWindowTurns` turns; else undefined. `deltas` are the turns' growth,
 * oldest first. The window must be whole and measured: a turn without a baseline ends the run of
 * measured turns, so one heavy turn right after a reload never fires alone, and neither does a
 * window that is not full yet.
 */
export function driftNudge(deltas: readonly (number | null)[], config: Pick<SelfControlConfig, "driftNudge" | "driftThresholdTokens" | "driftWindowTurns">): string | undefined {
  if (!config.driftNudge) return undefined;
  const window = Math.max(1, Math.floor(config.driftWindowTurns));
  if (deltas.length < window) return undefined;
  const recent = deltas.slice(deltas.length - window);
  if (recent.some((d) => d === null || !Number.isFinite(d))) return undefined;
  const average = (recent as number[]).reduce((a, b) => a + b, 0) / window;
  if (average < config.driftThresholdTokens) return undefined;
  const turns = window === 1 ? "the last turn" : `each of the last ${window} turns`;
  return (
    `[pi-pruner] Your own messages and tool output grew the context by ~${formatNumber(Math.round(average))} tokens over ${turns} (on average, estimated). ` +
    `If some of it is no longer needed, context_shrink keeps a summary of a result in its place and context_rewind drops a wrong turn; context_audit shows the largest parts.`
  );
}

/** Whether the context was above the high-water mark at the last request. */
export interface HighWaterState {
  above: boolean;
}

/**
 * The one-time note when the context first reaches `fraction` of the window. It fires on the
 * upward crossing only, and re-arms once the context is below the mark again. It only informs:
 * the person's own messages may be what filled the window.
 */
export function highWater(state: HighWaterState, tokens: number, window: number | undefined, fraction: number | null): { note?: string; state: HighWaterState } {
  if (fraction === null || !window || window <= 0 || !Number.isFinite(tokens)) return { state };
  if (tokens / window < fraction) return { state: state.above ? { above: false } : state };
  if (state.above) return { state };
  const percent = Math.round((tokens / window) * 100);
  return {
    note: `[pi-pruner] The context is at ~${percent}% of the model's window (~${formatNumber(tokens)} of ${formatNumber(window)} tokens, estimated). context_audit shows what takes the room.`,
    state: { above: true },
  };
}
