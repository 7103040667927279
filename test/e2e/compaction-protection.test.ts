// Protection through Pi's own compaction, inside the real `pi` binary: a skill file read before
// `/compact` (Pi's RPC `compact` command) is summarized away by Pi, and the pruner sends its output
// again verbatim right after the compaction summary on every request that follows, across a second
// compaction too. The scripted server's log of the agent's requests is the proof; the session file
// is never changed, and the views of every request equal what was logged.
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { messageText as text, startModelServer, toolResults, type ModelServer } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import { EXTENSION, goodSummary, isSummarizerRequest } from "../helpers/pruner-e2e.ts";
import { COMPACTION_SUMMARY_START, LONG_ANSWER as ANSWER, agentOnly, compactByRpc as compact, isCompactionRequest, resentBlocks } from "../helpers/pi-compaction.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";
import { main } from "../../core/src/cli/cli.ts";

const SKILL = "# X skill\n\nBefore you say a task is done:\n1. Run the gate script and read its output.\n2. Never skip step 1.\n";
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
afterEach(async () => {
  await server?.close();
  ws?.cleanup();
  server = undefined;
  ws = undefined;
});

async function setup() {
  server = await startModelServer();
  server.route(isSummarizerRequest, goodSummary);
  let checkpoints = 0;
  server.route(isCompactionRequest, () => ({ text: `## Goal\nCheckpoint ${++checkpoints}: the skill was read.` }));
  server.route(() => true, [
    { toolCalls: [{ name: "read", arguments: { path: "skills/x/SKILL.md" } }, { name: "read", arguments: { path: "src/a.ts" } }] },
    { text: "Read them." },
    { text: ANSWER },
    { toolCalls: [{ name: "read", arguments: { path: "src/b.ts" } }] },
    { text: "b read." },
    { text: ANSWER },
    { text: "Done." },
  ]);
  ws = createPiWorkspace({
    baseUrl: server.baseUrl,
    files: { "skills/x/SKILL.md": SKILL, "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60) },
    settings: {
      // Pi keeps only what follows the cut at the newest answer; its own threshold stays out of the way.
      compaction: { enabled: false, keepRecentTokens: 110 },
      contextPrune: { selfControl: NO_NUDGES },
    },
    model: { contextWindow: 400_000 },
  });
  return { server, ws };
}

async function cliView(args: string[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "compaction-protection-"));
  try {
    let out = "";
    let err = "";
    const code = await main(args, { out: (t) => (out += t), err: (t) => (err += t), env: { PI_CODING_AGENT_DIR: join(dir, "agent") }, cwd: dir });
    expect(code, err).toBe(0);
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("protected output through Pi's compaction", () => {
  it("a skill read before /compact is sent verbatim after the compaction summary on every later request, across a second compaction", async () => {
    const { server, ws } = await setup();
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 90_000 });
    try {
      await rpc.prompt("read the skill and the source");
      await rpc.prompt("what next?");
      const beforeCompaction = agentOnly(server.requests).length;
      // What the read tool gave the model: the text every later request must carry verbatim.
      const skillRead = agentOnly(server.requests)
        .flatMap((r) => toolResults(r.body))
        .find((t) => t.text.includes("Never skip step 1."))!;
      expect(skillRead.text).toContain(SKILL.trim());
      await compact(rpc);
      await rpc.prompt("go on");
      await rpc.prompt("what next?");
      const beforeSecond = agentOnly(server.requests).length;
      await compact(rpc);
      await rpc.prompt("anything else?");

      const requests = agentOnly(server.requests);
      expect(requests).toHaveLength(7);
      expect(server.requests.filter(isCompactionRequest).length).toBeGreaterThanOrEqual(2);
      // Before the compaction the skill went out as its own tool result, and nothing was repeated.
      for (const r of requests.slice(0, beforeCompaction)) expect(resentBlocks(r)).toEqual([]);
      const expected = `<protected-output tool="read" path="skills/x/SKILL.md">${skillRead.text}</protected-output>`;
      const after = requests.slice(beforeCompaction);
      expect(after).toHaveLength(4);
      for (const [i, r] of after.entries()) {
        const messages = (r.body.messages ?? []).filter((m) => m.role !== "system");
        const summaryAt = messages.findIndex((m) => m.role === "user" && text(m).startsWith(COMPACTION_SUMMARY_START));
        expect(summaryAt, `request ${beforeCompaction + i + 1} carries Pi's compaction summary`).toBe(0);
        // Right after the summary, one block with the skill's text as the read gave it.
        expect(text(messages[1]!), `request ${beforeCompaction + i + 1}`).toContain(expected);
        expect(resentBlocks(r)).toHaveLength(1);
        // The unprotected source read went with the summary and is not repeated.
        expect(JSON.stringify(r.body.messages)).not.toContain("a line 1: const value0");
      }
      // The same bytes on every request until the next compaction, and after it the newest read still counts.
      const blocks = after.map((r) => resentBlocks(r)[0]);
      const sinceFirst = after.slice(0, beforeSecond - beforeCompaction).map((r) => resentBlocks(r)[0]);
      expect(new Set(sinceFirst).size).toBe(1);
      expect(blocks.at(-1)).toContain(expected);
      expect(server.requests.filter(isCompactionRequest).some((r) => r.allText.includes("Checkpoint 1"))).toBe(true);

      const sessionFile = String((await rpc.getState()).sessionFile);
      // Nothing of it is written to the session.
      expect(readFileSync(sessionFile, "utf8")).not.toContain("<protected-outputs");
      // The views of every request are what the server logged, the re-sent block included.
      await expectRequestViewsMatch(sessionFile, requests);
      // The model view names the block for what it is.
      const view = await cliView(["view", sessionFile, "--request", "last"]);
      expect(view).toContain("custom (sent as user) · protected output re-sent after Pi's compaction");
      expect(view).toContain(expected);
    } finally {
      await rpc.close();
    }
  });
});
