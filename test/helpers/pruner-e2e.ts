// Shared pieces of the real-Pi tests of the pruner: how the scripted model tells the summarizer's
// requests from the agent's, and a well-behaved scripted summarizer.
import type { ModelRequest, Reply } from "./model-server.ts";
import type { ChatRequestBody } from "./model-server.ts";

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
