// `npm run bench` on the machine it is written for: the render suite at its smallest branch runs in
// a child process with bounded memory, writes to a scratch folder and leaves the committed figures
// alone; a bench process that runs out of heap is reported with the suite's name and fails the run.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { BenchResults } from "../../bench/lib/results.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const COMMITTED = [join(ROOT, "bench", "results.json"), join(ROOT, "docs", "benchmarks.md")];

/**
 * The peak resident memory the smallest render run may reach. A Node 22 process with Pi's and
 * pi-pruner's modules loaded resides in about 170–200 MiB; the 200-message branch is about 0.4 MB
 * of JSON, so even a hundred copies of it kept alive would add under 100 MiB. Above this, the
 * suite keeps far more than the copies it times.
 */
const PEAK_RSS_BOUND_MIB = 320;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function bench(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [join(ROOT, "bench", "run.mjs"), ...args], { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 }, (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }));
  });
}

/** Each committed file's bytes and modification time. */
function snapshot(): { text: string; mtimeMs: number }[] {
  return COMMITTED.map((file) => ({ text: readFileSync(file, "utf8"), mtimeMs: statSync(file).mtimeMs }));
}

const scratch = mkdtempSync(join(tmpdir(), "pprb-quick-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("npm run bench -- --quick --smallest --only render", () => {
  it("stays under its memory bound, writes its results and page to the folder it names last, and leaves bench/results.json and docs/benchmarks.md untouched", async () => {
    const out = join(scratch, "run");
    const before = snapshot();
    const run = await bench(["--quick", "--smallest", "--only", "render", "--out", out]);
    expect(run.stderr).not.toMatch(/heap limit|FAILED/);
    expect(run.code).toBe(0);

    const results = JSON.parse(readFileSync(join(out, "results.json"), "utf8")) as BenchResults;
    expect(results.figures["render.view.p50.200"]!.value).toBeGreaterThan(0);
    expect(results.figures["render.runtime.p50.200"]!.value).toBeGreaterThan(0);
    // The peak is the bench process's own (process.resourceUsage().maxRSS), not the launcher's.
    expect(results.peakRssMiB).toBeGreaterThan(50);
    expect(results.peakRssMiB).toBeLessThan(PEAK_RSS_BOUND_MIB);
    expect(readFileSync(join(out, "benchmarks.md"), "utf8")).toContain("## 1. Render latency");

    const last = run.stdout.trim().split("\n").pop()!;
    expect(last).toContain(`results in ${join(out, "results.json")} and ${join(out, "benchmarks.md")}, not the committed figures`);
    expect(snapshot()).toEqual(before);
  }, 120_000);

  it("reports a bench process that runs out of heap with the suite's name, writes nothing and exits non-zero", async () => {
    const out = join(scratch, "starved");
    const before = snapshot();
    // Loading pi-pruner's modules alone takes more heap than this.
    const run = await bench(["--quick", "--smallest", "--only", "render", "--out", out], { BENCH_HEAP_MIB: "24" });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("bench: the bench process was killed by SIGABRT while the render suite ran; nothing was written. Most likely it ran out of memory: its heap is capped at 24 MiB");
    expect(run.stderr).toContain("npm run bench -- --quick --only render");
    expect(existsSync(join(out, "results.json"))).toBe(false);
    expect(snapshot()).toEqual(before);
  }, 60_000);
});
