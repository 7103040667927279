// Shared pieces of the real-Pi tests of the pruner: how the scripted model tells the summarizer's
// requests from the agent's, a well-behaved scripted summarizer, and one comparable shape for what
// the provider received and what a model view says was sent.
import { startModelServer, type ModelRequest, type ModelServer, type Reply } from "./model-server.ts";
import type { ChatMessage, ChatRequestBody } from "./model-server.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";
import { convertToLlm } from "@earendil-works/pi-coding-agent";
import { transformMessages } from "@earendil-works/pi-ai/api/transform-messages";
import { MOCK_MODEL_ID, MOCK_PROVIDER, createPiWorkspace, type PiWorkspace, type PiWorkspaceOptions } from "./pi-workspace.ts";

export const EXTENSION = "pi-extension";

/** The summarizer's requests carry our system prompt; everything else is the agent. */
export function isSummarizerRequest(req: ModelRequest): boolean {
  return req.systemText.includes("You compress the tool outputs") || req.systemText.includes("You merge several summaries");
}

/** Refs the summarizer was asked about, in order. */
export function refsAsked(req: ModelRequest): { ref: string; tool: string }[] {
  const text = req.body.messages?.map((m) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((c) => c.text ?? "").join(""))).join("\n") ?? "";
  return [...text.matchAll(/^### (t\d+) — (\S+)/gm)].map((m) => ({ ref: m[1]!, tool: m[2]! }));
}

/** A short, honest summary: one bullet per ref. */
export function goodSummary(req: ModelRequest): Reply & { text: string } {
  return { text: refsAsked(req).map(({ ref, tool }) => `- \`${ref}\` ${tool}: looked at it, nothing surprising`).join("\n") };
}

/** What a route of the scripted server answers from: a queue of replies, or a function. */
type Replies = Parameters<ModelServer["route"]>[1];

/** A scripted model server and a Pi workspace pointed at it. */
export interface ScriptedPi {
  server: ModelServer;
  ws: PiWorkspace;
}

/**
 * The start of most real-Pi tests of the pruner, and its end: `start` opens a scripted model server
 * whose summarizer answers from `summarizer` (a short honest summary by default) and whose agent
 * answers from `agent`, and a workspace pointed at it; `stop`, for afterEach, closes and removes
 * everything started since the last stop.
 */
export function scriptedPi() {
  // The server is kept as soon as it listens: a workspace that fails to be made still leaves it to close.
  let started: { server: ModelServer; ws?: PiWorkspace }[] = [];
  return {
    async start(agent: Replies, workspace: Omit<PiWorkspaceOptions, "baseUrl"> = {}, summarizer: Replies = goodSummary): Promise<ScriptedPi> {
      const server = await startModelServer();
      const pi: { server: ModelServer; ws?: PiWorkspace } = { server };
      started.push(pi);
      server.route(isSummarizerRequest, summarizer);
      server.route(() => true, agent);
      const ws = createPiWorkspace({ ...workspace, baseUrl: server.baseUrl });
      pi.ws = ws;
      return { server, ws };
    },
    async stop(): Promise<void> {
      const done = started;
      started = [];
      for (const { server, ws } of done) {
        await server.close();
        ws?.cleanup();
      }
    },
  };
}

/** The agent's requests only, in order, in either wire format the server speaks. */
export function agentRequests(requests: readonly ModelRequest[]): ModelRequest[] {
  return requests.filter((r) => r.api !== undefined && !isSummarizerRequest(r));
}

/** Every `tool` message of a request, as `{id, text}`. */
export function toolMessages(body: ChatRequestBody): { id: string; text: string }[] {
  return (body.messages ?? [])
    .filter((m) => m.role === "tool")
    .map((m) => ({ id: String(m.tool_call_id), text: typeof m.content === "string" ? m.content : (m.content ?? []).map((c) => c.text ?? "").join("") }));
}

/** Total characters of a request's messages: what the model was sent. */
export function requestChars(body: ChatRequestBody): number {
  let n = 0;
  for (const m of body.messages ?? []) {
    if (m.role === "system" || m.role === "developer") continue;
    if (typeof m.content === "string") n += m.content.length;
    else for (const c of m.content ?? []) n += c.text?.length ?? 0;
    for (const call of m.tool_calls ?? []) n += call.function.arguments.length;
  }
  return n;
}

/**
 * The comparable shape of a message as the provider receives it: role, text, an assistant's
 * reasoning and tool calls (id, name, arguments), a result's tool call id. Images are named, not
 * compared byte for byte.
 */
export function sentShape(req: ModelRequest): string[] {
  return (req.body.messages ?? [])
    .filter((m) => m.role !== "system" && m.role !== "developer")
    .map((m) => {
      if (m.role === "tool") return `tool ${m.tool_call_id}: ${partsText(m.content, "")}`;
      if (m.role === "assistant") {
        const reasoning = REASONING_FIELDS.map((f) => m[f]).find((v): v is string => typeof v === "string");
        return `assistant: ${partsText(m.content, "")}${reasoning !== undefined ? ` {thinking: ${reasoning}}` : ""}${(m.tool_calls ?? []).map((c) => ` [${c.id} ${c.function.name} ${c.function.arguments}]`).join("")}`;
      }
      return `${m.role}: ${partsText(m.content, "")}`;
    });
}

const REASONING_FIELDS = ["reasoning_content", "reasoning", "reasoning_text"] as const;

function partsText(content: ChatMessage["content"], separator: string): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((p) => (p.type === "text" ? (p.text ?? "") : p.type === "image_url" ? "[image]" : "")).join(separator);
}

/** The model the e2e workspaces configure (./pi-workspace.ts): what Pi converts the messages for. */
const E2E_MODEL = { provider: MOCK_PROVIDER, api: "openai-completions", id: MOCK_MODEL_ID, input: ["text"] } as unknown as Parameters<typeof transformMessages>[1];

/**
 * sentShape of the messages a model view says were sent, converted the way Pi converts them for
 * the provider: Pi's own convertToLlm (custom messages and summaries become user messages) and
 * transformMessages (errored and aborted answers left out, unanswered calls answered), then the
 * chat-completions rules of Pi's openai-completions provider for what each message carries.
 */
export function viewShape(messages: readonly AgentMessage[]): string[] {
  const llm = transformMessages(convertToLlm(messages as unknown as Parameters<typeof convertToLlm>[0]), E2E_MODEL) as unknown as AgentMessage[];
  const out: string[] = [];
  for (const m of llm) {
    switch (m.role) {
      case "toolResult": {
        const text = m.content.filter((b) => b.type === "text").map((b) => (b as { text: string }).text).join("\n");
        const images = m.content.some((b) => b.type === "image");
        out.push(`tool ${m.toolCallId}: ${text.trim().length > 0 ? text : images ? "(see attached image)" : "(no tool output)"}`);
        break;
      }
      case "assistant": {
        const text = m.content.filter((b) => b.type === "text" && b.text.trim().length > 0).map((b) => (b as { text: string }).text).join("");
        const thinking = m.content.filter((b) => b.type === "thinking" && b.thinking.trim().length > 0) as { thinking: string; thinkingSignature?: string }[];
        const field = thinking[0]?.thinkingSignature;
        const reasoning = thinking.length > 0 && (REASONING_FIELDS as readonly (string | undefined)[]).includes(field) ? ` {thinking: ${thinking.map((b) => b.thinking).join("\n")}}` : "";
        const calls = m.content.filter((b) => b.type === "toolCall") as { id: string; name: string; arguments: unknown }[];
        // An answer with neither text nor calls is not sent at all.
        if (text.length === 0 && calls.length === 0) break;
        out.push(`assistant: ${text}${reasoning}${calls.map((c) => ` [${c.id} ${c.name} ${JSON.stringify(c.arguments)}]`).join("")}`);
        break;
      }
      case "user": {
        if (typeof m.content === "string") {
          out.push(`user: ${m.content}`);
          break;
        }
        const parts = m.content.filter((b) => b.type !== "text" || b.text.length > 0);
        if (parts.length === 0) break;
        out.push(`user: ${parts.map((b) => (b.type === "text" ? b.text : "[image]")).join("")}`);
        break;
      }
      default:
        out.push(`${m.role}: ?`);
    }
  }
  return out;
}
