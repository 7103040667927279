// Shared pieces of the real-Pi tests of the pruner: how the scripted model tells the summarizer's
// requests from the agent's, a well-behaved scripted summarizer, and one comparable shape for what
// the provider received and what a model view says was sent.
import type { ModelRequest, Reply } from "./model-server.ts";
import type { ChatRequestBody } from "./model-server.ts";
import { messageText } from "./model-server.ts";
import { contentText, type AgentMessage } from "../../core/src/shapes/messages.ts";

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

/** The agent's requests only, in order. */
export function agentRequests(requests: readonly ModelRequest[]): ModelRequest[] {
  return requests.filter((r) => r.url.includes("chat/completions") && !isSummarizerRequest(r));
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

/** The comparable shape of a message as the provider receives it: role and text (and the tool call id of a result). */
export function sentShape(req: ModelRequest): string[] {
  return (req.body.messages ?? [])
    .filter((m) => m.role !== "system" && m.role !== "developer")
    .map((m) => (m.role === "tool" ? `tool ${m.tool_call_id}: ${messageText(m)}` : m.role === "assistant" ? `assistant: ${messageText(m)}${(m.tool_calls ?? []).map((c) => ` [${c.id}]`).join("")}` : `user: ${messageText(m)}`));
}

export function viewShape(messages: readonly AgentMessage[]): string[] {
  return messages.map((m) => {
    switch (m.role) {
      case "toolResult":
        return `tool ${m.toolCallId}: ${contentText(m.content)}`;
      case "assistant":
        return `assistant: ${m.content.filter((b) => b.type === "text").map((b) => (b as { text: string }).text).join("")}${m.content.filter((b) => b.type === "toolCall").map((b) => ` [${(b as { id: string }).id}]`).join("")}`;
      case "user":
      case "custom":
        return `user: ${contentText(m.content)}`;
      default:
        return `${m.role}: ?`;
    }
  });
}
