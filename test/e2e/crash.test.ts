// Crash safety of the live pruner in the real `pi`: the process is SIGKILLed at known points of
// its flushes (the scripted server kills it when a given request arrives: a summarizer request, or
// the agent's request for the next prompt once a flush was written; and between a spill sidecar
// write and its index entry), and the session file is cut after every line a flush wrote (what a
// kill between two of Pi's appends leaves). Each kill is checked to have left exactly the file
// and blobs it must. Then Pi is run again with the same --session-id, and:
//   - the session loads and the turn completes;
//   - the first request shows each result as the reader promises: stubbed once its summary is
//     there, spilled, or raw (and then summarized by the retry, which asks for nothing else);
//   - no record is indexed twice, every summary ref resolves, every spill file exists;
//   - no record is lost: after the rerun's flush every tool result is summarized or spilled, and
//     context_tree_query gives each one back whole;
//   - no orphan stub: every stub the model is sent names a ref of a summary it is also sent (or a
//     spill file that exists);
//   - the model view of the file (core's buildModelView) is exactly what the model was sent.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { startModelServer, type ModelRequest, type ModelServer, type Reply } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { startPiRpc, type PiRpc } from "../helpers/pi-rpc.ts";
import { parseJsonl, type JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, goodSummary, isSummarizerRequest, refsAsked, sentShape, toolMessages, viewShape } from "../helpers/pruner-e2e.ts";
import { persistedProblems, pruneEntries } from "../helpers/pruner-invariants.ts";
import { messageText } from "../helpers/model-server.ts";
import { readSessionFile } from "../../core/src/session/session-reader.ts";
import { getBranch } from "../../core/src/session/session-reader.ts";
import { rebuildIndex } from "../../core/src/prune/prune-index.ts";
import { buildModelView } from "../../core/src/view/model-view.ts";
import { loadConfig } from "../../core/src/settings/settings-reader.ts";
import { contentText, type AgentMessage } from "../../core/src/shapes/messages.ts";
import { blobsDirFor } from "../../core/src/session/blobs.ts";

const BIG_OUTPUT_TOOL = "test/fixtures/pi/big-output-tool.ts";
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");
/** Asks the scripted agent for every pruned output back, one `context_tree_query` call per ref it was shown. */
const RECALL = "recall every pruned output";
/** DEFAULT_CONFIG.spillThreshold, restated: a raw result this large is spilled again on reload. */
const SPILL_THRESHOLD = 65_536;

/** Crash points exercised, for docs/reliability.md; the last test checks that each ran. */
const tally: Record<string, number> = {};
const counted = (point: string) => (tally[point] = (tally[point] ?? 0) + 1);
afterAll(() => console.log(`crash cases: ${JSON.stringify(tally)}`));

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
afterEach(async () => {
  await server?.close();
  ws?.cleanup();
  server = ws = undefined;
});

/** The refs named by the stubs among a request's tool results, in order. */
function stubRefs(req: ModelRequest): string[] {
  return toolMessages(req.body).flatMap((t) => /ref `(t\d+)`/.exec(t.text)?.[1] ?? []);
}

/** The scripted agent, stateless so that it answers a resumed session the same way. */
function agent(req: ModelRequest): Reply {
  const messages = req.body.messages ?? [];
  const last = messages.at(-1);
  if (last?.role === "tool") return { text: "Done with those." };
  const prompt = req.lastUserText;
  if (prompt === "read a and b") return { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] };
  if (prompt === "read c") return { toolCalls: [{ name: "read", arguments: { path: "src/c.ts" } }] };
  if (prompt === "fetch and read") return { toolCalls: [{ name: "fetch_page", arguments: { chars: 100_000 } }, { name: "read", arguments: { path: "src/d.ts" } }] };
  if (prompt === RECALL) return { toolCalls: stubRefs(req).map((ref) => ({ id: `q_${ref}`, name: "context_tree_query", arguments: { toolCallIds: [ref] } })) };
  return { text: `ok: ${prompt}` };
}

/**
 * Where the first run is killed: on the arrival of the n-th summarizer request (at once, or once
 * the first chunks of its answer went out), or of the agent's request for a prompt. The request
 * that triggers the kill is never answered, so the process dies at a known point of its work.
 */
type KillPoint = { summarizerRequest: number; midAnswer?: boolean } | { agentPrompt: string };

interface Setup {
  kill?: KillPoint;
  settings?: Record<string, unknown>;
}

async function setup(opts: Setup = {}) {
  const model = await startModelServer();
  server = model;
  const target: { rpc?: PiRpc; killed: boolean } = { killed: false };
  const kill = () => {
    target.killed = true;
    killNow(target.rpc!);
  };
  let summarizerRequests = 0;
  model.route(isSummarizerRequest, (req) => {
    const reply = goodSummary(req);
    const point = opts.kill;
    if (point && "summarizerRequest" in point && ++summarizerRequests === point.summarizerRequest && !target.killed) {
      if (!point.midAnswer) {
        kill();
        return { stallAfterChunks: 0 };
      }
      // The role chunk and two pieces of the summary go out, then nothing: Pi holds half an answer.
      setTimeout(kill, 300);
      return { ...reply, chunkChars: 8, stallAfterChunks: 3 };
    }
    return reply;
  });
  model.respond = (req) => {
    if (isSummarizerRequest(req)) return undefined;
    const point = opts.kill;
    if (point && "agentPrompt" in point && req.lastUserText === point.agentPrompt && !target.killed) {
      kill();
      return { stallAfterChunks: 0 };
    }
    return agent(req);
  };
  const workspace = createPiWorkspace({
    baseUrl: model.baseUrl,
    files: { "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60), "src/c.ts": lines("c", 60), "src/d.ts": lines("d", 60) },
    // Every final reply flushes (cacheAware off), so each crash point is reached on a small script.
    settings: { contextPrune: { pruneOn: "agent-message", cacheAware: false, ...(opts.settings ?? {}) } },
    model: { contextWindow: 400_000 }, // Pi's own compaction estimates from raw sizes; keep it out
  });
  ws = workspace;
  return { server: model, ws: workspace, target };
}

const EXTENSIONS = [EXTENSION, BIG_OUTPUT_TOOL];

/** Runs `prompts` in one `pi --mode rpc` process until the kill point fires; fails if it never does. */
async function runUntilKilled(workspace: PiWorkspace, sessionId: string, prompts: string[], target: { rpc?: PiRpc; killed: boolean }): Promise<void> {
  const rpc = await startPiRpc({ workspace, extension: EXTENSIONS, sessionId, timeoutMs: 60_000 });
  target.rpc = rpc;
  let closed: { signal: NodeJS.Signals | null };
  try {
    for (const p of prompts) await rpc.prompt(p, { timeoutMs: 20_000 });
  } catch (error) {
    if (!rpc.exited) throw error;
  } finally {
    closed = await rpc.close();
  }
  expect(target.killed, "the kill point was never reached").toBe(true);
  expect(closed.signal).toBe("SIGKILL");
}

function killNow(rpc: PiRpc): void {
  try {
    process.kill(-rpc.child.pid!, "SIGKILL");
  } catch {
    // already gone
  }
}


function sessionRecords(workspace: PiWorkspace, sessionId: string): JsonRecord[] {
  return parseJsonl(readFileSync(workspace.findSessionFile(sessionId)!, "utf8")).records;
}

function blobsOf(workspace: PiWorkspace, sessionId: string): { dir: string; files: string[] } {
  const file = workspace.findSessionFile(sessionId)!;
  const dir = blobsDirFor(file, sessionRecords(workspace, sessionId)[0]!.id);
  return { dir, files: existsSync(dir) ? readdirSync(dir).sort() : [] };
}

const resultText = (r: JsonRecord) => (r.message.content as { type: string; text?: string }[]).map((b) => b.text ?? "").join("");
const isToolResult = (r: JsonRecord) => r.type === "message" && r.message?.role === "toolResult";

/**
 * What a session file holds, one line per entry: messages by role (a call by its arguments, a
 * result by its tool), the pruner's entries by type and what they name. The header is left out.
 */
function fileState(records: readonly JsonRecord[]): string[] {
  const calls = new Map<string, string>();
  const out: string[] = [];
  for (const r of records.slice(1)) {
    // Self-control's per-turn growth metric is written every turn and is no part of a flush; nor is the settings record of the session's start.
    if (r.customType === "mulligan:turn-metric" || r.customType === "context-prune-settings") continue;
    if (r.type === "message") {
      const m = r.message;
      if (m.role === "user") out.push(`user: ${contentText(m.content)}`);
      else if (m.role === "assistant") {
        const made = (m.content as { type: string; id?: string; name?: string; arguments?: Record<string, unknown>; text?: string }[]).filter((b) => b.type === "toolCall");
        for (const c of made) calls.set(c.id!, `${c.name} ${String(c.arguments?.path ?? c.arguments?.chars ?? c.arguments?.toolCallIds ?? "")}`);
        out.push(made.length ? `calls: ${made.map((c) => calls.get(c.id!)).join(", ")}` : `assistant: ${m.content.map((b: { text?: string }) => b.text ?? "").join("")}`);
      } else if (m.role === "toolResult") out.push(`result: ${calls.get(m.toolCallId) ?? m.toolName}`);
      else out.push(`${m.role}`);
    } else if (r.customType === "context-prune-index") {
      const refs = new Map<string, string>((r.data.refs ?? []).map((x: JsonRecord) => [`${x.toolCallId}@${x.resultTimestamp}`, x.shortId]));
      out.push(`index: ${r.data.toolCalls.map((c: JsonRecord) => `${refs.get(`${c.toolCallId}@${c.resultTimestamp}`)} ${calls.get(c.toolCallId)}${c.spillPath ? " (spilled)" : ""}`).join(", ")}`);
    } else if (r.customType === "context-prune-summary") out.push(`summary: ${r.details.toolCallRefs.map((x: JsonRecord) => x.shortId).join(", ")}`);
    else if (r.customType === "context-prune-frontier") out.push(`frontier: ${calls.get(r.data.lastAttemptedToolCallId)}`);
    else if (typeof r.customType === "string") out.push(r.customType.replace("context-prune-", ""));
    else out.push(r.type);
  }
  return out;
}

type Form = "raw" | "stub" | "spill";

/**
 * How each tool result must reach the model when the session is loaded again, by the reader's
 * rule stated here on its own: a spilled record stands by itself; a summarized one only once a
 * summary names it; anything else is raw and pending, and spilled at load if it is large.
 */
function formsAfterReload(records: readonly JsonRecord[]): Map<string, Form> {
  const indexed = new Map<string, JsonRecord>();
  const summarized = new Set<string>();
  for (const r of records) {
    if (r.customType === "context-prune-index") for (const c of r.data.toolCalls) indexed.set(`${c.toolCallId}@${c.resultTimestamp}`, c);
    if (r.customType === "context-prune-summary") for (const x of r.details.toolCallRefs) summarized.add(`${x.toolCallId}@${x.resultTimestamp}`);
  }
  const forms = new Map<string, Form>();
  for (const r of records.filter(isToolResult)) {
    const key = `${r.message.toolCallId}@${r.message.timestamp}`;
    const record = indexed.get(key);
    if (record?.spillPath || (!record && resultText(r).length >= SPILL_THRESHOLD)) forms.set(r.message.toolCallId, "spill");
    else if (record && summarized.has(key)) forms.set(r.message.toolCallId, "stub");
    else forms.set(r.message.toolCallId, "raw");
  }
  return forms;
}

/**
 * Runs Pi again on the session (continue, recall every pruned output, status?) and checks that it
 * recovered: the first request shows each result as the reader's rule promises, the retry flush
 * asks the summarizer for exactly the results left raw, every output comes back whole through
 * context_tree_query, and everything the header comment promises.
 */
async function rerunAndVerify(workspace: PiWorkspace, model: ModelServer, sessionId: string, label: string): Promise<void> {
  const before = model.requests.length;
  const left = sessionRecords(workspace, sessionId);
  const originals = new Map(left.filter(isToolResult).map((r) => [r.message.toolCallId as string, resultText(r)]));
  const forms = formsAfterReload(left);
  const rpc = await startPiRpc({ workspace, extension: EXTENSIONS, sessionId, timeoutMs: 60_000 });
  let entries: JsonRecord[];
  try {
    // "continue": its final reply flushes whatever the crash left pending; "status?" shows the result.
    await rpc.prompt("continue", { timeoutMs: 20_000 });
    await rpc.prompt(RECALL, { timeoutMs: 20_000 });
    await rpc.prompt("status?", { timeoutMs: 20_000 });
    entries = await rpc.getEntries();
  } finally {
    const closed = await rpc.close();
    expect(closed.code, `${label}: ${closed.stderr}`).toBe(0);
  }
  const requests = model.requests.slice(before);
  const agentAsked = agentRequests(requests);

  // The first request after the reload: each result stubbed, spilled or raw, as the rule says.
  const first = agentAsked[0]!;
  expect(first.lastUserText).toBe("continue");
  const firstSummaries = (first.body.messages ?? []).filter((m) => m.role === "user").map(messageText).join("\n");
  const shown = new Map(toolMessages(first.body).map((t) => [t.id, t.text]));
  expect([...shown.keys()].sort(), label).toEqual([...forms.keys()].sort());
  for (const [id, form] of forms) {
    const text = shown.get(id)!;
    if (form === "raw") expect(text, `${label}: ${id} should reach the model raw`).toBe(originals.get(id));
    else if (form === "stub") {
      const ref = /pruned: see ref `(t\d+)`/.exec(text)?.[1];
      expect(ref, `${label}: ${id} should be a summary stub: ${text.slice(0, 80)}`).toBeDefined();
      expect(firstSummaries, `${label}: stub ${ref} without its summary`).toContain(`\`${ref}\``);
    } else {
      const path = /Full output: (\S+)\. Call/.exec(text)?.[1];
      expect(path, `${label}: ${id} should be a spill stub: ${text.slice(0, 80)}`).toBeDefined();
      expect(readFileSync(path!, "utf8"), `${label}: the spill file of ${id}`).toBe(originals.get(id));
    }
  }

  // The retry: what the crash left raw goes to the summarizer, nothing else.
  const recallAt = requests.indexOf(agentAsked.find((r) => r.lastUserText === RECALL)!);
  const retried = requests.slice(0, recallAt).filter(isSummarizerRequest);
  const pending = [...forms].filter(([, form]) => form === "raw").map(([id]) => id);
  expect(retried.flatMap(refsAsked).length, `${label}: refs sent to the summarizer on reload`).toBe(pending.length);
  // An output longer than the summarizer's budget is sent as an excerpt, which starts with its first line.
  for (const id of pending) expect(retried.some((r) => r.allText.includes(originals.get(id)!.split("\n")[0]!)), `${label}: ${id} was not retried`).toBe(true);

  // Nothing lost: once recovered, every result is a stub, and every ref gives its output back whole.
  const recall = agentAsked.find((r) => r.lastUserText === RECALL && r.body.messages!.at(-1)!.role === "user")!;
  const refs = new Map(toolMessages(recall.body).map((t) => [/ref `(t\d+)`/.exec(t.text)?.[1], t.id]));
  expect(refs.has(undefined), `${label}: a raw result after the retry flush`).toBe(false);
  expect(refs.size).toBe(originals.size);
  // The answers as Pi recorded them (a budget flush may summarize them before the model sees them).
  const answers = new Map(sessionRecords(workspace, sessionId).filter(isToolResult).map((r) => [r.message.toolCallId as string, resultText(r)]));
  for (const [ref, id] of refs) {
    const answer = answers.get(`q_${ref}`)!;
    expect(answer, `${label}: context_tree_query ${ref}`).toContain(`## ${ref} — `);
    // Pi truncates a tool result past 50 KB, so a spilled page is checked on its first part.
    expect(answer, `${label}: context_tree_query ${ref} gives back ${id}'s output`).toContain(`Output:\n${originals.get(id!)!.slice(0, 40_000)}`);
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
  const last = agentAsked.at(-1)!;
  expect(last.lastUserText).toBe("status?");
  const summaryText = (last.body.messages ?? []).filter((m) => m.role === "user").map(messageText).join("\n");
  for (const t of toolMessages(last.body)) {
    const ref = /pruned: see ref `(t\d+)`/.exec(t.text)?.[1];
    const spill = /Full output: (\S+)\. Call/.exec(t.text)?.[1];
    // The recovered outputs are the only results still raw: they are in their grace turns.
    expect(ref ?? spill ?? (t.id.startsWith("q_") ? "recovered" : undefined), `${label}: ${t.id} is neither stubbed nor a recovered output`).toBeDefined();
    if (ref) expect(summaryText, `${label}: stub ${ref} without its summary`).toContain(`\`${ref}\``);
    if (spill) expect(existsSync(spill), `${label}: spill stub without its file`).toBe(true);
  }
  const statusPrompt = branch.findLast((e) => e.type === "message" && (e as { message: AgentMessage }).message.role === "user")!;
  const { config } = loadConfig({ agentDir: workspace.agentDir, cwd: workspace.cwd, projectTrusted: true });
  const view = buildModelView(data, { leafId: statusPrompt.id, config });
  expect(viewShape(view.messages), label).toEqual(sentShape(last));
  expect(pruneEntries(fileEntries).length).toBeGreaterThan(0);
}

/** What Pi writes when a session starts, before the first prompt. */
const START = ["model_change", "thinking_level_change", "system"];
const FLUSH_1 = ["index: t1 read src/a.ts, t2 read src/b.ts", "summary: t1, t2", "frontier: read src/b.ts", "stats"];
const FLUSH_2 = ["index: t3 read src/c.ts", "summary: t3", "frontier: read src/c.ts", "stats"];
const TURN_1 = [...START, "user: read a and b", "calls: read src/a.ts, read src/b.ts", "result: read src/a.ts", "result: read src/b.ts"];
const TURN_2 = ["user: read c", "calls: read src/c.ts", "result: read src/c.ts"];

describe("SIGKILL at a known point of a flush, then the same session again (real Pi)", () => {
  // Prompts "read a and b", "read c", "more?": each tool turn's batch is flushed at the reply that ends it.
  const kills: { name: string; kill: KillPoint; left: string[] }[] = [
    { name: "flush 1 sent to the summarizer, no answer yet", kill: { summarizerRequest: 1 }, left: [...TURN_1, "assistant: Done with those."] },
    { name: "flush 1 halfway through the summarizer's answer", kill: { summarizerRequest: 1, midAnswer: true }, left: [...TURN_1, "assistant: Done with those."] },
    { name: "flush 1 written, the next prompt sent", kill: { agentPrompt: "read c" }, left: [...TURN_1, "assistant: Done with those.", ...FLUSH_1, "user: read c"] },
    { name: "flush 2 sent to the summarizer, flush 1 on disk", kill: { summarizerRequest: 2 }, left: [...TURN_1, "assistant: Done with those.", ...FLUSH_1, ...TURN_2, "assistant: Done with those."] },
    { name: "flush 2 written, the next prompt sent", kill: { agentPrompt: "more?" }, left: [...TURN_1, "assistant: Done with those.", ...FLUSH_1, ...TURN_2, "assistant: Done with those.", ...FLUSH_2, "user: more?"] },
  ];
  for (const [i, { name, kill, left }] of kills.entries()) {
    it(`killed when ${name}`, async () => {
      const { server, ws, target } = await setup({ kill });
      const id = `crash-${i}`;
      await runUntilKilled(ws, id, ["read a and b", "read c", "more?"], target);
      expect(fileState(sessionRecords(ws, id))).toEqual(left);
      expect(blobsOf(ws, id).files).toEqual([]);
      counted("SIGKILL at a known point of a flush");
      await rerunAndVerify(ws, server, id, name);
    });
  }

  it("killed between the spill sidecar write and its index entry (a budget flush in the same turn)", async () => {
    // The tool turn's turn_end spills the page at once, then asks the summarizer about src/d.ts.
    const { server, ws, target } = await setup({ kill: { summarizerRequest: 1 }, settings: { autoBudgetThreshold: 0.0001 } });
    await runUntilKilled(ws, "crash-spill", ["fetch and read", "more?"], target);
    // The sidecar is on disk, whole; no index entry names it, nor anything else of the turn.
    const left = sessionRecords(ws, "crash-spill");
    expect(fileState(left)).toEqual([...START, "user: fetch and read", "calls: fetch_page 100000, read src/d.ts", "result: fetch_page 100000", "result: read src/d.ts"]);
    const page = left.filter(isToolResult)[0]!;
    const blobs = blobsOf(ws, "crash-spill");
    expect(blobs.files).toEqual([`${page.message.toolCallId}-${page.message.timestamp}.txt`]);
    expect(readFileSync(`${blobs.dir}/${blobs.files[0]}`, "utf8")).toBe(resultText(page));
    expect(resultText(page).length).toBe(100_000);
    counted("SIGKILL between spill sidecar and index entry");
    await rerunAndVerify(ws, server, "crash-spill", "spill");
    // On reload the big output is spilled again (to the same sidecar, now with its index entry), not sent to the summarizer.
    const after = sessionRecords(ws, "crash-spill");
    const fetched = after.filter((e) => e.customType === "context-prune-index").flatMap((e) => e.data.toolCalls).filter((c: { toolName: string }) => c.toolName === "fetch_page");
    expect(fetched.length).toBe(1);
    expect(fetched[0].spillPath, "the big output is spilled on reload").toBeDefined();
    expect(blobsOf(ws, "crash-spill").files.length).toBe(1);
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
    expect(fileState(records).filter((l) => /^(index|summary|frontier|stats)/.test(l))).toEqual([
      "index: t1 fetch_page 100000 (spilled)",
      "index: t2 read src/d.ts",
      "summary: t2",
      "frontier: read src/d.ts",
      "stats",
      "index: t3 read src/a.ts, t4 read src/b.ts",
      "summary: t3, t4",
      "frontier: read src/b.ts",
      "stats",
    ]);
    const spill = blobsOf(ws, "cut");
    for (const cut of cuts) {
      writeFileSync(file, fileLines.slice(0, cut).join("\n") + "\n");
      // A cut takes the session back; the spill files it wrote stay, as after a kill.
      expect(blobsOf(ws, "cut").files).toEqual(spill.files);
      counted("session cut after a flush line");
      await rerunAndVerify(ws, server, "cut", `cut after line ${cut} (${fileState(records.slice(0, cut)).at(-1)})`);
    }
  });
});

describe("crash cases", () => {
  // Runs last: a crash point that stopped being reached fails here, not only in the printed tally.
  it("every crash point ran", () => {
    expect(tally).toEqual({ "SIGKILL at a known point of a flush": 5, "SIGKILL between spill sidecar and index entry": 1, "session cut after a flush line": 9 });
  });
});
