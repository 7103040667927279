// A fork or clone of a session keeps its spilled outputs: Pi gives the new session a new id, so the
// spill files in the parent's blobs folder are not its own, but Pi copies every tool result whole
// into the new session file, and that copy is what is given back. The parent may be deleted since.
import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ModelRequest, Reply } from "../helpers/model-server.ts";
import { assertRunOk, runPi } from "../helpers/run-pi.ts";
import { startPiRpc, type PiRpc } from "../helpers/pi-rpc.ts";
import { EXTENSION, agentRequests, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { readJsonlRecords } from "../helpers/jsonl-records.ts";
import { QUERY_TOOL } from "../../core/src/shapes/entries.ts";

const bin = fileURLToPath(new URL("../../pi-extension/bin/pi-pruner.js", import.meta.url));
/** 200 lines, about 8,700 bytes: above the lowered spill threshold, so it is spilled when read. */
const BIG = Array.from({ length: 200 }, (_, i) => `big line ${i + 1}: const value${i} = compute(${i});`).join("\n");
const SPILL_THRESHOLD = 2_000;
const RECALL = "recall t1";

const pi = scriptedPi();
let rpc: PiRpc | undefined;
afterEach(async () => {
  await rpc?.close();
  rpc = undefined;
  await pi.stop();
});

function agent(req: ModelRequest): Reply {
  if (req.body.messages?.at(-1)?.role === "tool") return { text: "Noted." };
  if (req.lastUserText === "read it") return { toolCalls: [{ name: "read", arguments: { path: "src/big.ts" } }] };
  if (req.lastUserText === RECALL) return { toolCalls: [{ name: QUERY_TOOL, arguments: { toolCallIds: ["t1"] } }] };
  return { text: `ok: ${req.lastUserText}` };
}

/** A session whose one read was spilled into its blobs folder: its file and that folder. */
async function spilledSession() {
  const { server, ws } = await pi.start(agent, {
    files: { "src/big.ts": BIG },
    // A model window far above the output, so Pi's own compaction stays out of the way.
    settings: { contextPrune: { spillThreshold: SPILL_THRESHOLD, pruneOn: "on-demand", cacheAware: false } },
    model: { contextWindow: 200_000 },
  });
  const run = assertRunOk(await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read it"], timeoutMs: 30_000 }));
  const file = run.sessionFile!;
  const id = (run.entries[0] as { id: string }).id;
  const blobs = join(dirname(file), `${id}-blobs`);
  // The parent's spill, as the pruner wrote it: the premise of every test here.
  expect(readdirSync(blobs)).toEqual([expect.stringMatching(/^call_.*\.txt$/)]);
  const stub = toolMessages(agentRequests(server.requests).at(-1)!.body).at(-1)!.text;
  expect(stub).toMatch(/^\[Output of read spilled to disk \(\d+ bytes\), ref `t1`/);
  return { server, ws, file, blobs };
}

/** What `context_tree_query` answered on the newest request the agent was sent. */
function lastQueryAnswer(server: { requests: ModelRequest[] }): string {
  const request = agentRequests(server.requests).at(-1)!;
  const call = (request.body.messages ?? []).flatMap((m) => m.tool_calls ?? []).filter((c) => c.function.name === QUERY_TOOL).at(-1)!;
  return toolMessages(request.body).find((t) => t.id === call.id)!.text;
}

/** What `pi-pruner inspect --json` says of the spilled read: its state, and why it cannot be recovered (null: it can). */
function inspectRead(file: string, agentDir: string): { state: string; unrecoverable: string | null } {
  const r = spawnSync(process.execPath, [bin, "inspect", file, "--json"], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: agentDir } });
  expect(r.status, r.stderr).toBe(0);
  const calls = (JSON.parse(r.stdout) as { calls: { toolName: string; state: string; unrecoverable: string | null }[] }).calls;
  const { state, unrecoverable } = calls.find((c) => c.toolName === "read")!;
  return { state, unrecoverable };
}

describe("a fork or clone finds its parent's spilled outputs", () => {
  it("pi --fork: context_tree_query gives the whole output back, and still does once the parent and its blobs are deleted", async () => {
    const { server, ws, file, blobs } = await spilledSession();

    const fork = assertRunOk(await runPi({ workspace: ws, extension: EXTENSION, args: ["--fork", file], prompts: [RECALL], timeoutMs: 30_000 }));
    const forkFile = fork.sessionFile!;
    expect(forkFile).not.toBe(file);
    expect((fork.entries[0] as { parentSession?: string }).parentSession).toBe(file);
    const answer = lastQueryAnswer(server);
    expect(answer).toContain(BIG);
    expect(answer).not.toContain("could not be read");

    // pi-pruner inspect of the fork says the same.
    expect(inspectRead(forkFile, ws.agentDir)).toEqual({ state: "spilled", unrecoverable: null });

    // The fork stands on its own: the parent session and its blobs folder are gone.
    rmSync(file);
    rmSync(blobs, { recursive: true });
    const again = assertRunOk(await runPi({ workspace: ws, extension: EXTENSION, args: ["--session", forkFile], prompts: [RECALL], timeoutMs: 30_000 }));
    expect(again.sessionFile).toBe(forkFile);
    expect(lastQueryAnswer(server)).toContain(BIG);
    expect(inspectRead(forkFile, ws.agentDir)).toEqual({ state: "spilled", unrecoverable: null });
  });

  it("RPC clone: the clone's context_tree_query gives the whole output back", async () => {
    const { server, ws, file } = await spilledSession();
    rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, args: ["--session", file], timeoutMs: 30_000 });
    const cloned = await rpc.send({ type: "clone" });
    expect(cloned).toMatchObject({ success: true, data: { cancelled: false } });
    await expectRecalledIn(rpc, server, file);
  });

  it("RPC fork from a later prompt: the fork's context_tree_query gives the whole output back", async () => {
    const { server, ws, file } = await spilledSession();
    rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, args: ["--session", file], timeoutMs: 30_000 });
    await rpc.prompt("go on", { timeoutMs: 15_000 });
    const prompts = (await rpc.send({ type: "get_fork_messages" })).data.messages as { entryId: string; text: string }[];
    const forked = await rpc.send({ type: "fork", entryId: prompts.find((m) => m.text === "go on")!.entryId });
    expect(forked).toMatchObject({ success: true, data: { cancelled: false } });
    await expectRecalledIn(rpc, server, file);
  });
});

/** In the session the RPC process switched to (a new file, its parent `parent`), context_tree_query gives the whole spilled output back. */
async function expectRecalledIn(rpc: PiRpc, server: { requests: ModelRequest[] }, parent: string) {
  const state = await rpc.getState();
  const newFile = String(state.sessionFile);
  expect(basename(newFile)).not.toBe(basename(parent));

  await rpc.prompt(RECALL, { timeoutMs: 15_000 });

  expect((readJsonlRecords(newFile)[0] as { parentSession?: string }).parentSession).toBe(parent);
  const answer = lastQueryAnswer(server);
  expect(answer).toContain(BIG);
  expect(answer).not.toContain("could not be read");
}
