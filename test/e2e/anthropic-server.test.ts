// The scripted model server speaking Anthropic Messages to the real `pi` binary through Pi's own
// `anthropic-messages` provider: thinking, text and tool use stream back into the session, and the
// logged bodies are what Pi sends an Anthropic model (blocks, breakpoints, signed thinking).
import { afterEach, describe, expect, it } from "vitest";
import { startModelServer, toolResults, type AnthropicBlock, type AnthropicRequestBody, type ModelServer } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { assertRunOk, runPi } from "../helpers/run-pi.ts";

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
afterEach(async () => {
  await server?.close();
  ws?.cleanup();
  server = undefined;
  ws = undefined;
});

const SONNET_PRICES = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

function blocks(content: string | AnthropicBlock[]): AnthropicBlock[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

describe("the scripted server as an Anthropic Messages endpoint", () => {
  it("a session with thinking, text and a tool call: Pi's three breakpoints, and the signed thinking sent back", async () => {
    server = await startModelServer({
      replies: [
        { thinking: "The notes file should answer it.", text: "Reading the notes.", toolCalls: [{ id: "toolu_read_1", name: "read", arguments: { path: "notes.txt" } }] },
        { thinking: "Found the marker.", text: "The marker is NOTES-MARKER-7." },
      ],
    });
    ws = createPiWorkspace({
      baseUrl: server.baseUrl,
      files: { "notes.txt": "alpha\nNOTES-MARKER-7\n" },
      model: { api: "anthropic-messages", id: "claude-sonnet-4-6", cost: SONNET_PRICES },
    });
    const run = assertRunOk(await runPi({ workspace: ws, model: ws.modelRef, prompts: ["What marker is in notes.txt?"] }));
    expect(run.stdout).toContain("The marker is NOTES-MARKER-7.");
    expect(server.warnings).toEqual([]);

    const [first, second] = server.chatRequests;
    expect(server.chatRequests).toHaveLength(2);
    expect(first!.api).toBe("anthropic-messages");
    expect(first!.url.replace(/\?.*$/, "")).toBe("/v1/messages");
    const sent: AnthropicRequestBody = first!.anthropic!;
    expect(sent.model).toBe("claude-sonnet-4-6");
    expect(sent.stream).toBe(true);
    expect(sent.thinking?.type).toBe("enabled");

    // Pi's three breakpoints: the last tool, the system block, the last block of the last message.
    const marked = (list: readonly { cache_control?: unknown }[]) => list.map((b) => b.cache_control !== undefined);
    expect(marked(sent.tools!)).toEqual([...sent.tools!.slice(1).map(() => false), true]);
    expect(marked(blocks(sent.system!))).toEqual([true]);
    expect(sent.messages!.map((m) => m.role)).toEqual(["user"]);
    expect(marked(blocks(sent.messages![0]!.content))).toEqual([true]);
    // The normalised view reads like a chat-completions body.
    expect(first!.lastUserText).toBe("What marker is in notes.txt?");
    expect(first!.systemText).toContain(ws.cwd);
    expect(first!.toolNames).toEqual(expect.arrayContaining(["read", "bash", "edit", "write"]));

    // The answer came back whole: the next body carries the thinking with its signature, the text, the call and its result.
    const next = second!.anthropic!;
    expect(next.messages!.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    const answer = blocks(next.messages![1]!.content);
    expect(answer.map((b) => b.type)).toEqual(["thinking", "text", "tool_use"]);
    expect(answer[0]).toMatchObject({ thinking: "The notes file should answer it.", signature: expect.stringMatching(/^sig-/) });
    expect(answer[2]).toMatchObject({ id: "toolu_read_1", name: "read", input: { path: "notes.txt" } });
    const results = blocks(next.messages![2]!.content);
    expect(results.map((b) => [b.type, b.tool_use_id])).toEqual([["tool_result", "toolu_read_1"]]);
    expect(marked(results)).toEqual([true]);
    expect(marked(answer)).toEqual([false, false, false]);
    expect(toolResults(second!.body)).toEqual([{ toolCallId: "toolu_read_1", text: expect.stringContaining("NOTES-MARKER-7") }]);
    expect(second!.body.messages![2]).toMatchObject({ role: "assistant", reasoning_content: "The notes file should answer it." });

    // Usage: the second request reads the tools and system cached by the first, and Pi records it.
    expect(first!.anthropicUsage!.cache_read_input_tokens).toBe(0);
    expect(first!.anthropicUsage!.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(second!.anthropicUsage!.cache_read_input_tokens).toBe(first!.anthropicUsage!.cache_creation_input_tokens);
    const answers = run.entries.filter((e) => e.type === "message" && (e.message as { role?: string }).role === "assistant").map((e) => e.message as { usage: { cacheRead: number; cacheWrite: number; cost: { total: number } } });
    expect(answers.map((a) => a.usage.cacheRead)).toEqual([0, second!.anthropicUsage!.cache_read_input_tokens]);
    expect(answers.map((a) => a.usage.cacheWrite)).toEqual([first!.anthropicUsage!.cache_creation_input_tokens, second!.anthropicUsage!.cache_creation_input_tokens]);
    // Priced at the registry prices the workspace configured.
    expect(answers[0]!.usage.cost.total).toBeGreaterThan(0);
  }, 30_000);

  it("a body with more than four cache_control markers gets Anthropic's 400, whatever the script says", async () => {
    server = await startModelServer({ replies: [{ text: "never sent" }, { text: "sent" }] });
    const marker = { type: "ephemeral" };
    const post = (markers: number) =>
      fetch(`${server!.baseUrl.replace(/\/v1$/, "")}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "claude-opus-5",
          stream: false,
          system: [{ type: "text", text: "You are Claude Code.", cache_control: marker }, { type: "text", text: "A prompt.", ...(markers > 4 ? { cache_control: marker } : {}) }],
          tools: [{ name: "read", input_schema: {}, cache_control: marker }],
          messages: [
            { role: "user", content: [{ type: "text", text: "hi", cache_control: marker }] },
            { role: "system", content: [{ type: "tool_removal", tool: { type: "tool_reference", name: "Bash" }, cache_control: marker }] },
          ],
        }),
      });
    const refused = await post(5);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ type: "error", error: { type: "invalid_request_error", message: "A maximum of 4 blocks with cache_control may be provided. Found 5." } });
    const accepted = await post(4);
    expect(accepted.status).toBe(200);
    expect(JSON.stringify(await accepted.json())).toContain("never sent");
  }, 30_000);

  it("a scripted HTTP error reaches Pi as Anthropic's error body", async () => {
    server = await startModelServer({ replies: [{ status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "too many breakpoints" } } }] });
    ws = createPiWorkspace({ baseUrl: server.baseUrl, model: { api: "anthropic-messages" } });
    const run = await runPi({ workspace: ws, model: ws.modelRef, prompts: ["hi"] });
    expect(`${run.stdout}${run.stderr}`).toContain("too many breakpoints");
  }, 30_000);
});
