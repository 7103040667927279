// The pruner's cache breakpoint at the frontier, in the real `pi` binary: the bodies the scripted
// model server logged carry a fourth `cache_control` on the block just before the oldest pending
// tool result, keep one at that old frontier on the first request after a flush, and carry none
// added where the provider caches prefixes by itself.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnthropicBlock, ChatMessage, ModelRequest, ModelServer, Reply } from "../helpers/model-server.ts";
import type { MockModelOptions } from "../helpers/pi-workspace.ts";
import { assertRunOk, runPi } from "../helpers/run-pi.ts";
import { EXTENSION, isSummarizerRequest, scriptedPi } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES } from "../helpers/request-equality.ts";
import { markerPaths } from "../helpers/provider-cache-rules.ts";
import { EFFORT_COMPAT, OAUTH_KEY } from "../fixtures/payloads/scenarios.ts";

const RECORDER = "test/fixtures/payloads/recorder.ts";
/** Pi's built-in claude-opus-5 as a mock model: effort levels as mid-conversation system messages. */
const OPUS_5 = { api: "anthropic-messages", id: "claude-opus-5", extra: { compat: EFFORT_COMPAT } } as const;

const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");

const pi = scriptedPi();
afterEach(pi.stop);

/** Two tool turns, a final reply, a flush by command, then one more prompt: the agent's requests, the server, and what reached `before_provider_request` after the pruner. */
async function runSession(model: MockModelOptions): Promise<{ requests: ModelRequest[]; server: ModelServer; hooked: RecordedRequest[] }> {
  const agent: Reply[] = [
    { thinking: "Start with a.", text: "Reading a.", toolCalls: [{ id: "toolu_a", name: "read", arguments: { path: "src/a.ts" } }] },
    { thinking: "Now b.", text: "Reading b.", toolCalls: [{ id: "toolu_b", name: "read", arguments: { path: "src/b.ts" } }] },
    { thinking: "Both read.", text: "Read both." },
    { text: "Next: the tests." },
  ];
  const { server, ws } = await pi.start(agent, {
    files: { "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60) },
    // Batches stay pending until `/pruner now`, so the frontier is known at every request.
    settings: { contextPrune: { pruneOn: "on-demand", cacheAware: false, selfControl: NO_NUDGES } },
    model,
  });
  const log = join(ws.root, "payloads.jsonl");
  // The recorder runs after the pruner: it logs the payloads as the pruner left them.
  const run = await runPi({ workspace: ws, model: ws.modelRef, extension: [EXTENSION, RECORDER], prompts: ["read a and b", "/pruner now", "what next?"], env: { PI_PRUNER_PAYLOAD_LOG: log }, timeoutMs: 30_000 });
  assertRunOk(run);
  expect(server.warnings).toEqual([]);
  const agentRequests = server.chatRequests.filter((r) => !isSummarizerRequest(r));
  expect(agentRequests).toHaveLength(4);
  expect(server.chatRequests.filter(isSummarizerRequest).length).toBeGreaterThan(0);
  const hooked = readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line) as RecordedRequest);
  return { requests: agentRequests, server, hooked };
}

interface RecordedRequest {
  model: { api: string; provider: string; id: string };
  payload: unknown;
}

/** The markers of an Anthropic body by what they mark, outside system messages: `tools`, `system[i]`, `<role>: <block type> <id>`. */
function markedContent(req: ModelRequest): string[] {
  const body = req.anthropic!;
  return [
    ...(body.tools ?? []).filter((t) => t.cache_control).map(() => "tools"),
    ...blocks(body.system ?? []).flatMap((s, i) => (s.cache_control ? [`system[${i}]`] : [])),
    ...(body.messages ?? []).filter((m) => m.role !== "system").flatMap((m) => blocks(m.content).filter((b) => b.cache_control).map((b) => `${m.role}: ${b.type}${b.id ? ` ${b.id}` : ""}${b.tool_use_id ? ` ${b.tool_use_id}` : ""}`)),
  ];
}

function blocks(content: string | AnthropicBlock[]): AnthropicBlock[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

/** Where an Anthropic body carries markers, as `tools[i]`, `system[i]`, `<role>#<message>: <block type> <id>`. */
function anthropicMarkers(req: ModelRequest): string[] {
  const body = req.anthropic!;
  const out: string[] = [];
  body.tools?.forEach((t, i) => t.cache_control && out.push(`tools[${i}]`));
  blocks(body.system ?? []).forEach((s, i) => s.cache_control && out.push(`system[${i}]`));
  body.messages?.forEach((m, i) =>
    blocks(m.content).forEach((b) => b.cache_control && out.push(`${m.role}#${i}: ${b.type}${b.id ? ` ${b.id}` : ""}${b.tool_use_id ? ` ${b.tool_use_id}` : ""}`)),
  );
  return out;
}

const lastTool = (req: ModelRequest) => `tools[${req.anthropic!.tools!.length - 1}]`;

describe("the frontier breakpoint in real Pi", () => {
  it("anthropic-messages: a fourth breakpoint before the oldest pending result, kept at the old frontier after the flush", async () => {
    const [first, second, third, fourth] = (await runSession({ api: "anthropic-messages" })).requests;

    // Nothing pending yet: Pi's three breakpoints only.
    expect(anthropicMarkers(first!)).toEqual([lastTool(first!), "system[0]", "user#0: text"]);
    // a's result pending: the block before it, a's call, is marked; the frontier moved from the end
    // of the first request, which keeps its breakpoint too, and the last tool's gives way (four at most).
    expect(anthropicMarkers(second!)).toEqual(["system[0]", "user#0: text", "assistant#1: tool_use toolu_a", "user#2: tool_result toolu_a"]);
    // a and b pending: the frontier is still before a's result; nothing moved, the tool's breakpoint is back.
    expect(anthropicMarkers(third!)).toEqual([lastTool(third!), "system[0]", "assistant#1: tool_use toolu_a", "user#4: tool_result toolu_b"]);

    // After `/pruner now` stubbed both results (and its summaries joined the history), nothing is
    // pending: the old frontier keeps its breakpoint, the new prompt has Pi's.
    const results = fourth!.anthropic!.messages!.flatMap((m) => blocks(m.content)).filter((b) => b.type === "tool_result");
    expect(results.map((b) => JSON.stringify(b.content))).toEqual([expect.not.stringContaining("a line 30"), expect.not.stringContaining("b line 30")]);
    expect(JSON.stringify(third!.anthropic!.messages)).toContain("a line 30");
    expect(anthropicMarkers(fourth!)).toEqual([lastTool(fourth!), "system[0]", "assistant#1: tool_use toolu_a", "user#8: text"]);
    // And the scripted cache read the history up to it, beyond the tools, system and first prompt.
    expect(fourth!.anthropicUsage!.cache_read_input_tokens).toBeGreaterThan(first!.anthropicUsage!.cache_creation_input_tokens);
  }, 60_000);

  it("an effort model with an OAuth login: every body within four markers, the frontier marked, and pi exits 0", async () => {
    const { requests, hooked } = await runSession({ ...OPUS_5, apiKey: OAUTH_KEY });
    // Pi's own four: the last tool, both system blocks (the Claude Code identity and the prompt), the end; effort messages in between.
    const first = requests[0]!.anthropic!;
    expect(blocks(first.system!).map((b) => b.cache_control !== undefined)).toEqual([true, true]);
    expect(first.messages!.map((m) => m.role)).toEqual(["user", "system"]);
    for (const req of requests) expect(markerPaths(req.anthropic).length).toBeLessThanOrEqual(4);
    expect(markedContent(requests[0]!)).toEqual(["tools", "system[0]", "system[1]", "user: text"]);
    // a pending: a's call is marked, and the first request's end (the frontier that moved) kept; the
    // tool's and the first system block's breakpoints give way (the prompt's caches what precedes it).
    expect(markedContent(requests[1]!)).toEqual(["system[1]", "user: text", "assistant: tool_use toolu_a", "user: tool_result toolu_a"]);
    // a and b pending: the frontier stayed; only the tool's gives way.
    expect(markedContent(requests[2]!)).toEqual(["system[0]", "system[1]", "assistant: tool_use toolu_a", "user: tool_result toolu_b"]);
    // After `/pruner now` nothing is pending: the old frontier keeps its breakpoint, beside the new prompt's.
    expect(markedContent(requests[3]!)).toEqual(["system[0]", "system[1]", "assistant: tool_use toolu_a", "user: text"]);
    // Only the agent's requests pass through before_provider_request (the summarizer's do not), each for
    // the session model, and what the hook handed on is what the server received.
    expect(hooked.map((h) => h.model)).toEqual(requests.map(() => expect.objectContaining({ api: "anthropic-messages", id: "claude-opus-5" })));
    expect(hooked.map((h) => h.payload)).toEqual(requests.map((r) => expect.objectContaining(r.anthropic)));
  }, 60_000);

  it("an effort model with an API key: the frontier marked on the same requests and blocks as a plain Anthropic model's", async () => {
    const plain = await runSession({ api: "anthropic-messages", id: "claude-sonnet-4-6" });
    const effort = await runSession(OPUS_5);
    expect(effort.requests.map((r) => r.anthropic!.messages!.some((m) => m.role === "system"))).toEqual([true, true, true, true]);
    expect(effort.requests.map(markedContent)).toEqual(plain.requests.map(markedContent));
    expect(effort.requests.map(markedContent)[1]).toContain("assistant: tool_use toolu_a");
    for (const req of effort.requests) expect(markerPaths(req.anthropic).length).toBeLessThanOrEqual(4);
  }, 90_000);

  it("openai-completions with Anthropic-style cache control: the marker goes on the text before the pending result", async () => {
    const [, second, third] = (await runSession({ extra: { compat: { cacheControlFormat: "anthropic" } } })).requests;
    const marked = (req: ModelRequest) => [
      ...(req.body.tools ?? []).flatMap((t, i) => ((t as { cache_control?: unknown }).cache_control ? [`tools[${i}]`] : [])),
      ...(req.body.messages ?? []).flatMap((m: ChatMessage, i) => (Array.isArray(m.content) ? m.content.filter((p) => p.cache_control !== undefined).map(() => `${m.role}#${i}`) : [])),
    ];
    const lastChatTool = (req: ModelRequest) => `tools[${req.body.tools!.length - 1}]`;
    // The assistant's "Reading a." is the last text before a's result; the first request's end keeps
    // its breakpoint (the frontier moved from there), the last tool's gives way.
    expect(marked(second!)).toEqual(["system#0", "user#1", "assistant#2", "tool#3"]);
    expect(marked(third!)).toEqual([lastChatTool(third!), "system#0", "assistant#2", "tool#5"]);
  }, 60_000);

  it("openai-completions without cache control (automatic prefix caching): no marker added to any body", async () => {
    const { requests, server } = await runSession({});
    for (const req of server.chatRequests) expect(req.rawBody).not.toContain("cache_control");
    expect(requests).toHaveLength(4);
  }, 60_000);
});
