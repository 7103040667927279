// `pi-pruner inspect` and `view` on session files the real `pi` wrote, with and without the pruner.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { makeRealSession } from "../helpers/real-session.ts";
import { EXTENSION, agentRequests, goodSummary } from "../helpers/pruner-e2e.ts";
import { expectRequestViewsMatch } from "../helpers/request-equality.ts";

const bin = fileURLToPath(new URL("../../pi-extension/bin/pi-pruner.js", import.meta.url));

function cli(args: string[], agentDir: string) {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: agentDir } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("the command line on sessions written by Pi 1.6", () => {
  it("inspect reports every tool call of a plain Pi session, the skill read as protected", async () => {
    const session = await makeRealSession();
    try {
      const r = cli(["inspect", session.sessionFile, "--json"], session.workspace.agentDir);
      expect(r.code, r.stderr).toBe(0);
      const json = JSON.parse(r.stdout);
      expect(json.errors).toEqual([]);
      const calls = json.calls.map((c: { toolName: string; path: string | null; state: string }) => [c.toolName, c.path, c.state]);
      expect(calls).toEqual([
        ["read", "notes.txt", "raw"],
        ["read", "skills/demo/SKILL.md", "protected"],
        ["bash", null, "raw"],
        ["read", "missing.txt", "raw"],
      ]);
      expect(json.totals.modelChars).toBe(json.totals.rawChars);
    } finally {
      session.cleanup();
    }
  });

  it("inspect and view of a session the pruner worked on show its summaries and what the model was sent", async () => {
    const session = await makeRealSession({
      extension: EXTENSION,
      otherReply: goodSummary,
      // A flush on the final reply of this small session (cacheAware off), for the command line to show.
      settings: { contextPrune: { minBatchChars: 10, cacheAware: false } },
      files: { "notes.txt": Array.from({ length: 80 }, (_, i) => `note ${i}: the build uses esbuild and vitest`).join("\n") },
    });
    try {
      const inspect = JSON.parse(cli(["inspect", session.sessionFile, "--json"], session.workspace.agentDir).stdout);
      expect(inspect.summaries.length).toBeGreaterThan(0);
      const summarized = inspect.calls.filter((c: { state: string }) => c.state === "summarized");
      expect(summarized.length).toBeGreaterThan(0);
      expect(inspect.calls.find((c: { path: string }) => c.path === "skills/demo/SKILL.md").state).toBe("protected");
      const view = cli(["view", session.sessionFile], session.workspace.agentDir);
      expect(view.code, view.stderr).toBe(0);
      expect(view.stdout).toContain(`ref \`${summarized[0].shortRef}\``);
      // The model view of the file is what the model was actually sent on the last request.
      const modelJson = JSON.parse(cli(["view", session.sessionFile, "--json"], session.workspace.agentDir).stdout) as { role: string; toolCallId?: string; content: { text: string }[] }[];
      const lastRequest = session.requests.filter((r) => r.toolNames.includes("read")).at(-1)!;
      const sentTools = (lastRequest.body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
      const viewTools = modelJson.filter((m) => m.role === "toolResult").map((m) => m.content.map((c) => c.text).join(""));
      expect(viewTools).toEqual(sentTools);
      await expectRequestViewsMatch(session.sessionFile, agentRequests(session.requests));
    } finally {
      session.cleanup();
    }
  });
});
