// The rewind and cancel tools, checkpoints (the person's subcommands and the line above the editor).
// Markers are written in pi-mulligan's entry shapes; what they hide is fixed by entry id when they
// are written, so later work never slides under them.
import { randomUUID } from "node:crypto";
import { Type } from "typebox";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import {
  isMessageEntry,
  CANCEL_ENTRY,
  CHECKPOINT_NAME,
  CHECKPOINT_PREFIX,
  CONTROL_SCHEMA,
  CONTROL_VERSION,
  GRANULARITIES,
  MUTATION_WARNING,
  NOTE_MESSAGE,
  REWIND_ENTRY,
  buildPiContext,
  checkRewind,
  estimateTokens,
  extractLedger,
  hasMutations,
  isProtected,
  messagesChars,
  readShrinkTarget,
  renderNote,
  searchableText,
  validateNote,
  type CancelData,
  type ContextMessage,
  type ControlMarker,
  type ControlState,
  type Granularity,
  type RewindData,
  type ShrinkTarget,
} from "@pi-pruner/core";
import type { Subcommand } from "../commands.ts";
import { messageTargetSchema, parseObjectArguments } from "./arguments.ts";
import { SELF_CONTROL_OFF, type SelfControlHost } from "./host.ts";

const REWIND_TOOL = "context_rewind";
const CANCEL_TOOL = "context_cancel";
/** The widget that tells the person a checkpoint is set. */
const CHECKPOINT_WIDGET = "pi-pruner-checkpoint";

const text = (value: string, details: Record<string, unknown> = {}) => ({ content: [{ type: "text" as const, text: value }], details });
const refused = (why: string) => text(`pi-pruner: refused: ${why}.`, { refused: true });

const NoteSchema = Type.Object(
  {
    what_happened: Type.String({ description: "What went wrong, and the lesson" }),
    true_current_state: Type.String({ description: "Where the task truly stands (files are listed for you)" }),
    next: Type.String({ description: "Your next action" }),
  },
  { description: "Read by you as your newest message; each field a real sentence" },
);

const TargetSchema = messageTargetSchema("A message the rewind hid or the shrink replaced");

interface RewindParams {
  granularity: Granularity;
  note: unknown;
  checkpoint?: string;
}

interface CancelParams {
  target?: unknown;
  markerId?: string;
}

// ---- context_rewind ----

function rewind(pi: ExtensionAPI, host: SelfControlHost, toolCallId: string, params: RewindParams, ctx: ExtensionContext) {
  const config = host.config();
  if (!config.selfControl.enabled) return text(SELF_CONTROL_OFF, { refused: true });
  const granularity = params.granularity;
  if (!(GRANULARITIES as readonly string[]).includes(granularity)) return refused(`granularity must be one of ${GRANULARITIES.join(", ")}`);
  const note = validateNote(params.note);
  if (!note.ok) return refused(note.reason);

  const controls = host.controls(ctx);
  const context = host.visibleContext(ctx);
  const check = checkRewind({
    controls,
    context,
    granularity,
    checkpoint: params.checkpoint,
    excludeToolCallId: toolCallId,
    config: config.selfControl,
    // What the last request sent, as the render measured it; the visible context when that is unknown.
    contextTokens: host.sentTokens(ctx) ?? estimateTokens(messagesChars(context.map((c) => c.message))),
    contextWindow: host.contextWindow(ctx),
    protects: (toolName, args) => isProtected(toolName, args, config),
  });
  if (!check.ok) return refused(check.reason);

  const hidden = check.span.positions.map((p) => context[p]!.message);
  const ledger = extractLedger(hidden, ctx.cwd);
  const checkpoint = check.checkpoint?.name;
  const data: RewindData = {
    schema: CONTROL_SCHEMA,
    v: CONTROL_VERSION,
    kind: "rewind",
    id: randomUUID(),
    granularity,
    ...(checkpoint ? { checkpoint } : {}),
    excludeToolCallId: toolCallId,
    hideEntryIds: check.span.entryIds,
    seq: host.nextSeq(ctx),
    note: note.note,
    ledger,
    ts: Date.now(),
  };
  pi.appendEntry(REWIND_ENTRY, data);
  const warn = config.selfControl.mutationWarning && hasMutations(ledger);
  try {
    pi.sendMessage(
      {
        customType: NOTE_MESSAGE,
        content: renderNote(note.note, ledger, granularity, { mutationWarning: config.selfControl.mutationWarning, checkpoint, hiddenCount: hidden.length }),
        display: true,
        details: { schema: CONTROL_SCHEMA, v: CONTROL_VERSION, kind: "note", rewindId: data.id },
      },
      // The note must be the newest message of the very next request: it is steered in after this tool batch.
      { deliverAs: "steer" },
    );
  } catch (error) {
    // A rewind without its note would leave the agent with a hole and no account of it: take it back.
    pi.appendEntry(CANCEL_ENTRY, { schema: CONTROL_SCHEMA, v: CONTROL_VERSION, kind: "cancel", targetId: data.id, reason: "agent", seq: data.seq + 1, ts: Date.now() } satisfies CancelData);
    return text(`pi-pruner: the rewind failed (its note could not be sent: ${(error as Error).message}); nothing was hidden.`, { error: true });
  }
  if (checkpoint) {
    // A checkpoint takes one rewind: every message carrying the name gives it up.
    for (const c of controls.checkpoints) if (c.name === checkpoint) pi.setLabel(c.targetEntryId, undefined);
    refreshCheckpointLine(host, ctx);
  }
  const what = checkpoint ? `everything after checkpoint "${checkpoint}" (the checkpoint is used up)` : granularity;
  const lines = [
    `pi-pruner: rewound ${what}: ${hidden.length} message${hidden.length === 1 ? "" : "s"} leave your context from the next request on; your note follows as the newest message. Marker ${data.id} (context_cancel with this markerId brings them back).`,
  ];
  if (check.keptProtected > 0) lines.push(`${check.keptProtected} tool call${check.keptProtected === 1 ? "" : "s"} in that span stay${check.keptProtected === 1 ? "s" : ""}: protected output (protectedTools, protectedPaths) is never rewound.`);
  if (warn) lines.push(MUTATION_WARNING);
  return text(lines.join("\n"), { markerId: data.id, hidden: hidden.length, ledger });
}

// ---- context_cancel ----

function cancel(pi: ExtensionAPI, host: SelfControlHost, params: CancelParams, ctx: ExtensionContext) {
  if (!host.config().selfControl.enabled) return text(SELF_CONTROL_OFF, { refused: true });
  const controls = host.controls(ctx);
  const markerId = typeof params.markerId === "string" ? params.markerId.trim() : "";
  let marker: ControlMarker | undefined;
  if (markerId !== "") {
    // The marker's own id, or the id of the entry that holds it (pi-mulligan reported that one).
    marker = controls.markers.find((m) => m.id === markerId) ?? controls.markers.find((m) => m.entryId === markerId);
    if (!marker) return text(`pi-pruner: nothing to cancel: no rewind or shrink has the id ${markerId}.`, { cancelled: false });
    if (marker.state !== "active") return text(`pi-pruner: nothing to cancel: ${marker.kind} ${marker.id} is already ${marker.state}.`, { cancelled: false });
  } else {
    if (params.target === undefined || params.target === null) return refused("name the marker with target or markerId");
    const target = readShrinkTarget(params.target);
    if (!target) return refused("target must be one of {by_tool_call_id}, {by_tool_name, occurrence}, {by_content_includes}");
    marker = newestAffecting(buildPiContext(host.branch(ctx)), controls, target);
    if (!marker) return text(`pi-pruner: nothing to cancel: no active rewind or shrink affects ${describeTarget(target)}.`, { cancelled: false });
  }
  const data: CancelData = { schema: CONTROL_SCHEMA, v: CONTROL_VERSION, kind: "cancel", targetId: marker.id, reason: "agent", seq: host.nextSeq(ctx), ts: Date.now() };
  pi.appendEntry(CANCEL_ENTRY, data);
  const effect =
    marker.kind === "rewind"
      ? `the ${marker.hiddenEntryIds.length} entr${marker.hiddenEntryIds.length === 1 ? "y" : "ies"} it hid ${marker.hiddenEntryIds.length === 1 ? "is" : "are"} back in your context from the next request on (a checkpoint it used stays used up)`
      : "the message shows its original content again from the next request on";
  return text(`pi-pruner: cancelled ${marker.kind} ${marker.id}: ${effect}.`, { cancelled: true, markerId: marker.id, kind: marker.kind });
}

/**
 * The newest active marker that affects a message the target names, in the context Pi builds
 * without any marker applied (a hidden or shrunk message is still there under its original text).
 * A rewind affects what it hides, a shrink its target; `by_content_includes` also matches a
 * shrink's replacement, the text the agent sees.
 */
function newestAffecting(raw: readonly ContextMessage[], controls: ControlState, target: ShrinkTarget): ControlMarker | undefined {
  const active = controls.markers.filter((m) => m.state === "active");
  const affecting = (entryId: string) => active.filter((m) => (m.kind === "rewind" ? m.hiddenEntryIds.includes(entryId) : m.targetEntryId === entryId));
  let named: string[] = [];
  const direct: ControlMarker[] = [];
  if ("by_tool_call_id" in target) {
    named = raw
      .filter(({ message: m }) => (m.role === "toolResult" && m.toolCallId === target.by_tool_call_id) || (m.role === "assistant" && m.content.some((b) => b.type === "toolCall" && b.id === target.by_tool_call_id)))
      .map((c) => c.entryId);
  } else if ("by_tool_name" in target) {
    const results = raw.filter(({ message: m, entryId }) => m.role === "toolResult" && m.toolName === target.by_tool_name && affecting(entryId).length > 0).map((c) => c.entryId);
    const chosen = target.occurrence === "first" ? results[0] : results.at(-1);
    if (chosen) named = [chosen];
  } else if (target.by_content_includes !== "") {
    named = raw.filter((c) => searchableText(c.message).includes(target.by_content_includes)).map((c) => c.entryId);
    for (const m of active) if (m.kind === "shrink" && m.data.replacement.includes(target.by_content_includes)) direct.push(m);
  }
  const candidates = [...direct, ...named.flatMap(affecting)];
  return candidates.sort((a, b) => b.seq - a.seq)[0];
}

function describeTarget(target: ShrinkTarget): string {
  if ("by_tool_call_id" in target) return `the result of call ${target.by_tool_call_id}`;
  if ("by_tool_name" in target) return `the ${target.occurrence ?? "last"} ${target.by_tool_name} result`;
  return `a message containing ${JSON.stringify(target.by_content_includes)}`;
}

// ---- the checkpoint line ----

function checkpointNames(controls: ControlState): string[] {
  return [...new Set(controls.checkpoints.map((c) => c.name))];
}

/** Shows or clears the line above the editor: a set checkpoint lets the agent hide the person's later prompts. */
function refreshCheckpointLine(host: SelfControlHost, ctx: ExtensionContext): void {
  try {
    const config = host.config().selfControl;
    const names = config.enabled && config.checkpointLine ? checkpointNames(host.controls(ctx)) : [];
    const quoted = names.map((n) => `"${n}"`).join(", ");
    const line =
      names.length === 0
        ? undefined
        : `pi-pruner: checkpoint ${quoted} set by you: the agent may rewind across your later prompts back to it (/pruner checkpoint-revoke ${names.length === 1 ? names[0] : "<name>"})`;
    ctx.ui.setWidget(CHECKPOINT_WIDGET, line === undefined ? undefined : [line]);
  } catch {
    // The line is a reminder; failing to draw it changes nothing the agent does.
  }
}

// ---- registration ----

export function registerRewindTools(pi: ExtensionAPI, host: SelfControlHost): void {
  pi.registerTool({
    name: REWIND_TOOL,
    label: "Context rewind",
    description:
      "Hide recent context you produced by mistake (a bloated result, a wrong turn) behind a note you get as your newest message. " +
      "last_tool_call_group: your latest call(s) and results; last_turn: since the latest user message; checkpoint: after a checkpoint the person set. " +
      "Files and commands stay done.",
    promptSnippet: "Rewind your own recent context (a bloated result, a wrong turn) and leave yourself a note",
    parameters: Type.Object({
      granularity: Type.Union([Type.Literal("last_tool_call_group"), Type.Literal("last_turn"), Type.Literal("checkpoint")], {}),
      note: NoteSchema,
      checkpoint: Type.Optional(Type.String({ description: "The checkpoint's name" })),
    }),
    executionMode: "sequential",
    prepareArguments: (args: unknown) => parseObjectArguments<RewindParams>(args, ["note"]) as never,
    async execute(toolCallId, params, _signal, _onUpdate, ctx) {
      try {
        return rewind(pi, host, toolCallId, params as RewindParams, ctx);
      } catch (error) {
        return text(`pi-pruner: the rewind failed (${(error as Error).message}); nothing was hidden.`, { error: true });
      }
    },
  });

  pi.registerTool({
    name: CANCEL_TOOL,
    label: "Context cancel",
    description:
      "Undo your newest rewind or shrink of a message (target), or the one with markerId, from the next request on.",
    parameters: Type.Object({
      target: Type.Optional(TargetSchema),
      markerId: Type.Optional(Type.String({ description: "The id a rewind or shrink reported" })),
    }),
    executionMode: "sequential",
    prepareArguments: (args: unknown) => parseObjectArguments<CancelParams>(args, ["target"]) as never,
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      try {
        return cancel(pi, host, params as CancelParams, ctx);
      } catch (error) {
        return text(`pi-pruner: the cancel failed (${(error as Error).message}); nothing changed.`, { error: true });
      }
    },
  });

  pi.on("session_start", (_event, ctx) => refreshCheckpointLine(host, ctx));
  pi.on("session_tree", (_event, ctx) => refreshCheckpointLine(host, ctx));
}

export function rewindSubcommands(pi: ExtensionAPI, host: SelfControlHost): Record<string, Subcommand> {
  let known: string[] = [];
  const fail = (ctx: ExtensionContext, what: string, error: unknown) => ctx.ui.notify(`pi-pruner: ${what} failed: ${(error as Error).message}`, "error");
  return {
    checkpoint: {
      description: "<name>: let the agent rewind back to here, across your later prompts (no name: list them)",
      run(args, ctx) {
        try {
          const name = args.trim();
          const controls = host.controls(ctx);
          known = checkpointNames(controls);
          if (name === "") {
            ctx.ui.notify(known.length ? `pi-pruner: checkpoints set: ${known.map((n) => `"${n}"`).join(", ")}` : "pi-pruner: no checkpoint is set (/pruner checkpoint <name> sets one)", "info");
            return;
          }
          if (!host.config().selfControl.enabled) {
            ctx.ui.notify(SELF_CONTROL_OFF, "warning");
            return;
          }
          if (!CHECKPOINT_NAME.test(name)) {
            ctx.ui.notify(`pi-pruner: "${name}" is not a checkpoint name: lower-case letters, digits, - and _, at most 40`, "error");
            return;
          }
          const branch = host.branch(ctx);
          let target: string | undefined;
          for (let i = branch.length - 1; i >= 0 && !target; i--) {
            const entry = branch[i]!;
            // A system prompt is never in the context the agent sees: a checkpoint there could never be reached.
            if (isMessageEntry(entry) && entry.message.role !== "system") target = entry.id;
          }
          if (!target) {
            ctx.ui.notify("pi-pruner: nothing to set a checkpoint on yet: send a prompt first", "error");
            return;
          }
          // One name marks one place: setting it again moves it.
          for (const c of controls.checkpoints) if (c.name === name && c.targetEntryId !== target) pi.setLabel(c.targetEntryId, undefined);
          pi.setLabel(target, `${CHECKPOINT_PREFIX}${name}`);
          known = checkpointNames(host.controls(ctx));
          ctx.ui.notify(
            `pi-pruner: checkpoint "${name}" set. Until the agent uses it or you revoke it (/pruner checkpoint-revoke ${name}), the agent may rewind back to here, your later prompts included.`,
            "warning",
          );
          refreshCheckpointLine(host, ctx);
        } catch (error) {
          fail(ctx, "/pruner checkpoint", error);
        }
      },
    },
    "checkpoint-revoke": {
      description: "<name>: the agent may no longer rewind back to that checkpoint",
      completions: () => known,
      run(args, ctx) {
        try {
          const name = args.trim();
          if (name === "") {
            ctx.ui.notify("pi-pruner: which checkpoint? /pruner checkpoint-revoke <name> (/pruner checkpoint lists them)", "error");
            return;
          }
          const named = host.controls(ctx).checkpoints.filter((c) => c.name === name);
          if (named.length === 0) {
            ctx.ui.notify(`pi-pruner: no checkpoint named "${name}" is set`, "info");
            return;
          }
          for (const c of named) pi.setLabel(c.targetEntryId, undefined);
          known = checkpointNames(host.controls(ctx));
          ctx.ui.notify(`pi-pruner: checkpoint "${name}" revoked: the agent can no longer rewind back to it`, "info");
          refreshCheckpointLine(host, ctx);
        } catch (error) {
          fail(ctx, "/pruner checkpoint-revoke", error);
        }
      },
    },
  };
}
