// What self-control does on Pi's live events besides its tools: the nudges that ride requests
// already being made (never persisted), the per-turn growth metric, retiring stale shrinks, and
// the reminder on a bloated tool result.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import {
  CANCEL_ENTRY,
  CONTROL_SCHEMA,
  CONTROL_VERSION,
  TURN_METRIC_ENTRY,
  activeShrinks,
  agentAttributableTokens,
  bloatReminder,
  bloatThreshold,
  cancelData,
  contentBytes,
  contentText,
  driftNudge,
  highWater,
  isProtected,
  messageKey,
  turnGrowthOf,
  type AgentMessage,
  type ControlState,
  type HighWaterState,
  type TurnMetricData,
} from "@pi-pruner/core";
import type { SelfControlHost } from "./host.ts";

/** A request the render has just made: the markers it was rendered with, what Pi built, what the render sent, and its size when known. */
interface RenderedRequest {
  controls: ControlState;
  raw: readonly AgentMessage[];
  rendered: AgentMessage[];
  /** Estimated tokens of what is sent, as the render measured it (asked only when needed). */
  sentTokens(): number | undefined;
}

export interface SelfControlLive {
  /**
   * After the render, before the request leaves: may add a nudge to what is sent, and decides which
   * stale shrinks to retire. Writes nothing: the retirements are written by `onAnswer`.
   */
  onContext(ctx: ExtensionContext, request: RenderedRequest): AgentMessage[];
  /** The model's answer to a request has arrived, before Pi persists it: writes the retirements decided while it was rendered. */
  onAnswer(ctx: ExtensionContext): void;
  /** At a turn's end: records how much the agent's own context grew over the turn. */
  onTurnEnd(ctx: ExtensionContext, turn: { turnIndex?: number; message?: AgentMessage; toolResults?: readonly AgentMessage[] }): void;
}

/** The custom type of a nudge sent as a message of its own (when the newest message cannot carry it). Never persisted. */
export const NUDGE_MESSAGE = "pi-pruner:nudge";

/** The newest message with the nudge appended, or the nudge as a message of its own after it. A copy: Pi's messages are left as they were. */
export function withNudge(messages: readonly AgentMessage[], note: string): AgentMessage[] {
  const out = messages.slice();
  const last = out[out.length - 1];
  const block = { type: "text" as const, text: note };
  if (last?.role === "toolResult") {
    out[out.length - 1] = { ...last, content: [...last.content, block] };
  } else if (last?.role === "user") {
    const content = typeof last.content === "string" ? [{ type: "text" as const, text: last.content }] : last.content;
    out[out.length - 1] = { ...last, content: [...content, block] };
  } else {
    out.push({ role: "custom", customType: NUDGE_MESSAGE, content: note, display: false, timestamp: Date.now() });
  }
  return out;
}

const OWN_TOOLS = /^context_/;

export function createSelfControlLive(pi: Pick<ExtensionAPI, "appendEntry">, host: SelfControlHost): SelfControlLive {
  // Renders in a row in which each active shrink's target was missing from what Pi would send.
  const absentFor = new Map<string, number>();
  // Shrinks this process already retired: the cancel is on the branch from the next read on.
  const retiredHere = new Set<string>();
  // Shrinks retired while a request was rendered, whose cancel is written when its answer arrives.
  let retiring: string[] = [];
  let highWaterState: HighWaterState = { above: false };
  // The leaf at the last turn's end: a turn on another branch does not continue that run of turns.
  let baseline: { leafId: string | null } | undefined;
  // The newest metric a request has seen, and the one a drift nudge last fired on.
  let lastMetricSeen: string | undefined;
  let nudgedAtMetric: string | undefined;
  // Metrics this process wrote, and how many a request has looked for: the branch is searched only after a new one.
  let metricsWritten = 0;
  let metricsLooked = 0;

  // `controls` are the ones this request was rendered with: the branch is not read a second time.
  const retireStaleShrinks = (controls: ControlState, raw: readonly AgentMessage[]) => {
    const config = host.config().selfControl;
    const shrinks = activeShrinks(controls).filter((s) => !retiredHere.has(s.id));
    if (shrinks.length === 0) return;
    const keys = new Set(raw.map(messageKey));
    const active = new Set<string>();
    for (const shrink of shrinks) {
      active.add(shrink.id);
      const present = shrink.targetKey !== undefined && keys.has(shrink.targetKey);
      const count = present ? 0 : (absentFor.get(shrink.id) ?? 0) + 1;
      absentFor.set(shrink.id, count);
      if (count < config.shrinkStaleAfterRenders) continue;
      // It takes effect from the next request: this one is already rendered.
      retiring.push(shrink.id);
      retiredHere.add(shrink.id);
      absentFor.delete(shrink.id);
    }
    for (const id of absentFor.keys()) if (!active.has(id)) absentFor.delete(id);
  };

  const driftNote = (ctx: ExtensionContext): string | undefined => {
    if (metricsLooked === metricsWritten) return undefined;
    metricsLooked = metricsWritten;
    const growth = turnGrowthOf(host.branch(ctx));
    const newest = growth[growth.length - 1];
    // One chance per recorded turn: the request right after it.
    if (!newest || newest.entryId === lastMetricSeen) return undefined;
    lastMetricSeen = newest.entryId;
    // A window counts only turns after the last nudge, so it repeats at most once a window.
    const since = nudgedAtMetric ? growth.findIndex((g) => g.entryId === nudgedAtMetric) + 1 : 0;
    const note = driftNudge(growth.slice(since).map((g) => g.deltaTokens), host.config().selfControl);
    if (note) nudgedAtMetric = newest.entryId;
    return note;
  };

  const highWaterNote = (ctx: ExtensionContext, tokens: number | undefined): string | undefined => {
    // The render has just measured this request (by position, without serialising it again).
    if (tokens === undefined) return undefined;
    const result = highWater(highWaterState, tokens, host.contextWindow(ctx), host.config().selfControl.highWaterFraction);
    highWaterState = result.state;
    return result.note;
  };

  return {
    onContext(ctx, { controls, raw, rendered, sentTokens }) {
      if (!host.config().selfControl.enabled) return rendered;
      retireStaleShrinks(controls, raw);
      const notes = [driftNote(ctx), highWaterNote(ctx, sentTokens())].filter((n): n is string => n !== undefined);
      return notes.length ? withNudge(rendered, notes.join("\n")) : rendered;
    },

    // Written here, not while the request is rendered: the render only reads the session. The cancel
    // lands where it always has, between the request's messages and its answer.
    onAnswer(ctx) {
      if (retiring.length === 0) return;
      const ids = retiring;
      retiring = [];
      let seq = host.nextSeq(ctx);
      for (const id of ids) pi.appendEntry(CANCEL_ENTRY, cancelData(id, "stale", seq++, Date.now()));
    },

    onTurnEnd(ctx, turn) {
      if (!host.config().selfControl.enabled) return;
      const branch = host.branch(ctx);
      // What the agent added this turn: its reply and the results of its calls. Measuring the whole
      // context every turn instead would cost time growing with the session, turn after turn.
      const added = agentAttributableTokens([...(turn.message ? [turn.message] : []), ...(turn.toolResults ?? [])]);
      // A first turn, or one on another branch than the last, has no run of turns to belong to.
      const onBranch = baseline !== undefined && (baseline.leafId === null || branch.some((e) => e.id === baseline!.leafId));
      const deltaTokens = onBranch ? added : null;
      const metric: TurnMetricData = {
        schema: CONTROL_SCHEMA,
        v: CONTROL_VERSION,
        kind: "turn-metric",
        seq: host.nextSeq(ctx),
        ts: Date.now(),
        deltaTokens,
        ...(typeof turn.turnIndex === "number" ? { turnIndex: turn.turnIndex } : {}),
      };
      pi.appendEntry(TURN_METRIC_ENTRY, metric);
      metricsWritten++;
      baseline = { leafId: branch[branch.length - 1]?.id ?? null };
    },
  };
}

/** The reminder added to a tool result large enough to be worth shrinking. */
export function registerBloatReminder(pi: Pick<ExtensionAPI, "on">, host: Pick<SelfControlHost, "config">): void {
  pi.on("tool_result", (event, _ctx) => {
    try {
      const all = host.config();
      const config = all.selfControl;
      if (!config.enabled || !config.bloatReminder || OWN_TOOLS.test(event.toolName)) return undefined;
      const bytes = contentBytes(event.content);
      if (bytes <= bloatThreshold(event.toolName, config)) return undefined;
      // Protected output can be neither shrunk nor rewound: a reminder would offer what is refused.
      if (isProtected(event.toolName, event.input, all)) return undefined;
      // The pruner spills a result this large at once and the model is sent a short stub of it.
      if (all.enabled && contentText(event.content).length >= all.spillThreshold) return undefined;
      return { content: [...event.content, { type: "text" as const, text: bloatReminder(event.toolName, bytes, event.toolCallId) }] };
    } catch {
      // The result goes to the model as the tool gave it.
      return undefined;
    }
  });
}
