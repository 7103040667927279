// The context exactly as the model sees it at a leaf: Pi's context for the branch, then the same
// render the live pruner applies, the branch's self-control markers included. At a leaf this is
// the next request (what the model is sent when the session goes on from there, with today's
// settings); request-views.ts renders the requests already sent. Used by `pi-pruner view` and the
// editor's model view.
import type { AgentMessage } from "../shapes/messages.ts";
import { contentText } from "../shapes/messages.ts";
import type { SessionData } from "../session/session-reader.ts";
import { getBranch } from "../session/session-reader.ts";
import { BodyCache } from "../session/lazy-bodies.ts";
import { configForWriter, recordedContextWindow } from "./recorded-settings.ts";
import { detectSessionWriter } from "./session-writer.ts";
import { buildPiContext, type ContextMessage } from "../session/pi-context.ts";
import { rebuildIndex, type PruneIndex } from "../prune/prune-index.ts";
import type { AnyEntry } from "../shapes/entries.ts";
import { renderModelView, type RenderConfig, type RenderMemo, type RenderStats } from "../render/render.ts";
import { compactionResend, newestCompactionAt, PROTECTED_RESEND, PROTECTED_RESEND_LABEL, resendBudget, type CompactionResend } from "../render/compaction-protect.ts";
import { shownValue } from "../shapes/deep-json.ts";
import { estimateTokens, formatNumber, formatSaving, messageChars } from "../shapes/size.ts";
import { PRUNE_SUMMARY } from "../shapes/entries.ts";
import { readControls } from "../control/read-controls.ts";
import { EMPTY_CONTROLS, type ControlState } from "../control/control-entries.ts";
import { describeControls, rewoundSpanLine, type ControlsView } from "./control-view.ts";

export interface ModelView {
  leafId: string | null;
  /** What Pi would send without the pruner (its own summaries left out). */
  rawMessages: AgentMessage[];
  /** What the model is sent. */
  messages: AgentMessage[];
  rawChars: number;
  modelChars: number;
  /** The render threw and, as the live pruner does, the messages are shown unchanged. */
  renderError?: string;
  /** What the render's steps did (absent when it threw): results stubbed, chains compressed or not found, … */
  stats?: RenderStats;
  /** The agent's rewinds, shrinks and checkpoints on the branch, and where they apply in `messages`. */
  controls: ControlsView;
}

export function buildModelView(data: SessionData, options: { leafId?: string; config: RenderConfig }): ModelView {
  if (data.elided?.size) throw new Error("this session was read with lazyBodies: its model view needs buildModelViewWithBodies");
  const branch = getBranch(data, options.leafId);
  return { leafId: branch.leafId, ...renderBranch(branch.entries, rebuildIndex(branch.entries).index, configForWriter(detectSessionWriter(branch.entries), options.config)) };
}

/** The model view of a session read from `path`, with any bodies left on disk read back first (through `cache`, when given). */
export async function buildModelViewWithBodies(path: string, data: SessionData, options: { leafId?: string; config: RenderConfig; cache?: BodyCache }): Promise<ModelView> {
  const branch = getBranch(data, options.leafId);
  const entries = await (options.cache ?? new BodyCache()).withBodies(path, data.elided, branch.entries);
  return { leafId: branch.leafId, ...renderBranch(entries, rebuildIndex(entries).index, configForWriter(detectSessionWriter(entries), options.config)) };
}

/**
 * The header line of a text view of a request with its two sizes: what Pi alone would send and
 * what is sent, in characters and in estimated tokens (characters / 4).
 */
export function sizesLine(view: Pick<ModelView, "rawChars" | "modelChars">): string {
  const saving = formatSaving(view.rawChars, view.modelChars);
  return (
    `# Characters raw ${formatNumber(view.rawChars)} → sent ${formatNumber(view.modelChars)}${saving ? ` (${saving})` : ""}; ` +
    `tokens ≈ ${formatNumber(estimateTokens(view.rawChars))} → ${formatNumber(estimateTokens(view.modelChars))} (estimated as characters / 4); the system prompt is not included\n`
  );
}

/** What a leaf's model view is, in a person's words (its header says so). */
export const NEXT_REQUEST_TITLE = "the next request: what the model is sent when the session goes on from this leaf, with today's settings (not sent yet)";

/**
 * Pi's context for a branch and what the model is sent of it, for callers that already hold the
 * branch's index. With `memo`, the render remembers this request for the next one (see
 * renderModelView); without it nothing is remembered, which is what a render made once wants.
 */
export function renderBranch(branch: readonly AnyEntry[], index: PruneIndex, config: RenderConfig, memo?: RenderMemo, markersInert?: string): Omit<ModelView, "leafId"> {
  // The next request is bounded by the window the session last recorded (none: not bounded).
  const budgetTokens = resendBudget(config, recordedContextWindow(branch));
  const resend = () => compactionResend(branch, newestCompactionAt(branch), config, { budgetTokens });
  return renderContext(buildPiContext(branch), index, config, () => readControls(branch), { memo }, resend, markersInert);
}

/**
 * Message sizes carried across the requests of one pass over a branch: each message is measured
 * once, and a list that begins with the previous list's messages (the same objects: the requests
 * of a branch share their history) is summed on from where the two differ. It keeps the lists it
 * was given, which views hand out and nobody changes.
 */
export class MessageSizes {
  private readonly sizes = new WeakMap<AgentMessage, number>();
  private readonly last = new Map<string, { list: readonly AgentMessage[]; sums: number[] }>();

  /** The summed sizes of `list`, the list last summed under `slot` being the one it most likely begins with. */
  total(slot: string, list: readonly AgentMessage[]): number {
    const prev = this.last.get(slot);
    let i = 0;
    const sums = prev ? prev.sums : [];
    if (prev) {
      const shared = Math.min(prev.list.length, list.length);
      while (i < shared && prev.list[i] === list[i]) i++;
      sums.length = i;
    }
    let total = i > 0 ? sums[i - 1]! : 0;
    for (; i < list.length; i++) {
      const m = list[i]!;
      let n = this.sizes.get(m);
      if (n === undefined) {
        n = messageChars(m);
        this.sizes.set(m, n);
      }
      total += n;
      sums.push(total);
    }
    this.last.set(slot, { list, sums });
    return total;
  }
}

/**
 * What the model is sent of Pi's context `piContext`, with `index`, `config` and the markers
 * `controls()` reads. What a pass over the requests of one branch carries from one call to the
 * next: `sizes`, the sizes of the messages they share (without it each call measures afresh), and
 * `memo`, the render of the previous request (without it each call renders the whole context).
 * `resend()` gives what Pi's compaction removed of protected output (asked only with the pruner on).
 */
export function renderContext(
  piContext: readonly ContextMessage[],
  index: PruneIndex,
  config: RenderConfig,
  controls: () => ControlState,
  carried: { sizes?: MessageSizes; memo?: RenderMemo } = {},
  resend?: () => CompactionResend | undefined,
  markersInert?: string,
): Omit<ModelView, "leafId"> {
  const { sizes, memo } = carried;
  const context = piContext.map((c) => c.message);
  // As live: a render that throws (on a message no Pi would write) sends the messages unchanged.
  let messages: AgentMessage[];
  let renderError: string | undefined;
  let markers = EMPTY_CONTROLS;
  let stats: RenderStats | undefined;
  try {
    markers = controls();
    // Markers that did nothing when sent are listed, not applied.
    const rendered = renderModelView(context, index, config, markersInert === undefined ? markers : EMPTY_CONTROLS, memo, config.enabled ? resend?.() : undefined);
    messages = rendered.messages;
    stats = rendered.stats;
  } catch (error) {
    messages = context;
    renderError = error instanceof Error ? error.message : "the render failed";
  }
  const rawMessages: AgentMessage[] = [];
  let rawChars = 0;
  let modelChars: number;
  if (sizes) {
    // The render hands most messages back unchanged (the same objects): each is measured once.
    for (const m of context) if (!(m.role === "custom" && m.customType === PRUNE_SUMMARY)) rawMessages.push(m);
    rawChars = sizes.total("raw", rawMessages);
    modelChars = sizes.total("sent", messages);
  } else {
    // Measured once each without a map: the context, then what the render made or kept of it (the
    // whole context again only when the render changed nothing, and then its sizes are known).
    let summaryChars = 0;
    for (const m of context) {
      if (m.role === "custom" && m.customType === PRUNE_SUMMARY) {
        if (messages === context) summaryChars += messageChars(m);
        continue;
      }
      rawMessages.push(m);
      rawChars += messageChars(m);
    }
    if (messages === context) modelChars = rawChars + summaryChars;
    else {
      modelChars = 0;
      for (const m of messages) modelChars += messageChars(m);
    }
  }
  const view: Omit<ModelView, "leafId"> = { rawMessages, messages, rawChars, modelChars, controls: describeControls(piContext, markers, config, messages, renderError === undefined, markersInert) };
  if (renderError !== undefined) view.renderError = renderError;
  if (stats) view.stats = stats;
  return view;
}

function roleLabel(message: AgentMessage): string {
  switch (message.role) {
    case "toolResult":
      return `tool result · ${str(message.toolName)} · ${str(message.toolCallId)}${message.isError === true ? " · error" : ""}`;
    case "custom":
      return `custom (sent as user) · ${message.customType === PROTECTED_RESEND ? PROTECTED_RESEND_LABEL : str(message.customType)}`;
    case "bashExecution":
      // Pi keeps `!!` output in the session and never sends it.
      return message.excludeFromContext ? "user shell command · not sent (!!)" : "user shell command (sent as user)";
    default:
      return str(message.role);
  }
}

function bodyOf(message: AgentMessage): string {
  switch (message.role) {
    case "assistant": {
      // Session files are input: a block may be null or of any shape.
      const parts: string[] = [];
      for (const block of Array.isArray(message.content) ? message.content : []) {
        if (!block || typeof block !== "object") continue;
        if (block.type === "text") parts.push(str(block.text));
        else if (block.type === "thinking") parts.push(`<thinking>\n${str(block.thinking)}\n</thinking>`);
        else if (block.type === "toolCall") parts.push(`→ ${str(block.name)} ${argumentsText(block.arguments)}  [${str(block.id)}]`);
      }
      return parts.join("\n");
    }
    case "bashExecution":
      return `$ ${str(message.command)}\n${str(message.output)}`;
    case "branchSummary":
    case "compactionSummary":
      return str(message.summary);
    default:
      return contentText(message.content);
  }
}

/** Session files are input: a field shown as text may hold any JSON value (even one String() throws on). */
function str(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return "";
}

/** JSON of a call's arguments, cut where they nest deeper than a person reads. */
function argumentsText(args: unknown): string {
  return JSON.stringify(shownValue(args)) ?? "";
}

/** Messages as plain readable text, one section per message. Nothing in it is interpreted. */
export function messagesAsText(messages: readonly AgentMessage[]): string {
  return messages.map((m, i) => section(m, i)).join("\n\n") + "\n";
}

function section(message: AgentMessage, index: number, shrinkId?: string): string {
  return `── ${index + 1}. ${roleLabel(message)}${shrinkId !== undefined ? ` · shrunk by ${shrinkId}` : ""} ──\n${bodyOf(message)}`;
}

/**
 * A model view as plain text: messagesAsText of what the model is sent, with a line where each
 * rewound span was (its size and the rewind's note) and each shrunk message's header naming its
 * shrink. Without markers that apply, exactly messagesAsText.
 */
export function modelViewText(view: Pick<ModelView, "messages" | "controls">): string {
  const { rewoundSpans, shrunkMessages, rewinds } = view.controls;
  if (rewoundSpans.length === 0 && shrunkMessages.length === 0) return messagesAsText(view.messages);
  const rewindById = new Map(rewinds.map((r) => [r.markerId, r]));
  const shrinkAt = new Map(shrunkMessages.map((s) => [s.at, s.markerId]));
  const parts: string[] = [];
  let next = 0;
  const spansUpTo = (after: number) => {
    while (next < rewoundSpans.length && rewoundSpans[next]!.after <= after) {
      const span = rewoundSpans[next++]!;
      parts.push(rewoundSpanLine(span, rewindById.get(span.markerId)));
    }
  };
  spansUpTo(-1);
  view.messages.forEach((m, i) => {
    parts.push(section(m, i, shrinkAt.get(i)));
    spansUpTo(i);
  });
  spansUpTo(Number.POSITIVE_INFINITY);
  return parts.join("\n\n") + "\n";
}
