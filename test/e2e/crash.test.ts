// Crash safety of the live pruner in the real `pi`: the process is SIGKILLed in the middle of
// flushes (during a slow summarizer answer, at offsets before, during and after it; between a
// spill sidecar write and its index entry), and the session file is cut after every line a flush
// wrote (what a kill between two of Pi's appends leaves). Then Pi is run again with the same
// --session-id, and:
//   - the session loads and the turn completes;
//   - no record is indexed twice, every summary ref resolves, every spill file exists;
//   - no record is lost: after the rerun's flush every tool result is summarized or spilled;
//   - no orphan stub: every stub the model is sent names a ref of a summary it is also sent (or a
//     spill file that exists);
//   - the model view of the file (core's buildModelView) is exactly what the model was sent.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { startModelServer, type ModelRequest, type ModelServer, type Reply } from "../helpers/model-server.ts";
import { createPiWorkspace, parseJsonl, startPiRpc, type JsonRecord, type PiRpc, type PiWorkspace } from "../helpers/pi-runner.ts";
import { EXTENSION, agentRequests, goodSummary, isSummarizerRequest, toolMessages } from "../helpers/pruner-e2e.ts";
import { persistedProblems, pruneEntries } from "../helpers/pruner-invariants.ts";
import { messageText } from "../helpers/model-server.ts";
import { readSessionFile } from "../../core/src/session/session-reader.ts";
import { getBranch } from "../../core/src/session/session-reader.ts";
import { rebuildIndex } from "../../core/src/prune/prune-index.ts";
import { buildModelView } from "../../core/src/view/model-view.ts";
import { loadConfig } from "../../core/src/settings/settings-reader.ts";
import { contentText, type AgentMessage } from "../../core/src/shapes/messages.ts";

const BIG_OUTPUT_TOOL = "test/fixtures/pi/big-output-tool.ts";
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");

/** Crash points exercised, for docs/reliability.md. */
const tally: Record<string, number> = {};
afterAll(() => console.log(`crash cases: ${JSON.stringify(tally)}`));

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
afterEach(async () => {
  await server?.close();
  ws?.cleanup();
  server = ws = undefined;
});

/** The scripted agent, stateless so that it answers a resumed session the same way. */
function agent(req: ModelRequest): Reply {
  const messages = req.body.messages ?? [];
  const last = messages.at(-1);
  if (last?.role === "tool") return { text: "Done with those." };
  const prompt = req.lastUserText;
  if (prompt === "read a and b") return { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] };
  if (prompt === "read c") return { toolCalls: [{ name: "read", arguments: { path: "src/c.ts" } }] };
  if (prompt === "fetch and read") return { toolCalls: [{ name: "fetch_page", arguments: { chars: 100_000 } }, { name: "read", arguments: { path: "src/d.ts" } }] };
  return { text: `ok: ${prompt}` };
}

interface Setup {
  /** Summarizer replies, slowed down, and the hook that decides when to kill. */
  onSummarizer?: (req: ModelRequest, n: number) => void;
  slowSummarizer?: boolean;
  settings?: Record<string, unknown>;
}

async function setup(opts: Setup = {}) {
  server = await startModelServer();
  let n = 0;
  server.route(isSummarizerRequest, (req) => {
    n++;
    opts.onSummarizer?.(req, n);
    const reply = goodSummary(req);
    return opts.slowSummarizer ? { ...reply, chunkChars: 8, chunkDelayMs: 15 } : reply;
  });
  server.respond = (req) => (isSummarizerRequest(req) ? undefined : agent(req));
  ws = createPiWorkspace({
    baseUrl: server.baseUrl,
    files: { "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60), "src/c.ts": lines("c", 60), "src/d.ts": lines("d", 60) },
    settings: { contextPrune: { pruneOn: "agent-message", ...(opts.settings ?? {}) } },
    model: { contextWindow: 400_000 }, // Pi's own compaction estimates from raw sizes; keep it out
  });
  return { server, ws };
}

const EXTENSIONS = [EXTENSION, BIG_OUTPUT_TOOL];

/** Runs `prompts` in one `pi --mode rpc` process; a kill makes the remaining prompts moot. */
async function runUntilKilled(workspace: PiWorkspace, sessionId: string, prompts: string[], arm: (rpc: PiRpc) => void): Promise<void> {
  const rpc = await startPiRpc({ workspace, extension: EXTENSIONS, sessionId, timeoutMs: 60_000 });
  arm(rpc);
  try {
    for (const p of prompts) await rpc.prompt(p, { timeoutMs: 20_000 });
  } catch (error) {
    if (!rpc.exited) throw error;
  } finally {
    await rpc.close();
  }
}

function killNow(rpc: PiRpc): void {
  try {
    process.kill(-rpc.child.pid!, "SIGKILL");
  } catch {
    // already gone
  }
}

/** The comparable shape of a message as the provider receives it: role and text (and the tool call id of a result). */
function sentShape(req: ModelRequest): string[] {
  return (req.body.messages ?? [])
    .filter((m) => m.role !== "system" && m.role !== "developer")
    .map((m) => (m.role === "tool" ? `tool ${m.tool_call_id}: ${messageText(m)}` : m.role === "assistant" ? `assistant: ${messageText(m)}${(m.tool_calls ?? []).map((c) => ` [${c.id}]`).join("")}` : `user: ${messageText(m)}`));
}

function viewShape(messages: readonly AgentMessage[]): string[] {
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

/** Runs Pi again on the session and checks everything the header comment promises. */
async function rerunAndVerify(workspace: PiWorkspace, model: ModelServer, sessionId: string, label: string): Promise<void> {
  const before = model.requests.length;
  const rpc = await startPiRpc({ workspace, extension: EXTENSIONS, sessionId, timeoutMs: 60_000 });
  let entries: JsonRecord[];
  try {
    // "continue": its final reply flushes whatever the crash left pending; "status?" shows the result.
    await rpc.prompt("continue", { timeoutMs: 20_000 });
    await rpc.prompt("status?", { timeoutMs: 20_000 });
    entries = await rpc.getEntries();
  } finally {
    const closed = await rpc.close();
    expect(closed.code, `${label}: ${closed.stderr}`).toBe(0);
  }
  const file = workspace.findSessionFile(sessionId)!;
  const data = await readSessionFile(file);
  expect(data.errors, label).toEqual([]);
  const fileEntries = parseJsonl(readFileSync(file, "utf8")).records.slice(1);
  expect(fileEntries.map((e) => e.id)).toEqual(entries.map((e) => e.id));

  // The effective index: what a reader (and the pruner after a restart) trusts.
  const branch = getBranch(data).entries;
  const { index } = rebuildIndex(branch);
  // No duplicates, refs consistent, spill files present. (An interrupted flush may have left an
  // index entry no summary covers: the reader ignores it, so the check does too.)
  expect(persistedProblems(fileEntries, { files: true, ignoreUncovered: true }), label).toEqual([]);
  // Nothing lost: every tool result is summarized (with its summary) or spilled.
  for (const e of branch) {
    const m = (e as { message?: AgentMessage }).message;
    if (e.type !== "message" || m?.role !== "toolResult") continue;
    const call = index.calls.get(`${m.toolCallId}@${m.timestamp}`);
    expect(call, `${label}: ${m.toolName} ${m.toolCallId} is neither summarized nor spilled`).toBeDefined();
    if (call!.record.spillPath) expect(existsSync(call!.record.spillPath), label).toBe(true);
    else expect(call!.summaryEntryId, `${label}: ${call!.shortRef} has no summary`).toBeDefined();
  }

  // What the model was sent on the last request, against the model view of the file at that point.
  const last = agentRequests(model.requests.slice(before)).at(-1)!;
  const sent = toolMessages(last.body);
  const summaryText = (last.body.messages ?? []).filter((m) => m.role === "user").map(messageText).join("\n");
  for (const t of sent) {
    const ref = /pruned: see ref `(t\d+)`/.exec(t.text)?.[1];
    if (ref) expect(summaryText, `${label}: stub ${ref} without its summary`).toContain(`\`${ref}\``);
    const spill = /Full output: (\S+)\. Call/.exec(t.text)?.[1];
    if (spill) expect(existsSync(spill), `${label}: spill stub without its file`).toBe(true);
  }
  const statusPrompt = branch.findLast((e) => e.type === "message" && (e as { message: AgentMessage }).message.role === "user")!;
  const { config } = loadConfig({ agentDir: workspace.agentDir, cwd: workspace.cwd });
  const view = buildModelView(data, { leafId: statusPrompt.id, config });
  expect(viewShape(view.messages), label).toEqual(sentShape(last));
  expect(pruneEntries(fileEntries).length).toBeGreaterThan(0);
}

describe("SIGKILL during a flush, then the same session again (real Pi)", () => {
  // Offsets from the summarizer request's arrival; its answer streams for about 250 ms.
  const kills: { flush: number; offsetMs: number }[] = [
    { flush: 1, offsetMs: 0 },
    { flush: 1, offsetMs: 120 },
    { flush: 1, offsetMs: 400 },
    { flush: 2, offsetMs: 60 },
    { flush: 2, offsetMs: 240 },
    { flush: 2, offsetMs: 300 },
  ];
  for (const { flush, offsetMs } of kills) {
    it(`killed ${offsetMs} ms after summarizer request ${flush}`, async () => {
      let rpcRef: PiRpc | undefined;
      const { server, ws } = await setup({
        slowSummarizer: true,
        onSummarizer: (_req, n) => {
          if (n === flush) setTimeout(() => rpcRef && killNow(rpcRef), offsetMs);
        },
      });
      const id = `crash-${flush}-${offsetMs}`;
      await runUntilKilled(ws, id, ["read a and b", "read c", "more?"], (rpc) => (rpcRef = rpc));
      expect(rpcRef!.exited).toBe(true);
      tally["SIGKILL at an offset during a flush"] = (tally["SIGKILL at an offset during a flush"] ?? 0) + 1;
      const left = pruneEntries(parseJsonl(readFileSync(ws.findSessionFile(id)!, "utf8")).records).map((e) => e.customType.replace("context-prune-", ""));
      console.log(`kill ${offsetMs} ms into flush ${flush}: the file held [${left.join(", ")}]`);
      await rerunAndVerify(ws, server, id, `kill ${flush}/${offsetMs}`);
    });
  }

  it("killed between the spill sidecar write and its index entry (a budget flush in the same turn)", async () => {
    let rpcRef: PiRpc | undefined;
    const { server, ws } = await setup({
      slowSummarizer: true,
      settings: { autoBudgetThreshold: 0.0001 },
      onSummarizer: (_req, n) => {
        if (n === 1) setTimeout(() => rpcRef && killNow(rpcRef), 100);
      },
    });
    await runUntilKilled(ws, "crash-spill", ["fetch and read", "more?"], (rpc) => (rpcRef = rpc));
    // The sidecar is on disk, its index entry is not.
    const blobs = `${ws.sessionDir}/${readFileSync(ws.findSessionFile("crash-spill")!, "utf8").split("\n")[0]!.match(/"id":"([^"]+)"/)![1]}-blobs`;
    expect(existsSync(blobs)).toBe(true);
    const before = parseJsonl(readFileSync(ws.findSessionFile("crash-spill")!, "utf8")).records;
    expect(pruneEntries(before)).toEqual([]);
    tally["SIGKILL between spill sidecar and index entry"] = 1;
    await rerunAndVerify(ws, server, "crash-spill", "spill");
    // On reload the big output is spilled again, not sent to the summarizer.
    const after = parseJsonl(readFileSync(ws.findSessionFile("crash-spill")!, "utf8")).records;
    const fetched = after.filter((e) => e.customType === "context-prune-index").flatMap((e) => e.data.toolCalls).filter((c: { toolName: string }) => c.toolName === "fetch_page");
    expect(fetched.length).toBe(1);
    expect(fetched[0].spillPath, "the big output is spilled on reload").toBeDefined();
  });
});

describe("a session cut after every line a flush wrote (a kill between two appends), then again (real Pi)", () => {
  it("each cut loads, retries what was cut, and never leaves an orphan stub", async () => {
    const { server, ws } = await setup({ settings: { autoBudgetThreshold: 0.0001 } });
    // A complete session: a spill and a summarized batch in one turn_end, then an agent-message flush.
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSIONS, sessionId: "cut", timeoutMs: 60_000 });
    try {
      await rpc.prompt("fetch and read");
      await rpc.prompt("read a and b");
    } finally {
      await rpc.close();
    }
    const file = ws.findSessionFile("cut")!;
    const full = readFileSync(file, "utf8");
    const fileLines = full.split("\n").slice(0, -1);
    const records = fileLines.map((l) => JSON.parse(l) as JsonRecord);
    // Cut right after each pruner entry: between index and summary, summary and frontier, and so on.
    const cuts = records.flatMap((r, i) => (pruneEntries([r]).length ? [i + 1] : []));
    expect(cuts.length).toBeGreaterThanOrEqual(6);
    expect(records.filter((r) => r.customType === "context-prune-index").length).toBeGreaterThanOrEqual(3);
    for (const cut of cuts) {
      writeFileSync(file, fileLines.slice(0, cut).join("\n") + "\n");
      tally["session cut after a flush line"] = (tally["session cut after a flush line"] ?? 0) + 1;
      await rerunAndVerify(ws, server, "cut", `cut after line ${cut} (${records[cut - 1]!.customType})`);
    }
  });
});
