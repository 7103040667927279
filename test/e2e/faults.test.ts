// Summarizer faults in the real `pi`, beyond those in pruner.test.ts (HTTP 500, a stall, an empty
// answer, all flushed with /pruner now): here the flush runs where it runs by default, at the
// agent's final reply, and the summarizer's connection is refused, rate-limited (429), sends a
// chunk that is not JSON, is cut off (`finish_reason: length`), drops the connection mid-stream,
// or writes a summary that invents refs.
//
// For each failure: the agent's turn completes; the raw outputs stay in the next request; nothing
// of the batch is persisted (no index entry without its summary, no frontier); exactly one warning
// (when the failure is applied, at the next prompt's start); and the next flush (at the next final
// reply, applied at the prompt after it) retries and summarizes normally.
import { afterEach, describe, expect, it } from "vitest";
import { createServer as createTcpServer, connect, type Server as TcpServer, type Socket } from "node:net";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { deadBaseUrl, startModelServer, type ModelServer, type ModelRequest, type Reply } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { startPiRpc, type PiRpc } from "../helpers/pi-rpc.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, goodSummary, isSummarizerRequest, refsAsked, toolMessages } from "../helpers/pruner-e2e.ts";
import { persistedProblems, pruneEntries } from "../helpers/pruner-invariants.ts";
import { expectRequestViewsMatch } from "../helpers/request-equality.ts";

const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
let proxy: TcpServer | undefined;
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
  await new Promise<void>((r) => (proxy ? proxy.close(() => r()) : r()));
  await server?.close();
  ws?.cleanup();
  proxy = server = ws = undefined;
});

/** Forwards 127.0.0.1:<port> to the model server: a provider that was down and is back. */
async function bringUp(port: number, target: ModelServer): Promise<void> {
  proxy = createTcpServer((client) => {
    const upstream = connect(target.port, "127.0.0.1");
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => (client.destroy(), upstream.destroy());
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve, reject) => proxy!.once("error", reject).listen(port, "127.0.0.1", () => resolve()));
}

interface Scenario {
  /** The summarizer's answer while the fault lasts. */
  fault?: Reply;
  /** The summarizer goes to a provider on which nothing listens until the fault ends. */
  refused?: boolean;
  settings?: Record<string, unknown>;
}

async function setup(scenario: Scenario) {
  server = await startModelServer();
  let failing = true;
  server.route(isSummarizerRequest, (req: ModelRequest) => (failing && scenario.fault ? scenario.fault : goodSummary(req)));
  server.route(() => true, [
    { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] },
    { text: "Both read." }, // final reply: the flush runs, the summarizer fails
    { text: "Going on." }, // final reply: the flush runs again and succeeds
    { text: "Done." },
  ]);
  ws = createPiWorkspace({
    baseUrl: server.baseUrl,
    files: { "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60) },
    // Every final reply flushes (cacheAware off), so each fault meets a flush on a small script.
    settings: { contextPrune: { pruneOn: "agent-message", cacheAware: false, ...(scenario.settings ?? {}) } },
  });
  let flakyPort: number | undefined;
  if (scenario.refused) {
    // A second provider for the summarizer only, at a port where nothing listens (yet).
    const dead = await deadBaseUrl();
    flakyPort = Number(new URL(dead).port);
    const model = { id: "m", name: "Flaky summarizer", contextWindow: 32000, maxTokens: 1024 };
    writeFileSync(
      join(ws.agentDir, "models.json"),
      JSON.stringify({
        providers: {
          mock: { baseUrl: server.baseUrl, api: "openai-completions", apiKey: "test-key", models: [{ ...model, name: "Mock model" }] },
          flaky: { baseUrl: dead, api: "openai-completions", apiKey: "test-key", models: [model] },
        },
      }),
    );
    ws.updateSettings({ contextPrune: { pruneOn: "agent-message", cacheAware: false, summarizerModel: "flaky/m" } });
  }
  const endFault = async () => {
    failing = false;
    if (flakyPort !== undefined) await bringUp(flakyPort, server!);
  };
  return { server, ws, endFault };
}

const warningsOf = (rpc: PiRpc) => rpc.notifications().filter((n) => n.message.startsWith("pi-pruner:") && n.notifyType !== "info");
const customTypes = (entries: JsonRecord[]) => pruneEntries(entries).map((e) => e.customType);

async function expectFailureThenRetry(scenario: Scenario, expectedWarning: RegExp) {
  const { server, ws, endFault } = await setup(scenario);
  const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 60_000 });
  try {
    // 1. The turn whose final reply triggers the failing flush completes; the flush asks in the
    // background and writes nothing after the answer.
    const first = await rpc.prompt("read a and b");
    expect(first.events.some((e) => e.type === "agent_end")).toBe(true);
    let entries = await rpc.getEntries();
    expect(customTypes(entries).filter((t) => t !== "context-prune-stats")).toEqual([]);

    // 2. The next prompt's start applies the failure: exactly one warning, naming it, before that
    // prompt's request (held until the fault is over, so the retry at its final reply succeeds).
    const next = server.hold((req) => !isSummarizerRequest(req) && req.lastUserText === "go on");
    const going = rpc.prompt("go on");
    await next.arrived;
    if (!scenario.refused) expect(server.requests.filter(isSummarizerRequest)).toHaveLength(1);
    const warnings = warningsOf(rpc);
    expect(warnings, JSON.stringify(warnings)).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/summarizer failed/);
    expect(warnings[0]!.message).toMatch(expectedWarning);
    // Nothing of the batch is persisted: no index, summary, alias or frontier (stats may count the cost).
    entries = await rpc.getEntries();
    expect(customTypes(entries).filter((t) => t !== "context-prune-stats")).toEqual([]);
    await endFault();
    next.release();
    await going;

    // 3. That request still carried the raw outputs.
    const afterFault = agentRequests(server.requests).at(-1)!;
    const raw = toolMessages(afterFault.body);
    expect(raw[0]!.text).toContain("a line 60");
    expect(raw[1]!.text).toContain("b line 60");

    // 4. That turn's final reply flushed again, and the prompt after applies it: the same batch,
    // same refs, summarized once; the model now sees stubs; still only the one warning.
    await rpc.prompt("and now");
    entries = await rpc.getEntries();
    expect(customTypes(entries).filter((t) => t !== "context-prune-stats")).toEqual(["context-prune-index", "context-prune-summary", "context-prune-frontier"]);
    expect(persistedProblems(entries)).toEqual([]);
    const frontier = pruneEntries(entries).find((e) => e.customType === "context-prune-frontier")!.data;
    const readIds = agentRequests(server.requests)[1]!.body.messages!.flatMap((m) => m.tool_calls ?? []).map((c) => c.id);
    expect(frontier).toMatchObject({ outcome: "summarized", lastAttemptedToolCallId: readIds.at(-1), attemptedBatchCount: 1, attemptedToolCallCount: 2 });
    const retried = server.requests.filter(isSummarizerRequest).at(-1)!;
    expect(refsAsked(retried).map((r) => r.ref)).toEqual(["t1", "t2"]);
    const stubs = toolMessages(agentRequests(server.requests).at(-1)!.body);
    expect(stubs[0]!.text).toContain("`t1`");
    expect(stubs[1]!.text).toContain("`t2`");
    expect(warningsOf(rpc)).toHaveLength(1);
    await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
  } finally {
    await rpc.close();
  }
}

describe("summarizer faults at the agent's final reply (real Pi)", () => {
  it("refused connection: the turn completes, raw outputs stay, nothing half-persisted, one warning, the next flush retries", async () => {
    await expectFailureThenRetry({ refused: true }, /connect|ECONNREFUSED|Connection error/i);
  });

  it("HTTP 429: the same", async () => {
    await expectFailureThenRetry({ fault: { status: 429 } }, /429|rate/i);
  });

  it("a stream chunk that is not JSON: the same", async () => {
    await expectFailureThenRetry({ fault: { malformed: true, afterChunks: 1, text: "- `t1` read a: fine\n- `t2` read b: fine" } }, /JSON|parse|Unexpected/i);
  });

  it("finish_reason length (a cut-off summary): the same", async () => {
    await expectFailureThenRetry({ fault: { text: "- `t1` read a: the first half of", finishReason: "length" } }, /cut off/);
  });

  it("a connection dropped mid-stream: the same", async () => {
    await expectFailureThenRetry({ fault: { drop: true, afterChunks: 2, text: "- `t1` read a: a long answer that never ends" } }, /terminated|closed|socket/i);
  });

  it("a summary that invents refs is repaired, not trusted: invented refs are neutralised, missing ones added, no warning", async () => {
    const { server, ws } = await setup({
      fault: { text: "- `t1` read src/a.ts: values 0 to 59\n- `t7` read src/c.ts: a file nobody read\n- `t12` and `t1` agree" },
    });
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 60_000 });
    try {
      await rpc.prompt("read a and b");
      // The final reply's flush is applied at the next prompt's start, before its request.
      await rpc.prompt("go on");
      const entries = await rpc.getEntries();
      expect(customTypes(entries).filter((t) => t !== "context-prune-stats")).toEqual(["context-prune-index", "context-prune-summary", "context-prune-frontier"]);
      expect(persistedProblems(entries)).toEqual([]);
      const summary = pruneEntries(entries).find((e) => e.customType === "context-prune-summary")!;
      expect(summary.details.toolCallRefs.map((r: JsonRecord) => r.shortId)).toEqual(["t1", "t2"]);
      const refsInText = [...String(summary.content).matchAll(/`(t\d+)`/g)].map((m) => m[1]);
      expect(new Set(refsInText)).toEqual(new Set(["t1", "t2"])); // t7 and t12 are gone, t2 was added
      expect(summary.content).toContain("call 7");
      expect(summary.content).toMatch(/`t2` read src\/b\.ts/);
      expect(warningsOf(rpc)).toEqual([]);
      const request = agentRequests(server.requests).at(-1)!;
      expect(request.allText).not.toMatch(/`t7`|`t12`/);
      expect(toolMessages(request.body).map((t) => t.text)).toEqual([expect.stringContaining("`t1`"), expect.stringContaining("`t2`")]);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });
});
