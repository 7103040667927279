// The pruner's own cache breakpoint on providers that cache at explicit `cache_control` markers
// (Anthropic's Messages api, and Anthropic-style routes of the chat-completions api). Pi marks the
// last tool, the system prompt and the end of the history; Anthropic allows four. A flush changes
// only what follows the frontier (the end of the history a flush keeps: the block before the
// oldest pending result), so a breakpoint there is an entry the request after a flush surely
// reads, however far back it lies; without it the provider looks only about 20 blocks back from
// each breakpoint and may write the whole prefix again.
import { createHash } from "node:crypto";
import { isRecord } from "../shapes/json.ts";
import { marksCompletions, type ModelInfo } from "./price-rules.ts";
import { jsonText } from "../shapes/deep-json.ts";

/** Where a block sits in a payload's `messages`: the message, and the block in its content (a string content is block 0). */
interface BlockPosition {
  message: number;
  block: number;
}

/** What one request leaves the next: the breakpoint that closed the history a flush keeps, and the prefix it closed. */
export interface BreakpointMemory {
  frontier: BlockPosition;
  /** A hash of the cached prefix through that block, the markers left out. */
  prefixHash: string;
}

export interface BreakpointPlacement {
  /** The payload to send: the input itself when nothing is added. */
  payload: unknown;
  /** What the next request compares against; undefined when this one marked no frontier. */
  memory: BreakpointMemory | undefined;
}

/**
 * The wire formats whose `cache_control` markers this places: an Anthropic Messages body, and a
 * chat-completions body that Pi marks Anthropic-style. Every other request is left as Pi built it.
 */
export type MarkerWire = "anthropic-messages" | "chat-completions";

/** Anthropic rejects a request with more breakpoints than this, wherever they stand. */
export const MAX_BREAKPOINTS = 4;

type Json = Record<string, unknown>;

/** One block that carries a marker, by where it is. */
interface Marked {
  /** A tool, a block of the system prompt (Anthropic's `system`, or the leading system messages of chat), or any other. */
  kind: "tool" | "system" | "message";
  /** The tool's or the system block's index. */
  index: number;
  /** Where it is in `messages`, for a block there. */
  position?: BlockPosition;
}

const hasMarker = (value: unknown): boolean => isRecord(value) && value.cache_control !== undefined;

/** The provider's spelling of a tool-call id: Pi's Anthropic provider replaces characters it does not allow. */
const providerCallId = (id: string): string => id.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);

/**
 * The wire of Pi's requests for `model` when Pi marks them with `cache_control`: its
 * `anthropic-messages` api, and its `openai-completions` api for models it caches Anthropic-style.
 * Undefined for every other api (the OpenAI Responses apis, Bedrock's cache points, Google, a
 * virtual model that routes elsewhere, no model): those requests are not touched.
 */
export function markerWireOf(model: ModelInfo | undefined): MarkerWire | undefined {
  if (model?.api === "anthropic-messages") return "anthropic-messages";
  if (model?.api === "openai-completions" && marksCompletions(model)) return "chat-completions";
  return undefined;
}

/** The blocks of a message's content; a string is one text block. */
function contentBlocks(content: unknown): unknown[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content : [];
}

/** A system message inside `messages`: chat's system prompt and updates, Anthropic's mid-conversation ones (effort, tool changes). */
const isSystemMessage = (message: Json): boolean => message.role === "system" || message.role === "developer";

/** How many system messages open the payload: in chat, the system prompt. Anthropic keeps its prompt in `system`. */
function leadingSystemMessages(wire: MarkerWire, messages: readonly Json[]): number {
  if (wire === "anthropic-messages") return 0;
  let count = 0;
  while (count < messages.length && isSystemMessage(messages[count]!)) count++;
  return count;
}

/**
 * Every marker the provider counts, in cache order: the tools, Anthropic's system blocks, then each
 * message's blocks (system messages included), and the blocks nested in a tool result. A marker on
 * anything else (a message itself) is counted too, as one that cannot be moved.
 */
function markedBlocks(wire: MarkerWire, payload: Json): Marked[] {
  const marked: Marked[] = [];
  if (Array.isArray(payload.tools)) payload.tools.forEach((tool, index) => hasMarker(tool) && marked.push({ kind: "tool", index }));
  if (wire === "anthropic-messages" && Array.isArray(payload.system)) payload.system.forEach((block, index) => hasMarker(block) && marked.push({ kind: "system", index }));
  const messages = payload.messages as Json[];
  const leading = leadingSystemMessages(wire, messages);
  messages.forEach((message, m) => {
    if (hasMarker(message)) marked.push({ kind: "message", index: -1 });
    if (!Array.isArray(message.content)) return;
    message.content.forEach((block, b) => {
      if (hasMarker(block)) marked.push({ kind: m < leading ? "system" : "message", index: m, position: { message: m, block: b } });
      if (isRecord(block) && Array.isArray(block.content)) for (const nested of block.content) if (hasMarker(nested)) marked.push({ kind: "message", index: -1 });
    });
  });
  return marked;
}

/**
 * Whether a block can carry a marker: Anthropic refuses one on thinking, redacted thinking and
 * empty text; chat-completions routes take it on text parts only.
 */
function canMark(wire: MarkerWire, block: unknown): boolean {
  if (!isRecord(block)) return false;
  if (block.type === "text") return typeof block.text === "string" && block.text.trim().length > 0;
  return wire === "anthropic-messages" && ["image", "document", "tool_use", "tool_result", "search_result"].includes(String(block.type));
}

/** The tool results of the payload in order: their provider ids and where they sit. */
function toolResults(wire: MarkerWire, messages: readonly Json[]): Array<{ id: string; position: BlockPosition }> {
  const results: Array<{ id: string; position: BlockPosition }> = [];
  messages.forEach((message, m) => {
    if (wire === "chat-completions") {
      if (message.role === "tool" && typeof message.tool_call_id === "string") results.push({ id: message.tool_call_id, position: { message: m, block: 0 } });
      return;
    }
    if (message.role !== "user" || !Array.isArray(message.content)) return;
    message.content.forEach((block, b) => {
      if (isRecord(block) && block.type === "tool_result" && typeof block.tool_use_id === "string") results.push({ id: block.tool_use_id, position: { message: m, block: b } });
    });
  });
  return results;
}

/**
 * The result of the oldest pending call. Pending results are the newest ones, in the queue's order,
 * so the pending ids are matched from the end of the payload backwards; providers repeat ids across
 * answers, and matching the whole sequence keeps an older result with a reused id from being taken.
 */
function oldestPendingResult(wire: MarkerWire, messages: readonly Json[], pendingCallIds: readonly string[]): BlockPosition | undefined {
  const results = toolResults(wire, messages);
  let next = pendingCallIds.length - 1;
  let found: BlockPosition | undefined;
  for (let i = results.length - 1; i >= 0 && next >= 0; i--) {
    const wanted = pendingCallIds[next]!;
    if (results[i]!.id === wanted || results[i]!.id === providerCallId(wanted)) {
      found = results[i]!.position;
      next--;
    }
  }
  return next < 0 ? found : undefined;
}

/** Whether this may put a marker at `position`: a markable block of a conversation message (never of a system message). */
function isMarkable(wire: MarkerWire, messages: readonly Json[], position: BlockPosition): boolean {
  const message = messages[position.message];
  return message !== undefined && !isSystemMessage(message) && canMark(wire, contentBlocks(message.content)[position.block]);
}

/** The nearest block before `position` this may mark: system messages (effort, tool changes, chat's prompt) are passed over. */
function markableBefore(wire: MarkerWire, messages: readonly Json[], position: BlockPosition): BlockPosition | undefined {
  let { message: m, block: b } = position;
  for (;;) {
    b--;
    while (b < 0) {
      m--;
      if (m < 0) return undefined;
      b = isSystemMessage(messages[m]!) ? -1 : contentBlocks(messages[m]!.content).length - 1;
    }
    if (isMarkable(wire, messages, { message: m, block: b })) return { message: m, block: b };
  }
}

/** The last marked block of the conversation outside system messages: Pi's breakpoint at its end. */
function lastMarkedMessageBlock(messages: readonly Json[], marked: readonly Marked[]): BlockPosition | undefined {
  for (let i = marked.length - 1; i >= 0; i--) {
    const position = marked[i]!.position;
    if (marked[i]!.kind === "message" && position && !isSystemMessage(messages[position.message]!)) return position;
  }
  return undefined;
}

/**
 * A hash of what the provider caches through `position`: the model, the tools, the system prompt
 * and the messages up to that block. Markers are left out (they do not change what is cached), and
 * a string content reads as its one text block (Pi turns the last message's string into a marked
 * block, and the same message is a string again a request later).
 */
function prefixHash(payload: Json, position: BlockPosition): string | undefined {
  const messages = payload.messages as Json[];
  const message = messages[position.message];
  if (!message) return undefined;
  const blocks = contentBlocks(message.content);
  if (position.block >= blocks.length) return undefined;
  const prefix = {
    model: payload.model,
    tools: payload.tools,
    system: payload.system,
    messages: messages.slice(0, position.message),
    last: { role: message.role, content: blocks.slice(0, position.block + 1) },
  };
  const text = jsonText(prefix, (key, value: unknown) => (key === "cache_control" ? undefined : key === "content" && typeof value === "string" ? [{ type: "text", text: value }] : value));
  return createHash("sha256").update(text ?? "").digest("hex").slice(0, 32);
}

const samePosition = (a: BlockPosition, b: BlockPosition): boolean => a.message === b.message && a.block === b.block;

/** The payload with a marker added on each of `positions` (copies along the way; the input is not touched). */
function withMarkers(payload: Json, positions: readonly BlockPosition[], marker: unknown): Json {
  const messages = [...(payload.messages as Json[])];
  for (const { message: m, block: b } of positions) {
    const message = messages[m]!;
    const content = typeof message.content === "string" ? contentBlocks(message.content) : [...(message.content as unknown[])];
    content[b] = { ...(content[b] as Json), cache_control: marker };
    messages[m] = { ...message, content };
  }
  return { ...payload, messages };
}

/** The payload without the markers of `drop` (tools and system-prompt blocks). */
function withoutMarkers(payload: Json, drop: readonly Marked[]): Json {
  const strip = (value: unknown): unknown => {
    if (!isRecord(value)) return value;
    const { cache_control: _removed, ...rest } = value;
    return rest;
  };
  let result: Json = { ...payload };
  for (const d of drop) {
    if (d.kind === "tool") result = { ...result, tools: (result.tools as unknown[]).map((t, i) => (i === d.index ? strip(t) : t)) };
    else if (d.position) {
      const { message: m, block: b } = d.position;
      const messages = [...(result.messages as Json[])];
      messages[m] = { ...messages[m]!, content: (messages[m]!.content as unknown[]).map((block, i) => (i === b ? strip(block) : block)) };
      result = { ...result, messages };
    } else result = { ...result, system: (result.system as unknown[]).map((s, i) => (i === d.index ? strip(s) : s)) };
  }
  return result;
}

/**
 * Places the frontier breakpoint on a provider payload of `wire` (see `markerWireOf`), and, on the
 * first request after the frontier moved, keeps one at the previous request's frontier while its
 * prefix is unchanged (the entry this request can surely read is the one the previous request wrote there).
 *
 * - The frontier is the nearest markable block before the result of the oldest call in
 *   `pendingCallIds` (oldest first, as the queue holds them), passing over system messages; with
 *   nothing pending it is the end of the history, which Pi marks itself, so nothing is added for it.
 * - Nothing is added where the wire is not one that caches at markers, nor where Pi placed no
 *   marker at all (caching is off). A payload that does not have the wire's shape is returned as it is.
 * - Never more than four markers, counted wherever the provider reads them: when one is needed,
 *   the last tool's marker goes first (a system-prompt marker caches the tools with it, as they
 *   precede it), then all but the last system-prompt block's; if still too many, the previous
 *   frontier's is not added, then the new one's.
 */
export function placeFrontierBreakpoint(payload: unknown, wire: MarkerWire | undefined, pendingCallIds: readonly string[], previous: BreakpointMemory | undefined): BreakpointPlacement {
  if (!wire) return { payload, memory: undefined };
  if (!isRecord(payload) || !Array.isArray(payload.messages) || !payload.messages.every(isRecord)) return { payload, memory: previous };
  const marked = markedBlocks(wire, payload);
  if (marked.length === 0) return { payload, memory: undefined };
  const messages = payload.messages as Json[];

  let frontier: BlockPosition | undefined;
  if (pendingCallIds.length === 0) frontier = lastMarkedMessageBlock(messages, marked);
  else {
    const result = oldestPendingResult(wire, messages, pendingCallIds);
    // Pending results this payload does not hold: not a request of this history; leave it and the memory alone.
    if (!result) return { payload, memory: previous };
    frontier = markableBefore(wire, messages, result);
  }

  const isMarked = (position: BlockPosition) => marked.some((m) => m.position && samePosition(m.position, position));
  const wanted: BlockPosition[] = [];
  if (frontier && !isMarked(frontier)) wanted.push(frontier);
  const kept = previous?.frontier;
  if (kept && (!frontier || !samePosition(kept, frontier)) && !isMarked(kept) && isMarkable(wire, messages, kept) && prefixHash(payload, kept) === previous.prefixHash) {
    wanted.push(kept);
  }

  const memory = frontier ? { frontier, prefixHash: prefixHash(payload, frontier)! } : undefined;
  if (wanted.length === 0) return { payload, memory };

  // Room for the new markers: the last tool's goes first, then every system-prompt block's but the last.
  const drop: Marked[] = [];
  const systems = marked.filter((m) => m.kind === "system");
  const lastTool = marked.filter((m) => m.kind === "tool").at(-1);
  if (marked.length + wanted.length > MAX_BREAKPOINTS && lastTool && systems.length > 0) drop.push(lastTool);
  for (const s of systems.slice(0, -1)) if (marked.length - drop.length + wanted.length > MAX_BREAKPOINTS) drop.push(s);
  const room = Math.max(0, MAX_BREAKPOINTS - (marked.length - drop.length));
  const placed = wanted.slice(0, room);
  // The memory names a block this request marks: the frontier, unless there was no room for it.
  const frontierMarked = frontier !== undefined && (isMarked(frontier) || placed.some((p) => samePosition(p, frontier)));
  const next = frontierMarked ? memory : previous;
  if (placed.length === 0) return { payload, memory: next };
  const sent = withMarkers(withoutMarkers(payload, drop), placed, markerOf(payload, wire));
  return { payload: sent, memory: next };
}

/** The marker Pi used (its type and lifetime), copied onto the blocks this adds: the one on the last tool, system block or message block. */
function markerOf(payload: Json, wire: MarkerWire): unknown {
  const found: unknown[] = [];
  const collect = (list: unknown) => Array.isArray(list) && list.forEach((item) => hasMarker(item) && found.push((item as Json).cache_control));
  collect(payload.tools);
  if (wire === "anthropic-messages") collect(payload.system);
  for (const message of payload.messages as Json[]) collect(message.content);
  return found.at(-1) ?? { type: "ephemeral" };
}
