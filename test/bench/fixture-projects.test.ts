// The generated projects' scripts are real files under bench/fixtures/<project>/scripts/: the
// recorder copies every one of them into its project unchanged, each is a module Node can run, and
// run in the generated project they report the problems the tasks are about.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LONG_RECORDING, SHORT_RECORDING, type Recording } from "../../bench/record-session.ts";
import { FIXTURES_DIR } from "../../bench/lib/fixture-project.ts";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** The recording's project written to a fresh folder. */
function writeProject(recording: Recording): string {
  const root = mkdtempSync(join(tmpdir(), "pprb-fixture-project-"));
  roots.push(root);
  for (const [path, text] of Object.entries(recording.files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function run(root: string, script: string, ...args: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [join("scripts", script), ...args], { cwd: root, encoding: "utf8" });
  return { status: result.status, output: result.stdout + result.stderr };
}

describe.each([
  ["long-session-project", LONG_RECORDING],
  ["short-session-project", SHORT_RECORDING],
] as const)("bench/fixtures/%s", (folder, recording) => {
  const scripts = readdirSync(join(FIXTURES_DIR, folder, "scripts")).sort();
  const pkg = JSON.parse(recording.files["package.json"]!) as { name: string; version: string; scripts: Record<string, string> };

  it("is in the generated project file for file, byte for byte, and the project has no other script", () => {
    for (const name of scripts) expect(recording.files[`scripts/${name}`], name).toBe(readFileSync(join(FIXTURES_DIR, folder, "scripts", name), "utf8"));
    expect(Object.keys(recording.files).filter((path) => path.startsWith("scripts/")).sort()).toEqual(scripts.map((name) => `scripts/${name}`));
  });

  it("holds every script the generated package.json runs", () => {
    for (const command of Object.values(pkg.scripts)) expect(scripts).toContain(command.replace(/^node scripts\//, ""));
  });

  it("prints the generated package's name and version where it prints npm's banner", () => {
    const banners = scripts.flatMap((name) => recording.files[`scripts/${name}`]!.match(/> [\w-]+@[\d.]+ /g) ?? []);
    expect(banners.length).toBeGreaterThan(0);
    for (const banner of banners) expect(banner).toBe(`> ${pkg.name}@${pkg.version} `);
  });

  it("parses as ES modules", () => {
    for (const name of scripts) {
      const check = spawnSync(process.execPath, ["--check", join(FIXTURES_DIR, folder, "scripts", name)], { encoding: "utf8" });
      expect(check.stderr, name).toBe("");
      expect(check.status, name).toBe(0);
    }
  });
});

describe("the long project's scripts, run before any task", () => {
  const root = writeProject(LONG_RECORDING);

  it("the tests fail on the empty total and the config's missing field", () => {
    const { status, output } = run(root, "test.mjs", "stats", "config");
    expect(status).toBe(1);
    expect(output).toContain(" FAIL  test/stats/total.test.ts > total > sums an empty list to zero");
    expect(output).toContain(" FAIL  test/config/validate.test.ts > validateConfig > rejects a depth above maxDepth");
  });

  it("the type check lists the errors in src/config and the syntax error in src/render/layout.ts", () => {
    const { status, output } = run(root, "typecheck.mjs");
    expect(status).toBe(2);
    expect(output).toMatch(/^src\/config\/merge\.ts\(\d+,\d+\): error TS2322: /m);
    expect(output).toMatch(/^src\/config\/validate\.ts\(\d+,\d+\): error TS2339: /m);
    expect(output).toMatch(/^src\/render\/layout\.ts\(\d+,\d+\): error TS1005: '\)' expected\.$/m);
  });

  it("the build stops at the missing parenthesis and CI fails in its build and test steps", () => {
    expect(run(root, "build.mjs").output).toContain('✘ [ERROR] Expected ")" but found ";"');
    const ci = run(root, "ci.mjs");
    expect(ci.status).toBe(1);
    expect(ci.output.trimEnd().split("\n").at(-1)).toMatch(/^ci: 2 steps failed \(build: 1 error\) \(test: \d+ failed\)$/);
  });

  it("the benchmark is over its budget", () => {
    const { status, output } = run(root, "bench.mjs");
    expect(status).toBe(1);
    expect(output).toContain("✘ readSession: median 8412 ms is over the budget of 1000 ms");
  });
});

describe("the short project's scripts, run before any task", () => {
  const root = writeProject(SHORT_RECORDING);

  it("the build passes and the tests fail on the empty total", () => {
    expect(run(root, "build.mjs").status).toBe(0);
    const { status, output } = run(root, "test.mjs");
    expect(status).toBe(1);
    expect(output).toContain(" FAIL  test/stats/total.test.ts > total > sums an empty list to zero");
  });
});
