// The context of a branch as the agent sees it (Pi's context with the agent's rewinds and shrinks
// applied), what the render makes of it step by step, and where a change of those markers first
// changes what is sent.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { AgentMessage, AnyEntry, ControlState, ProtectionConfig, PruneConfig, PruneIndex, RenderStep } from "@pi-pruner/core";
import { EMPTY_CONTROLS, activeRewinds, activeShrinks, buildPiContext, compactionResend, isProtected, keyTimestamp, messageKey, newestCompactionAt, renderWhole, resendBudget, visibleContext } from "@pi-pruner/core";

/** The session's current branch, root → leaf. */
export function branchOf(ctx: Pick<ExtensionContext, "sessionManager">): AnyEntry[] {
  return ctx.sessionManager.getBranch() as unknown as AnyEntry[];
}

/** The messages Pi builds for a branch (after its own compaction), with the agent's rewinds and shrinks applied. */
export function contextMessagesOf(branch: AnyEntry[], controls: ControlState = EMPTY_CONTROLS, protection?: ProtectionConfig): AgentMessage[] {
  const context = buildPiContext(branch);
  return (controls.markers.length ? visibleContext(context, controls, protectsBy(protection)) : context).map((c) => c.message);
}

/** Pi's model api for a router whose requests go to another model (Pi reads the window of the last one that answered). */
const ROUTER_API = "pi-virtual";

/**
 * The context window Pi measures against. Pi's getContextUsage() builds the whole session's
 * projection to answer; the window alone is the model's own, unless the model routes to others.
 */
export function contextWindowOf(ctx: Pick<ExtensionContext, "model" | "getContextUsage">): number | undefined {
  const model = ctx.model;
  if (model && model.api !== ROUTER_API && model.contextWindow > 0) return model.contextWindow;
  return ctx.getContextUsage()?.contextWindow ?? model?.contextWindow;
}

/** What the model is sent for a branch now (Pi's context, before the agent's markers), after each step of the render. */
export function renderSteps(
  branch: AnyEntry[],
  index: PruneIndex,
  config: PruneConfig,
  controls: ControlState,
  contextWindow: number | undefined,
): { raw: readonly AgentMessage[]; steps: { step: RenderStep; messages: readonly AgentMessage[] }[] } {
  const raw = contextMessagesOf(branch);
  const steps: { step: RenderStep; messages: readonly AgentMessage[] }[] = [];
  const resend = config.enabled ? compactionResend(branch, newestCompactionAt(branch), config, { budgetTokens: resendBudget(config, contextWindow) }) : undefined;
  renderWhole(raw, index, config, controls, (step, messages) => steps.push({ step, messages }), resend);
  return { raw, steps };
}

/** What the render keeps out of every rewind and shrink, as `visibleContext` asks for it. */
export function protectsBy(protection: ProtectionConfig | undefined): ((toolName: string, args: unknown) => boolean) | undefined {
  return protection ? (toolName, args) => isProtected(toolName, args, protection) : undefined;
}

/**
 * Where in `sent` (rendered with `before`) the markers of `now` first change what is sent: the first
 * message a new rewind hides or a new shrink replaces, or, for a retired marker, the first message
 * after the earliest one it brings back. `sent.length` when nothing changes.
 */
export function controlChangeIn(sent: readonly AgentMessage[], before: ControlState, now: ControlState): number {
  if (before === now) return sent.length;
  const affected = (state: ControlState) => {
    const keys = new Map<string, string>();
    for (const r of activeRewinds(state)) for (const key of r.hidden) keys.set(key, r.id);
    for (const s of activeShrinks(state)) if (s.targetKey) keys.set(s.targetKey, s.id);
    return keys;
  };
  const was = affected(before);
  const is = affected(now);
  let returning = Infinity;
  for (const [key, id] of was) {
    if (is.get(key) === id) continue;
    const time = keyTimestamp(key);
    if (Number.isFinite(time)) returning = Math.min(returning, time);
  }
  for (let i = 0; i < sent.length; i++) {
    const m = sent[i]!;
    const key = messageKey(m);
    if ((is.has(key) && was.get(key) !== is.get(key)) || m.timestamp >= returning) return i;
  }
  return sent.length;
}
