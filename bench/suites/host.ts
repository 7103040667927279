// Figure 5: host overhead — wall time of a scripted real `pi -p` session (three coding tasks,
// 33 model requests, real tools) with and without the extension (`-e pi-extension`, the built
// bundle Pi loads), in paired, interleaved runs against the scripted model server. With the
// extension, the summarizer's requests go to the same server and answer at once. Full runs also
// time, in the same rounds, an extension that does nothing (what Pi costs for any extension) and
// the pruner with flushes left to commands (its work on every request, no summarizer request).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startModelServer, type ModelRequest } from "../../test/helpers/model-server.ts";
import { spawn } from "node:child_process";
import { createPiWorkspace, MOCK_MODEL, type PiWorkspace } from "../../test/helpers/pi-workspace.ts";
import { piEnv, PI_BIN, REPO_ROOT } from "../../test/helpers/pi-process.ts";
import { scriptedAgent } from "../../test/helpers/real-session.ts";
import { goodSummary, isSummarizerRequest } from "../../test/helpers/pruner-e2e.ts";
import { FILES, PROMPTS, SCRIPT } from "../record-session.ts";
import { figure, newSuite, spreadFigure, type SuiteOutput } from "../lib/results.ts";
import { median, spread } from "../lib/stats.ts";
import { barChart } from "../lib/svg.ts";

export interface HostOptions {
  quick: boolean;
  log: (line: string) => void;
}

interface OneRun {
  ms: number;
  /** CPU time (user + system) of Pi and every process it started, from the shell's cutime/cstime. */
  cpuMs: number;
  requests: number;
  summarizerRequests: number;
  peakRssKb?: number;
}

/**
 * Runs `pi -p` under /bin/sh, which reports its waited-for children's CPU time from /proc after
 * Pi exits: wall time is noisy on a shared machine, CPU time much less so.
 */
function runPiTimed(ws: PiWorkspace, args: string[], timeoutMs: number): Promise<{ code: number | null; ms: number; cpuMs: number; peakRssKb?: number; stderr: string }> {
  const statFile = join(ws.root, "pi-cpu.stat");
  const script = `"$0" "$@"; c=$?; cat /proc/$$/stat > "${statFile}"; exit $c`;
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn("/bin/sh", ["-c", script, PI_BIN, ...args], { cwd: ws.cwd, env: piEnv(ws), stdio: ["ignore", "ignore", "pipe"], detached: true });
    let stderr = "";
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    let peak = 0;
    const sampler = setInterval(() => {
      // The shell's child is Pi; sample its peak resident set while it runs.
      try {
        const kids = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
        for (const pid of kids) {
          const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
          if (m) peak = Math.max(peak, Number(m[1]));
        }
      } catch {
        /* gone */
      }
    }, 25);
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    }, timeoutMs);
    child.once("error", reject);
    child.once("exit", (code) => {
      const ms = performance.now() - t0;
      clearTimeout(timer);
      clearInterval(sampler);
      let cpuMs = Number.NaN;
      try {
        const fields = readFileSync(statFile, "utf8").split(")").pop()!.trim().split(/\s+/);
        cpuMs = ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
      } catch {
        /* no stat: the shell was killed */
      }
      resolve({ code, ms, cpuMs, peakRssKb: peak || undefined, stderr });
    });
  });
}

/**
 * The floor of any extension: one whose factory does nothing, loaded the same way (an ES module
 * package file given to `-e`). What it costs is Pi's own work for an extension (its loader and the
 * modules it shares with extensions), which no extension can avoid.
 */
function floorExtension(): { path: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "pprb-floor-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(join(dir, "index.js"), "export default function () {}\n");
  return { path: join(dir, "index.js"), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The pruner on, with flushes left to commands: everything it does on every request, no summarizer call. */
const NO_FLUSHES = { contextPrune: { pruneOn: "on-demand" } };

type Variant = "without" | "with" | "floor" | "noFlush";

async function oneRun(withExtension: boolean | string, settings?: Record<string, unknown>): Promise<OneRun> {
  const server = await startModelServer();
  const isMain = (req: ModelRequest) => req.toolNames.includes("read") && !isSummarizerRequest(req);
  server.respond = scriptedAgent(PROMPTS, SCRIPT, { isMain, other: (req) => goodSummary(req) });
  const ws = createPiWorkspace({ baseUrl: server.baseUrl, files: FILES, model: { contextWindow: 200_000, maxTokens: 8192, reasoning: true }, prefix: "pprb-host-", settings });
  const extension = withExtension === true ? join(REPO_ROOT, "pi-extension") : withExtension || undefined;
  const args = ["-p", "--model", MOCK_MODEL, ...(extension ? ["-e", extension] : []), ...PROMPTS];
  let run: Awaited<ReturnType<typeof runPiTimed>>;
  try {
    run = await runPiTimed(ws, args, 120_000);
  } finally {
    await server.close();
    ws.cleanup();
  }
  if (run.code !== 0) throw new Error(`pi exited ${run.code}: ${run.stderr.slice(0, 2000)}`);
  const summarizerRequests = server.chatRequests.filter(isSummarizerRequest).length;
  return { ms: Math.round(run.ms), cpuMs: run.cpuMs, requests: server.chatRequests.length - summarizerRequests, summarizerRequests, peakRssKb: run.peakRssKb };
}

export async function runHost(options: HostOptions): Promise<SuiteOutput> {
  const out = newSuite();
  // Pi loads the bundle named in pi-extension/package.json; build it from the current sources.
  const build = spawnSync(process.execPath, [join(REPO_ROOT, "scripts", "build.mjs")], { cwd: REPO_ROOT, encoding: "utf8" });
  if (build.status !== 0) throw new Error(`build failed: ${build.stderr}`);
  const pairs = options.quick ? 2 : 12;
  const floor = floorExtension();
  const run = (which: Variant) => (which === "without" ? oneRun(false) : which === "with" ? oneRun(true) : which === "floor" ? oneRun(floor.path) : oneRun(true, NO_FLUSHES));
  // Full runs also measure the floor of any extension and the pruner without flushes, beside it.
  const variants: Variant[] = options.quick ? ["without", "with"] : ["without", "with", "floor", "noFlush"];
  const runs: Record<Variant, OneRun[]> = { without: [], with: [], floor: [], noFlush: [] };
  const ratiosOf: Record<Variant, number[]> = { without: [], with: [], floor: [], noFlush: [] };
  const cpuRatiosOf: Record<Variant, number[]> = { without: [], with: [], floor: [], noFlush: [] };
  try {
    // One untimed run of each warms the file cache and Pi's compile cache (full runs only).
    if (!options.quick) for (const which of variants) await run(which);
    for (let i = 0; i < pairs; i++) {
      // Rotate which side runs first.
      const order = [...variants];
      for (let k = 0; k < i % order.length; k++) order.push(order.shift()!);
      const got: Partial<Record<Variant, OneRun>> = {};
      for (const which of order) got[which] = await run(which);
      for (const which of variants) {
        runs[which].push(got[which]!);
        ratiosOf[which].push(got[which]!.ms / got.without!.ms);
        cpuRatiosOf[which].push(got[which]!.cpuMs / got.without!.cpuMs);
      }
      const others = variants.filter((v) => v !== "without" && v !== "with").map((v) => `, ${v} ${got[v]!.ms} ms (CPU ${got[v]!.cpuMs} ms)`).join("");
      options.log(`host round ${i + 1}/${pairs}: without ${got.without!.ms} ms, with ${got.with!.ms} ms (×${ratiosOf.with[i]!.toFixed(3)}; CPU ${got.without!.cpuMs} vs ${got.with!.cpuMs} ms)${others}, ${got.with!.summarizerRequests} summarizer requests`);
    }
  } finally {
    floor.cleanup();
  }
  const without = runs.without;
  const withExt = runs.with;
  const ratios = ratiosOf.with;
  const cpuRatios = cpuRatiosOf.with;
  const w = spread(without.map((r) => r.ms));
  const x = spread(withExt.map((r) => r.ms));
  out.figures["host.without"] = spreadFigure(w, "ms", { note: `pi -p, ${without[0]!.requests} model requests` });
  out.figures["host.with"] = spreadFigure(x, "ms", { note: `pi -p -e pi-extension, ${withExt[0]!.requests} model requests + ${withExt[0]!.summarizerRequests} summarizer requests` });
  out.figures["host.ratio"] = spreadFigure(spread(ratios), "ratio", { target: { op: "<=", value: 1.05 }, note: "with ÷ without, median of per-pair ratios" });
  out.figures["host.cpu.without"] = spreadFigure(spread(without.map((r) => r.cpuMs)), "ms", { note: "CPU time (user + system) of pi and its tool processes" });
  out.figures["host.cpu.with"] = spreadFigure(spread(withExt.map((r) => r.cpuMs)), "ms", { note: "CPU time (user + system) of pi and its tool processes" });
  out.figures["host.cpu.ratio"] = spreadFigure(spread(cpuRatios), "ratio", { note: "CPU time with ÷ without, median of per-round ratios (less sensitive to other load on the machine)" });
  out.figures["host.ratioOfMedians"] = figure(x.median / w.median, "ratio", { note: "median with ÷ median without" });
  out.figures["host.extraMs"] = figure(x.median - w.median, "ms", { note: "median with − median without" });
  // What the overhead is made of: Pi's work for any extension (the floor), the pruner's work on
  // every request (no flushes), and the flushes with their summarizer requests (the rest).
  const parts: [Variant, string, string][] = [
    ["floor", "host.floor", "an extension whose factory does nothing"],
    ["noFlush", "host.noFlush", 'the pruner with pruneOn "on-demand": every request rendered, captured and billed, no flush and no summarizer request'],
  ];
  for (const [which, key, what] of parts) {
    if (!runs[which].length) continue;
    out.figures[key] = spreadFigure(spread(runs[which].map((r) => r.ms)), "ms", { note: what });
    out.figures[`${key}.cpu`] = spreadFigure(spread(runs[which].map((r) => r.cpuMs)), "ms", { note: `CPU time: ${what}` });
    out.figures[`${key}.ratio`] = spreadFigure(spread(ratiosOf[which]), "ratio", { note: `${what} ÷ without, wall time, median of per-round ratios` });
    out.figures[`${key}.cpu.ratio`] = spreadFigure(spread(cpuRatiosOf[which]), "ratio", { note: `${what} ÷ without, CPU time, median of per-round ratios` });
    const rss = runs[which].map((r) => (r.peakRssKb ?? 0) / 1024).filter((v) => v > 0);
    if (rss.length) out.figures[`host.peakRss.${which}`] = spreadFigure(spread(rss), "MiB");
  }
  const rssW = without.map((r) => (r.peakRssKb ?? 0) / 1024).filter((v) => v > 0);
  const rssX = withExt.map((r) => (r.peakRssKb ?? 0) / 1024).filter((v) => v > 0);
  if (rssW.length && rssX.length) {
    out.figures["host.peakRss.without"] = spreadFigure(spread(rssW), "MiB");
    out.figures["host.peakRss.with"] = spreadFigure(spread(rssX), "MiB");
  }
  out.data = { pairs, without, with: withExt, ratios, cpuRatios, floor: runs.floor, floorRatios: ratiosOf.floor, noFlush: runs.noFlush, noFlushRatios: ratiosOf.noFlush, noFlushCpuRatios: cpuRatiosOf.noFlush };
  const bars = (runs: OneRun[]) => {
    const wall = spread(runs.map((r) => r.ms));
    const cpu = spread(runs.map((r) => r.cpuMs));
    return [
      { name: "wall time", value: wall.median, min: wall.min, max: wall.max },
      { name: "CPU time (Pi and its tools)", value: cpu.median, min: cpu.min, max: cpu.max },
    ];
  };
  out.charts["host.svg"] = barChart({
    title: `A scripted pi -p session, ${pairs} interleaved rounds (median, whiskers min–max)`,
    yLabel: "milliseconds",
    labels: (v) => `${v.toFixed(0)} ms`,
    groups: [
      { label: "pi -p", bars: bars(without) },
      { label: "pi -p -e pi-extension", bars: bars(withExt) },
      ...(runs.floor.length ? [{ label: "an extension that does nothing", bars: bars(runs.floor) }] : []),
      ...(runs.noFlush.length ? [{ label: "pi-extension, no flushes", bars: bars(runs.noFlush) }] : []),
    ],
  });
  options.log(`host: without ${median(without.map((r) => r.ms))} ms, with ${median(withExt.map((r) => r.ms))} ms, ratio ${median(ratios).toFixed(3)}`);
  return out;
}
