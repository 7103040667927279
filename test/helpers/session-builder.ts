// Builds Pi session fixtures (version 3) in code: entries with deterministic ids (e1, e2, …),
// tool-call ids (call_1, …) and message timestamps one second apart.
//
//   const s = new SessionBuilder().system("You are…").user("hi")
//     .assistant({ text: "reading", toolCalls: [{ id: "c1", name: "read", args: { path: "a.ts" } }] })
//     .toolResult("c1", "read", "contents")
//     .toolUse("bash", { command: "ls" }, "a.ts")   // assistant call + its result
//     .branchFrom("e2").user("another question");   // a second branch after e2
//   parseSessionText(s.toJsonl()); s.writeTo(file);
import { writeFileSync } from "node:fs";
import type { AnyEntry, SessionHeader } from "../../core/src/shapes/entries.ts";
import type {
  AgentMessage,
  AssistantBlock,
  AssistantMessage,
  ImageContent,
  SystemMessage,
  TextContent,
  ToolResultMessage,
} from "../../core/src/shapes/messages.ts";

interface ToolCallSpec {
  name: string;
  args?: Record<string, unknown>;
  /** Default: the next call_N. */
  id?: string;
}

export interface AssistantSpec {
  text?: string;
  thinking?: string;
  toolCalls?: ToolCallSpec[];
  /** Default: "toolUse" with tool calls, else "stop". */
  stopReason?: string;
}

export interface SessionBuilderOptions {
  sessionId?: string;
  cwd?: string;
  /** Epoch ms of the header; each entry is one `stepMs` later than the one before. */
  startTime?: number;
  stepMs?: number;
}

export type UserContent = string | (TextContent | ImageContent)[];

/** Content a context_edit may put in place of a message's content. */
export type EditContent = string | (TextContent | ImageContent)[] | AssistantBlock[];

const ZERO_USAGE = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

export class SessionBuilder {
  readonly header: SessionHeader;
  /** Every entry in file order (all branches). */
  readonly entries: AnyEntry[] = [];
  /** Ids of the tool calls of the most recent assistant message. */
  lastToolCallIds: string[] = [];

  private leaf: string | null = null;
  private entryCounter = 0;
  private callCounter = 0;
  private clock: number;
  private readonly stepMs: number;

  constructor(options: SessionBuilderOptions = {}) {
    this.clock = options.startTime ?? Date.UTC(2025, 0, 1, 12, 0, 0);
    this.stepMs = options.stepMs ?? 1000;
    this.header = {
      type: "session",
      version: 3,
      id: options.sessionId ?? "00000000-0000-4000-8000-000000000001",
      timestamp: new Date(this.clock).toISOString(),
      cwd: options.cwd ?? "/home/user/project",
    };
  }

  /** The entry the next one will be appended to (null: a new root). */
  get leafId(): string | null {
    return this.leaf;
  }

  /** Id of the most recently appended entry. */
  get lastId(): string {
    const last = this.entries[this.entries.length - 1];
    if (!last) throw new Error("SessionBuilder: no entries yet");
    return last.id;
  }

  entry(id: string): AnyEntry {
    const found = this.entries.find((entry) => entry.id === id);
    if (!found) throw new Error(`SessionBuilder: no entry ${id}`);
    return found;
  }

  /** Continue from an earlier entry (a new branch), or from nothing (`null`: a new root). */
  branchFrom(entryId: string | null): this {
    if (entryId !== null) this.entry(entryId);
    this.leaf = entryId;
    return this;
  }

  /** A Pi 1.6 system message (the prompt is persisted as a message entry). */
  system(text: string, extra: Record<string, unknown> = {}): this {
    return this.message((timestamp): SystemMessage => ({ role: "system", content: text, ...extra, timestamp }));
  }

  user(content: UserContent): this {
    return this.message((timestamp) => ({ role: "user", content, timestamp }));
  }

  assistant(spec: AssistantSpec | string): this {
    const { text, thinking, toolCalls = [], stopReason } = typeof spec === "string" ? { text: spec } : spec;
    const content: AssistantBlock[] = [];
    if (thinking !== undefined) content.push({ type: "thinking", thinking, thinkingSignature: `sig-${thinking.length}` });
    if (text !== undefined) content.push({ type: "text", text });
    this.lastToolCallIds = [];
    for (const call of toolCalls) {
      const id = call.id ?? `call_${++this.callCounter}`;
      this.lastToolCallIds.push(id);
      content.push({ type: "toolCall", id, name: call.name, arguments: call.args ?? {} });
    }
    return this.message(
      (timestamp): AssistantMessage => ({
        role: "assistant",
        content,
        api: "openai-completions",
        provider: "mock",
        model: "m",
        usage: ZERO_USAGE,
        stopReason: stopReason ?? (toolCalls.length > 0 ? "toolUse" : "stop"),
        timestamp,
      }),
    );
  }

  toolResult(toolCallId: string, toolName: string, text: string, options: { isError?: boolean; details?: unknown } = {}): this {
    return this.message(
      (timestamp): ToolResultMessage => ({
        role: "toolResult",
        toolCallId,
        toolName,
        content: [{ type: "text", text }],
        ...(options.details !== undefined ? { details: options.details } : {}),
        isError: options.isError ?? false,
        timestamp,
      }),
    );
  }

  /** An assistant message with one tool call, then its result. */
  toolUse(name: string, args: Record<string, unknown>, resultText: string, options: { isError?: boolean; id?: string } = {}): this {
    this.assistant({ toolCalls: [{ name, args, id: options.id }] });
    return this.toolResult(this.lastToolCallIds[0], name, resultText, { isError: options.isError });
  }

  /** A `custom` entry: extension state, never sent to the model. */
  custom(customType: string, data?: unknown): this {
    return this.append("custom", { customType, data });
  }

  /** A `custom_message` entry: sent to the model as a user message. */
  customMessage(customType: string, content: UserContent, details?: unknown, options: { display?: boolean } = {}): this {
    return this.append("custom_message", { customType, content, display: options.display ?? false, details });
  }

  compaction(spec: { firstKeptEntryId: string; summary?: string; tokensBefore?: number; systemMessage?: SystemMessage }): this {
    return this.append("compaction", {
      summary: spec.summary ?? "Summary of the conversation so far.",
      firstKeptEntryId: spec.firstKeptEntryId,
      tokensBefore: spec.tokensBefore ?? 1000,
      ...(spec.systemMessage ? { systemMessage: spec.systemMessage } : {}),
    });
  }

  /** Pi's own "retain none" compaction: firstKeptEntryId is the compaction's own id. */
  compactionKeepingNothing(summary?: string): this {
    return this.compaction({ firstKeptEntryId: `e${this.entryCounter + 1}`, summary });
  }

  /** Summary of an abandoned branch; call after branchFrom(). */
  branchSummary(fromId: string, summary: string): this {
    return this.append("branch_summary", { fromId, summary });
  }

  /** `null` removes the target's message from the context; anything else replaces its content. */
  contextEdit(targetId: string, content: EditContent | null): this {
    return this.append("context_edit", { targetId, replacement: content === null ? null : { content } });
  }

  label(targetId: string, label?: string): this {
    return this.append("label", { targetId, label });
  }

  modelChange(provider: string, modelId: string): this {
    return this.append("model_change", { provider, modelId });
  }

  /** A user shell command as Pi records it (`!cmd`; `!!cmd` with `excludeFromContext: true`). */
  shell(command: string, output: string, extra: Record<string, unknown> = {}): this {
    return this.message((timestamp) => ({ role: "bashExecution", command, output, exitCode: 0, cancelled: false, truncated: false, timestamp, ...extra }) as AgentMessage);
  }

  /** Any entry (unknown types, odd shapes); id, parentId and timestamp are filled in unless given. */
  raw(fields: { type: string } & Record<string, unknown>): this {
    return this.append(fields.type, fields);
  }

  /** The session as file text: header line (unless `withHeader: false`), one line per entry, trailing newline. */
  toJsonl(options: { withHeader?: boolean } = {}): string {
    const records: unknown[] = options.withHeader === false ? [...this.entries] : [this.header, ...this.entries];
    return records.map((record) => JSON.stringify(record) + "\n").join("");
  }

  /** Writes toJsonl() to `path` and returns the path. */
  writeTo(path: string): string {
    writeFileSync(path, this.toJsonl());
    return path;
  }

  private message(make: (timestamp: number) => AgentMessage): this {
    const timestamp = this.tick();
    return this.appendAt(timestamp, "message", { message: make(timestamp) });
  }

  private append(type: string, fields: Record<string, unknown>): this {
    return this.appendAt(this.tick(), type, fields);
  }

  private appendAt(time: number, type: string, fields: Record<string, unknown>): this {
    const entry = {
      type,
      id: `e${++this.entryCounter}`,
      parentId: this.leaf,
      timestamp: new Date(time).toISOString(),
      ...fields,
    } as AnyEntry;
    this.entries.push(entry);
    this.leaf = entry.id;
    return this;
  }

  private tick(): number {
    this.clock += this.stepMs;
    return this.clock;
  }
}
