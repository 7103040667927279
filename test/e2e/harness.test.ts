/**
 * The end-to-end harness, tested against the real Pi 1.6 CLI: the scripted model server, isolated
 * workspaces, print / json / rpc runs, --session-id reruns, a dead endpoint, and the stored real
 * session fixture. Refresh the fixture with `UPDATE_PI_FIXTURES=1 npx vitest run test/e2e/harness.test.ts`.
 */
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { deadBaseUrl, startModelServer, toolResults } from "../helpers/model-server.ts";
import type { ModelServer } from "../helpers/model-server.ts";
import { createPiWorkspace } from "../helpers/pi-workspace.ts";
import { REPO_ROOT } from "../helpers/pi-process.ts";
import { assertRunOk, runPi } from "../helpers/run-pi.ts";
import { startPiRpc, type PiRpc } from "../helpers/pi-rpc.ts";
import { parseJsonl, type JsonRecord } from "../helpers/jsonl-records.ts";
import { FIXTURE_PLACEHOLDERS, PI_FIXTURES_DIR, makeRealSession, writeRealSessionFixture, type RealSession } from "../helpers/real-session.ts";

const PROBE = "test/fixtures/pi/probe-extension.ts";
const FIXTURE = join(PI_FIXTURES_DIR, "real-session.jsonl");

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(files: Record<string, string> = {}, extra: Parameters<typeof createPiWorkspace>[0] = {}) {
  const server = await startModelServer();
  const ws = createPiWorkspace({ baseUrl: server.baseUrl, files, ...extra });
  cleanups.push(() => ws.cleanup(), () => server.close());
  return { server, ws };
}

const messages = (entries: JsonRecord[]) => entries.filter((e) => e.type === "message").map((e) => e.message);
const toolCallsOf = (entries: JsonRecord[]) =>
  messages(entries)
    .filter((m) => m.role === "assistant")
    .flatMap((m) => m.content.filter((b: JsonRecord) => b.type === "toolCall"));

describe("model server (no Pi)", () => {
  let server: ModelServer;
  afterEach(async () => server?.close());

  const post = (body: unknown) =>
    fetch(`${server.baseUrl}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  it("streams chunks, routes by content, and falls back to a logged default", async () => {
    server = await startModelServer({ replies: [{ text: "from queue", toolCalls: [{ id: "c1", name: "read", arguments: { path: "x" } }] }] });
    server.route((r) => r.systemText.includes("SUMMARIZER"), [{ text: "summary" }]);
    const body = { model: "m", stream: true, stream_options: { include_usage: true }, messages: [{ role: "system", content: "SUMMARIZER" }, { role: "user", content: "q" }] };

    const routed = await (await post(body)).text();
    expect(routed).toContain('"content":"summary"');
    expect(routed.trimEnd().endsWith("data: [DONE]")).toBe(true);

    const queued = await (await post({ ...body, messages: [{ role: "user", content: [{ type: "text", text: "hello" }] }], tools: [{ type: "function", function: { name: "read" } }] })).text();
    const chunks = queued
      .split("\n\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => JSON.parse(l.slice(6)));
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks.find((c) => c.choices[0]?.delta?.tool_calls?.[0]?.id === "c1").choices[0].delta.tool_calls[0].function.name).toBe("read");
    expect(chunks.find((c) => c.choices[0]?.finish_reason).choices[0].finish_reason).toBe("tool_calls");
    expect(chunks.at(-1).usage.prompt_tokens).toBeGreaterThan(0);

    const fallback = await (await post(body)).text();
    expect(fallback).toContain('"content":"ok"');
    expect(server.warnings).toHaveLength(1);
    expect(server.requests.map((r) => r.source)).toEqual(["route", "queue", "default"]);
    expect(server.requests[1].lastUserText).toBe("hello");
    expect(server.requests[1].toolNames).toEqual(["read"]);
  });

  it("close() ends a stalled stream and later connections are refused", async () => {
    server = await startModelServer({ replies: [{ text: "abcdefghijklmnopqrstuvwxyz", chunkChars: 4, stallAfterChunks: 2 }] });
    const res = await post({ stream: true, messages: [] });
    const reader = res.body!.getReader();
    await reader.read();
    await server.waitForRequests(1);
    expect(server.openStreams()).toBe(1);
    const t0 = Date.now();
    await server.close();
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) break;
      })(),
    ).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(2_000);
    await expect(post({ stream: true, messages: [] })).rejects.toThrow();
  });

  it("answers scripted HTTP errors and garbage chunks", async () => {
    server = await startModelServer({ replies: [{ status: 429 }, { malformed: true, text: "x" }, { empty: true }] });
    expect((await post({ stream: true })).status).toBe(429);
    expect(await (await post({ stream: true })).text()).toContain("data: {this is not json");
    const empty = await (await post({ stream: true })).text();
    expect(empty).not.toContain('"content":"');
    expect(empty).toContain('"finish_reason":"stop"');
  });

  it("holds the replies to matching requests until released, answering the others meanwhile", async () => {
    server = await startModelServer({ replies: [{ text: "one" }, { text: "two" }, { text: "three" }, { text: "four" }] });
    const held = server.hold((r) => r.lastUserText === "wait");
    const answered: string[] = [];
    const ask = (content: string) =>
      post({ stream: true, messages: [{ role: "user", content }] })
        .then((res) => res.text())
        .then((text) => (answered.push(content), text));
    const first = ask("wait");
    const request = await held.arrived;
    expect(request.lastUserText).toBe("wait");
    const second = ask("wait");
    await server.waitForRequests(2);
    // Both logged, no reply chosen yet: the queue still holds every answer.
    expect(server.pending()).toBe(4);
    expect(await ask("go on")).toContain('"content":"one"');
    expect(answered).toEqual(["go on"]);
    expect(server.requests.map((r) => r.source)).toEqual([undefined, undefined, "queue"]);

    held.release();
    expect(await first).toContain('"content":"two"');
    expect(await second).toContain('"content":"three"');
    // Released, it holds no more.
    expect(await ask("wait")).toContain('"content":"four"');
    expect(answered).toEqual(["go on", "wait", "wait", "wait"]);
  });

  it("close() ends a held request's connection", async () => {
    server = await startModelServer();
    const held = server.hold();
    const waiting = post({ stream: true, messages: [] });
    await held.arrived;
    await server.close();
    await expect(waiting).rejects.toThrow();
    expect(server.requests[0]!.source).toBeUndefined();
  });
});

describe("real Pi, headless", () => {
  it("print mode: read + bash tool calls reach the model and the session file", async () => {
    const { server, ws } = await setup({ "notes.txt": "alpha\nNOTES-MARKER-1\n" });
    server.enqueue(
      { toolCalls: [{ name: "read", arguments: { path: "notes.txt" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "ls" } }] },
      { text: "Final answer: notes read." },
    );
    const run = assertRunOk(await runPi({ workspace: ws, prompts: ["Read the notes"], measure: true }));
    expect(run.durationMs).toBeLessThan(10_000);
    expect(run.stdout).toContain("Final answer: notes read.");
    expect(server.warnings).toEqual([]);

    // Ground truth: what the model saw.
    const reqs = server.chatRequests;
    expect(reqs).toHaveLength(3);
    const first = reqs[0].body;
    expect(first.stream).toBe(true);
    expect(first.stream_options).toEqual({ include_usage: true });
    expect(first.model).toBe("m");
    expect(first.messages!.map((m) => m.role)).toEqual(["system", "user"]);
    expect(reqs[0].lastUserText).toBe("Read the notes");
    expect(reqs[0].toolNames).toEqual(expect.arrayContaining(["read", "bash", "edit", "write"]));
    expect(reqs[0].systemText).toContain(ws.cwd);

    expect(reqs[1].body.messages!.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    const readResult = toolResults(reqs[1].body);
    expect(readResult).toHaveLength(1);
    expect(readResult[0].text).toContain("NOTES-MARKER-1");
    expect(reqs[1].body.messages![2].tool_calls![0]).toMatchObject({ id: readResult[0].toolCallId, function: { name: "read" } });
    expect(toolResults(reqs[2].body)[1].text).toContain("notes.txt");

    // The session file Pi wrote.
    expect(run.sessionFile).toBeDefined();
    expect(run.sessionFile!.startsWith(ws.sessionDir)).toBe(true);
    expect(existsSync(run.sessionFile!)).toBe(true);
    const [header, ...entries] = run.entries;
    expect(header).toMatchObject({ type: "session", version: 3, cwd: ws.cwd });
    expect(run.sessionFile!.endsWith(`_${header.id}.jsonl`)).toBe(true);
    const calls = toolCallsOf(entries);
    expect(calls.map((c) => c.name)).toEqual(["read", "bash"]);
    expect(calls[0].arguments).toEqual({ path: "notes.txt" });
    const results = messages(entries).filter((m) => m.role === "toolResult");
    expect(results.map((r) => [r.toolName, r.isError, r.toolCallId])).toEqual([
      ["read", false, calls[0].id],
      ["bash", false, calls[1].id],
    ]);
    expect(results[0].content[0].text).toContain("NOTES-MARKER-1");
    expect(messages(entries).map((m) => m.role)).toEqual(["system", "user", "assistant", "toolResult", "assistant", "toolResult", "assistant"]);
    // One linear branch: each entry's parent is the previous entry.
    entries.forEach((e, i) => expect(e.parentId).toBe(i === 0 ? null : entries[i - 1].id));
  });

  it("json mode streams the session header and events; project settings and -e extensions load", async () => {
    const { server, ws } = await setup(
      { "a.txt": "A" },
      { settings: { contextPrune: { enabled: true, keepRecentTurns: 3 } }, projectSettings: { contextPrune: { keepRecentTurns: 5 } } },
    );
    server.enqueue({ toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] }, { text: "done" });
    const run = assertRunOk(await runPi({ workspace: ws, mode: "json", prompts: ["go"], extension: PROBE }));
    const events = run.events!;
    expect(events[0]).toMatchObject({ type: "session", version: 3, cwd: ws.cwd });
    const types = new Set(events.map((e) => e.type));
    for (const t of ["agent_start", "turn_start", "message_start", "message_update", "message_end", "tool_execution_start", "tool_execution_end", "turn_end", "agent_end", "agent_settled", "entry_appended"]) {
      expect(types, t).toContain(t);
    }
    const probe = events.find((e) => e.type === "entry_appended" && e.entry.customType === "harness-probe");
    // Deep-merged global + project block: project settings loaded (trusted workspace).
    expect(probe!.entry.data.contextPrune).toEqual({ enabled: true, keepRecentTurns: 5 });
    expect(run.entries.some((e) => e.type === "custom" && e.customType === "harness-probe")).toBe(true);

    // Untrusted (--no-approve): the project block is skipped.
    server.enqueue({ text: "done" });
    const untrusted = assertRunOk(await runPi({ workspace: ws, mode: "json", prompts: ["go"], extension: PROBE, approve: false }));
    const probe2 = untrusted.events!.find((e) => e.type === "entry_appended" && e.entry.customType === "harness-probe");
    expect(probe2!.entry.data.contextPrune).toEqual({ enabled: true, keepRecentTurns: 3 });
  });

  it("rpc mode: prompt → agent_end, UI requests, handled slash command, entries", async () => {
    const { server, ws } = await setup();
    server.enqueue({ thinking: "pondering", text: "hello from rpc" });
    const rpc: PiRpc = await startPiRpc({ workspace: ws, extension: PROBE });
    cleanups.push(() => rpc.close());

    const out = await rpc.prompt("hi");
    expect(out.response).toMatchObject({ type: "response", command: "prompt", success: true, data: { disposition: "started" } });
    const end = out.events.find((e) => e.type === "agent_end");
    expect(end).toBeDefined();
    expect(out.events.at(-1)!.type).toBe("agent_settled");
    const assistant = end!.messages.find((m: JsonRecord) => m.role === "assistant");
    expect(assistant.content.map((b: JsonRecord) => b.type)).toEqual(["thinking", "text"]);
    expect(assistant.content[1].text).toBe("hello from rpc");

    expect(rpc.notifications()).toContainEqual({ message: "probe: contextPrune=null", notifyType: "warning" });
    expect(rpc.statuses()).toEqual({ probe: "probe ready (startup)" });

    const handled = await rpc.prompt("/probe abc");
    expect(handled.response.data).toEqual({ disposition: "handled" });
    expect(rpc.notifications().at(-1)).toEqual({ message: "probe command: abc", notifyType: "info" });
    expect(server.chatRequests).toHaveLength(1); // the slash command made no model call

    const state = await rpc.getState();
    expect(state.sessionFile.startsWith(ws.sessionDir)).toBe(true);
    const entries = await rpc.getEntries();
    expect(entries.filter((e) => e.type === "custom").map((e) => e.customType)).toEqual(["harness-probe", "harness-probe-command"]);
    const closed = await rpc.close();
    expect(closed.code).toBe(0);
    expect(rpc.junk).toEqual([]);
    const onDisk = parseJsonl(readFileSync(state.sessionFile, "utf8")).records;
    expect(onDisk.slice(1).map((e) => e.id)).toEqual(entries.map((e) => e.id));
  });

  it("runPi rpc mode drives prompts and returns the session", async () => {
    const { server, ws } = await setup();
    server.enqueue({ text: "one" }, { text: "two" });
    const run = assertRunOk(await runPi({ workspace: ws, mode: "rpc", prompts: ["first", "second"] }));
    expect(run.events!.filter((e) => e.type === "agent_end")).toHaveLength(2);
    expect(messages(run.entries).filter((m) => m.role === "assistant").map((m) => m.content[0].text)).toEqual(["one", "two"]);
  });

  it("--session-id reruns append to the same file, and the model sees the earlier turns", async () => {
    const { server, ws } = await setup();
    server.enqueue({ text: "first answer" }, { text: "second answer" });
    const a = assertRunOk(await runPi({ workspace: ws, prompts: ["first question"], sessionId: "harness-rerun" }));
    const b = assertRunOk(await runPi({ workspace: ws, prompts: ["second question"], sessionId: "harness-rerun" }));
    expect(b.sessionFile).toBe(a.sessionFile);
    expect(a.sessionFile!.endsWith("_harness-rerun.jsonl")).toBe(true);
    expect(ws.sessionFiles()).toEqual([a.sessionFile]);
    expect(b.entries.slice(0, a.entries.length)).toEqual(a.entries);
    expect(b.entries.filter((e) => e.type === "session")).toHaveLength(1);
    expect(b.entries[0].id).toBe("harness-rerun");
    const second = server.chatRequests[1].body.messages!;
    expect(second.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(second[2].content).toBe("first answer");
  });

  it("a dead endpoint fails fast (retry disabled)", async () => {
    const { server, ws } = await setup();
    await server.close();
    const dead = await runPi({ workspace: ws, prompts: ["anyone there?"], timeoutMs: 10_000 });
    expect(dead.timedOut).toBe(false);
    expect(dead.code).not.toBe(0);
    expect(dead.durationMs).toBeLessThan(5_000);
    expect(dead.stderr).toMatch(/ECONNREFUSED|Connection error/);

    ws.setBaseUrl(await deadBaseUrl());
    const dead2 = await runPi({ workspace: ws, prompts: ["again"], timeoutMs: 10_000 });
    expect(dead2.code).not.toBe(0);
  });

  it("a scripted HTTP 500 surfaces as a provider error", async () => {
    const { server, ws } = await setup();
    server.enqueue({ status: 500, body: { error: { message: "boom-500" } } });
    const run = await runPi({ workspace: ws, prompts: ["x"] });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("boom-500");
    const last = messages(run.entries).at(-1);
    expect(last).toMatchObject({ role: "assistant", stopReason: "error" });
  });
});

describe("real session fixture", () => {
  let real: RealSession;
  afterAll(() => real?.cleanup());

  const shape = (entries: JsonRecord[]) =>
    entries.map((e) => {
      if (e.type !== "message") return e.type;
      const m = e.message;
      if (m.role === "assistant") return `assistant[${m.content.map((b: JsonRecord) => (b.type === "toolCall" ? `toolCall:${b.name}` : b.type)).join(",")}]`;
      if (m.role === "toolResult") return `toolResult:${m.toolName}${m.isError ? ":error" : ""}`;
      return m.role;
    });

  it("makeRealSession produces a Pi 1.6 session with the scripted tool calls", async () => {
    real = await makeRealSession();
    const calls = toolCallsOf(real.entries);
    expect(calls.map((c) => [c.name, c.arguments])).toEqual([
      ["read", { path: "notes.txt" }],
      ["read", { path: "skills/demo/SKILL.md" }],
      ["bash", { command: "ls src && cat src/app.ts" }],
      ["read", { path: "missing.txt" }],
    ]);
    const results = messages(real.entries).filter((m) => m.role === "toolResult");
    expect(results.map((r) => r.isError)).toEqual([false, false, false, true]);
    expect(results[1].content[0].text).toContain("SKILL-MARKER-91c2");
    expect(results[2].content[0].text).toContain("answer = 42");
    expect(shape(real.entries)).toEqual([
      "session",
      "model_change",
      "thinking_level_change",
      "system",
      "user",
      "assistant[text,toolCall:read,toolCall:read]",
      "toolResult:read",
      "toolResult:read",
      "assistant[toolCall:bash]",
      "toolResult:bash",
      "assistant[toolCall:read]",
      "toolResult:read:error",
      "assistant[text]",
      "user",
      "assistant[text]",
    ]);
  });

  it("the stored fixture matches a fresh session's shape and holds no machine paths", async () => {
    if (process.env.UPDATE_PI_FIXTURES === "1") await writeRealSessionFixture(FIXTURE);
    expect(existsSync(FIXTURE)).toBe(true);
    const text = readFileSync(FIXTURE, "utf8");
    const { records, bad } = parseJsonl(text);
    expect(bad).toEqual([]);
    expect(shape(records)).toEqual(shape(real.entries));
    expect(records[0]).toMatchObject({ type: "session", version: 3, cwd: FIXTURE_PLACEHOLDERS.cwd });
    expect(text).not.toContain(REPO_ROOT);
    expect(text).not.toContain(tmpdir() + "/pi-e2e-");
    expect(text).toContain(`${FIXTURE_PLACEHOLDERS.cwd}/missing.txt`);
  });
});
