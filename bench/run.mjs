// Entry of `npm run bench`: runs bench/main.ts on Node 22 (type stripping) with --expose-gc, so the
// suites can collect garbage between timed rounds. Arguments after `--` are passed on. The bench
// process's heap is capped: a suite that outgrows it, or a process that dies natively, is reported
// with the suite's name and what to do, and the run exits non-zero.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The bench process's heap in MiB. A quick run peaks far below it (its peak is printed at the end); a suite that needs more holds copies it does not time. */
const DEFAULT_HEAP_MIB = 4096;

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(`npm run bench needs Node >= 22.18 (TypeScript type stripping; Pi needs >= 22.19); this is ${process.version}. Run it through npm in this repository, which uses the Node 22 from node_modules/.bin.`);
  process.exit(1);
}
const heapMiB = Number(process.env.BENCH_HEAP_MIB) || DEFAULT_HEAP_MIB;
const main = join(dirname(fileURLToPath(import.meta.url)), "main.ts");
const scratch = mkdtempSync(join(tmpdir(), "pprb-progress-"));
const progressFile = join(scratch, "suite");
const result = spawnSync(process.execPath, ["--expose-gc", `--max-old-space-size=${heapMiB}`, "--disable-warning=ExperimentalWarning", main, ...process.argv.slice(2)], {
  stdio: "inherit",
  env: { ...process.env, PI_PRUNER_BENCH_PROGRESS: progressFile },
});
let suite = "";
try {
  suite = readFileSync(progressFile, "utf8");
} catch {
  // No suite had started.
}
rmSync(scratch, { recursive: true, force: true });
if (suite !== "finished" && (result.signal || result.status !== 0)) {
  const how = result.signal ? `was killed by ${result.signal}` : `exited with status ${result.status}`;
  const where = suite ? `while the ${suite} suite ran` : "before any suite started";
  // V8 aborts (SIGABRT) when the heap is full; a crash while deserialising a clone is the same shortage.
  const likely = result.signal === "SIGABRT" || result.signal === "SIGSEGV" || result.status === 134 ? ` Most likely it ran out of memory: its heap is capped at ${heapMiB} MiB (a "heap limit" line above says so).` : "";
  const retry = suite ? ` Run that suite alone to see (npm run bench -- --quick --only ${suite}); if it needs more memory on purpose, BENCH_HEAP_MIB=${heapMiB * 2} raises the cap.` : "";
  console.error(`\nbench: the bench process ${how} ${where}; nothing was written.${likely}${retry}`);
  process.exit(result.status || 1);
}
process.exit(result.status ?? 1);
