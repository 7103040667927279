// An in-process stand-in for Pi's agent loop, driving the real extension entry point
// (pi-extension/src/index.ts) the way Pi 1.6 does: `session_start` once, `context` before every
// model request (with a deep copy of the messages Pi would send, system messages left out),
// `turn_end` after each assistant message and its tool results (the drafts it returns are appended
// after them, in order), and slash commands through the registered handler. The session is a single
// branch of entries; Pi's context for it is core's `buildPiContext` (tested against Pi's own builder).
// The model is not called: the script provides every assistant message and tool result. The
// summarizer's calls reach a scripted in-process model that answers with deterministic summaries
// and counts the characters in and out.
import { mkdirSync, openSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import piPruner from "../../pi-extension/src/index.ts";
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
}

export interface ReplayHostOptions {
  /** A fresh temporary folder for the agent dir, the workspace and the session dir. */
  root: string;
  /** The `contextPrune` settings block; `null` runs without the extension (Pi alone). */
  contextPrune: Record<string, unknown> | null;
  contextWindow?: number;
  /** Fire `context` before each request (off when only the session file is wanted). */
  fireContext?: boolean;
}

const START_TIME = Date.UTC(2025, 2, 3, 9, 0, 0);

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

  private constructor(options: ReplayHostOptions) {
    this.options = options;
    this.agentDir = join(options.root, "agent");
    this.cwd = join(options.root, "workspace");
    this.sessionDir = join(options.root, "sessions");
    this.sessionId = `bench-${hashString(options.root).toString(16)}`;
    for (const dir of [this.agentDir, this.cwd, this.sessionDir]) mkdirSync(dir, { recursive: true });
    this.header = { type: "session", version: 3, id: this.sessionId, timestamp: new Date(this.clock).toISOString(), cwd: this.cwd };
  }

  static async create(options: ReplayHostOptions): Promise<ReplayHost> {
    const host = new ReplayHost(options);
    if (options.contextPrune !== null) {
      const settings = { contextPrune: options.contextPrune };
      const fd = openSync(join(host.agentDir, "settings.json"), "w");
      writeSync(fd, JSON.stringify(settings, null, 2));
      closeSync(fd);
      piPruner(host.api() as never);
    }
    // The extension reads its settings from PI_CODING_AGENT_DIR at session_start, as in Pi.
    const previous = process.env.PI_CODING_AGENT_DIR;
    process.env.PI_CODING_AGENT_DIR = host.agentDir;
    try {
      await host.fire("session_start", { type: "session_start", reason: "startup" });
    } finally {
      if (previous === undefined) delete process.env.PI_CODING_AGENT_DIR;
      else process.env.PI_CODING_AGENT_DIR = previous;
    }
    return host;
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
        host.append("custom", { customType, data });
      },
      sendMessage(message: { customType: string; content: unknown; display?: boolean; details?: unknown }) {
        host.append("custom_message", { customType: message.customType, content: message.content, display: message.display ?? false, details: message.details });
      },
      registerTool(tool: { name: string; description?: string; parameters?: unknown; promptSnippet?: string; promptGuidelines?: string[] }) {
        const declaration = JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters });
        const prompt = (tool.promptSnippet ?? "").length + (tool.promptGuidelines ?? []).join("\n").length;
        host.tools.push({ name: tool.name, headChars: declaration.length + prompt });
      },
      registerCommand(name: string, command: { handler: (args: string, ctx: unknown) => unknown }) {
        host.commands.set(name, command.handler);
      },
      events: { emit() {}, on() {} },
      getSettings: () => ({ contextPrune: host.options.contextPrune }),
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
    const model = { provider: "mock", id: "m", api: "anthropic-messages", contextWindow: this.options.contextWindow ?? 200_000, maxTokens: 8192 };
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
      },
      getContextUsage: () => {
        const tokens = estimateTokens(host.lastRequestChars);
        const contextWindow = model.contextWindow;
        return { tokens, contextWindow, percent: (tokens / contextWindow) * 100 };
      },
      modelRegistry: {
        find: () => model,
        streamSimple: (_model: unknown, request: { systemPrompt: string; messages: { content: string }[] }) => host.summarizerStream(request),
        complete: async (_model: unknown, request: { systemPrompt: string; messages: { content: string }[] }) => host.summarizerStream(request).result(),
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
  private summarizerStream(request: { systemPrompt: string; messages: { content: string }[] }) {
    const prompt = request.messages.map((m) => (typeof m.content === "string" ? m.content : "")).join("\n");
    const text = scriptedSummary(prompt);
    this.summarizerCalls.push({ inputChars: request.systemPrompt.length + prompt.length, outputChars: text.length });
    const message = {
      role: "assistant",
      content: [{ type: "text", text }],
      stopReason: "stop",
      usage: { input: estimateTokens(request.systemPrompt.length + prompt.length), output: estimateTokens(text.length), cost: { total: 0 } },
      timestamp: this.clock,
    };
    return {
      async *[Symbol.asyncIterator]() {
        yield { type: "start" };
        yield { type: "done", message };
      },
      result: async () => message,
    };
  }

  private async fire(event: string, payload: Record<string, unknown>): Promise<unknown> {
    let result: unknown;
    for (const handler of this.handlers.get(event) ?? []) {
      const r = await handler(payload, this.context());
      if (r !== undefined) result = r;
    }
    return result;
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
    return sent;
  }

  /** Records the size of the request just sent (what getContextUsage reports afterwards). */
  noteRequestChars(chars: number): void {
    this.lastRequestChars = chars;
  }

  user(text: string): void {
    this.turnIndex = 0;
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
      resultEntryIds.push(this.appendMessage(result).id);
    });
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
    const ctx = this.context();
    await handler(args, ctx);
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
 * A deterministic summary of a summarizer prompt: for a batch, one bullet per `### tN — tool`
 * section, sized 60–360 characters by the output it describes (real summarizers write a sentence or
 * two per call); for a fusion of summaries, the bullets kept and shortened.
 */
export function scriptedSummary(prompt: string): string {
  const sections = [...prompt.matchAll(/^### (t\d+) — (\S+)(?: \(failed\))?\nArguments: (.*)\nOutput:\n/gm)];
  if (sections.length === 0) {
    const bullets = prompt.split("\n").filter((l) => /^- `t\d+`/.test(l));
    return bullets.map((b) => b.slice(0, 200)).join("\n") || "- nothing of note";
  }
  const bullets: string[] = [];
  for (let i = 0; i < sections.length; i++) {
    const m = sections[i]!;
    const start = m.index! + m[0].length;
    const end = i + 1 < sections.length ? sections[i + 1]!.index! : prompt.length;
    const outputChars = end - start;
    const target = Math.max(60, Math.min(360, 60 + Math.round(outputChars * 0.025)));
    const rng = new Rng(hashString(m[0]));
    let bullet = `- \`${m[1]}\` ${m[2]} ${m[3]!.slice(0, 60)}: `;
    while (bullet.length < target) bullet += `${prose(rng, 6)}; `;
    bullets.push(bullet.slice(0, target));
  }
  return bullets.join("\n");
}
