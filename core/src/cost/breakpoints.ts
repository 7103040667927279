// The pruner's own cache breakpoint on providers that cache at explicit `cache_control` markers
// (Anthropic's Messages api, and Anthropic-style routes of the chat-completions api). Pi marks the
// last tool, the system prompt and the end of the history; Anthropic allows four. A flush changes
// only what follows the frontier (the end of the history a flush keeps: the block before the
// oldest pending result), so a breakpoint there is an entry the request after a flush surely
// reads, however far back it lies; without it the provider looks only about 20 blocks back from
// each breakpoint and may write the whole prefix again.
import { createHash } from "node:crypto";
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

/** Anthropic rejects a request with more breakpoints than this. */
export const MAX_BREAKPOINTS = 4;

type Json = Record<string, unknown>;
type Shape = "anthropic" | "chat";

/** One block that carries a marker, by where it is. */
interface Marked {
  kind: "tool" | "system" | "message";
  /** The tool's index, the system block's index, or the message block's position. */
  index: number;
  position?: BlockPosition;
}

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const hasMarker = (value: unknown): boolean => isObject(value) && value.cache_control !== undefined;

/** The provider's spelling of a tool-call id: Pi's Anthropic provider replaces characters it does not allow. */
const providerCallId = (id: string): string => id.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);

/** The blocks of a message's content; a string is one text block. */
function contentBlocks(content: unknown): unknown[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content : [];
}

/**
 * The payload's wire shape: Anthropic Messages keeps the system prompt beside the messages and has
 * only user and assistant turns; chat completions has system, developer and tool messages and
 * assistant `tool_calls`. Anything else is not a payload this knows.
 */
function shapeOf(payload: unknown): Shape | undefined {
  if (!isObject(payload) || !Array.isArray(payload.messages) || !payload.messages.every(isObject)) return undefined;
  const messages = payload.messages as Json[];
  if (messages.some((m) => m.role === "system" || m.role === "developer" || m.role === "tool" || m.tool_calls !== undefined)) return "chat";
  return "anthropic";
}

function isSystemMessage(shape: Shape, message: Json): boolean {
  return shape === "chat" && (message.role === "system" || message.role === "developer");
}

/** Every marked block of the payload, in cache order (tools, system, messages). */
function markedBlocks(shape: Shape, payload: Json): Marked[] {
  const marked: Marked[] = [];
  if (Array.isArray(payload.tools)) payload.tools.forEach((tool, index) => hasMarker(tool) && marked.push({ kind: "tool", index }));
  if (shape === "anthropic" && Array.isArray(payload.system)) payload.system.forEach((block, index) => hasMarker(block) && marked.push({ kind: "system", index }));
  (payload.messages as Json[]).forEach((message, m) => {
    if (!Array.isArray(message.content)) return;
    message.content.forEach((block, b) => {
      if (hasMarker(block)) marked.push({ kind: isSystemMessage(shape, message) ? "system" : "message", index: b, position: { message: m, block: b } });
    });
  });
  return marked;
}

/** Whether a block can carry a marker: Anthropic refuses one on thinking and on empty text; chat-completions routes take it on text parts only. */
function canMark(shape: Shape, block: unknown): boolean {
  if (!isObject(block)) return false;
  if (block.type === "text") return typeof block.text === "string" && block.text.length > 0;
  return shape === "anthropic" && ["image", "document", "tool_use", "tool_result", "search_result"].includes(String(block.type));
}

/** The tool results of the payload in order: their provider ids and where they sit. */
function toolResults(shape: Shape, messages: readonly Json[]): Array<{ id: string; position: BlockPosition }> {
  const results: Array<{ id: string; position: BlockPosition }> = [];
  messages.forEach((message, m) => {
    if (shape === "chat") {
      if (message.role === "tool" && typeof message.tool_call_id === "string") results.push({ id: message.tool_call_id, position: { message: m, block: 0 } });
      return;
    }
    if (message.role !== "user" || !Array.isArray(message.content)) return;
    message.content.forEach((block, b) => {
      if (isObject(block) && block.type === "tool_result" && typeof block.tool_use_id === "string") results.push({ id: block.tool_use_id, position: { message: m, block: b } });
    });
  });
  return results;
}

/**
 * The result of the oldest pending call. Pending results are the newest ones, in the queue's order,
 * so the pending ids are matched from the end of the payload backwards; providers repeat ids across
 * answers, and matching the whole sequence keeps an older result with a reused id from being taken.
 */
function oldestPendingResult(shape: Shape, messages: readonly Json[], pendingCallIds: readonly string[]): BlockPosition | undefined {
  const results = toolResults(shape, messages);
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

/** The nearest block before `position` that can carry a marker, never inside the system prompt. */
function markableBefore(shape: Shape, messages: readonly Json[], position: BlockPosition): BlockPosition | undefined {
  let { message: m, block: b } = position;
  for (;;) {
    b--;
    while (b < 0) {
      m--;
      if (m < 0 || isSystemMessage(shape, messages[m]!)) return undefined;
      b = contentBlocks(messages[m]!.content).length - 1;
    }
    if (canMark(shape, contentBlocks(messages[m]!.content)[b])) return { message: m, block: b };
  }
}

/** The last marked block of the history: Pi's breakpoint at its end. */
function lastMarkedMessageBlock(marked: readonly Marked[]): BlockPosition | undefined {
  for (let i = marked.length - 1; i >= 0; i--) if (marked[i]!.kind === "message") return marked[i]!.position;
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

/** The payload without the markers of `drop` on tools and system blocks. */
function withoutMarkers(shape: Shape, payload: Json, drop: readonly Marked[]): Json {
  const strip = (value: unknown): unknown => {
    if (!isObject(value)) return value;
    const { cache_control: _removed, ...rest } = value;
    return rest;
  };
  let result: Json = { ...payload };
  for (const d of drop) {
    if (d.kind === "tool") result = { ...result, tools: (result.tools as unknown[]).map((t, i) => (i === d.index ? strip(t) : t)) };
    else if (d.kind === "system" && shape === "anthropic" && !d.position) result = { ...result, system: (result.system as unknown[]).map((s, i) => (i === d.index ? strip(s) : s)) };
    else if (d.position) {
      const { message: m, block: b } = d.position;
      const messages = [...(result.messages as Json[])];
      messages[m] = { ...messages[m]!, content: (messages[m]!.content as unknown[]).map((block, i) => (i === b ? strip(block) : block)) };
      result = { ...result, messages };
    }
  }
  return result;
}

/**
 * Places the frontier breakpoint on a provider payload, and, on the first request after the
 * frontier moved, keeps one at the previous request's frontier while its prefix is unchanged (the
 * entry this request can surely read is the one the previous request wrote there).
 *
 * - The frontier is the nearest markable block before the result of the oldest call in
 *   `pendingCallIds` (oldest first, as the queue holds them); with nothing pending it is the end of
 *   the history, which Pi marks itself, so nothing is added for it.
 * - Nothing is added where Pi placed no marker at all: caching is off, or the provider caches
 *   prefixes by itself (OpenAI-style). A payload of an unknown shape is returned as it is.
 * - Never more than four markers: when one is needed, the last tool's marker goes first (the
 *   system block's marker caches the tools with it, as they precede it), then all but the last
 *   system block's; if still too many, the previous frontier's is not added, then the new one's.
 */
export function placeFrontierBreakpoint(payload: unknown, pendingCallIds: readonly string[], previous: BreakpointMemory | undefined): BreakpointPlacement {
  const shape = shapeOf(payload);
  if (!shape || !isObject(payload)) return { payload, memory: previous };
  const marked = markedBlocks(shape, payload);
  if (marked.length === 0) return { payload, memory: undefined };
  const messages = payload.messages as Json[];

  let frontier: BlockPosition | undefined;
  if (pendingCallIds.length === 0) frontier = lastMarkedMessageBlock(marked);
  else {
    const result = oldestPendingResult(shape, messages, pendingCallIds);
    // Pending results this payload does not hold: not a request of this history; leave it and the memory alone.
    if (!result) return { payload, memory: previous };
    frontier = markableBefore(shape, messages, result);
  }

  const isMarked = (position: BlockPosition) => marked.some((m) => m.position && samePosition(m.position, position));
  const wanted: BlockPosition[] = [];
  if (frontier && !isMarked(frontier)) wanted.push(frontier);
  const kept = previous?.frontier;
  if (kept && (!frontier || !samePosition(kept, frontier)) && !isMarked(kept) && canMark(shape, contentBlocks(messages[kept.message]?.content)[kept.block]) && prefixHash(payload, kept) === previous.prefixHash) {
    wanted.push(kept);
  }

  const memory = frontier ? { frontier, prefixHash: prefixHash(payload, frontier)! } : undefined;
  if (wanted.length === 0) return { payload, memory };

  // Room for the new markers: the last tool's goes first, then every system block's but the last.
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
  const sent = withMarkers(withoutMarkers(shape, payload, drop), placed, messageMarker(payload, marked));
  return { payload: sent, memory: next };
}

/** The marker Pi used (its type and lifetime), copied onto the blocks this adds. */
function messageMarker(payload: Json, marked: readonly Marked[]): unknown {
  const last = marked.at(-1)!;
  if (last.position) return ((payload.messages as Json[])[last.position.message]!.content as Json[])[last.position.block]!.cache_control;
  const list = (last.kind === "tool" ? payload.tools : payload.system) as Json[];
  return list[last.index]!.cache_control;
}
