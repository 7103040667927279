// `npm run demo` as a person runs it: the real `pi`, the scripted model, and what it prints. Every
// figure of a request agrees with the command line's view of that request, every ref it names is
// introduced, the agent's own rewinds and shrinks are not called raw, and only the folder it says
// it leaves is left, on failure none.
import { afterEach, describe, expect, it } from "vitest";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BIN_DIR, REPO_ROOT } from "../helpers/pi-process.ts";

const bin = fileURLToPath(new URL("../../pi-extension/bin/pi-pruner.js", import.meta.url));

const temps: string[] = [];
const running: ChildProcess[] = [];
afterEach(async () => {
  // A demo a failed test left held is stopped, and Pi with it (the demo ends Pi's group as it exits).
  for (const child of running.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(-child.pid!, "SIGTERM");
    await exited;
  }
  for (const temp of temps.splice(0)) rmSync(temp, { recursive: true, force: true });
});

function demoTemp(): string {
  const temp = realpathSync(mkdtempSync(join(tmpdir(), "pp-demo-test-")));
  temps.push(temp);
  return temp;
}
const demoEnv = (temp: string, env: NodeJS.ProcessEnv = {}) => ({ ...process.env, ...env, TMPDIR: temp, PATH: `${BIN_DIR}:${process.env.PATH ?? ""}` });
// Caches of the tools themselves (the extension loader's, Node's compile cache) are no folder of the demo.
const leftIn = (temp: string) => readdirSync(temp).filter((name) => name !== "jiti" && name !== "node-compile-cache");

/** The demo with its own temporary folder, so what it leaves there can be counted. */
function runDemo(env: NodeJS.ProcessEnv = {}) {
  const temp = demoTemp();
  const r = spawnSync(join(BIN_DIR, "node"), ["scripts/demo.ts"], { cwd: REPO_ROOT, encoding: "utf8", env: demoEnv(temp, env), timeout: 170_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, temp, left: leftIn(temp) };
}

/**
 * The demo with the scripted model holding its reply to the agent's request `request`
 * (PI_PRUNER_DEMO_HOLD), in its own process group as a terminal's foreground job; resolves once
 * that request has arrived, so Pi is mid-run, waiting on the model, for as long as the test likes.
 */
async function demoHeldAt(request: number) {
  const temp = demoTemp();
  const child = spawn(join(BIN_DIR, "node"), ["scripts/demo.ts"], { cwd: REPO_ROOT, env: demoEnv(temp, { PI_PRUNER_DEMO_HOLD: String(request) }), detached: true, stdio: ["pipe", "pipe", "pipe"] });
  running.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const held = `demo: holding the reply to request ${request}\n`;
  const arrived = new Promise<void>((resolve) => {
    child.stdout.on("data", (d: string) => {
      stdout += d;
      if (stdout.includes(held)) resolve();
    });
  });
  const ended = exited.then((code) => `the demo exited (${code}) before request ${request} arrived\n${stderr}${stdout}`);
  expect(await Promise.race([arrived.then(() => undefined), ended])).toBeUndefined();
  return { temp, child, exited, output: () => stdout };
}

function cli(args: string[], agentDir: string): string {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: agentDir } });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

const num = (text: string) => Number(text.replace(/,/g, ""));
/** The line of the demo's output that starts with `label` (after its indent). */
function line(output: string, label: string): string {
  const found = output.split("\n").find((l) => l.trimStart().startsWith(label));
  expect(found, `no line "${label}"`).toBeDefined();
  return found!;
}

describe("npm run demo", () => {
  it("prints one figure per request, the one pi-pruner view and inspect give; introduces every ref; leaves only the folder it names", { timeout: 180_000 }, () => {
    const demo = runDemo();
    expect(demo.code, demo.stderr + demo.stdout).toBe(0);
    const out = demo.stdout;
    const sessionFile = line(out, "Session file:").split(": ")[1]!.trim();
    const root = /^(\S+) is left on purpose/m.exec(out)?.[1];
    expect(root).toBeDefined();
    expect(sessionFile.startsWith(`${root}/`)).toBe(true);
    const agentDir = join(root!, "agent");

    // The last request: the table's last row, the summary line and `view --request last` agree.
    const rows = out.split("\n").filter((l) => /^ {2}[ \d]{6} {2}[ \d]{7} {2}[\d, ]{15} {2}[\d, ]{12} /.test(l));
    const lastRow = rows.at(-1)!.trim().split(/\s+/);
    const [request, raw, sent] = [num(lastRow.at(-4)!), num(lastRow.at(-3)!), num(lastRow.at(-2)!)];
    expect(rows.length).toBe(request);
    const summary = /^Last request \((\d+)\): ([\d,]+) → ([\d,]+) characters/m.exec(out)!;
    expect([num(summary[1]!), num(summary[2]!), num(summary[3]!)]).toEqual([request, raw, sent]);
    const viewed = /^# Characters raw ([\d,]+) → sent ([\d,]+)/m.exec(cli(["view", sessionFile, "--request", "last"], agentDir))!;
    expect([num(viewed[1]!), num(viewed[2]!)]).toEqual([raw, sent]);
    // A request in the middle agrees too.
    const middle = rows[Math.floor(rows.length / 2)]!.trim().split(/\s+/);
    const viewedMiddle = /^# Characters raw ([\d,]+) → sent ([\d,]+)/m.exec(cli(["view", sessionFile, "--request", middle.at(-4)!], agentDir))!;
    expect([num(viewedMiddle[1]!), num(viewedMiddle[2]!)]).toEqual([num(middle.at(-3)!), num(middle.at(-2)!)]);

    // The next request is labelled as such, in the demo and in inspect, with the same figures.
    const next = /^Next request \(not sent yet[^)]*\): ([\d,]+) → ([\d,]+) characters/m.exec(out)!;
    const inspect = cli(["inspect", sessionFile], agentDir);
    const inspected = /^Next request \(not sent yet[^)]*\): ([\d,]+) chars raw .* → ([\d,]+) chars sent/m.exec(inspect)!;
    expect([inspected[1], inspected[2]]).toEqual([next[1], next[2]]);

    // Every ref a chain names is introduced outside the chains, and belongs to one chain only.
    const compressed = line(out, "compressed:");
    const chains = [...compressed.matchAll(/chain (b\d+) \(([^)]*)\)/g)].map((m) => m[2]!.split(", "));
    const chainRefs = chains.flat();
    expect(chainRefs.length).toBeGreaterThan(0);
    expect(new Set(chainRefs).size).toBe(chainRefs.length);
    const elsewhere = out.split("\n").filter((l) => l !== compressed).join("\n");
    for (const ref of chainRefs) expect(elsewhere, ref).toMatch(new RegExp(`(^|[ ;:])${ref} `, "m"));
    // No block calls a call "the same output as" its own ref.
    const lastView = cli(["view", sessionFile, "--request", "last"], agentDir);
    expect(lastView).not.toMatch(/`(t\d+)` [^\n]*\(same output as `\1`\)/);

    // The protected skill read twice is listed once; the rewound search and the shrunk read are not raw.
    const protectedLine = line(out, "protected:");
    expect(protectedLine.match(/skills\/review\/SKILL\.md/g)).toHaveLength(1);
    expect(protectedLine).toContain("read 2 times");
    const rawLine = line(out, "raw:");
    expect(rawLine).not.toContain("grep -rn 'module1' .");
    expect(rawLine).not.toContain("read src/server.ts");
    expect(rawLine).toContain("context_rewind");

    // What is left is the folder the demo names, and nothing else.
    expect(demo.left).toEqual([root!.slice(demo.temp.length + 1)]);
  });

  it("a run that fails leaves nothing behind", { timeout: 120_000 }, () => {
    const demo = runDemo({ PI_PRUNER_RECORD_PI: "/bin/false" });
    expect(demo.code).toBe(1);
    expect(demo.stderr).toContain("demo failed:");
    expect(demo.left).toEqual([]);
    expect(existsSync(demo.temp)).toBe(true);
  });

  it("Ctrl-C while Pi waits on the model leaves nothing behind", { timeout: 120_000 }, async () => {
    const demo = await demoHeldAt(9);
    // Pi is under way: its workspace and session are on disk.
    const [folder] = leftIn(demo.temp);
    expect(leftIn(demo.temp)).toHaveLength(1);
    expect(folder).toMatch(/^pi-pruner-demo-/);
    expect(readdirSync(join(demo.temp, folder!), { recursive: true }).some((f) => String(f).endsWith(".jsonl"))).toBe(true);
    // Ctrl-C reaches the terminal's foreground group: the demo's.
    process.kill(-demo.child.pid!, "SIGINT");
    expect(await demo.exited).toBe(130);
    expect(demo.output()).not.toContain("left on purpose");
    expect(leftIn(demo.temp)).toEqual([]);
  });

  it("a held reply goes out when released, and the run finishes", { timeout: 120_000 }, async () => {
    const demo = await demoHeldAt(9);
    demo.child.stdin.end("go\n");
    expect(await demo.exited).toBe(0);
    expect(demo.output()).toContain("left on purpose");
    expect(leftIn(demo.temp)).toHaveLength(1);
  });
});
