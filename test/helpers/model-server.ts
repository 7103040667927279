/**
 * A scripted model server for real-Pi end-to-end tests. It speaks the two wire formats Pi's
 * providers use, on the same script:
 *
 * - OpenAI chat completions. Pi's `openai-completions` api POSTs `/v1/chat/completions` with
 *   `stream: true` and `stream_options: {include_usage: true}`; it reads `chat.completion.chunk`
 *   server-sent events (`delta.content`, `delta.tool_calls[]`, `delta.reasoning_content` |
 *   `reasoning` | `reasoning_text`), requires a `finish_reason` before the stream ends, and takes
 *   usage from the chunk that carries `usage`.
 * - Anthropic Messages. Pi's `anthropic-messages` api POSTs `/v1/messages` (the SDK adds
 *   `?beta=true`) with `stream: true`; it reads named events (`event: <type>`): `message_start`
 *   with usage, `content_block_start` / `content_block_delta` / `content_block_stop` for
 *   `thinking` (`thinking_delta`, then `signature_delta`: Pi sends thinking back only with a
 *   signature), `text` (`text_delta`) and `tool_use` (`input_json_delta`), then `message_delta`
 *   with `stop_reason` and usage, and `message_stop`.
 *
 * Every request body is logged in order (the ground truth of what the model saw). An Anthropic
 * body is logged as sent (`anthropic`, `rawBody`) and also normalised to the chat-completions
 * shape (`body`: system blocks become a system message, `tool_result` blocks `tool` messages,
 * `tool_use` blocks `tool_calls`, thinking `reasoning_content`), so routes, `systemText`,
 * `lastUserText`, `toolNames` and the helpers read both alike. Replies come from a script:
 *
 *   const server = await startModelServer({ replies: [{ toolCalls: [...] }, { text: "done" }] });
 *   server.route((req) => req.systemText.includes("summar"), [{ text: "summary" }]);
 *   server.respond = (req) => (req.lastUserText === "hi" ? { text: "hello" } : undefined);
 *
 * Resolution order for each request: `respond(req)` (if it returns a reply), then the first route
 * whose predicate matches and that yields a reply (a route with an empty queue falls through),
 * then the main queue, then the default reply (`{text: "ok"}`, recorded in `warnings`).
 * Replies can be held: `const held = server.hold((req) => ...)` holds every model request that
 * matches from then on until `held.release()`; `held.arrived` resolves with the first once it is
 * logged (the client is then waiting on it). A held request's reply is chosen and sent only after
 * the release (or never, if the client or the server closes first); other requests are answered
 * meanwhile, and matching ones after the release are not held. A test thus keeps the other process
 * waiting on a request for as long as it likes, and knows when it is, without a sleep.
 * Faults: `{status}` (HTTP error), `{stallAfterChunks, stallMs?}`, `{empty: true}`,
 * `{malformed: true}`, `{drop: true}` (socket reset mid-stream), `{finishReason: "length"}`;
 * connection refused: `close()` the server, or `deadBaseUrl()`. Like Anthropic, an Anthropic body
 * with more than four `cache_control` markers gets a 400 without consulting the script.
 *
 * Anthropic usage is an estimate of Anthropic's prompt cache, kept per server: the body's blocks in
 * cache order (tools, system, then each message's content blocks), each sized by core's token
 * estimate of its JSON without `cache_control`; a breakpoint (`cache_control`) reads the longest
 * prefix this server cached that ends at a block boundary at most 20 blocks back from it (the
 * breakpoint counted), and caches the prefix through each breakpoint. `cache_read_input_tokens` is
 * that longest read, `cache_creation_input_tokens` the rest up to the last breakpoint,
 * `input_tokens` what follows it. No minimum cacheable length and no expiry.
 */
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { estimateTokens } from "../../core/src/shapes/size.ts";

// ---------------------------------------------------------------------------------------------
// Script types
// ---------------------------------------------------------------------------------------------

interface ToolCallSpec {
  /** Provider tool-call id; defaults to `call_<request>_<index>`. Providers repeat ids across responses, so tests may too. */
  id?: string;
  name: string;
  /** An object is JSON-encoded; a string is sent verbatim (use it to send broken JSON). */
  arguments: Record<string, unknown> | string;
}

type ReasoningField = "reasoning_content" | "reasoning" | "reasoning_text";

interface UsageSpec {
  prompt_tokens?: number;
  completion_tokens?: number;
  cached_tokens?: number;
  /** Anthropic answers: each replaces the server's estimate. */
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** A normal streamed answer: optional thinking, then text, then tool calls. */
interface ContentReply {
  text?: string;
  toolCalls?: ToolCallSpec[];
  /** Reasoning text, streamed in the `thinkingField` delta field (Pi reads it into a `thinking` block); an Anthropic answer streams it as a `thinking` block with a signature. */
  thinking?: string;
  thinkingField?: ReasoningField;
  /** The signature of an Anthropic thinking block; default: derived from the thinking text. */
  signature?: string;
  /** Default: `tool_calls` when toolCalls are present, else `stop` (an Anthropic answer says `tool_use`, `end_turn`, `max_tokens` for these three). */
  finishReason?: "stop" | "length" | "tool_calls" | "content_filter" | (string & {});
  /** Usage for the final chunk (sent only if the request asked via stream_options). `false` omits it (zeros on an Anthropic answer). Default: estimated. */
  usage?: UsageSpec | false;
  /** Characters per text / argument delta (default 16). */
  chunkChars?: number;
  /** Delay between chunks in ms (default 0). */
  chunkDelayMs?: number;
  /** Send this many chunks, then go silent for `stallMs` (forever if absent: until the client or the server closes). */
  stallAfterChunks?: number;
  stallMs?: number;
  /** Delay before the response headers are sent. */
  delayMs?: number;
}

/** An HTTP error instead of a stream. */
interface ErrorReply {
  status: number;
  /** JSON body; default `{error: {message, type, code}}`. A string is sent verbatim. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** A stream with no content at all, then a finish_reason. */
interface EmptyReply {
  empty: true;
  finishReason?: string;
}

/** A stream whose chunk after `afterChunks` content chunks is not JSON. */
interface MalformedReply {
  malformed: true;
  afterChunks?: number;
  text?: string;
}

/** The socket is destroyed after `afterChunks` chunks (a connection reset mid-stream). */
interface DropReply {
  drop: true;
  afterChunks?: number;
  text?: string;
}

export type Reply = ContentReply | ErrorReply | EmptyReply | MalformedReply | DropReply;

type ReplyFn = (req: ModelRequest) => Reply | undefined | Promise<Reply | undefined>;

// ---------------------------------------------------------------------------------------------
// Request view
// ---------------------------------------------------------------------------------------------

/** A parsed chat-completions message as Pi sends it. */
export interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool" | string;
  content?: string | Array<{ type: string; text?: string; [k: string]: unknown }> | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [k: string]: unknown;
}

/** One content block of an Anthropic Messages body. */
export interface AnthropicBlock {
  type: "text" | "thinking" | "redacted_thinking" | "tool_use" | "tool_result" | "image" | string;
  text?: string;
  thinking?: string;
  signature?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | AnthropicBlock[];
  cache_control?: { type: string; ttl?: string };
  [k: string]: unknown;
}

interface AnthropicMessage {
  role: "user" | "assistant" | string;
  content: string | AnthropicBlock[];
}

/** An Anthropic Messages request body, as Pi's `anthropic-messages` provider sends it. */
export interface AnthropicRequestBody {
  model?: string;
  system?: string | AnthropicBlock[];
  messages?: AnthropicMessage[];
  tools?: Array<{ name: string; description?: string; input_schema?: unknown; cache_control?: { type: string }; [k: string]: unknown }>;
  thinking?: { type: string; budget_tokens?: number; [k: string]: unknown };
  max_tokens?: number;
  stream?: boolean;
  [k: string]: unknown;
}

export interface ChatRequestBody {
  model?: string;
  messages?: ChatMessage[];
  tools?: Array<{ type: string; function?: { name: string; description?: string; parameters?: unknown } }>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [k: string]: unknown;
}

/** One logged request plus handy views for routing and assertions. */
export interface ModelRequest {
  /** 0-based position in the log. */
  index: number;
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** Which wire format the request used (undefined for an unknown path). */
  api?: "openai-completions" | "anthropic-messages";
  /** The parsed JSON body (`{}` if it was not JSON; see `rawBody`); an Anthropic body normalised to the chat-completions shape. */
  body: ChatRequestBody;
  /** An Anthropic body as sent (blocks, `cache_control` and all). */
  anthropic?: AnthropicRequestBody;
  rawBody: string;
  receivedAt: number;
  /** Text of the system / developer messages, joined by blank lines. */
  systemText: string;
  /** Text of the last `user` message ("" if none). */
  lastUserText: string;
  /** Tool names offered in `tools`. */
  toolNames: string[];
  /** Every message's text (content and tool_call arguments), joined: for `includes` checks. */
  allText: string;
  /** What the server answered, once decided. */
  reply?: Reply;
  /** The usage an Anthropic answer reported (the server's cache estimate unless the reply set it). */
  anthropicUsage?: AnthropicUsage;
  /** How the reply was chosen. */
  source?: "respond" | "route" | "queue" | "default" | "none";
}

export function messageText(m: ChatMessage): string {
  const c = m.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((p) => (typeof p.text === "string" ? p.text : "")).join("");
  return "";
}

/** System prompt text of a request body. */
function systemText(body: ChatRequestBody): string {
  return (body.messages ?? [])
    .filter((m) => m.role === "system" || m.role === "developer")
    .map(messageText)
    .join("\n\n");
}

/** Text of the last user message of a request body. */
function lastUserText(body: ChatRequestBody): string {
  const msgs = body.messages ?? [];
  for (let i = msgs.length - 1; i >= 0; i--) if (msgs[i].role === "user") return messageText(msgs[i]);
  return "";
}

/** Tool names offered by a request body. */
function toolNames(body: ChatRequestBody): string[] {
  return (body.tools ?? []).map((t) => t.function?.name ?? (t as { custom?: { name?: string } }).custom?.name ?? "").filter(Boolean);
}

/** All message text of a request body (content plus tool-call arguments). */
function allText(body: ChatRequestBody): string {
  const parts: string[] = [];
  for (const m of body.messages ?? []) {
    parts.push(messageText(m));
    for (const tc of m.tool_calls ?? []) parts.push(tc.function?.name ?? "", tc.function?.arguments ?? "");
  }
  return parts.join("\n");
}

/** The `tool` messages (results) of a request body. */
export function toolResults(body: ChatRequestBody): Array<{ toolCallId: string; text: string }> {
  return (body.messages ?? []).filter((m) => m.role === "tool").map((m) => ({ toolCallId: String(m.tool_call_id), text: messageText(m) }));
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages: the body normalised, and the cache estimate
// ---------------------------------------------------------------------------------------------

function blocksOf(content: string | AnthropicBlock[] | undefined): AnthropicBlock[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content : [];
}

function blocksText(blocks: AnthropicBlock[], separator = ""): string {
  return blocks.map((b) => (typeof b.text === "string" ? b.text : "")).join(separator);
}

/**
 * An Anthropic body in the chat-completions shape the routes and helpers read: the system blocks
 * as one system message, a user message's `tool_result` blocks as `tool` messages (in order) and
 * its other blocks as one user message after them, an assistant's text as content, its thinking
 * as `reasoning_content` and its `tool_use` blocks as `tool_calls`.
 */
function anthropicAsChat(body: AnthropicRequestBody): ChatRequestBody {
  const messages: ChatMessage[] = [];
  const system = blocksText(blocksOf(body.system), "\n\n");
  if (body.system !== undefined) messages.push({ role: "system", content: system });
  for (const m of body.messages ?? []) {
    const blocks = blocksOf(m.content);
    if (m.role === "assistant") {
      const calls = blocks.filter((b) => b.type === "tool_use");
      const thinking = blocks.filter((b) => b.type === "thinking").map((b) => b.thinking ?? "");
      messages.push({
        role: "assistant",
        content: blocksText(blocks.filter((b) => b.type === "text")),
        ...(thinking.length > 0 ? { reasoning_content: thinking.join("\n") } : {}),
        ...(calls.length > 0 ? { tool_calls: calls.map((b) => ({ id: String(b.id), type: "function", function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } })) } : {}),
      });
      continue;
    }
    const rest: AnthropicBlock[] = [];
    for (const b of blocks) {
      if (b.type === "tool_result") messages.push({ role: "tool", tool_call_id: String(b.tool_use_id), content: blocksText(blocksOf(b.content), "\n") });
      else rest.push(b);
    }
    if (rest.length > 0) messages.push({ role: m.role, content: rest.map((b) => (b.type === "text" ? { type: "text", text: b.text ?? "" } : { type: b.type })) });
  }
  return {
    model: body.model,
    messages,
    ...(body.tools ? { tools: body.tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.input_schema } })) } : {}),
    stream: body.stream,
  };
}

interface AnthropicUsage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/** How far back from a breakpoint Anthropic looks for a cached prefix, in blocks (the breakpoint counted). */
const LOOKBACK_BLOCKS = 20;

/** A body's blocks in the order Anthropic caches them: tools, system, then each message's content. */
function cacheOrderBlocks(body: AnthropicRequestBody): Array<{ cache_control?: unknown; [k: string]: unknown }> {
  return [...(body.tools ?? []), ...blocksOf(body.system), ...(body.messages ?? []).flatMap((m) => blocksOf(m.content))];
}

/** The server's estimate of Anthropic's prompt cache (see the header comment): prefixes cached at breakpoints, read within the lookback. */
class AnthropicCacheEstimate {
  private readonly cached = new Set<string>();

  usage(body: AnthropicRequestBody): AnthropicUsage {
    const blocks = cacheOrderBlocks(body);
    const hashes: string[] = [];
    const ends: number[] = [];
    let hash = "";
    let tokens = 0;
    for (const block of blocks) {
      const { cache_control: _marker, ...rest } = block;
      const text = JSON.stringify(rest);
      hash = createHash("sha256").update(hash).update(text).digest("hex");
      tokens += estimateTokens(text.length);
      hashes.push(hash);
      ends.push(tokens);
    }
    const breakpoints = blocks.flatMap((b, i) => (b.cache_control ? [i] : []));
    if (breakpoints.length === 0) return { input_tokens: tokens, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
    let read = 0;
    for (const b of breakpoints) {
      for (let i = b; i > b - LOOKBACK_BLOCKS && i >= 0; i--) {
        if (this.cached.has(hashes[i]!)) {
          read = Math.max(read, ends[i]!);
          break;
        }
      }
    }
    const last = breakpoints[breakpoints.length - 1]!;
    for (const b of breakpoints) this.cached.add(hashes[b]!);
    return { input_tokens: tokens - ends[last]!, cache_read_input_tokens: read, cache_creation_input_tokens: Math.max(0, ends[last]! - read) };
  }
}

/** Anthropic answers 400 to a body with more `cache_control` markers than this, wherever they stand. */
const MAX_ANTHROPIC_BREAKPOINTS = 4;

/** Every `cache_control` in a body: tools, system blocks, message blocks and anything nested. */
function countMarkers(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, item) => n + countMarkers(item), 0);
  if (typeof value !== "object" || value === null) return 0;
  return Object.entries(value).reduce((n, [key, v]) => n + (key === "cache_control" ? 1 : countMarkers(v)), 0);
}

/** Anthropic's answer to a body with too many breakpoints (the script is not consulted). */
const tooManyBreakpoints = (found: number): ErrorReply => ({ status: 400, body: { type: "error", error: { type: "invalid_request_error", message: `A maximum of ${MAX_ANTHROPIC_BREAKPOINTS} blocks with cache_control may be provided. Found ${found}.` } } });

/** Anthropic's stop reason for a script's finish reason (either vocabulary). */
function anthropicStopReason(finish: string): string {
  return finish === "stop" ? "end_turn" : finish === "length" ? "max_tokens" : finish === "tool_calls" ? "tool_use" : finish;
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

export interface ModelServerOptions {
  replies?: Reply[];
  respond?: ReplyFn;
  /** Model name echoed in chunks (default: the request's `model`). */
  model?: string;
  /** Print each warning to stderr as well (default false). */
  verbose?: boolean;
}

export interface ModelServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `http://127.0.0.1:PORT/v1` — the `baseUrl` for Pi's models.json. */
  baseUrl: string;
  port: number;
  /** Every request, in arrival order (model requests and anything else that arrived). */
  requests: ModelRequest[];
  /** Only the model requests (chat completions and Anthropic messages). */
  readonly chatRequests: ModelRequest[];
  /** Warnings: default replies used, unknown paths, bad JSON. */
  warnings: string[];
  /** Routing function consulted first; may be replaced at any time. */
  respond: ReplyFn | undefined;
  /** Append replies to the main queue. */
  enqueue(...replies: Reply[]): void;
  /** Replies still queued in the main queue. */
  pending(): number;
  /** Add a route: requests matching `match` take replies from `replies` (a queue, or a function). */
  route(match: (req: ModelRequest) => boolean, replies: Reply[] | ReplyFn): void;
  /** Hold the replies to the model requests from now on that match `match` (default: all) until `release()`. */
  hold(match?: (req: ModelRequest) => boolean): HeldReply;
  /** Resolve when at least `n` model requests have arrived. */
  waitForRequests(n: number, timeoutMs?: number): Promise<ModelRequest[]>;
  /** Number of streams currently open. */
  openStreams(): number;
  /** Stop listening and destroy every open connection (streams in progress included). */
  close(): Promise<void>;
  closed: boolean;
}

/** A reply the server holds back: see `ModelServer.hold`. */
interface HeldReply {
  /** The first held request, once it has arrived and is logged. */
  arrived: Promise<ModelRequest>;
  /** Let the held replies go out (each chosen then, as for any request) and hold no more. Releasing twice, or before a request arrived, is allowed. */
  release(): void;
}

interface Hold {
  match: (req: ModelRequest) => boolean;
  arrive: (req: ModelRequest) => void;
  released: Promise<void>;
  release: () => void;
}

/** How a stream goes out: its SSE frames, and the faults that cut it short. */
interface StreamPlan {
  frames: string[];
  /** The frame after all others (`data: [DONE]` for chat completions). */
  last?: string;
  stallAfter?: number;
  stallMs?: number;
  dropAfter?: number;
  chunkDelayMs: number;
}

interface Route {
  match: (req: ModelRequest) => boolean;
  replies: Reply[] | ReplyFn;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function chunkString(s: string, size: number): string[] {
  if (s.length === 0) return [];
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}


function isError(r: Reply): r is ErrorReply {
  return typeof (r as ErrorReply).status === "number";
}

export async function startModelServer(opts: ModelServerOptions = {}): Promise<ModelServer> {
  const queue: Reply[] = [...(opts.replies ?? [])];
  const routes: Route[] = [];
  const sockets = new Set<Socket>();
  const streams = new Set<ServerResponse>();
  const waiters: Array<{ n: number; resolve: (r: ModelRequest[]) => void }> = [];
  const holds: Hold[] = [];
  let completionCounter = 0;
  const anthropicCache = new AnthropicCacheEstimate();

  const self: ModelServer = {
    url: "",
    baseUrl: "",
    port: 0,
    requests: [],
    get chatRequests() {
      return self.requests.filter((r) => r.api !== undefined);
    },
    warnings: [],
    respond: opts.respond,
    enqueue: (...replies) => void queue.push(...replies),
    pending: () => queue.length,
    route: (match, replies) => void routes.push({ match, replies: Array.isArray(replies) ? [...replies] : replies }),
    hold(match = () => true) {
      let arrive!: (req: ModelRequest) => void;
      let open!: () => void;
      const arrived = new Promise<ModelRequest>((r) => (arrive = r));
      const released = new Promise<void>((r) => (open = r));
      const hold: Hold = {
        match,
        arrive,
        released,
        release: () => {
          const at = holds.indexOf(hold);
          if (at >= 0) holds.splice(at, 1);
          open();
        },
      };
      holds.push(hold);
      return { arrived, release: hold.release };
    },
    waitForRequests(n, timeoutMs = 10_000) {
      if (self.chatRequests.length >= n) return Promise.resolve(self.chatRequests);
      return new Promise((resolve, reject) => {
        const w = {
          n,
          resolve: (r: ModelRequest[]) => {
            clearTimeout(t);
            resolve(r);
          },
        };
        const t = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`waitForRequests(${n}): only ${self.chatRequests.length} request(s) after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.push(w);
      });
    },
    openStreams: () => streams.size,
    closed: false,
    async close() {
      if (self.closed) return;
      self.closed = true;
      // A held request's handler ends with its connection.
      for (const h of [...holds]) h.release();
      for (const res of streams) res.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  const warn = (msg: string) => {
    self.warnings.push(msg);
    if (opts.verbose) process.stderr.write(`[model-server] ${msg}\n`);
  };

  async function chooseReply(req: ModelRequest): Promise<{ reply: Reply; source: ModelRequest["source"] }> {
    if (self.respond) {
      const r = await self.respond(req);
      if (r) return { reply: r, source: "respond" };
    }
    for (const route of routes) {
      if (!route.match(req)) continue;
      if (typeof route.replies === "function") {
        const r = await route.replies(req);
        if (r) return { reply: r, source: "route" };
      } else if (route.replies.length > 0) {
        return { reply: route.replies.shift()!, source: "route" };
      }
    }
    if (queue.length > 0) return { reply: queue.shift()!, source: "queue" };
    warn(`request #${req.index}: script exhausted, answered the default "ok" (last user text: ${JSON.stringify(req.lastUserText.slice(0, 80))})`);
    return { reply: { text: "ok" }, source: "default" };
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rawBody = Buffer.concat(chunks).toString("utf8");
    let parsed: unknown = {};
    if (rawBody.length > 0) {
      try {
        parsed = JSON.parse(rawBody);
      } catch {
        warn(`request to ${req.url}: body is not JSON`);
      }
    }
    const url = req.url ?? "";
    const path = url.replace(/\?.*$/, "");
    const api = req.method !== "POST" ? undefined : path.endsWith("/chat/completions") ? "openai-completions" : path.endsWith("/messages") ? "anthropic-messages" : undefined;
    const anthropic = api === "anthropic-messages" ? (parsed as AnthropicRequestBody) : undefined;
    const body = anthropic ? anthropicAsChat(anthropic) : (parsed as ChatRequestBody);
    const record: ModelRequest = {
      index: self.requests.length,
      method: req.method ?? "",
      url,
      headers: { ...req.headers },
      api,
      body,
      ...(anthropic ? { anthropic } : {}),
      rawBody,
      receivedAt: Date.now(),
      systemText: systemText(body),
      lastUserText: lastUserText(body),
      toolNames: toolNames(body),
      allText: allText(body),
    };
    self.requests.push(record);

    if (!api) {
      record.source = "none";
      warn(`unexpected ${req.method} ${url}`);
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `not found: ${url}`, type: "invalid_request_error" } }));
      return;
    }

    for (const w of [...waiters]) {
      if (self.chatRequests.length >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(self.chatRequests);
      }
    }

    const hold = holds.find((h) => h.match(record));
    if (hold) {
      hold.arrive(record);
      await hold.released;
      if (self.closed || res.destroyed) return;
    }

    const { reply, source } = anthropic && countMarkers(anthropic) > MAX_ANTHROPIC_BREAKPOINTS ? { reply: tooManyBreakpoints(countMarkers(anthropic)), source: "none" as const } : await chooseReply(record);
    record.reply = reply;
    record.source = source;
    await sendReply(record, reply, res);
  }

  async function sendReply(record: ModelRequest, reply: Reply, res: ServerResponse) {
    if (isError(reply)) {
      const headers = { "content-type": "application/json", ...(reply.headers ?? {}) };
      res.writeHead(reply.status, headers);
      const message = `scripted error ${reply.status}`;
      const type = reply.status === 429 ? "rate_limit_error" : reply.status === 529 ? "overloaded_error" : record.api === "anthropic-messages" ? "api_error" : "server_error";
      const fallback = record.api === "anthropic-messages" ? { type: "error", error: { type, message } } : { error: { message, type, code: String(reply.status) } };
      res.end(reply.body === undefined ? JSON.stringify(fallback) : typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body));
      return;
    }
    if (record.body.stream === false) {
      sendWhole(record, reply as ContentReply, res);
      return;
    }
    const plan = record.api === "anthropic-messages" ? planAnthropicStream(record, reply) : planChatStream(record, reply);
    await writeStream(plan, (reply as ContentReply).delayMs, res);
  }

  /** The reply as chat-completion chunks. */
  function planChatStream(record: ModelRequest, reply: Reply): StreamPlan {
    const model = opts.model ?? record.body.model ?? "m";
    const id = `chatcmpl-${++completionCounter}`;
    const created = Math.floor(Date.now() / 1000);
    const includeUsage = record.body.stream_options?.include_usage === true;
    const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });

    // Plan the stream as a list of SSE payloads (objects, or raw strings for garbage).
    const events: Array<Record<string, unknown> | string> = [];
    const plan: StreamPlan = { frames: [], last: "data: [DONE]\n\n", chunkDelayMs: 0 };
    let finish = "stop";
    let outputChars = 0;
    let usageSpec: UsageSpec | false | undefined;

    if ("empty" in reply && reply.empty) {
      events.push(chunk({ role: "assistant" }));
      finish = reply.finishReason ?? "stop";
    } else {
      const r = reply as ContentReply & Partial<MalformedReply> & Partial<DropReply>;
      const size = Math.max(1, r.chunkChars ?? 16);
      plan.chunkDelayMs = r.chunkDelayMs ?? 0;
      usageSpec = r.usage;
      events.push(chunk({ role: "assistant", content: "" }));
      if (r.thinking) {
        const field = r.thinkingField ?? "reasoning_content";
        for (const piece of chunkString(r.thinking, size)) events.push(chunk({ [field]: piece }));
        outputChars += r.thinking.length;
      }
      if (r.text) {
        for (const piece of chunkString(r.text, size)) events.push(chunk({ content: piece }));
        outputChars += r.text.length;
      }
      (r.toolCalls ?? []).forEach((tc, i) => {
        const args = typeof tc.arguments === "string" ? tc.arguments : JSON.stringify(tc.arguments);
        const callId = tc.id ?? `call_${record.index}_${i}`;
        events.push(chunk({ tool_calls: [{ index: i, id: callId, type: "function", function: { name: tc.name, arguments: "" } }] }));
        for (const piece of chunkString(args, size)) events.push(chunk({ tool_calls: [{ index: i, function: { arguments: piece } }] }));
        outputChars += tc.name.length + args.length;
      });
      finish = r.finishReason ?? (r.toolCalls && r.toolCalls.length > 0 ? "tool_calls" : "stop");
      if (r.malformed) events.splice(Math.min(events.length, 1 + (r.afterChunks ?? 0)), 0, "{this is not json");
      if (r.drop) plan.dropAfter = 1 + (r.afterChunks ?? 0);
      if (r.stallAfterChunks !== undefined) {
        plan.stallAfter = r.stallAfterChunks;
        plan.stallMs = r.stallMs;
      }
    }

    events.push(chunk({}, finish));
    if (includeUsage && usageSpec !== false) {
      const promptTokens = usageSpec?.prompt_tokens ?? Math.max(1, estimateTokens(JSON.stringify(record.body.messages ?? []).length));
      const completionTokens = usageSpec?.completion_tokens ?? Math.max(1, estimateTokens(outputChars));
      const usage: Record<string, unknown> = {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      };
      if (usageSpec?.cached_tokens !== undefined) usage.prompt_tokens_details = { cached_tokens: usageSpec.cached_tokens };
      events.push({ id, object: "chat.completion.chunk", created, model, choices: [], usage });
    }
    plan.frames = events.map((ev) => `data: ${typeof ev === "string" ? ev : JSON.stringify(ev)}\n\n`);
    return plan;
  }

  /** The reply as Anthropic's named stream events, with usage from the cache estimate. */
  function planAnthropicStream(record: ModelRequest, reply: Reply): StreamPlan {
    const body = record.anthropic ?? {};
    const model = opts.model ?? body.model ?? "m";
    const frames: string[] = [];
    const plan: StreamPlan = { frames, chunkDelayMs: 0 };
    const frame = (event: Record<string, unknown> & { type: string }) => frames.push(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    const r = reply as ContentReply & Partial<MalformedReply> & Partial<DropReply> & Partial<EmptyReply>;
    const usageSpec = r.usage;
    const estimate = anthropicCache.usage(body);
    const usage: AnthropicUsage =
      usageSpec === false
        ? { input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }
        : {
            input_tokens: usageSpec?.input_tokens ?? estimate.input_tokens,
            cache_read_input_tokens: usageSpec?.cache_read_input_tokens ?? estimate.cache_read_input_tokens,
            cache_creation_input_tokens: usageSpec?.cache_creation_input_tokens ?? estimate.cache_creation_input_tokens,
          };
    record.anthropicUsage = usage;
    frame({
      type: "message_start",
      message: { id: `msg_${++completionCounter}`, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    });

    let finish = "stop";
    let outputChars = 0;
    if (r.empty) {
      finish = r.finishReason ?? "stop";
    } else {
      const size = Math.max(1, r.chunkChars ?? 16);
      plan.chunkDelayMs = r.chunkDelayMs ?? 0;
      let index = 0;
      if (r.thinking) {
        frame({ type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } });
        for (const piece of chunkString(r.thinking, size)) frame({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: piece } });
        const signature = r.signature ?? `sig-${createHash("sha256").update(r.thinking).digest("base64url").slice(0, 24)}`;
        frame({ type: "content_block_delta", index, delta: { type: "signature_delta", signature } });
        frame({ type: "content_block_stop", index: index++ });
        outputChars += r.thinking.length;
      }
      if (r.text) {
        frame({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
        for (const piece of chunkString(r.text, size)) frame({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } });
        frame({ type: "content_block_stop", index: index++ });
        outputChars += r.text.length;
      }
      (r.toolCalls ?? []).forEach((tc, i) => {
        const args = typeof tc.arguments === "string" ? tc.arguments : JSON.stringify(tc.arguments);
        frame({ type: "content_block_start", index, content_block: { type: "tool_use", id: tc.id ?? `toolu_${record.index}_${i}`, name: tc.name, input: {} } });
        for (const piece of chunkString(args, size)) frame({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } });
        frame({ type: "content_block_stop", index: index++ });
        outputChars += tc.name.length + args.length;
      });
      finish = r.finishReason ?? (r.toolCalls && r.toolCalls.length > 0 ? "tool_calls" : "stop");
      if (r.malformed) frames.splice(Math.min(frames.length, 1 + (r.afterChunks ?? 0)), 0, "event: content_block_delta\ndata: {this is not json\n\n");
      if (r.drop) plan.dropAfter = 1 + (r.afterChunks ?? 0);
      if (r.stallAfterChunks !== undefined) {
        plan.stallAfter = r.stallAfterChunks;
        plan.stallMs = r.stallMs;
      }
    }
    const outputTokens = usageSpec === false ? 0 : (usageSpec?.output_tokens ?? usageSpec?.completion_tokens ?? Math.max(1, estimateTokens(outputChars)));
    frame({ type: "message_delta", delta: { stop_reason: anthropicStopReason(finish), stop_sequence: null }, usage: { ...usage, output_tokens: outputTokens } });
    frame({ type: "message_stop" });
    return plan;
  }

  /** A non-streaming answer (Pi streams; kept for completeness). */
  function sendWhole(record: ModelRequest, r: ContentReply, res: ServerResponse) {
    res.writeHead(200, { "content-type": "application/json" });
    const calls = (r.toolCalls ?? []).map((tc, i) => ({ id: tc.id ?? `call_${record.index}_${i}`, name: tc.name, arguments: typeof tc.arguments === "string" ? tc.arguments : JSON.stringify(tc.arguments) }));
    if (record.api === "anthropic-messages") {
      const content = [
        ...(r.text ? [{ type: "text", text: r.text }] : []),
        ...calls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: JSON.parse(c.arguments) as unknown })),
      ];
      res.end(JSON.stringify({ id: `msg_${++completionCounter}`, type: "message", role: "assistant", model: opts.model ?? record.anthropic?.model ?? "m", content, stop_reason: calls.length ? "tool_use" : "end_turn", usage: anthropicCache.usage(record.anthropic ?? {}) }));
      return;
    }
    res.end(
      JSON.stringify({
        id: `chatcmpl-${++completionCounter}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: opts.model ?? record.body.model ?? "m",
        choices: [
          {
            index: 0,
            finish_reason: calls.length ? "tool_calls" : "stop",
            message: {
              role: "assistant",
              content: r.text ?? null,
              ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) } : {}),
            },
          },
        ],
      }),
    );
  }

  /** Writes a planned stream: headers after `delayMs`, then the frames, stalling or dropping where the plan says. */
  async function writeStream(plan: StreamPlan, delayMs: number | undefined, res: ServerResponse) {
    if (delayMs) await sleep(delayMs);
    if (res.destroyed) return;

    streams.add(res);
    res.on("close", () => streams.delete(res));
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();

    for (let i = 0; i < plan.frames.length; i++) {
      if (res.destroyed) return;
      if (plan.dropAfter !== undefined && i >= plan.dropAfter) {
        res.socket?.destroy();
        res.destroy();
        return;
      }
      if (plan.stallAfter !== undefined && i === plan.stallAfter) {
        if (plan.stallMs === undefined) return; // silent until somebody closes the connection
        await sleep(plan.stallMs);
        if (res.destroyed) return;
      }
      res.write(plan.frames[i]);
      if (plan.chunkDelayMs > 0) await sleep(plan.chunkDelayMs);
    }
    if (res.destroyed) return;
    res.end(plan.last ?? "");
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      warn(`handler error: ${String(err)}`);
      if (!res.headersSent) res.writeHead(500);
      res.destroy();
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  self.port = port;
  self.url = `http://127.0.0.1:${port}`;
  self.baseUrl = `${self.url}/v1`;
  return self;
}

/** A `baseUrl` on 127.0.0.1 where nothing listens (connection refused). */
export async function deadBaseUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/v1`;
}
