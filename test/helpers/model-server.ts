/**
 * A scripted OpenAI chat-completions server for real-Pi end-to-end tests.
 *
 * Pi's `openai-completions` api POSTs `/v1/chat/completions` with `stream: true` and
 * `stream_options: {include_usage: true}`; it reads `chat.completion.chunk` server-sent events
 * (`delta.content`, `delta.tool_calls[]`, `delta.reasoning_content` | `reasoning` |
 * `reasoning_text`), requires a `finish_reason` before the stream ends, and takes usage from the
 * chunk that carries `usage`. This server speaks exactly that, logs every request body in order
 * (the ground truth of what the model saw) and answers from a script:
 *
 *   const server = await startModelServer({ replies: [{ toolCalls: [...] }, { text: "done" }] });
 *   server.route((req) => req.systemText.includes("summar"), [{ text: "summary" }]);
 *   server.respond = (req) => (req.lastUserText === "hi" ? { text: "hello" } : undefined);
 *
 * Resolution order for each request: `respond(req)` (if it returns a reply), then the first route
 * whose predicate matches and that yields a reply (a route with an empty queue falls through),
 * then the main queue, then the default reply (`{text: "ok"}`, recorded in `warnings`).
 * Faults: `{status}` (HTTP error), `{stallAfterChunks, stallMs?}`, `{empty: true}`,
 * `{malformed: true}`, `{drop: true}` (socket reset mid-stream), `{finishReason: "length"}`;
 * connection refused: `close()` the server, or `deadBaseUrl()`.
 */
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
}

/** A normal streamed answer: optional thinking, then text, then tool calls. */
interface ContentReply {
  text?: string;
  toolCalls?: ToolCallSpec[];
  /** Reasoning text, streamed in the `thinkingField` delta field (Pi reads it into a `thinking` block). */
  thinking?: string;
  thinkingField?: ReasoningField;
  /** Default: `tool_calls` when toolCalls are present, else `stop`. */
  finishReason?: "stop" | "length" | "tool_calls" | "content_filter" | (string & {});
  /** Usage for the final chunk (sent only if the request asked via stream_options). `false` omits it. Default: estimated. */
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
  /** The parsed JSON body (`null` if it was not JSON; see `rawBody`). */
  body: ChatRequestBody;
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
  /** Every request, in arrival order (chat completions and anything else that arrived). */
  requests: ModelRequest[];
  /** Only the chat-completions requests. */
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
  /** Resolve when at least `n` chat requests have arrived. */
  waitForRequests(n: number, timeoutMs?: number): Promise<ModelRequest[]>;
  /** Number of streams currently open. */
  openStreams(): number;
  /** Stop listening and destroy every open connection (streams in progress included). */
  close(): Promise<void>;
  closed: boolean;
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
  let completionCounter = 0;

  const self: ModelServer = {
    url: "",
    baseUrl: "",
    port: 0,
    requests: [],
    get chatRequests() {
      return self.requests.filter((r) => r.url.endsWith("/chat/completions"));
    },
    warnings: [],
    respond: opts.respond,
    enqueue: (...replies) => void queue.push(...replies),
    pending: () => queue.length,
    route: (match, replies) => void routes.push({ match, replies: Array.isArray(replies) ? [...replies] : replies }),
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
    let body: ChatRequestBody = {};
    if (rawBody.length > 0) {
      try {
        body = JSON.parse(rawBody) as ChatRequestBody;
      } catch {
        warn(`request to ${req.url}: body is not JSON`);
      }
    }
    const url = req.url ?? "";
    const record: ModelRequest = {
      index: self.requests.length,
      method: req.method ?? "",
      url,
      headers: { ...req.headers },
      body,
      rawBody,
      receivedAt: Date.now(),
      systemText: systemText(body),
      lastUserText: lastUserText(body),
      toolNames: toolNames(body),
      allText: allText(body),
    };
    self.requests.push(record);

    if (!(req.method === "POST" && url.replace(/\?.*$/, "").endsWith("/chat/completions"))) {
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

    const { reply, source } = await chooseReply(record);
    record.reply = reply;
    record.source = source;
    await sendReply(record, reply, res);
  }

  async function sendReply(record: ModelRequest, reply: Reply, res: ServerResponse) {
    if (isError(reply)) {
      const headers = { "content-type": "application/json", ...(reply.headers ?? {}) };
      res.writeHead(reply.status, headers);
      const body =
        reply.body === undefined
          ? JSON.stringify({ error: { message: `scripted error ${reply.status}`, type: reply.status === 429 ? "rate_limit_error" : "server_error", code: String(reply.status) } })
          : typeof reply.body === "string"
            ? reply.body
            : JSON.stringify(reply.body);
      res.end(body);
      return;
    }

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
    let finish = "stop";
    let outputChars = 0;
    let stallAfter: number | undefined;
    let stallMs: number | undefined;
    let dropAfter: number | undefined;
    let chunkDelayMs = 0;
    let usageSpec: UsageSpec | false | undefined;

    if ("empty" in reply && reply.empty) {
      events.push(chunk({ role: "assistant" }));
      finish = reply.finishReason ?? "stop";
    } else {
      const r = reply as ContentReply & Partial<MalformedReply> & Partial<DropReply>;
      const size = Math.max(1, r.chunkChars ?? 16);
      chunkDelayMs = r.chunkDelayMs ?? 0;
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
      if (r.drop) dropAfter = 1 + (r.afterChunks ?? 0);
      if (r.stallAfterChunks !== undefined) {
        stallAfter = r.stallAfterChunks;
        stallMs = r.stallMs;
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

    if (record.body.stream === false) {
      // Non-streaming fallback (Pi streams; kept for completeness).
      const r = reply as ContentReply;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model,
          choices: [
            {
              index: 0,
              finish_reason: finish,
              message: {
                role: "assistant",
                content: r.text ?? null,
                ...(r.toolCalls?.length
                  ? {
                      tool_calls: r.toolCalls.map((tc, i) => ({
                        id: tc.id ?? `call_${record.index}_${i}`,
                        type: "function",
                        function: { name: tc.name, arguments: typeof tc.arguments === "string" ? tc.arguments : JSON.stringify(tc.arguments) },
                      })),
                    }
                  : {}),
              },
            },
          ],
        }),
      );
      return;
    }

    const delayMs = (reply as ContentReply).delayMs;
    if (delayMs) await sleep(delayMs);
    if (res.destroyed) return;

    streams.add(res);
    res.on("close", () => streams.delete(res));
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();

    for (let i = 0; i < events.length; i++) {
      if (res.destroyed) return;
      if (dropAfter !== undefined && i >= dropAfter) {
        res.socket?.destroy();
        res.destroy();
        return;
      }
      if (stallAfter !== undefined && i === stallAfter) {
        if (stallMs === undefined) return; // silent until somebody closes the connection
        await sleep(stallMs);
        if (res.destroyed) return;
      }
      const ev = events[i];
      res.write(`data: ${typeof ev === "string" ? ev : JSON.stringify(ev)}\n\n`);
      if (chunkDelayMs > 0) await sleep(chunkDelayMs);
    }
    if (res.destroyed) return;
    res.end("data: [DONE]\n\n");
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
