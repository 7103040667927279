// An in-process stand-in for Pi's agent loop, driving a real extension entry point (ours,
// pi-extension/src/index.ts, by default; a peer's factory or a bench policy such as observation
// masking otherwise) the way Pi 1.6 does: `session_start` once, `context` before every model
// request (with a deep copy of the messages Pi would send, system messages left out),
// `message_end` for the assistant message before it is persisted and for each tool result,
// `turn_end` after the assistant message and its tool results (the drafts it returns are appended
// after them, in order), and slash commands through the registered handler. The session is a single
// branch of entries; Pi's context for it is core's `buildPiContext` (tested against Pi's own builder).
// The model is not called: the script provides every assistant message and tool result. The
// summarizer's calls reach a scripted in-process model that answers with deterministic summaries
// and counts the characters in and out, whether the extension asks `ctx.modelRegistry` or streams
// through pi-ai itself (the host registers the scripted model as the provider of the session
// model's api while it dispatches).
import { mkdirSync, openSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { getApiProvider, registerApiProvider, registerBuiltInApiProviders, unregisterApiProviders } from "@earendil-works/pi-ai/compat";
import piPruner from "../../pi-extension/src/index.ts";
import type { ExtensionFactory } from "./peers.ts";
import { buildPiContext } from "../../core/src/session/pi-context.ts";
import type { AnyEntry, SessionHeader } from "../../core/src/shapes/entries.ts";
import type { AgentMessage, AssistantBlock, AssistantMessage, ToolResultMessage } from "../../core/src/shapes/messages.ts";
import { Rng, hashString, prose, type ScriptStep } from "./gen.ts";
import { estimateTokens } from "../../core/src/shapes/size.ts";

type Handler = (event: Record<string, unknown>, ctx: unknown) => unknown;

export interface SummarizerCall {
  inputChars: number;
  outputChars: number;
}

export interface RegisteredToolInfo {
  name: string;
  /** Characters the tool adds to every request (its declaration and prompt lines). */
  headChars: number;
  /** The declaration as the provider gets it (name, description, parameter schema as JSON). */
  declaration: string;
  /** The lines the tool adds to the system prompt (snippet and guidelines). */
  prompt: string;
}

/** An extension to load into the host, with the agent dir's settings.json it reads. */
export interface HostedExtension {
  factory: ExtensionFactory;
  settings: Record<string, unknown>;
}

export interface ReplayHostOptions {
  /** A fresh temporary folder for the agent dir, the workspace and the session dir. */
  root: string;
  /** pi-pruner's `contextPrune` settings block; `null` runs without the extension (Pi alone). Ignored when `extension` is given. */
  contextPrune?: Record<string, unknown> | null;
  /** Another extension than pi-pruner (a peer, a bench policy). */
  extension?: HostedExtension;
  contextWindow?: number;
  /** The session's model as Pi's registry describes it (what the extension prices by); default an unknown model on anthropic-messages. */
  model?: { provider: string; id: string; api: string; cost?: { input: number; output: number; cacheRead: number; cacheWrite: number } };
  /** Fire `context` before each request (off when only the session file is wanted). */
  fireContext?: boolean;
}

const START_TIME = Date.UTC(2025, 2, 3, 9, 0, 0);
/** Event-loop turns a person's idle time between a reply and the next prompt stands for (the scripted summarizer answers within a few). */
const IDLE_TICKS = 20;
/** Who registered the scripted summarizer in pi-ai's provider registry (so it can be removed again). */
const SCRIPTED_PROVIDER_SOURCE = "pi-pruner-bench-host";

export class ReplayHost {
  readonly entries: AnyEntry[] = [];
  readonly header: SessionHeader;
  readonly summarizerCalls: SummarizerCall[] = [];
  readonly tools: RegisteredToolInfo[] = [];
  readonly notifications: string[] = [];
  /** Host APIs the extension asked for that this stand-in does not provide. */
  readonly unsupported = new Set<string>();
  /** Events the extension subscribed to. */
  readonly subscribed = new Set<string>();
  readonly agentDir: string;
  readonly cwd: string;
  readonly sessionDir: string;
  readonly sessionId: string;

  private readonly handlers = new Map<string, Handler[]>();
  private readonly commands = new Map<string, (args: string, ctx: unknown) => unknown>();
  private readonly options: ReplayHostOptions;
  private clock = START_TIME;
  private entryCounter = 0;
  private callCounter = 0;
  private turnIndex = 0;
  private lastRequestChars = 0;
  /** Whether the last request's `context` handlers returned other messages than Pi's context. */
  lastRequestRewritten = false;
  private readonly model: { provider: string; id: string; api: string; cost?: { input: number; output: number; cacheRead: number; cacheWrite: number }; contextWindow: number; maxTokens: number };

  private constructor(options: ReplayHostOptions) {
    this.options = options;
    this.agentDir = join(options.root, "agent");
    this.cwd = join(options.root, "workspace");
    this.sessionDir = join(options.root, "sessions");
    this.sessionId = `bench-${hashString(options.root).toString(16)}`;
    for (const dir of [this.agentDir, this.cwd, this.sessionDir]) mkdirSync(dir, { recursive: true });
    this.header = { type: "session", version: 3, id: this.sessionId, timestamp: new Date(this.clock).toISOString(), cwd: this.cwd };
    this.model = { provider: "mock", id: "m", api: "anthropic-messages", ...options.model, contextWindow: options.contextWindow ?? 200_000, maxTokens: 8192 };
  }

  static async create(options: ReplayHostOptions): Promise<ReplayHost> {
    const host = new ReplayHost(options);
    const extension = options.extension ?? (options.contextPrune === null || options.contextPrune === undefined ? undefined : { factory: piPruner as ExtensionFactory, settings: { contextPrune: options.contextPrune } });
    if (extension) {
      const fd = openSync(join(host.agentDir, "settings.json"), "w");
      writeSync(fd, JSON.stringify(extension.settings, null, 2));
      closeSync(fd);
      await host.hosted(async () => extension.factory(host.api()));
    }
    await host.fire("session_start", { type: "session_start", reason: "startup" });
    return host;
  }

  /**
   * Runs extension code with what Pi gives it: PI_CODING_AGENT_DIR pointing at this host's agent
   * dir (extensions read their settings from there) and the scripted summarizer as pi-ai's provider
   * of the session model's api. Both are restored afterwards, so hosts run one after another do
   * not see each other's settings and the process keeps pi-ai's own providers.
   */
  private async hosted<T>(run: () => T | Promise<T>): Promise<T> {
    const previous = process.env.PI_CODING_AGENT_DIR;
    process.env.PI_CODING_AGENT_DIR = this.agentDir;
    const api = this.model.api;
    const stream = (_model: unknown, context: { messages: unknown[] }) => this.summarizerStream(context.messages);
    registerApiProvider({ api, stream, streamSimple: stream } as never, SCRIPTED_PROVIDER_SOURCE);
    try {
      return await run();
    } finally {
      unregisterApiProviders(SCRIPTED_PROVIDER_SOURCE);
      if (!getApiProvider(api)) registerBuiltInApiProviders();
      if (previous === undefined) delete process.env.PI_CODING_AGENT_DIR;
      else process.env.PI_CODING_AGENT_DIR = previous;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // What the extension sees

  private api(): unknown {
    const host = this;
    const known: Record<string, unknown> = {
      on(event: string, handler: Handler) {
        host.subscribed.add(event);
        const list = host.handlers.get(event) ?? [];
        list.push(handler);
        host.handlers.set(event, list);
      },
      appendEntry(customType: string, data: unknown) {
        host.appendCustomEntry(customType, data);
      },
      sendMessage(message: { customType: string; content: unknown; display?: boolean; details?: unknown }) {
        host.append("custom_message", { customType: message.customType, content: message.content, display: message.display ?? false, details: message.details });
      },
      registerTool(tool: { name: string; description?: string; parameters?: unknown; promptSnippet?: string; promptGuidelines?: string[] }) {
        const declaration = JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters });
        const prompt = [tool.promptSnippet ?? "", ...(tool.promptGuidelines ?? [])].filter(Boolean).join("\n");
        host.tools.push({ name: tool.name, headChars: declaration.length + prompt.length, declaration, prompt });
      },
      // Renderers only draw in Pi's interactive UI, which the replay does not have.
      registerMessageRenderer() {},
      registerCommand(name: string, command: { handler: (args: string, ctx: unknown) => unknown }) {
        host.commands.set(name, command.handler);
      },
      events: { emit() {}, on() {} },
      getSettings: () => ({ contextPrune: host.options.contextPrune }),
      // What Pi lists: here only the extension's own tools (pi-pruner looks for another pruner's at session_start).
      getAllTools: () => host.tools.map((tool) => ({ name: tool.name, sourceInfo: { path: "<replay>", source: "replay" } })),
    };
    return new Proxy(known, {
      get(target, prop: string) {
        if (prop in target) return target[prop];
        host.unsupported.add(`pi.${prop}`);
        return () => undefined;
      },
    });
  }

  private context(): unknown {
    const host = this;
    const model = this.model;
    const scripted = (_model: unknown, request: { systemPrompt?: string; messages: unknown[] }) =>
      host.summarizerStream(request.systemPrompt ? [{ role: "system", content: request.systemPrompt }, ...request.messages] : request.messages);
    const known: Record<string, unknown> = {
      cwd: this.cwd,
      hasUI: false,
      model,
      isProjectTrusted: () => true,
      isIdle: () => true,
      ui: new Proxy({}, { get: (_t, prop: string) => (prop === "notify" ? (message: string) => void host.notifications.push(message) : () => undefined) }),
      sessionManager: {
        getBranch: () => host.entries,
        getEntries: () => host.entries,
        getLeafId: () => host.entries[host.entries.length - 1]?.id ?? null,
        getSessionDir: () => host.sessionDir,
        getSessionId: () => host.sessionId,
        getSessionFile: () => join(host.sessionDir, `${host.sessionId}.jsonl`),
        getHeader: () => host.header,
        appendCustomEntry: (customType: string, data?: unknown) => host.appendCustomEntry(customType, data).id,
        appendCustomMessageEntry: (customType: string, content: unknown, display: boolean, details?: unknown) =>
          host.append("custom_message", { customType, content, display, details }).id,
      },
      getContextUsage: () => {
        const tokens = estimateTokens(host.lastRequestChars);
        const contextWindow = model.contextWindow;
        return { tokens, contextWindow, percent: (tokens / contextWindow) * 100 };
      },
      modelRegistry: {
        find: () => model,
        getAvailable: () => [model],
        getApiKeyAndHeaders: async () => ({ ok: true, apiKey: "scripted", headers: {} }),
        getProviderAuth: async () => undefined,
        streamSimple: scripted,
        complete: async (m: unknown, request: { systemPrompt?: string; messages: unknown[] }) => scripted(m, request).result(),
      },
    };
    return new Proxy(known, {
      get(target, prop: string) {
        if (prop in target) return target[prop];
        host.unsupported.add(`ctx.${prop}`);
        return undefined;
      },
    });
  }

  /** The scripted summarizer model: one bullet per call, sized like a real summary of it. */
  private summarizerStream(messages: readonly unknown[]) {
    const prompt = messages.map((m) => contentText((m as { content?: unknown }).content)).join("\n");
    const text = scriptedSummary(prompt);
    this.summarizerCalls.push({ inputChars: prompt.length, outputChars: text.length });
    const usage = {
      input: estimateTokens(prompt.length),
      output: estimateTokens(text.length),
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: estimateTokens(prompt.length) + estimateTokens(text.length),
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    };
    const message = { role: "assistant", content: [{ type: "text", text }], api: this.model.api, provider: this.model.provider, model: this.model.id, stopReason: "stop", usage, timestamp: this.clock };
    const partial = { ...message, content: [] as unknown[] };
    return {
      async *[Symbol.asyncIterator]() {
        yield { type: "start", partial };
        yield { type: "text_start", contentIndex: 0, partial: message };
        yield { type: "text_delta", contentIndex: 0, delta: text, partial: message };
        yield { type: "text_end", contentIndex: 0, content: text, partial: message };
        yield { type: "done", reason: "stop", message };
      },
      result: async () => message,
    };
  }

  private async fire(event: string, payload: Record<string, unknown>): Promise<unknown> {
    const handlers = this.handlers.get(event);
    if (!handlers?.length) return undefined;
    return this.hosted(async () => {
      let result: unknown;
      for (const handler of handlers) {
        const r = await handler(payload, this.context());
        if (r !== undefined) result = r;
      }
      return result;
    });
  }

  // ---------------------------------------------------------------------------------------------
  // The session

  private tick(): number {
    this.clock += 1000;
    return this.clock;
  }

  append(type: string, fields: Record<string, unknown>, time = this.tick()): AnyEntry {
    const parent = this.entries[this.entries.length - 1];
    const entry = { type, id: `e${++this.entryCounter}`, parentId: parent?.id ?? null, timestamp: new Date(time).toISOString(), ...fields } as AnyEntry;
    this.entries.push(entry);
    return entry;
  }

  appendCustomEntry(customType: string, data: unknown): AnyEntry {
    return this.append("custom", { customType, data });
  }

  private appendMessage(message: AgentMessage): AnyEntry {
    return this.append("message", { message }, message.timestamp);
  }

  /** The messages Pi would send now (its context for the branch, system messages left out). */
  contextMessages(): AgentMessage[] {
    return buildPiContext(this.entries).map((c) => c.message);
  }

  /**
   * One model request: Pi's context, a deep copy through the `context` handlers. Returns what
   * the model is sent (system prompt and tool declarations excluded).
   */
  async request(): Promise<AgentMessage[]> {
    const messages = structuredClone(this.contextMessages());
    let sent = messages;
    if (this.options.fireContext !== false) {
      const result = (await this.fire("context", { type: "context", messages })) as { messages?: AgentMessage[] } | undefined;
      if (result?.messages) sent = result.messages;
    }
    this.lastRequestRewritten = sent !== messages;
    return sent;
  }

  /** Records the size of the request just sent (what getContextUsage reports afterwards). */
  noteRequestChars(chars: number): void {
    this.lastRequestChars = chars;
  }

  /**
   * The person's next prompt. Between a final reply and the next prompt a person reads and types:
   * work the extension left running (a summarizer request in the background) has time to finish,
   * so the host lets the event loop run before `before_agent_start`, as Pi fires it before the
   * prompt's first request.
   */
  async user(text: string): Promise<void> {
    this.turnIndex = 0;
    if (this.handlers.get("before_agent_start")?.length) {
      for (let i = 0; i < IDLE_TICKS; i++) await new Promise((resolve) => setImmediate(resolve));
      await this.fire("before_agent_start", { type: "before_agent_start", prompt: text, systemPrompt: "" });
    }
    this.appendMessage({ role: "user", content: text, timestamp: this.tick() });
  }

  /** The model's answer for one script step, its tool results, then `turn_end`. */
  async assistantTurn(step: Extract<ScriptStep, { kind: "assistant" }>): Promise<void> {
    const content: AssistantBlock[] = [];
    if (step.thinking !== undefined) content.push({ type: "thinking", thinking: step.thinking, thinkingSignature: step.thinkingSignature ?? "" });
    if (step.text !== undefined) content.push({ type: "text", text: step.text });
    const ids = step.calls.map((call) => call.id ?? `toolu_${(++this.callCounter).toString(36).padStart(8, "0")}`);
    step.calls.forEach((call, i) => content.push({ type: "toolCall", id: ids[i]!, name: call.name, arguments: call.args }));
    const message: AssistantMessage = {
      role: "assistant",
      content,
      api: "anthropic-messages",
      provider: "mock",
      model: "m",
      stopReason: step.calls.length ? "toolUse" : "stop",
      timestamp: this.tick(),
    };
    // Pi tells extensions about a finished message before it persists it.
    await this.fire("message_end", { type: "message_end", message });
    const messageEntry = this.appendMessage(message);
    const results: ToolResultMessage[] = [];
    const resultEntryIds: string[] = [];
    step.calls.forEach((call, i) => {
      const result: ToolResultMessage = {
        role: "toolResult",
        toolCallId: ids[i]!,
        toolName: call.name,
        content: [{ type: "text", text: call.result }],
        isError: call.isError,
        timestamp: this.tick(),
      };
      results.push(result);
    });
    for (const result of results) {
      await this.fire("message_end", { type: "message_end", message: result });
      resultEntryIds.push(this.appendMessage(result).id);
    }
    const outcome = await this.fire("turn_end", {
      type: "turn_end",
      turnIndex: this.turnIndex++,
      message: structuredClone(message),
      toolResults: structuredClone(results),
      messageEntryId: messageEntry.id,
      toolResultEntryIds: resultEntryIds,
      outcome: "completed",
      entries: [],
      continue: false,
    });
    const drafts = (outcome as { entries?: { type: string; [k: string]: unknown }[] } | undefined)?.entries ?? [];
    for (const draft of drafts) {
      const { type, ...fields } = draft;
      this.append(type, fields);
    }
  }

  /** Runs a slash command the way Pi does for `/name args`. */
  async command(name: string, args: string): Promise<void> {
    const handler = this.commands.get(name);
    if (!handler) throw new Error(`the extension registered no /${name} command`);
    await this.hosted(() => handler(args, this.context()));
  }

  /** The loaded extension's tool declarations, as the provider is sent them beside Pi's own. */
  extensionToolsText(): string {
    return this.tools.map((t) => t.declaration).join("\n");
  }

  /** The lines the loaded extension's tools add to the system prompt. */
  extensionPromptText(): string {
    return this.tools.map((t) => t.prompt).filter(Boolean).join("\n");
  }

  /** Characters every request carries for the extension's own tools. */
  extensionHeadChars(): number {
    return this.tools.reduce((n, t) => n + t.headChars, 0);
  }

  /** Writes the session file (header, then every entry). */
  writeSession(path: string): number {
    const fd = openSync(path, "w");
    let bytes = 0;
    try {
      let buffer: string[] = [JSON.stringify(this.header)];
      let pending = buffer[0]!.length;
      const flush = () => {
        const text = buffer.join("\n") + "\n";
        bytes += writeSync(fd, text);
        buffer = [];
        pending = 0;
      };
      for (const entry of this.entries) {
        const line = JSON.stringify(entry);
        buffer.push(line);
        pending += line.length;
        if (pending > 4 * 1024 * 1024) flush();
      }
      if (buffer.length) flush();
    } finally {
      closeSync(fd);
    }
    return bytes;
  }
}

/**
 * A deterministic summary of a summarizer prompt: for a batch, one bullet per tool call, sized
 * 60–360 characters by the output the prompt shows of it (real summarizers write a sentence or two
 * per call); for a fusion of summaries, the bullets kept and shortened. It reads pi-pruner's prompt
 * (`### tN — tool` sections) and pi-condense's (`[[N:tool]] Tool: …` sections), so both pruners get
 * summaries by the same rule.
 */
export function scriptedSummary(prompt: string): string {
  const ours = [...prompt.matchAll(/^### (t\d+) — (\S+)(?: \(failed\))?\nArguments: (.*)\nOutput:\n/gm)];
  if (ours.length) return bulletsPerCall(prompt, ours.map((m) => ({ at: m.index!, outputFrom: m.index! + m[0].length, head: `- \`${m[1]}\` ${m[2]} ${m[3]!.slice(0, 60)}: `, seed: m[0] })));
  const condense = [...prompt.matchAll(/^(\[\[\d+:[^\]\n]+\]\]) Tool: ([^(\n]*)\(([\s\S]*?)\)\nResult \((?:OK|ERROR)\): /gm)];
  if (condense.length) {
    const end = prompt.indexOf("</tool-call-batch>");
    return bulletsPerCall(end >= 0 ? prompt.slice(0, end) : prompt, condense.map((m) => ({ at: m.index!, outputFrom: m.index! + m[0].length, head: `${m[1]} ${m[2]} ${m[3]!.replace(/\s+/g, " ").slice(0, 60)}: `, seed: m[0] })));
  }
  // A fusion: every line of the summaries given that describes a call (pi-condense wraps them in
  // <sub-task-summaries> after its instructions). Both pruners' summaries start a call's line with
  // its ref: ours as a bullet, pi-condense's bare ("`t12` read …").
  const summaries = /<sub-task-summaries>\n([\s\S]*?)\n<\/sub-task-summaries>/.exec(prompt)?.[1] ?? prompt;
  const bullets = summaries.split("\n").filter((l) => /^\s*(?:-\s*)?`t\d+`/.test(l) || /^\s*-?\s*\[\[\d+:/.test(l) || (/^- /.test(l) && /\bt\d+\b/.test(l)));
  return bullets.map((b) => b.slice(0, 200)).join("\n") || "- nothing of note";
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b) => (b && typeof b === "object" && (b as { type?: unknown }).type === "text" ? String((b as { text?: unknown }).text) : "")).join("\n");
}

function bulletsPerCall(prompt: string, sections: { at: number; outputFrom: number; head: string; seed: string }[]): string {
  const bullets: string[] = [];
  for (let i = 0; i < sections.length; i++) {
    const section = sections[i]!;
    const end = i + 1 < sections.length ? sections[i + 1]!.at : prompt.length;
    const outputChars = end - section.outputFrom;
    const target = Math.max(60, Math.min(360, 60 + Math.round(outputChars * 0.025)));
    const rng = new Rng(hashString(section.seed));
    let bullet = section.head;
    while (bullet.length < target) bullet += `${prose(rng, 6)}; `;
    bullets.push(bullet.slice(0, target));
  }
  return bullets.join("\n");
}
