// The shrink and audit tools, and the person's `/pruner audit`.
import { randomUUID } from "node:crypto";
import { Type, type Static } from "typebox";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import {
  CANCEL_ENTRY,
  SHRINK_ENTRY,
  auditReport,
  cancelData,
  capForNotice,
  describeShrinkTarget,
  estimateTokens,
  formatAudit,
  formatNumber,
  messageChars,
  readShrinkTarget,
  resolveShrinkTarget,
  shrinkData,
  shrinkRefusal,
  shrinksOverCap,
} from "@pi-pruner/core";
import type { Subcommand } from "../commands.ts";
import { messageTargetSchema, parseObjectArguments } from "./arguments.ts";
import { SELF_CONTROL_OFF, type SelfControlHost } from "./host.ts";

const SHRINK_TOOL = "context_shrink";
const AUDIT_TOOL = "context_audit";

const TargetSchema = messageTargetSchema("The one message to replace");

const ShrinkParameters = Type.Object({
  target: TargetSchema,
  replacement: Type.String({ description: "A faithful summary to keep in its place" }),
  reason: Type.Optional(Type.String()),
});
type ShrinkParams = Static<typeof ShrinkParameters>;

const AuditParameters = Type.Object({
  top: Type.Optional(Type.Integer({ minimum: 0, description: "Largest messages to list (default 8)" })),
});

const text = (value: string, details: Record<string, unknown> = {}) => ({ content: [{ type: "text" as const, text: value }], details });
const refused = (why: string) => text(`pi-pruner: refused: ${why}`, { refused: true });

function auditText(host: SelfControlHost, ctx: ExtensionContext, top: number | undefined, audience: "agent" | "person"): string {
  const { raw, steps } = host.renderSteps(ctx);
  const report = auditReport({ raw, steps, controls: host.controls(ctx), config: host.config(), top, contextWindow: host.contextWindow(ctx) });
  return formatAudit(report, audience);
}

function shrink(pi: ExtensionAPI, host: SelfControlHost, params: ShrinkParams, ctx: ExtensionContext) {
  const config = host.config();
  if (!config.selfControl.enabled) return text(SELF_CONTROL_OFF, { refused: true });
  const target = readShrinkTarget(params.target);
  if (!target) return refused("target must be one of {by_tool_call_id}, {by_tool_name, occurrence}, {by_content_includes}.");
  const replacement = typeof params.replacement === "string" ? params.replacement : "";
  if (replacement.trim() === "") return refused("the replacement is empty; write the summary the message should be replaced with.");

  const context = host.visibleContext(ctx);
  const found = resolveShrinkTarget(context, target);
  // A marker that matches nothing now can never apply (its target is fixed where it is written), so none is written.
  if (!found) return text(`matched: no — nothing in your context is ${describeShrinkTarget(target)}; nothing was recorded.`, { matched: false });
  const refusal = shrinkRefusal(context, found.position, config);
  if (refusal) return refused(`${refusal}.`);

  const controls = host.controls(ctx);
  const id = randomUUID();
  const ts = Date.now();
  let seq = host.nextSeq(ctx);
  const reason = typeof params.reason === "string" && params.reason.trim() !== "" ? params.reason.trim() : undefined;
  pi.appendEntry(SHRINK_ENTRY, shrinkData({ id, target, replacement, reason, pinnedEntryId: found.entryId, seq: seq++, ts }));
  const retired = shrinksOverCap(controls, config.selfControl.maxActiveShrinks);
  for (const old of retired) pi.appendEntry(CANCEL_ENTRY, cancelData(old.id, "cap", seq++, ts));

  const before = estimateTokens(messageChars(context[found.position]!.message));
  const saved = Math.max(0, before - estimateTokens(replacement.length));
  const retiredText = retired.length
    ? ` To stay within maxActiveShrinks (${config.selfControl.maxActiveShrinks}) the oldest ${retired.length === 1 ? "shrink" : `${retired.length} shrinks`} (${retired.map((r) => r.id).join(", ")}) no longer ${retired.length === 1 ? "applies" : "apply"}.`
    : "";
  try {
    // The person sees what the agent will treat as the message from now on; the model is not sent it twice.
    ctx.ui.notify(`pi-pruner: the agent shrank ${describeShrinkTarget(target)}; in its place it keeps:\n${capForNotice(replacement, config.selfControl.notifyMaxChars)}`, "info");
  } catch {
    // The marker is written; a notification that fails changes nothing.
  }
  return text(`matched: yes — marker ${id}: ${describeShrinkTarget(target)} (~${formatNumber(saved)} tokens smaller) shows your replacement from the next request on.${retiredText}`, {
    matched: true,
    markerId: id,
    retired: retired.map((r) => r.id),
  });
}

export function registerShrinkTools(pi: ExtensionAPI, host: SelfControlHost): void {
  pi.registerTool({
    name: SHRINK_TOOL,
    label: "Context shrink",
    description:
      "From the next request on, show your own summary in place of one past message whose output is too big to carry. The call stays.",
    promptSnippet: "Replace a bloated past tool result in your context with your own summary",
    parameters: ShrinkParameters,
    prepareArguments: (args: unknown) => parseObjectArguments<ShrinkParams>(args, ["target"]),
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      try {
        return shrink(pi, host, params, ctx);
      } catch (error) {
        return text(`pi-pruner: the shrink failed (${(error as Error).message}); nothing changed.`, { error: true });
      }
    },
  });

  pi.registerTool({
    name: AUDIT_TOOL,
    label: "Context audit",
    description:
      "Read-only: your context as sent (tokens per pruning step, largest messages, bloated results, your rewinds, shrinks, checkpoints).",
    parameters: AuditParameters,
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      if (!host.config().selfControl.enabled) return text(SELF_CONTROL_OFF, { refused: true });
      try {
        return text(auditText(host, ctx, params.top, "agent"));
      } catch (error) {
        return text(`pi-pruner: the audit failed (${(error as Error).message}).`, { error: true });
      }
    },
  });
}

export function shrinkSubcommands(host: SelfControlHost): Record<string, Subcommand> {
  return {
    audit: {
      description: "what the model is sent now, step by step, its largest parts and the agent's markers (shown to you only)",
      run(_args, ctx) {
        if (!host.config().selfControl.enabled) {
          ctx.ui.notify(SELF_CONTROL_OFF, "warning");
          return;
        }
        ctx.ui.notify(auditText(host, ctx, undefined, "person"), "info");
      },
    },
  };
}
