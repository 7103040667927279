// A session whose tool call's arguments nest 2,500 levels deep, resumed in the real `pi`: Pi 1.6
// itself goes on with it (it refuses from about 3,500 levels: its own token estimate overflows the
// stack before any extension runs), and so must the pruner. On Anthropic's wire its fourth cache
// breakpoint hashes the prefix it marks; that hash once overflowed the stack at this depth (JSON
// with a replacer recurses deeper per level): an error on every request, and the breakpoint that
// keeps the previous request's cache entry readable was never placed.
import { afterEach, describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startModelServer, type AnthropicBlock, type ModelRequest, type ModelServer } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { startPiRpc, type PiRpc } from "../helpers/pi-rpc.ts";
import { SessionBuilder } from "../helpers/session-builder.ts";
import { EXTENSION, agentRequests } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES } from "../helpers/request-equality.ts";

const DEPTH = 2_500;
const DEEP = "@@DEEP@@";

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
let rpc: PiRpc | undefined;
afterEach(async () => {
  await rpc?.close();
  await server?.close();
  ws?.cleanup();
  rpc = server = ws = undefined;
});

function blocks(content: string | AnthropicBlock[]): AnthropicBlock[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

/** The message blocks an Anthropic body marks, as `<role>#<message>: <block type>`. */
function markedBlocks(req: ModelRequest): string[] {
  return (req.anthropic!.messages ?? []).flatMap((m, i) => blocks(m.content).flatMap((b) => (b.cache_control ? [`${m.role}#${i}: ${b.type}`] : [])));
}

describe("tool arguments nested 2,500 deep in a resumed session, on Anthropic's wire", () => {
  it("the next prompts are answered, the pruner reports no error, and its breakpoint at the previous request's end is kept", async () => {
    server = await startModelServer();
    server.respond = (req) => ({ text: `ok: ${req.lastUserText}` });
    ws = createPiWorkspace({
      baseUrl: server.baseUrl,
      prefix: "pi-deep-",
      model: { api: "anthropic-messages", id: "claude-sonnet-4-6" },
      settings: { contextPrune: { selfControl: NO_NUDGES } },
    });
    const b = new SessionBuilder({ sessionId: "s-deep", cwd: ws.cwd });
    b.user("run it");
    b.assistant({ toolCalls: [{ name: "bash", id: "call_1", args: { command: "echo hi", [DEEP]: true } }] });
    b.toolResult("call_1", "bash", "hi");
    b.assistant("It printed hi.");
    mkdirSync(ws.sessionDir, { recursive: true });
    const file = join(ws.sessionDir, "2026-11-01T09-00-00-000Z_deep.jsonl");
    writeFileSync(file, b.toJsonl().replace(`"${DEEP}":true`, `"extra":${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`));

    rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, args: ["--session", file, "--model", ws.modelRef], timeoutMs: 30_000 });
    await rpc.prompt("go on", { timeoutMs: 15_000 });
    await rpc.prompt("and then?", { timeoutMs: 15_000 });

    const answers = rpc.events().filter((e) => e.type === "message_end" && (e.message as { role: string }).role === "assistant");
    expect(answers.map((e) => (e.message as { content: { text?: string }[] }).content.map((c) => c.text).join(""))).toEqual(["ok: go on", "ok: and then?"]);
    expect(rpc.notifications().filter((n) => n.notifyType !== "info")).toEqual([]);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(2);
    // The deep call went out whole; the second request keeps a breakpoint where the first ended
    // (the entry it can surely read), besides Pi's own at its new end.
    expect(requests[0]!.rawBody).toContain(`"extra":${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`);
    expect(markedBlocks(requests[0]!)).toEqual(["user#4: text"]);
    expect(markedBlocks(requests[1]!)).toEqual(["user#4: text", "user#6: text"]);
  });
});
