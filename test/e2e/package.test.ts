// The shipped Pi package outside the repository: only its bundle and package.json, no node_modules.
// Pi provides its host packages (Pi itself, pi-tui, typebox) to the extension; this proves the
// bundle asks for nothing else, including the imports it makes lazily.
import { afterEach, describe, expect, it } from "vitest";
import { cpSync, mkdtempSync, mkdirSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startModelServer, type ModelServer } from "../helpers/model-server.ts";
import { createPiWorkspace, REPO_ROOT, runPi, type PiWorkspace } from "../helpers/pi-runner.ts";
import { agentRequests, goodSummary, isSummarizerRequest, toolMessages } from "../helpers/pruner-e2e.ts";

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
let packageDir: string | undefined;
afterEach(async () => {
  await server?.close();
  ws?.cleanup();
  if (packageDir) rmSync(packageDir, { recursive: true, force: true });
});

describe("the Pi package as shipped", () => {
  it("loads from a folder with only dist/ and package.json, prunes, and serves context_tree_query", async () => {
    packageDir = mkdtempSync(join(tmpdir(), "pi-pruner-pkg-"));
    mkdirSync(join(packageDir, "dist"));
    cpSync(join(REPO_ROOT, "pi-extension", "dist", "index.js"), join(packageDir, "dist", "index.js"));
    cpSync(join(REPO_ROOT, "pi-extension", "package.json"), join(packageDir, "package.json"));
    expect(existsSync(join(packageDir, "node_modules"))).toBe(false);

    server = await startModelServer();
    server.route(isSummarizerRequest, goodSummary);
    server.route(() => true, [
      { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
      { text: "read it" },
      { toolCalls: [{ name: "context_tree_query", arguments: { toolCallIds: ["t1"] } }] },
      { text: "recovered" },
    ]);
    ws = createPiWorkspace({ baseUrl: server.baseUrl, files: { "a.txt": Array.from({ length: 200 }, (_, i) => `line ${i}: some source text`).join("\n") } });
    const run = await runPi({ workspace: ws, extension: packageDir, prompts: ["read a", "again"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/Extension error|Cannot find/);
    const last = toolMessages(agentRequests(server.requests).at(-1)!.body);
    expect(last[0]!.text).toContain("`t1`");
    expect(last[1]!.text).toContain("## t1 — read");
    expect(last[1]!.text).toContain("line 199: some source text");
  });
});
