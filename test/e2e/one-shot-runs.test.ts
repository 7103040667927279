// Pi run the way scripts and CI run it, one prompt per process, inside the real `pi` binary: print
// mode prints the final answer whatever the flush settings, json mode ends on it, and summaries a
// final reply's flush asks for as the process ends are waited for and kept, so the next process
// neither asks for them again nor sends the outputs raw. The scripted server holds the
// summarizer's answer to show that the process waits for it.
import { afterEach, describe, expect, it } from "vitest";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { readJsonlRecords } from "../helpers/jsonl-records.ts";
import type { ModelRequest, Reply } from "../helpers/model-server.ts";
import { runPi, type RunPiResult } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import { EXTENSION, agentRequests, goodSummary, isSummarizerRequest, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";

const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");
const ANSWER = "All modules read.";
const MODULES = ["src/m1.ts", "src/m2.ts", "src/m3.ts", "src/m4.ts"];
const STUB = "pruned: see ref";
const WAITING = "pi-pruner: waiting for the summarizer's answer before the session closes";

const pi = scriptedPi();
afterEach(pi.stop);

/** A task reading four modules of 400 lines, one per turn, then its final answer; later prompts get short answers. */
function setup(settings: Record<string, unknown> = {}) {
  const files = Object.fromEntries(MODULES.map((path, i) => [path, lines(`m${i + 1}`, 400)]));
  const replies: Reply[] = [...MODULES.map((path) => ({ toolCalls: [{ name: "read", arguments: { path } }] })), { text: ANSWER }, { text: "Nothing else." }, { text: "Still nothing." }];
  // A large window keeps the window cap out of the way.
  return pi.start(replies, { files, model: { contextWindow: 400_000 }, settings: { contextPrune: { selfControl: NO_NUDGES, ...settings } } }, goodSummary);
}

/** The summarizer request that asks about the last module read: only the final reply's flush asks about it. */
const asksAboutLastRead = (req: ModelRequest) => isSummarizerRequest(req) && req.allText.includes(MODULES.at(-1)!);

/** The modules whose reads a summary in the session file covers, in order. */
function summarizedModules(entries: readonly JsonRecord[]): string[] {
  const pathOf = new Map<string, string>();
  for (const e of entries) {
    if (e.type !== "message" || e.message?.role !== "assistant") continue;
    for (const block of e.message.content) if (block.type === "toolCall") pathOf.set(block.id, block.arguments.path);
  }
  return entries
    .filter((e) => e.type === "custom_message" && e.customType === "context-prune-summary")
    .flatMap((e) => e.details.toolCallRefs.map((ref: { toolCallId: string }) => pathOf.get(ref.toolCallId)))
    .sort();
}

/** How many times the summarizer was asked about each module, by path. */
function timesAsked(requests: readonly ModelRequest[]): Record<string, number> {
  return Object.fromEntries(MODULES.map((path) => [path, requests.filter((r) => isSummarizerRequest(r) && r.allText.includes(path)).length]));
}

const stubs = (req: ModelRequest) => toolMessages(req.body).filter((t) => t.text.includes(STUB)).length;

/** Every entry after the header hangs from the one before it: what Pi appended at the end is on the branch. */
function expectOneChain(entries: readonly JsonRecord[]) {
  const body = entries.slice(1);
  expect(body.map((e) => e.parentId)).toEqual([null, ...body.slice(0, -1).map((e) => e.id)]);
}

/**
 * A run of `pi -p` whose summarizer request about the last read is held: resolves once Pi has said
 * on stderr that it waits for it, with the run still going; rejects if Pi exits first.
 */
async function runHeldAtExit(server: Awaited<ReturnType<typeof setup>>["server"], run: (onStderr: (text: string) => void) => Promise<RunPiResult>) {
  const held = server.hold(asksAboutLastRead);
  let said!: () => void;
  const waiting = new Promise<void>((resolve) => (said = resolve));
  let stderr = "";
  const running = run((text) => {
    stderr += text;
    if (stderr.includes(WAITING)) said();
  });
  let exited = false;
  const finished = running.then((r) => ((exited = true), r));
  await Promise.race([
    Promise.all([held.arrived, waiting]),
    finished.then((r) => {
      throw new Error(`pi ended without saying that it waits for the summarizer (code ${r.code}${r.timedOut ? ", killed on its timeout" : ""})\n${r.stderr}`);
    }),
  ]);
  expect(exited).toBe(false);
  held.release();
  return finished;
}

describe("one prompt per process in real Pi", () => {
  it.each([
    ["the defaults", {}],
    ["cacheAware off", { cacheAware: false }],
    ["backgroundSummaries on", { backgroundSummaries: true }],
  ])("with %s, pi -p prints the final answer and the session keeps a summary of every read", async (_name, settings) => {
    const { server, ws } = await setup(settings);
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read every module"], timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${ANSWER}\n`);
    expect(summarizedModules(run.entries)).toEqual(MODULES);
    expect(timesAsked(server.requests)).toEqual(Object.fromEntries(MODULES.map((path) => [path, 1])));
    expectOneChain(run.entries);
  });

  it("--mode json ends on the final answer; the entries written at the end are on the branch and render what the next request sent", async () => {
    const { server, ws } = await setup({ cacheAware: false });
    const run = await runPi({ workspace: ws, extension: EXTENSION, mode: "json", prompts: ["read every module"], sessionId: "json-run", timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    const events = run.events!;
    // The last record that carries a message (one Pi streamed, or an entry it appended) is the answer.
    const messages = events.filter((e) => e.type === "message_end" || (e.type === "entry_appended" && (e.entry.type === "message" || e.entry.type === "custom_message")));
    const last = messages.at(-1)!;
    expect(last.type).toBe("message_end");
    expect(last.message.role).toBe("assistant");
    expect(last.message.content).toEqual([{ type: "text", text: ANSWER }]);
    expect(events.find((e) => e.type === "agent_end")!.messages.at(-1).content).toEqual([{ type: "text", text: ANSWER }]);
    // The session file holds the summaries all the same, on the branch.
    expect(summarizedModules(run.entries)).toEqual(MODULES);
    expectOneChain(run.entries);

    const next = await runPi({ workspace: ws, extension: EXTENSION, mode: "json", prompts: ["anything else?"], sessionId: "json-run", timeoutMs: 60_000 });
    expect(next.code, next.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(stubs(requests.at(-1)!)).toBe(MODULES.length);
    await expectRequestViewsMatch(next.sessionFile!, requests);
  });

  it("three pi -p prompts in a row on one session: the process waits for the summary it asked for, the summarizer is asked once per batch, and the next processes send stubs", async () => {
    const { server, ws } = await setup();
    const first = await runHeldAtExit(server, (onStderr) => runPi({ workspace: ws, extension: EXTENSION, prompts: ["read every module"], sessionId: "ci", timeoutMs: 30_000, onStderr }));
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe(`${ANSWER}\n`);
    expect(summarizedModules(first.entries)).toEqual(MODULES);

    for (const prompt of ["anything else?", "and now?"]) {
      const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: [prompt], sessionId: "ci", timeoutMs: 60_000 });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).not.toContain(WAITING);
    }
    expect(timesAsked(server.requests)).toEqual(Object.fromEntries(MODULES.map((path) => [path, 1])));
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(MODULES.length + 3);
    // The second and third processes' requests carry every read as a stub, and the summaries.
    expect(requests.slice(-2).map(stubs)).toEqual([MODULES.length, MODULES.length]);
    expect(requests.at(-1)!.allText).toContain("Pruned refs: `t4`");
    await expectRequestViewsMatch(ws.sessionFiles()[0]!, requests);
  });

  it("RPC with stdin closed after the reply waits for the summary, keeps it, and the next process sends it", async () => {
    const { server, ws } = await setup();
    const held = server.hold(asksAboutLastRead);
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, sessionId: "rpc-run", timeoutMs: 60_000 });
    await rpc.prompt("read every module", { timeoutMs: 30_000 });
    await held.arrived;
    const closing = rpc.close(30_000);
    // Pi is closing and says that it waits; only then does the summarizer answer.
    await rpc.waitFor((r) => r.type === "extension_ui_request" && r.method === "notify" && String(r.message).startsWith(WAITING), { timeoutMs: 30_000 });
    expect(rpc.exited).toBe(false);
    held.release();
    const { code, stderr } = await closing;
    expect(code, stderr).toBe(0);
    const file = ws.findSessionFile("rpc-run")!;
    expect(summarizedModules(readJsonlRecords(file))).toEqual(MODULES);

    const next = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["anything else?"], sessionId: "rpc-run", timeoutMs: 60_000 });
    expect(next.code, next.stderr).toBe(0);
    expect(timesAsked(server.requests)).toEqual(Object.fromEntries(MODULES.map((path) => [path, 1])));
    expect(stubs(agentRequests(server.requests).at(-1)!)).toBe(MODULES.length);
  });
});
