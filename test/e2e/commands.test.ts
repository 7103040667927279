// `/pruner` commands, the status line and the cost channel, in the real `pi` (RPC mode, so the
// extension's notifications and status updates arrive as records a test can read).
import { afterEach, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Reply } from "../helpers/model-server.ts";
import { runPi } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import { EXTENSION, agentRequests, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { expectRequestViewsMatch } from "../helpers/request-equality.ts";

const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}`).join("\n");

const pi = scriptedPi();
afterEach(pi.stop);

async function setup(replies: Reply[], settings: Record<string, unknown> = {}) {
  return pi.start(replies, {
    files: { "docs/guide.md": lines("guide", 120), "src/a.ts": lines("a", 120) },
    // Commands on small scripted sessions: a final reply flushes when asked to (cacheAware off); the default policy is tested in policy.test.ts.
    settings: { contextPrune: { pruneOn: "on-demand", cacheAware: false, ...settings } },
  });
}

describe("/pruner commands in real Pi", () => {
  it("an invalid setting is reported once, when the session starts, and its default applies", async () => {
    const { server, ws } = await setup([{ text: "hello" }, { text: "again" }], { minBatchChars: "lots" });
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await rpc.prompt("hi");
      await rpc.prompt("again");
      const warnings = rpc.notifications().filter((n) => n.message.includes("contextPrune.minBatchChars"));
      expect(warnings, JSON.stringify(rpc.notifications())).toHaveLength(1);
      expect(warnings[0]!.message).toMatch(/^pi-pruner: /);
      await rpc.prompt("/pruner status");
      expect(rpc.notifications().at(-1)!.message).toContain("minBatchChars 1000");
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });

  it("the status line shows the live reclaim after a flush", async () => {
    const { server, ws } = await setup([{ toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] }, { text: "ok" }, { text: "next" }]);
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await rpc.prompt("read");
      expect(rpc.statuses()["pi-pruner"]).toBe("prune: on");
      await rpc.prompt("/pruner now");
      await rpc.prompt("next");
      expect(rpc.statuses()["pi-pruner"]).toMatch(/^prune: \d+(\.\d)?k?→\d+(\.\d)?k? \(-\d+%\) · \$ [-+±]\d+%$/);
      await rpc.prompt("/pruner status");
      const status = rpc.notifications().at(-1)!.message;
      expect(status).toContain("pi-pruner is on");
      expect(status).toContain("summaries: 1, pruned calls: 1");
      await rpc.prompt("/pruner tree");
      expect(rpc.notifications().at(-1)!.message).toMatch(/t1\s+read\s+src\/a\.ts/);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });

  it("protected-paths and min-batch-chars persist through the settings writer and apply at once", async () => {
    const { server, ws } = await setup([
      { toolCalls: [{ name: "read", arguments: { path: "docs/guide.md" } }, { name: "read", arguments: { path: "src/a.ts" } }] },
      { text: "ok" },
      { text: "next" },
    ]);
    const globalFile = join(ws.agentDir, "settings.json");
    writeFileSync(globalFile, readFileSync(globalFile, "utf8").replace(/^\{/, "{\n  // kept by the writer"));
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await rpc.prompt("/pruner protected-paths **/skills/**/*.md, docs/**");
      await rpc.prompt("/pruner min-batch-chars 5");
      const text = readFileSync(globalFile, "utf8");
      expect(text).toContain("// kept by the writer");
      const settings = JSON.parse(text.replace("// kept by the writer", ""));
      expect(settings.contextPrune).toMatchObject({ protectedPaths: ["**/skills/**/*.md", "docs/**"], minBatchChars: 5, pruneOn: "on-demand" });
      await rpc.prompt("read both");
      await rpc.prompt("/pruner now");
      await rpc.prompt("next");
      const last = toolMessages(agentRequests(server.requests).at(-1)!.body);
      expect(last[0]!.text).toContain("guide line 120"); // protected by the new pattern
      expect(last[1]!.text).toContain("`t1`");
      // An invalid value is refused and nothing is written.
      await rpc.prompt("/pruner min-batch-chars -3");
      expect(rpc.notifications().at(-1)!.message).toContain("not saved");
      expect(JSON.parse(readFileSync(globalFile, "utf8").replace("// kept by the writer", "")).contextPrune.minBatchChars).toBe(5);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });

  it("/pruner off sends raw outputs again; a project file with a contextPrune block receives the change", async () => {
    const { server, ws } = await setup([{ toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] }, { text: "ok" }, { text: "pruned" }, { text: "raw" }]);
    mkdirSync(join(ws.cwd, ".pi"), { recursive: true });
    writeFileSync(join(ws.cwd, ".pi", "settings.json"), '{ "contextPrune": { "pruneOn": "on-demand" } }\n');
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await rpc.prompt("read");
      await rpc.prompt("/pruner now");
      await rpc.prompt("pruned?");
      expect(toolMessages(agentRequests(server.requests).at(-1)!.body)[0]!.text).toContain("`t1`");
      await rpc.prompt("/pruner off");
      await rpc.prompt("raw?");
      expect(toolMessages(agentRequests(server.requests).at(-1)!.body)[0]!.text).toContain("a line 120");
      expect(JSON.parse(readFileSync(join(ws.cwd, ".pi", "settings.json"), "utf8")).contextPrune.enabled).toBe(false);
      expect(rpc.statuses()["pi-pruner"]).toBe("prune: off");
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });

  it("a settings file that does not parse is refused with a message and left as it was", async () => {
    const { ws } = await setup([]);
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      const globalFile = join(ws.agentDir, "settings.json");
      const broken = '{ "retry": { "enabled": false }, "contextPrune": { ';
      writeFileSync(globalFile, broken);
      await rpc.prompt("/pruner dedup off");
      expect(rpc.notifications().at(-1)!.message).toMatch(/pi-pruner: .*settings\.json/);
      expect(readFileSync(globalFile, "utf8")).toBe(broken);
    } finally {
      await rpc.close();
    }
  });

  it("summarizer spending is emitted on pi.events as cost:external", async () => {
    const { server, ws } = await setup([{ toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] }, { text: "done" }], { pruneOn: "agent-message" });
    const run = await runPi({ workspace: ws, extension: [EXTENSION, "test/fixtures/pi/cost-listener.ts"], prompts: ["read"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const seen = run.entries.filter((e) => e.customType === "test-cost-seen");
    expect(seen).toHaveLength(1);
    expect(seen[0]!.data).toMatchObject({ source: "pi-pruner", inputTokens: expect.any(Number) });
    expect(seen[0]!.data.inputTokens).toBeGreaterThan(0);
    await expectRequestViewsMatch(run.sessionFile!, agentRequests(server.requests));
  });
});
