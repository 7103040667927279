// What a provider accepts of `cache_control` markers, restated from its documentation and written
// apart from core's breakpoint code, to check what that code sends. Anthropic's prompt-caching
// page: at most four blocks with `cache_control` in a request, counted over tools, system and
// messages ("A maximum of 4 blocks with cache_control may be provided"); thinking and redacted
// thinking blocks cannot be marked directly; empty text blocks are refused. OpenRouter's Anthropic
// routes take the same markers on text parts of chat-completions messages. A mid-conversation
// system message belongs to Pi (effort levels, tool changes); nothing else marks inside one.

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** Whether Pi marks this api's requests with `cache_control`: Anthropic Messages, and chat completions it caches Anthropic-style. */
export function marksWithCacheControl(model: { api: string; provider: string; id: string; compat?: Record<string, unknown> }): boolean {
  if (model.api === "anthropic-messages") return true;
  if (model.api !== "openai-completions") return false;
  const format = model.compat?.cacheControlFormat ?? (model.provider === "openrouter" && model.id.startsWith("anthropic/") ? "anthropic" : undefined);
  return format === "anthropic";
}

/** Every `cache_control` in the body, wherever it is, with the path to the object holding it. */
export function markerPaths(value: unknown, path = "$"): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => markerPaths(item, `${path}[${i}]`));
  if (!isObject(value)) return [];
  return Object.entries(value).flatMap(([key, v]) => (key === "cache_control" ? [path] : markerPaths(v, `${path}.${key}`)));
}

/** The object at a path `markerPaths` gave. */
function at(root: unknown, path: string): unknown {
  let value = root;
  for (const [, key, index] of path.slice(1).matchAll(/\.([^.[]+)|\[(\d+)\]/g)) value = (value as Record<string, unknown>)?.[key ?? Number(index)];
  return value;
}

/** The body with every marker gone and each string content read as its one text block: what the provider caches. */
function withoutMarkers(value: unknown, key = ""): unknown {
  if (key === "content" && typeof value === "string") return [{ type: "text", text: value }];
  if (Array.isArray(value)) return value.map((item) => withoutMarkers(item));
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => k !== "cache_control").map(([k, v]) => [k, withoutMarkers(v, k)]));
}

const messagePath = /^\$\.messages\[(\d+)\]/;
const isSystem = (message: Json): boolean => message.role === "system" || message.role === "developer";

/**
 * What is wrong with `sent`, the payload after the pruner, given `built`, the one Pi built, for a
 * request of `model`: an empty list when the provider accepts it and the pruner kept to its part.
 */
export function cacheRuleViolations(model: Parameters<typeof marksWithCacheControl>[0], built: unknown, sent: unknown): string[] {
  if (!marksWithCacheControl(model)) return JSON.stringify(sent) === JSON.stringify(built) ? [] : [`${model.api}: the payload was changed, on an api that does not cache at markers`];
  const problems: string[] = [];
  const markers = markerPaths(sent);
  if (markers.length > 4) problems.push(`${markers.length} blocks with cache_control (at most 4): ${markers.join(", ")}`);
  const before = new Set(markerPaths(built));
  const messages = (sent as Json).messages as Json[];
  for (const path of markers) {
    const block = at(sent, path) as Json;
    if (block.type === "thinking" || block.type === "redacted_thinking") problems.push(`a marker on a ${block.type} block at ${path}`);
    if (block.type === "text" && (typeof block.text !== "string" || block.text.trim() === "")) problems.push(`a marker on an empty text block at ${path}`);
    if (!before.has(path) && block.role !== undefined) problems.push(`a marker added on a message itself (not a block) at ${path}`);
    const m = messagePath.exec(path);
    if (!before.has(path) && m && isSystem(messages[Number(m[1])]!)) problems.push(`a marker added inside a system message at ${path}`);
    if (!before.has(path) && path.replace(messagePath, "").split(".").length > 2) problems.push(`a marker added on a nested block at ${path}`);
  }
  // Pi's breakpoints on the conversation are where this request writes the cache: none may go.
  for (const path of before) {
    const m = messagePath.exec(path);
    if (m && !isSystem(((built as Json).messages as Json[])[Number(m[1])]!) && !markers.includes(path)) problems.push(`Pi's marker at ${path} was removed`);
  }
  if (JSON.stringify(withoutMarkers(sent)) !== JSON.stringify(withoutMarkers(built))) problems.push("the payload changed beyond its markers");
  return problems;
}

/** Whether a block of a conversation message can take a marker, by the provider's rules above. */
function markable(api: string, block: unknown): boolean {
  if (!isObject(block)) return false;
  if (block.type === "text") return typeof block.text === "string" && block.text.trim() !== "";
  return api === "anthropic-messages" && ["image", "document", "tool_use", "tool_result", "search_result"].includes(String(block.type));
}

/**
 * The path of the block that should hold the frontier marker: the nearest block before
 * `result` (a message and block index in `built`) that can take one, passing over system messages.
 * Undefined when there is none.
 */
export function expectedFrontier(api: string, built: unknown, result: { message: number; block: number }): string | undefined {
  const messages = (built as Json).messages as Json[];
  const blocksOf = (m: Json): unknown[] => (typeof m.content === "string" ? [{ type: "text", text: m.content }] : Array.isArray(m.content) ? m.content : []);
  for (let m = result.message; m >= 0; m--) {
    const message = messages[m]!;
    if (isSystem(message)) continue;
    const blocks = blocksOf(message);
    for (let b = (m === result.message ? result.block : blocks.length) - 1; b >= 0; b--) if (markable(api, blocks[b])) return `$.messages[${m}].content[${b}]`;
  }
  return undefined;
}
