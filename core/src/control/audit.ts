// The audit: what the agent carries in the messages it is sent, step by step of the render, its
// largest parts, the results over the bloat threshold, and the markers in force. Read-only.
// Every figure is an estimate (characters / 4) of the messages themselves, not the provider's
// usage: the system prompt and the tool list are not counted.
import type { AgentMessage } from "../shapes/messages.ts";
import { contentText, toolCallsOf } from "../shapes/messages.ts";
import { estimateTokens, formatNumber, messageChars, messagesChars } from "../shapes/size.ts";
import { oneLine } from "../shapes/text.ts";
import type { SelfControlConfig } from "../settings/config.ts";
import { messageKey, type ControlState } from "./control-entries.ts";
import { bloatThreshold, contentBytes } from "./nudges.ts";
import { describeShrinkTarget, callArgumentsOf } from "./shrink-guards.ts";

const DEFAULT_AUDIT_TOP = 8;

export interface AuditInput {
  /** The messages Pi would send. */
  raw: readonly AgentMessage[];
  /** The messages after each render step, in order (the last is what the model is sent). */
  steps: readonly { step: string; messages: readonly AgentMessage[] }[];
  controls: ControlState;
  config: { selfControl: Pick<SelfControlConfig, "bloatThresholdBytes" | "bloatThresholdBytesByTool"> };
  /** How many of the largest messages to list (default 8). */
  top?: number;
  /** The model's window in tokens, when known. */
  contextWindow?: number;
}

interface AuditStage {
  step: string;
  tokens: number;
  /** Tokens this step took away (negative when it added). */
  saved: number;
}

interface AuditContributor {
  /** Position in what the model is sent. */
  position: number;
  role: string;
  toolName?: string;
  toolCallId?: string;
  tokens: number;
  preview: string;
}

interface AuditBloat {
  toolName: string;
  toolCallId: string;
  bytes: number;
  thresholdBytes: number;
  tokens: number;
}

interface AuditRewind {
  id: string;
  granularity: string;
  /** Messages of what Pi would send that it hides. */
  hiddenMessages: number;
  /** The first line of its note's `what_happened`. */
  note?: string;
}

interface AuditShrink {
  id: string;
  target: string;
  /** Whether its target is among the messages Pi would send. */
  inContext: boolean;
}

export interface AuditReport {
  /** Estimated tokens of what Pi would send. */
  rawTokens: number;
  rawMessages: number;
  stages: AuditStage[];
  /** Estimated tokens of what the model is sent. */
  sentTokens: number;
  sentMessages: number;
  contextWindow?: number;
  top: AuditContributor[];
  bloated: AuditBloat[];
  rewinds: AuditRewind[];
  shrinks: AuditShrink[];
  /** Markers retired by a cancel (the agent's, the person's, or the cap) and by the stale guard. */
  retired: { cancelled: number; stale: number };
  checkpoints: string[];
}

const PREVIEW_CHARS = 60;

/** A message's text as one line of a preview. */
function preview(text: string): string {
  return oneLine(text, PREVIEW_CHARS);
}

/** The argument that tells one call of a tool from another, when it has one. */
function subjectOf(args: unknown): string | undefined {
  if (!args || typeof args !== "object") return undefined;
  for (const key of ["path", "file_path", "command", "pattern", "query", "url"]) {
    const value = (args as Record<string, unknown>)[key];
    if (typeof value === "string" && value !== "") return value;
  }
  return undefined;
}

function previewOf(messages: readonly AgentMessage[], position: number): string {
  const m = messages[position]!;
  switch (m.role) {
    case "toolResult": {
      const subject = subjectOf(callArgumentsOf(messages, position));
      const text = preview(contentText(m.content));
      return subject ? `${oneLine(subject, 40)}: ${text}` : text;
    }
    case "assistant": {
      const text = preview(contentText(m.content));
      const calls = toolCallsOf(m).map((c) => {
        const subject = subjectOf(c.arguments);
        return subject ? `${c.name}(${oneLine(subject, 30)})` : c.name;
      });
      return [text, calls.length ? `calls ${calls.join(", ")}` : ""].filter(Boolean).join(" · ");
    }
    case "user":
      return preview(contentText(m.content));
    case "custom":
      return `${m.customType}: ${preview(contentText(m.content))}`;
    case "bashExecution":
      return preview(`$ ${m.command}`);
    case "branchSummary":
    case "compactionSummary":
      return preview(m.summary);
    default:
      return "";
  }
}

export function auditReport(input: AuditInput): AuditReport {
  const { raw, steps, controls, config } = input;
  const sent = steps.length ? steps[steps.length - 1]!.messages : raw;
  const rawTokens = estimateTokens(messagesChars(raw));
  const stages: AuditStage[] = [];
  let before = rawTokens;
  for (const { step, messages } of steps) {
    const tokens = estimateTokens(messagesChars(messages));
    stages.push({ step, tokens, saved: before - tokens });
    before = tokens;
  }

  const topCount = Math.max(0, Math.floor(input.top ?? DEFAULT_AUDIT_TOP));
  const sized = sent.map((m, position) => ({ m, position, tokens: estimateTokens(messageChars(m)) }));
  const top = sized
    .slice()
    .sort((a, b) => b.tokens - a.tokens || a.position - b.position)
    .slice(0, topCount)
    .map(({ m, position, tokens }): AuditContributor => ({
      position,
      role: m.role,
      ...(m.role === "toolResult" ? { toolName: m.toolName, toolCallId: m.toolCallId } : {}),
      tokens,
      preview: previewOf(sent, position),
    }));

  const bloated: AuditBloat[] = [];
  for (const { m, tokens } of sized) {
    if (m.role !== "toolResult") continue;
    const bytes = contentBytes(m.content);
    const thresholdBytes = bloatThreshold(m.toolName, config.selfControl);
    if (bytes > thresholdBytes) bloated.push({ toolName: m.toolName, toolCallId: m.toolCallId, bytes, thresholdBytes, tokens });
  }

  const rawKeys = new Set(raw.map(messageKey));
  const rewinds: AuditRewind[] = [];
  const shrinks: AuditShrink[] = [];
  const retired = { cancelled: 0, stale: 0 };
  for (const marker of controls.markers) {
    if (marker.state === "cancelled") retired.cancelled++;
    else if (marker.state === "stale") retired.stale++;
    else if (marker.kind === "rewind") {
      let hiddenMessages = 0;
      for (const key of marker.hidden) if (rawKeys.has(key)) hiddenMessages++;
      const note = marker.data.note?.what_happened.split("\n").find((line) => line.trim() !== "");
      rewinds.push({ id: marker.id, granularity: marker.data.granularity, hiddenMessages, ...(note ? { note: oneLine(note, 100) } : {}) });
    } else {
      shrinks.push({ id: marker.id, target: describeShrinkTarget(marker.data.target), inContext: marker.targetKey !== undefined && rawKeys.has(marker.targetKey) });
    }
  }

  return {
    rawTokens,
    rawMessages: raw.length,
    stages,
    sentTokens: estimateTokens(messagesChars(sent)),
    sentMessages: sent.length,
    ...(input.contextWindow ? { contextWindow: input.contextWindow } : {}),
    top,
    bloated,
    rewinds,
    shrinks,
    retired,
    checkpoints: controls.checkpoints.map((c) => c.name),
  };
}

const n = formatNumber;
const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/**
 * The report as text. `audience` decides who the checkpoints' setter is to the reader: the agent
 * reads "set by the person", the person reads "set by you".
 */
export function formatAudit(report: AuditReport, audience: "agent" | "person" = "agent"): string {
  const lines: string[] = [];
  lines.push("Context audit — estimated tokens (characters / 4) of the messages sent; the system prompt and the tool list are not counted.");
  lines.push(`Pi would send: ${n(report.rawTokens)} tokens in ${plural(report.rawMessages, "message")}`);
  for (const stage of report.stages) {
    const change = stage.saved === 0 ? "no change" : stage.saved > 0 ? `-${n(stage.saved)}` : `+${n(-stage.saved)}`;
    lines.push(`  after ${stage.step}: ${n(stage.tokens)} (${change})`);
  }
  const share = report.contextWindow ? ` (${Math.round((report.sentTokens / report.contextWindow) * 100)}% of the ${n(report.contextWindow)}-token window)` : "";
  lines.push(`The model is sent: ${n(report.sentTokens)} tokens in ${plural(report.sentMessages, "message")}${share}`);

  if (report.top.length) {
    lines.push("", `Largest ${plural(report.top.length, "message")}:`);
    for (const c of report.top) {
      const who = c.role === "toolResult" ? `${c.toolName} result ${c.toolCallId}` : c.role;
      lines.push(`  ${n(c.tokens).padStart(7)}  #${c.position} ${who}${c.preview ? ` — ${c.preview}` : ""}`);
    }
  }

  if (report.bloated.length) {
    lines.push("", "Results over the bloat threshold:");
    for (const b of report.bloated) {
      lines.push(`  ${b.toolName} ${b.toolCallId}: ${n(b.bytes)} bytes (threshold ${n(b.thresholdBytes)}), ~${n(b.tokens)} tokens — context_shrink with target {"by_tool_call_id":${JSON.stringify(b.toolCallId)}} would keep your summary in its place`);
    }
  }

  lines.push("");
  const retired = report.retired.cancelled + report.retired.stale;
  const retiredText = retired ? `; retired: ${report.retired.cancelled} cancelled, ${report.retired.stale} stale` : "";
  lines.push(`Active markers: ${plural(report.rewinds.length, "rewind")}, ${plural(report.shrinks.length, "shrink")}${retiredText}`);
  for (const r of report.rewinds) lines.push(`  rewind ${r.id} (${r.granularity}): hides ${plural(r.hiddenMessages, "message")}${r.note ? ` — ${r.note}` : ""}`);
  for (const s of report.shrinks) lines.push(`  shrink ${s.id}: ${s.target}${s.inContext ? "" : " (target not in the context now)"}`);
  const setter = audience === "person" ? "set by you" : "set by the person";
  lines.push(report.checkpoints.length ? `Checkpoints: ${report.checkpoints.map((name) => `${name} (${setter})`).join(", ")}` : "Checkpoints: none");
  return lines.join("\n");
}
