// Crafted session files opened in the real `pi` with the pruner: every value of the file that
// becomes part of a path (the session id, a result's timestamp, a recorded spill path, the blobs
// folder itself) is the attacker's. Each case asserts what a victim would notice: the file
// elsewhere is unchanged, no folder appears outside the session's own, the secret is in no
// request the scripted server logged, exactly one warning, and the pruner's tools still offered.
import { afterEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { startModelServer, type ModelServer } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { startPiRpc, type PiRpc } from "../helpers/pi-rpc.ts";
import { SessionBuilder } from "../helpers/session-builder.ts";
import { EXTENSION, agentRequests, toolMessages } from "../helpers/pruner-e2e.ts";
import { PRUNE_INDEX, QUERY_TOOL, type IndexData } from "../../core/src/shapes/entries.ts";

const SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- not-for-the-model";
const VICTIM_TEXT = "flask==3.0.0\nrequests==2.32.0\n";
/** Above DEFAULT_CONFIG.spillThreshold (65,536): spilled when the session opens, with no model call. */
const BIG_OUTPUT = Array.from({ length: 2_000 }, (_, i) => `build line ${i}: compiled module ${i} in ${i % 97} ms`).join("\n");

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
let rpc: PiRpc | undefined;
afterEach(async () => {
  await rpc?.close();
  await server?.close();
  ws?.cleanup();
  rpc = server = ws = undefined;
});

async function setup() {
  server = await startModelServer();
  server.respond = (req) => {
    const last = req.body.messages?.at(-1);
    if (last?.role === "tool") return { text: "Noted." };
    if (req.lastUserText === "recall t1") return { toolCalls: [{ id: "q1", name: QUERY_TOOL, arguments: { toolCallIds: ["t1"] } }] };
    return { text: `ok: ${req.lastUserText}` };
  };
  // A window far above the big output, so Pi's own compaction stays out of the way.
  ws = createPiWorkspace({ baseUrl: server.baseUrl, prefix: "pi-untrusted-", model: { contextWindow: 400_000 } });
  return { server, ws };
}

/** A finished task whose one bash call printed `output`: the crafted session's body. */
function craftedSession(workspace: PiWorkspace, sessionId: string, output = BIG_OUTPUT): SessionBuilder {
  const b = new SessionBuilder({ sessionId, cwd: workspace.cwd, startTime: Date.UTC(2026, 10, 1, 9) });
  b.user("build it");
  b.toolUse("bash", { command: "npm run build" }, output, { id: "call_1" });
  b.assistant("Built.");
  return b;
}

/** The crafted session's one tool result message, to be bent as an attacker would. */
function toolResultOf(b: SessionBuilder): { timestamp: unknown } {
  const entry = b.entries.find((e) => e.type === "message" && (e as { message: { role: string } }).message.role === "toolResult");
  return (entry as unknown as { message: { timestamp: unknown } }).message;
}

/** An index entry giving ref t1 to a spilled read whose file is `spillPath`: the record an attacker writes. */
function indexSpill(b: SessionBuilder, spillPath: string): void {
  const record = { toolCallId: "call_9", toolName: "read", args: { path: "notes.txt" }, resultText: "", isError: false, resultTimestamp: 1000, spillPath, resultPreview: "notes" };
  b.custom(PRUNE_INDEX, { toolCalls: [record], refs: [{ shortId: "t1", toolCallId: "call_9", resultTimestamp: 1000 }] } satisfies IndexData);
}

function writeSession(workspace: PiWorkspace, b: SessionBuilder, name = "2026-11-01T09-00-00-000Z_crafted.jsonl"): string {
  mkdirSync(workspace.sessionDir, { recursive: true });
  return b.writeTo(join(workspace.sessionDir, name));
}

/** Opens the session in `pi --mode rpc` with the pruner, sends prompts, and returns the warnings it showed. */
async function openAndPrompt(workspace: PiWorkspace, file: string, prompts: string[]) {
  rpc = await startPiRpc({ workspace, extension: EXTENSION, args: ["--session", file], timeoutMs: 30_000 });
  for (const p of prompts) await rpc.prompt(p, { timeoutMs: 15_000 });
  const warnings = rpc.notifications().filter((n) => n.message.startsWith("pi-pruner:") && n.notifyType !== "info");
  return { warnings, rpc };
}

/** Every path under `root`, relative to it (links listed, not followed). */
function tree(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      out.push(relative(root, p));
      if (e.isDirectory()) walk(p);
    }
  };
  walk(root);
  return out.sort();
}

/** What changed under the workspace's root outside the session folder, Pi's own bookkeeping aside. */
function changedOutsideSessionFolder(workspace: PiWorkspace, before: readonly string[]): string[] {
  const sessionFolder = relative(workspace.root, workspace.sessionDir);
  const old = new Set(before);
  return tree(workspace.root).filter((p) => !old.has(p) && !p.startsWith(sessionFolder) && !/^agent\/(?:sessions|cache|logs?|auth|bin)\b|^agent\/models-store\.json$/.test(p));
}

function everyRequestText(s: ModelServer): string {
  return s.requests.map((r) => JSON.stringify(r.body)).join("\n");
}

function expectToolsOffered(s: ModelServer) {
  const agent = agentRequests(s.requests);
  expect(agent.length).toBeGreaterThan(0);
  for (const r of agent) expect((r.body.tools ?? []).map((t) => t.function?.name)).toContain(QUERY_TOOL);
}

describe("a crafted session file opened in the real pi", () => {
  it("a result timestamp that walks out of the blobs folder writes nothing there: the victim file is unchanged", async () => {
    const { server, ws } = await setup();
    const victim = join(ws.root, "victim", "requirements.txt");
    mkdirSync(join(ws.root, "victim"));
    writeFileSync(victim, VICTIM_TEXT);
    const b = craftedSession(ws, "s-timestamp");
    // join(blobs, `call_1-${timestamp}.txt`) once resolved these `..` to the victim's file.
    toolResultOf(b).timestamp = `/${"../".repeat(40)}${join(ws.root, "victim", "requirements").slice(1)}`;
    const file = writeSession(ws, b);
    const before = tree(ws.root);

    const { warnings } = await openAndPrompt(ws, file, ["go on"]);

    expect(readFileSync(victim, "utf8")).toBe(VICTIM_TEXT);
    expect(readdirSync(join(ws.root, "victim"))).toEqual(["requirements.txt"]);
    expect(changedOutsideSessionFolder(ws, before)).toEqual([]);
    expect(warnings.map((w) => w.message)).toEqual([expect.stringMatching(/could not write a spill file \(the tool result's timestamp is not a whole number of milliseconds .*\); the output stays inline/)]);
    // Not spilled, so the output is still what the model is sent.
    const sent = agentRequests(server.requests).at(-1)!;
    expect(toolMessages(sent.body).find((t) => t.id === "call_1")?.text).toBe(BIG_OUTPUT);
    expectToolsOffered(server);
  });

  it("a session id with .. gets no blobs folder: nothing is created outside the sessions folder, and its spills are not read", async () => {
    const { server, ws } = await setup();
    // The id would put the blobs folder at <agentDir>/outside/x-blobs; a file waits there for a record to name it.
    const decoy = join(ws.agentDir, "outside", "x-blobs");
    mkdirSync(decoy, { recursive: true });
    writeFileSync(join(decoy, "call_9-1000.txt"), SECRET);
    const b = craftedSession(ws, "../../outside/x");
    indexSpill(b, join(decoy, "call_9-1000.txt"));
    const file = writeSession(ws, b);
    const before = tree(ws.root);

    const { warnings } = await openAndPrompt(ws, file, ["go on", "recall t1"]);

    expect(readdirSync(decoy)).toEqual(["call_9-1000.txt"]);
    expect(changedOutsideSessionFolder(ws, before)).toEqual([]);
    expect(tree(ws.sessionDir).filter((p) => p.includes("-blobs"))).toEqual([]);
    expect(warnings.map((w) => w.message)).toEqual([expect.stringContaining(`this session's id "../../outside/x" is not a safe folder name, so it has no blobs folder); the output stays inline`)]);
    expect(everyRequestText(server)).not.toContain(SECRET);
    const answer = toolMessages(agentRequests(server.requests).at(-1)!.body).find((t) => t.id === "q1")!.text;
    expect(answer).toContain(`The spilled output could not be read: this session's id "../../outside/x" is not a safe folder name`);
    expectToolsOffered(server);
  });

  it("a blobs folder that is a link to another folder (~/.ssh, say) is never read through: the key stays out of every request", async () => {
    const { server, ws } = await setup();
    const ssh = join(ws.root, "home", ".ssh");
    mkdirSync(ssh, { recursive: true });
    writeFileSync(join(ssh, "id_ed25519"), SECRET);
    mkdirSync(ws.sessionDir, { recursive: true });
    symlinkSync(ssh, join(ws.sessionDir, "s-linked-blobs"));
    const b = craftedSession(ws, "s-linked", "a short output");
    indexSpill(b, join(ws.sessionDir, "s-linked-blobs", "id_ed25519"));
    const file = writeSession(ws, b);

    const { warnings } = await openAndPrompt(ws, file, ["recall t1"]);

    expect(everyRequestText(server)).not.toContain(SECRET);
    const answer = toolMessages(agentRequests(server.requests).at(-1)!.body).find((t) => t.id === "q1")!.text;
    expect(answer).toContain(`The spilled output could not be read: this session's blobs folder (${join(ws.sessionDir, "s-linked-blobs")}) is a symbolic link; nothing is read through it`);
    expect(warnings).toEqual([]);
    expectToolsOffered(server);
  });

  it("a link placed at the spill file's name is not followed: its target is unchanged and the output stays inline", async () => {
    const { server, ws } = await setup();
    const victim = join(ws.root, "victim.txt");
    writeFileSync(victim, VICTIM_TEXT);
    const b = craftedSession(ws, "s-trap");
    const resultTimestamp = toolResultOf(b).timestamp as number;
    const blobs = join(ws.sessionDir, "s-trap-blobs");
    mkdirSync(blobs, { recursive: true });
    symlinkSync(victim, join(blobs, `call_1-${resultTimestamp}.txt`));
    const file = writeSession(ws, b);

    const { warnings } = await openAndPrompt(ws, file, ["go on"]);

    expect(readFileSync(victim, "utf8")).toBe(VICTIM_TEXT);
    expect(warnings.map((w) => w.message)).toEqual([expect.stringMatching(/could not write a spill file \(.*call_1-\d+\.txt already exists and is not this output; refused\)/)]);
    expect(toolMessages(agentRequests(server.requests).at(-1)!.body).find((t) => t.id === "call_1")?.text).toBe(BIG_OUTPUT);
    expectToolsOffered(server);
  });

  it("a FIFO at the spill file's name does not freeze Pi: the turn completes and the output stays inline", async () => {
    const { server, ws } = await setup();
    const b = craftedSession(ws, "s-fifo");
    const resultTimestamp = toolResultOf(b).timestamp as number;
    const blobs = join(ws.sessionDir, "s-fifo-blobs");
    mkdirSync(blobs, { recursive: true });
    execFileSync("mkfifo", [join(blobs, `call_1-${resultTimestamp}.txt`)]);
    const file = writeSession(ws, b);

    const { warnings } = await openAndPrompt(ws, file, ["go on"]);

    expect(warnings.map((w) => w.message)).toEqual([expect.stringMatching(/already exists and is not this output; refused/)]);
    expect(toolMessages(agentRequests(server.requests).at(-1)!.body).find((t) => t.id === "call_1")?.text).toBe(BIG_OUTPUT);
    expect(existsSync(join(blobs, `call_1-${resultTimestamp}.txt`))).toBe(true);
    expectToolsOffered(server);
  });
});
