// The protected output the pruner sends again after Pi's compaction, inside the real `pi` binary:
// bounded by protectedResendShare of the model's window (many large protected outputs on a small
// window: every later request stays under the window, the newest outputs whole, the rest named and
// readable through context_tree_query), and as Pi showed it (an output an extension's
// `context_edit` redacted goes again redacted, one it removed does not go again). The scripted
// server's log of the requests is the proof.
import { afterEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { startModelServer, toolResults, type ModelRequest, type ModelServer } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import { EXTENSION, goodSummary, isSummarizerRequest } from "../helpers/pruner-e2e.ts";
import { LONG_ANSWER, agentOnly, compactByRpc, isCompactionRequest, resentBlocks } from "../helpers/pi-compaction.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";

const WINDOW = 32_000;
const REDACT = "test/fixtures/pi/redact-extension.ts";

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
afterEach(async () => {
  await server?.close();
  ws?.cleanup();
  server = undefined;
  ws = undefined;
});

/** What a request costs of the window, estimated as Pi does (characters / 4), counting the whole body as sent: system prompt, tools and all. */
const requestTokens = (req: ModelRequest) => Math.ceil(req.rawBody.length / 4);

function workspace(baseUrl: string, contextPrune: Record<string, unknown>, files: Record<string, string> = {}): PiWorkspace {
  return createPiWorkspace({
    baseUrl,
    files,
    settings: {
      // Pi keeps only what follows the cut at the newest answer (LONG_ANSWER); its own threshold stays out of the way.
      compaction: { enabled: false, keepRecentTokens: 110 },
      contextPrune: { selfControl: NO_NUDGES, ...contextPrune },
    },
    model: { contextWindow: WINDOW },
  });
}

/** Five bash runs in one answer, each printing about 3,500 distinct characters. */
const fiveRuns = (first: number) => ({
  toolCalls: Array.from({ length: 5 }, (_, i) => {
    const n = first + i;
    return { id: `call_${n}`, name: "bash", arguments: { command: `seq -f "run ${n} line %g: protected output that must come through the compaction" 1 50` } };
  }),
});

describe("protected output re-sent after Pi's compaction, in real Pi", () => {
  it("forty large protected outputs on a 32k window: every request after the compactions fits the window, the newest outputs whole, the rest named and readable by context_tree_query", async () => {
    server = await startModelServer();
    server.route(isSummarizerRequest, goodSummary);
    let checkpoints = 0;
    server.route(isCompactionRequest, () => ({ text: `## Goal\nCheckpoint ${++checkpoints}: forty runs.` }));
    server.route(() => true, [
      fiveRuns(0), fiveRuns(5), fiveRuns(10), fiveRuns(15), { text: "First half done." },
      { text: LONG_ANSWER },
      fiveRuns(20), fiveRuns(25), fiveRuns(30), fiveRuns(35), { text: "Second half done." },
      { text: LONG_ANSWER },
      { toolCalls: [{ id: "call_query", name: "context_tree_query", arguments: { toolCallIds: ["call_0"] } }] },
      { text: "Recovered run 0." },
      { text: "Done." },
    ]);
    ws = workspace(server.baseUrl, { protectedTools: ["bash"] });
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 120_000 });
    try {
      await rpc.prompt("run the first half");
      await rpc.prompt("what next?");
      const beforeFirst = agentOnly(server.requests).length;
      await compactByRpc(rpc);
      await rpc.prompt("run the second half");
      await rpc.prompt("what next?");
      const beforeSecond = agentOnly(server.requests).length;
      await compactByRpc(rpc);
      await rpc.prompt("read run 0 again");
      await rpc.prompt("anything else?");

      const requests = agentOnly(server.requests);
      expect(requests).toHaveLength(15);
      // Each run's output as the bash tool gave it to the model, by its call id.
      const outputs = new Map(requests.flatMap((r) => toolResults(r.body)).map((t) => [t.toolCallId, t.text]));
      expect(outputs.get("call_39")).toContain("run 39 line 50: protected output");

      // Every request after the first compaction fits the window, the block within a tenth of it.
      const budget = WINDOW / 10;
      for (const [i, r] of requests.entries()) {
        if (i < beforeFirst) continue;
        expect(requestTokens(r), `request ${i + 1}`).toBeLessThan(WINDOW);
        const [block] = resentBlocks(r);
        expect(block, `request ${i + 1} carries the block`).toBeDefined();
        expect(Math.ceil(block!.length / 4), `request ${i + 1}`).toBeLessThanOrEqual(budget);
      }

      // After the second compaction: the same bytes on every request, the newest runs whole, the rest named.
      const after = requests.slice(beforeSecond);
      const blocks = after.map((r) => resentBlocks(r)[0]!);
      expect(new Set(blocks).size).toBe(1);
      const block = blocks[0]!;
      const whole = [...block.matchAll(/<protected-output tool="bash">/g)].length;
      expect(whole).toBeGreaterThanOrEqual(2);
      for (let n = 40 - whole; n < 40; n++) expect(block).toContain(`<protected-output tool="bash">${outputs.get(`call_${n}`)}</protected-output>`);
      expect(block).toContain(`Left out, to keep this message within ${budget} tokens (contextPrune.protectedResendShare of the context window): ${40 - whole} older or larger protected outputs`);
      expect(block).toContain("call context_tree_query with its tool call id");
      // The newest of them named with their call, every one by its id.
      expect(block).toContain(`- bash {"command":"seq -f \\"run ${39 - whole} line %g: protected output that … (tool call id call_${39 - whole})`);
      for (let n = 0; n < 40 - whole; n++) expect(block).toMatch(new RegExp(`\\bcall_${n}\\b`));
      expect(block).not.toContain("run 0 line 1:");

      // The query gives the left-out run back whole.
      const recovered = toolResults(after.find((r) => toolResults(r.body).some((t) => t.toolCallId === "call_query"))!.body).find((t) => t.toolCallId === "call_query")!;
      expect(recovered.text).toContain("Tool call id: call_0");
      expect(recovered.text).toContain(outputs.get("call_0")!);

      const sessionFile = String((await rpc.getState()).sessionFile);
      expect(readFileSync(sessionFile, "utf8")).not.toContain("<protected-outputs");
      // The views of every request are what the server logged, the bounded block included.
      await expectRequestViewsMatch(sessionFile, requests);
    } finally {
      await rpc.close();
    }
  });

  it("a skill read an extension's context_edit redacted goes again redacted after the compaction, and one it removed does not go again", async () => {
    server = await startModelServer();
    server.route(isSummarizerRequest, goodSummary);
    server.route(isCompactionRequest, () => ({ text: "## Goal\nCheckpoint: the skills were read." }));
    server.route(() => true, [
      { toolCalls: [{ name: "read", arguments: { path: "skills/x/SKILL.md" } }, { name: "read", arguments: { path: "skills/y/SKILL.md" } }] },
      { text: "Read them." },
      { text: LONG_ANSWER },
      { text: "Going on." },
      { text: "Done." },
    ]);
    const files = {
      "skills/x/SKILL.md": "# X skill\n\nDeploy with the key SECRET-4242, then run the gate.\n",
      "skills/y/SKILL.md": "# Y skill\n\nREMOVE-ME: scratch notes nobody should see again.\n",
    };
    ws = workspace(server.baseUrl, {}, files);
    const rpc = await startPiRpc({ workspace: ws, extension: [EXTENSION, REDACT], timeoutMs: 90_000 });
    try {
      await rpc.prompt("read the skills");
      await rpc.prompt("what next?");
      const beforeCompaction = agentOnly(server.requests).length;
      await compactByRpc(rpc);
      await rpc.prompt("go on");
      await rpc.prompt("anything else?");

      const requests = agentOnly(server.requests);
      expect(requests).toHaveLength(5);
      // Before the compaction Pi itself sent the redacted read and not the removed one: the edits are in force.
      const redacted = toolResults(requests[1]!.body).find((t) => t.text.includes("# X skill"))!;
      expect(redacted.text).toContain("Deploy with the key [redacted], then run the gate.");
      expect(JSON.stringify(requests[1]!.body)).not.toContain("REMOVE-ME");
      // After it, the block carries the skill as Pi showed it, and nothing of the removed one.
      const after = requests.slice(beforeCompaction);
      expect(after).toHaveLength(2);
      for (const r of after) {
        expect(resentBlocks(r)).toEqual([expect.stringContaining(`<protected-output tool="read" path="skills/x/SKILL.md">${redacted.text}</protected-output>`)]);
        expect(resentBlocks(r)[0]).not.toContain('path="skills/y/SKILL.md"');
      }
      // Nothing sent after the edits carries either: neither the agent's requests nor Pi's compaction.
      for (const r of server.requests.slice(requests[1]!.index)) {
        expect(r.rawBody, `request ${r.index}`).not.toContain("SECRET-4242");
        expect(r.rawBody, `request ${r.index}`).not.toContain("REMOVE-ME");
      }
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), requests);
    } finally {
      await rpc.close();
    }
  });
});
