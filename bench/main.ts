// `npm run bench [-- --quick] [-- --only render,load,replay,glob,host,editor,facts,wire,compaction] [-- --no-docs] [-- --report]
//   [-- --peer-pi-condense DIR]` (DIR: a checkout of pi-condense, run beside pi-pruner where a suite compares peers)
// Runs the benchmark suites, writes bench/results.json and regenerates docs/benchmarks.md with
// its SVG charts under docs/images/bench/.
import { execFileSync } from "node:child_process";
import { cpus, freemem, loadavg, totalmem } from "node:os";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BenchResults, SuiteOutput, Figure } from "./lib/results.ts";
import { writeReport } from "./lib/report.ts";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
export const RESULTS_FILE = join(here, "results.json");

// wire comes after replay: it sets its figures beside the replay's of the same run.
const SUITES = ["render", "load", "replay", "glob", "host", "editor", "facts", "wire", "compaction"] as const;
type SuiteName = (typeof SUITES)[number];

export interface BenchOptions {
  quick: boolean;
  log: (line: string) => void;
  /** Checkouts of peers to run beside pi-pruner (never vendored). */
  peers: { piCondense?: string };
  /** The suites already run in this bench run. */
  earlier: Partial<Record<SuiteName, SuiteOutput>>;
}

function parseArgs(argv: string[]): { quick: boolean; only: SuiteName[]; docs: boolean; reportOnly: boolean; peers: BenchOptions["peers"] } {
  let quick = false;
  const peers: BenchOptions["peers"] = {};
  let docs = true;
  let reportOnly = false;
  let only: SuiteName[] = [...SUITES];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--quick") quick = true;
    else if (a === "--no-docs") docs = false;
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
      console.log("usage: npm run bench [-- --quick] [--only render,load,replay,glob,host,editor,facts,wire,compaction] [--no-docs] [--report] [--peer-pi-condense DIR]");
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  return { quick, only, docs, reportOnly, peers };
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
    case "render":
      return (await import("./suites/render.ts")).runRender({ quick, log, peers: options.peers });
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
  if (args.reportOnly) {
    const results = JSON.parse(readFileSync(RESULTS_FILE, "utf8")) as BenchResults;
    writeReport(results, root);
    console.log("docs/benchmarks.md regenerated from bench/results.json");
    return;
  }
  const started = performance.now();
  const log = (line: string) => console.log(`[${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}`);
  if (!(globalThis as { gc?: unknown }).gc) log("note: run through bench/run.mjs (node --expose-gc) for steadier figures");
  const dirty = git(["status", "--porcelain", "--untracked-files=no", "--", "core/src", "pi-extension/src"]);
  const results: BenchResults = {
    generatedAt: new Date().toISOString(),
    mode: args.quick ? "quick" : "full",
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
    const t0 = performance.now();
    try {
      const suite = await runSuite(name, { quick: args.quick, log, peers: args.peers, earlier });
      earlier[name] = suite;
      suite.seconds = Math.round((performance.now() - t0) / 100) / 10;
      results.suites[name] = suite;
      log(`── ${name} done in ${suite.seconds} s`);
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

  // Charts go to docs; results.json keeps their names, not their text.
  const forFile: BenchResults = { ...results, suites: Object.fromEntries(Object.entries(results.suites).map(([k, s]) => [k, { ...s, charts: Object.fromEntries(Object.keys(s.charts).map((c) => [c, `docs/images/bench/${c}`])) }])) };
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  writeFileSync(`${RESULTS_FILE}.tmp`, JSON.stringify(forFile, null, 2) + "\n");
  renameSync(`${RESULTS_FILE}.tmp`, RESULTS_FILE);
  log(`wrote ${RESULTS_FILE}`);
  if (args.docs) {
    writeReport(results, root);
    log("wrote docs/benchmarks.md and docs/images/bench/*.svg");
  }
  log(`total ${results.totalSeconds} s`);
}

await main();
