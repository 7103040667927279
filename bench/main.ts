// `npm run bench [-- --quick] [-- --only render,load,replay,glob,host,editor,facts,wire,compaction] [-- --no-docs] [-- --report]
//   [-- --peer-pi-condense DIR] [-- --write] [-- --out DIR] [-- --smallest]` (DIR: a checkout of pi-condense, run beside pi-pruner where a suite compares peers)
// Runs the benchmark suites and writes their results and page (with its SVG charts) to a scratch
// folder, bench/out/ unless --out says otherwise; only --write puts them in bench/results.json
// and docs/benchmarks.md (charts under docs/images/bench/), the committed figures.
import { execFileSync } from "node:child_process";
import { cpus, freemem, loadavg, totalmem } from "node:os";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { BenchResults, SuiteOutput, Figure } from "./lib/results.ts";
import { writeReport } from "./lib/report.ts";
import { IMAGES } from "./lib/report-doc.ts";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
export const RESULTS_FILE = join(here, "results.json");
/** Where a run without --write puts its results and page. */
const SCRATCH_DIR = join(here, "out");

// wire comes after replay: it sets its figures beside the replay's of the same run.
const SUITES = ["render", "load", "replay", "glob", "host", "editor", "facts", "wire", "compaction"] as const;
type SuiteName = (typeof SUITES)[number];

export interface BenchOptions {
  quick: boolean;
  /** Each suite that has sizes runs its smallest only: a check that the bench runs, not figures. */
  smallest: boolean;
  log: (line: string) => void;
  /** Checkouts of peers to run beside pi-pruner (never vendored). */
  peers: { piCondense?: string };
  /** The suites already run in this bench run. */
  earlier: Partial<Record<SuiteName, SuiteOutput>>;
}

interface BenchArgs {
  quick: boolean;
  smallest: boolean;
  only: SuiteName[];
  docs: boolean;
  reportOnly: boolean;
  peers: BenchOptions["peers"];
  /** Update the committed bench/results.json and docs/benchmarks.md. */
  write: boolean;
  /** Where results and page go without --write. */
  out: string;
}

function parseArgs(argv: string[]): BenchArgs {
  let quick = false;
  let smallest = false;
  let write = false;
  let out = SCRATCH_DIR;
  const peers: BenchOptions["peers"] = {};
  let docs = true;
  let reportOnly = false;
  let only: SuiteName[] = [...SUITES];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--quick") quick = true;
    else if (a === "--smallest") smallest = true;
    else if (a === "--write") write = true;
    else if (a === "--out" || a.startsWith("--out=")) {
      const value = a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[++i];
      if (!value) throw new Error("--out needs a folder");
      out = value;
    } else if (a === "--no-docs") docs = false;
    else if (a === "--report") reportOnly = true;
    else if (a === "--peer-pi-condense" || a.startsWith("--peer-pi-condense=")) {
      const value = a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[++i];
      if (!value) throw new Error("--peer-pi-condense needs the folder of a pi-condense checkout");
      peers.piCondense = value;
    }
    else if (a === "--only" || a.startsWith("--only=")) {
      const value = a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[++i] ?? "";
      const names = value.split(",").map((s) => s.trim()).filter(Boolean);
      for (const n of names) if (!(SUITES as readonly string[]).includes(n)) throw new Error(`unknown suite "${n}" (known: ${SUITES.join(", ")})`);
      // In the page's order, whatever the order given: a suite reads those before it.
      only = SUITES.filter((n) => names.includes(n));
    } else if (a === "--help" || a === "-h") {
      console.log("usage: npm run bench [-- --quick] [--only render,load,replay,glob,host,editor,facts,wire,compaction] [--no-docs] [--report] [--peer-pi-condense DIR] [--write] [--out DIR] [--smallest]");
      console.log("Results and page go to bench/out/ (or --out DIR); --write puts them in bench/results.json and docs/benchmarks.md instead.");
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (write && out !== SCRATCH_DIR) throw new Error("--write and --out name two places for the results: give one");
  return { quick, smallest, only, docs, reportOnly, peers, write, out };
}

/** Where this run's results file and page go. */
function destination(args: BenchArgs): { resultsFile: string; pageDir: string } {
  return args.write ? { resultsFile: RESULTS_FILE, pageDir: join(root, "docs") } : { resultsFile: join(args.out, "results.json"), pageDir: args.out };
}

/** The process's peak resident memory so far, in MiB. */
function peakRssMiB(): number {
  return Math.round(process.resourceUsage().maxRSS / 1024);
}

/**
 * Tells bench/run.mjs which suite is running, so a process that dies under it (out of memory, a
 * native crash) is reported with the suite's name; "finished" once the run ended on its own.
 */
function progress(state: string): void {
  const file = process.env.PI_PRUNER_BENCH_PROGRESS;
  if (file) writeFileSync(file, state);
}

function git(args: string[]): string {
  try {
    return execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
  } catch {
    return "";
  }
}

async function runSuite(name: SuiteName, options: BenchOptions): Promise<SuiteOutput> {
  const { quick, log } = options;
  switch (name) {
    case "render": {
      const render = await import("./suites/render.ts");
      return render.runRender({ quick, sizes: options.smallest ? render.SIZES.slice(0, 1) : undefined, log, peers: options.peers });
    }
    case "load":
      return (await import("./suites/load.ts")).runLoad({ quick, log });
    case "replay":
      return (await import("./suites/replay.ts")).runReplay({ quick, log, peers: options.peers });
    case "glob":
      return (await import("./suites/glob.ts")).runGlob({ quick, log });
    case "host":
      return (await import("./suites/host.ts")).runHost({ quick, log });
    case "editor":
      return (await import("./suites/editor.ts")).runEditor({ quick, log });
    case "facts":
      return (await import("./suites/facts.ts")).runFacts({ quick, log, peers: options.peers });
    case "wire":
      return (await import("./suites/wire.ts")).runWire({ quick, log, peers: options.peers, replay: options.earlier.replay });
    case "compaction":
      return (await import("./suites/compaction.ts")).runCompaction({ quick, log });
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const to = destination(args);
  const shown = (path: string) => (relative(process.cwd(), path).startsWith("..") ? path : relative(process.cwd(), path));
  if (args.reportOnly) {
    const results = JSON.parse(readFileSync(RESULTS_FILE, "utf8")) as BenchResults;
    writeReport(results, to.pageDir);
    console.log(`${shown(join(to.pageDir, "benchmarks.md"))} regenerated from bench/results.json${args.write ? "" : " (--write regenerates docs/benchmarks.md)"}`);
    return;
  }
  const started = performance.now();
  const log = (line: string) => console.log(`[${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}`);
  if (!(globalThis as { gc?: unknown }).gc) log("note: run through bench/run.mjs (node --expose-gc) for steadier figures");
  const dirty = git(["status", "--porcelain", "--untracked-files=no", "--", "core/src", "pi-extension/src"]);
  const results: BenchResults = {
    generatedAt: new Date().toISOString(),
    mode: args.quick || args.smallest ? "quick" : "full",
    commit: git(["rev-parse", "--short", "HEAD"]),
    sourcesModified: dirty ? dirty.split("\n").map((l) => l.trim()) : [],
    machine: {
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      cpu: cpus()[0]?.model ?? "unknown",
      cpus: cpus().length,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      freeMemoryGiB: Math.round(freemem() / 2 ** 30),
      loadAverageAtStart: loadavg().map((v) => Math.round(v * 100) / 100),
    },
    figures: {},
    suites: {},
  };
  // A partial run keeps the other suites' last results.
  if (args.only.length < SUITES.length && existsSync(RESULTS_FILE)) {
    const previous = JSON.parse(readFileSync(RESULTS_FILE, "utf8")) as BenchResults;
    for (const [name, suite] of Object.entries(previous.suites ?? {})) if (!args.only.includes(name as SuiteName)) results.suites[name] = suite;
  }
  const earlier: BenchOptions["earlier"] = {};
  for (const name of args.only) {
    log(`── ${name}`);
    progress(name);
    const t0 = performance.now();
    try {
      const suite = await runSuite(name, { quick: args.quick || args.smallest, smallest: args.smallest, log, peers: args.peers, earlier });
      earlier[name] = suite;
      suite.seconds = Math.round((performance.now() - t0) / 100) / 10;
      suite.peakRssMiB = peakRssMiB();
      results.suites[name] = suite;
      log(`── ${name} done in ${suite.seconds} s (peak RSS so far ${suite.peakRssMiB} MiB)`);
    } catch (error) {
      log(`── ${name} FAILED: ${error instanceof Error ? error.stack : String(error)}`);
      results.suites[name] = { figures: {}, data: {}, notes: [`failed: ${error instanceof Error ? error.message : String(error)}`], charts: {}, skipped: "failed" };
      process.exitCode = 1;
    }
  }
  results.machine.loadAverageAtEnd = loadavg().map((v) => Math.round(v * 100) / 100);
  const flat: Record<string, Figure> = {};
  for (const suite of Object.values(results.suites)) Object.assign(flat, suite.figures);
  results.figures = flat;
  results.totalSeconds = Math.round((performance.now() - started) / 100) / 10;
  results.peakRssMiB = peakRssMiB();

  // Charts go beside the page; the results file keeps their names, not their text.
  const images = relative(root, join(to.pageDir, IMAGES)).startsWith("..") ? join(to.pageDir, IMAGES) : relative(root, join(to.pageDir, IMAGES));
  const forFile: BenchResults = { ...results, suites: Object.fromEntries(Object.entries(results.suites).map(([k, s]) => [k, { ...s, charts: Object.fromEntries(Object.keys(s.charts).map((c) => [c, `${images}/${c}`])) }])) };
  mkdirSync(dirname(to.resultsFile), { recursive: true });
  writeFileSync(`${to.resultsFile}.tmp`, JSON.stringify(forFile, null, 2) + "\n");
  renameSync(`${to.resultsFile}.tmp`, to.resultsFile);
  log(`wrote ${shown(to.resultsFile)}`);
  if (args.docs) {
    writeReport(results, to.pageDir);
    log(`wrote ${shown(join(to.pageDir, "benchmarks.md"))} and its charts under ${shown(join(to.pageDir, IMAGES))}`);
  }
  log(`total ${results.totalSeconds} s, peak RSS ${results.peakRssMiB} MiB`);
  progress("finished");
  // The last line says where the figures went: a run without --write leaves the committed ones alone.
  if (args.write) log(`results in ${shown(to.resultsFile)} and docs/benchmarks.md (the committed figures)`);
  else log(`results in ${shown(to.resultsFile)}${args.docs ? ` and ${shown(join(to.pageDir, "benchmarks.md"))}` : ""}, not the committed figures (--write updates bench/results.json and docs/benchmarks.md)`);
}

await main();
