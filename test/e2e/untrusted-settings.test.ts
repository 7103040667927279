// A project's `.pi/settings.json` comes with whatever repository was cloned, so the real `pi` with
// our pruner must survive a hostile one, and must not read it at all while the project is not
// trusted. Untrusted, a file nested 5,000 objects deep (jsonc-parser's recursive parse overflows
// the stack on it) is never opened: no warning, the run ends normally, the pruner is loaded (its
// tool is offered to the model). Trusted, a file nested past the pruner's bound is one warning
// naming it. Pi 1.6 itself cannot start on a trusted file nested much deeper than 1,500 levels
// (it copies the parsed settings with structuredClone, which overflows first), so the trusted runs
// use 1,000 levels, and one test pins where a trusted 5,000-level file stops Pi. A valid project
// block that protects a tool applies only when the project is trusted.
import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { Reply } from "../helpers/model-server.ts";
import { runPi, type RunPiResult } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import { EXTENSION, agentRequests, isSummarizerRequest, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES } from "../helpers/request-equality.ts";

const nested = (depth: number) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
/** Deep enough to overflow jsonc-parser's recursion in a fresh process. */
const DEEP_5000 = nested(5000);
/** Past the pruner's bound (64 levels), within what Pi 1.6 itself parses and copies. */
const DEEP_1000 = nested(1000);
const QUERY_TOOL = "context_tree_query";
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");

const pi = scriptedPi();
afterEach(pi.stop);

async function setup(agentReplies: Reply[] | (() => Reply), projectSettingsText: string) {
  const { server, ws } = await pi.start(Array.isArray(agentReplies) ? agentReplies : () => agentReplies(), {
    files: { "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60), ".pi/settings.json": projectSettingsText },
    // Flushed only when asked (/pruner now), no nudges: the requests hold exactly what the script made.
    settings: { contextPrune: { pruneOn: "on-demand", cacheAware: false, selfControl: NO_NUDGES } },
  });
  return { server, ws, projectFile: join(ws.cwd, ".pi", "settings.json") };
}

/** Neither Pi nor the pruner reported a crash of the extension. */
function expectNoExtensionFailure(output: string) {
  expect(output).not.toMatch(/Extension error|RangeError|Maximum call stack/);
}

const pruneNotes = (notes: Array<{ message: string; notifyType: string }>) => notes.filter((n) => n.message.startsWith("pi-pruner:"));

describe("a hostile project .pi/settings.json in the real pi", () => {
  for (const trusted of [false, true]) {
    const label = trusted ? "nested 1,000 deep, project trusted (--approve)" : "nested 5,000 deep, project untrusted (--no-approve)";
    const settingsText = trusted ? DEEP_1000 : DEEP_5000;

    it(`pi -p, ${label}: exits 0 with the pruner loaded and no extension error`, async () => {
      const { server, ws } = await setup(() => ({ text: "Hello." }), settingsText);
      const run: RunPiResult = await runPi({ workspace: ws, extension: EXTENSION, approve: trusted, prompts: ["say hello"], timeoutMs: 30_000 });
      expect(run.code, run.stderr).toBe(0);
      expectNoExtensionFailure(run.stdout + run.stderr);
      expect(run.stdout).toContain("Hello.");
      const requests = agentRequests(server.requests);
      expect(requests).toHaveLength(1);
      expect(requests[0]!.toolNames).toContain(QUERY_TOOL);
    });

    it(`rpc, ${label}: ${trusted ? "exactly one warning, naming the file" : "no pruner message at all (the file is not read)"}`, async () => {
      const { server, ws, projectFile } = await setup(() => ({ text: "Hello." }), settingsText);
      const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, approve: trusted, timeoutMs: 30_000 });
      let closed: Awaited<ReturnType<typeof rpc.close>> | undefined;
      try {
        const outcome = await rpc.prompt("say hello");
        expect(outcome.events.some((e) => e.type === "agent_end")).toBe(true);
        const expected = trusted
          ? [{ message: `pi-pruner: ${projectFile}: nested deeper than 64 levels; its contextPrune settings are ignored`, notifyType: "warning" }]
          : [];
        expect(pruneNotes(rpc.notifications())).toEqual(expected);
      } finally {
        closed = await rpc.close();
      }
      expect(closed.code, closed.stderr).toBe(0);
      expectNoExtensionFailure(closed.stderr + rpc.records.map((r) => JSON.stringify(r)).join("\n"));
      expect(agentRequests(server.requests)[0]!.toolNames).toContain(QUERY_TOOL);
    });
  }

  it("trusted and nested 5,000 deep, Pi 1.6 itself stops in its own settings manager, before any extension runs", async () => {
    // Not the pruner's doing, and nothing it can catch: pinned so a Pi that copes shows up here,
    // and then the trusted runs above should use 5,000 levels too.
    const { server, ws } = await setup(() => ({ text: "Hello." }), DEEP_5000);
    const run = await runPi({ workspace: ws, extension: EXTENSION, approve: true, prompts: ["say hello"], timeoutMs: 30_000 });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/RangeError: Maximum call stack size exceeded\n(\s+at .*\n)*\s+at _?SettingsManager\.getProjectSettings /);
    expect(run.stderr).not.toMatch(/pi-extension|core\/src/);
    expect(server.requests).toHaveLength(0);
  });
});

describe("a valid project contextPrune block applies only to a trusted project", () => {
  // The project protects the read tool: trusted, /pruner now leaves both reads raw; untrusted, the
  // block is not read, so they are summarized and the model is sent stubs.
  for (const trusted of [false, true]) {
    it(`protectedTools from the project, ${trusted ? "trusted: the reads stay verbatim" : "untrusted: the reads are pruned"}`, async () => {
      const { server, ws } = await setup(
        [
          { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] },
          { text: "Read them." },
          { text: "Next answer." },
        ],
        JSON.stringify({ contextPrune: { protectedTools: ["read"] } }),
      );
      const run = await runPi({ workspace: ws, extension: EXTENSION, approve: trusted, prompts: ["read the sources", "/pruner now", "what next?"], timeoutMs: 30_000 });
      expect(run.code, run.stderr).toBe(0);
      expectNoExtensionFailure(run.stdout + run.stderr);
      const requests = agentRequests(server.requests);
      expect(requests).toHaveLength(3);
      const sent = toolMessages(requests[2]!.body);
      expect(sent).toHaveLength(2);
      if (trusted) {
        expect(sent.map((t) => t.text.includes("line 60"))).toEqual([true, true]);
        expect(server.requests.filter(isSummarizerRequest)).toHaveLength(0);
      } else {
        expect(sent[0]!.text).toMatch(/pruned: see ref `t1`/);
        expect(sent[1]!.text).toMatch(/pruned: see ref `t2`/);
        expect(sent.some((t) => t.text.includes("line 60"))).toBe(false);
      }
    });
  }
});
