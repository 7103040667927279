#!/usr/bin/env node
// Search over the load test's agent dir, full size: 500 copies of the shared pruned session. Runs
// the speed test of suite/search.test.ts in the real extension host through run.mjs with
// PI_PRUNER_SEARCH_BENCH set and prints its figures (first results, completion, the host's
// event-loop delay meanwhile); with --json, writes them to a file. CI runs the 100-session variant.
//
//   node test/vscode/search-bench.mjs [--sessions 500] [--json FILE]
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: opts } = parseArgs({ options: { sessions: { type: "string", default: "500" }, json: { type: "string" } } });
if (!(Number(opts.sessions) > 0)) {
  console.error(`bad --sessions ${opts.sessions}`);
  process.exit(2);
}
const TAG = "@@search-figures@@";
process.stderr.write(`[search-bench] sessions=${opts.sessions}\n`);

let figures;
let tail = "";
const code = await new Promise((resolve) => {
  const child = spawn(process.execPath, [join(import.meta.dirname, "run.mjs"), "--grep", "^search: the load test's agent dir", "--env", `PI_PRUNER_SEARCH_BENCH=sessions=${opts.sessions}`, "--timeout", "400000"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  child.stdout.on("data", (chunk) => {
    const lines = (tail + chunk.toString()).split("\n");
    tail = lines.pop() ?? "";
    for (const line of lines) {
      const at = line.indexOf(TAG);
      if (at >= 0) figures = JSON.parse(line.slice(at + TAG.length));
      else process.stdout.write(line + "\n");
    }
  });
  child.on("exit", (c) => resolve(c ?? 1));
});
if (tail) process.stdout.write(tail + "\n");
if (figures) {
  const met = (ok) => (ok ? "met" : "MISSED");
  const load = loadavg().map((l) => l.toFixed(2)).join(" ");
  console.log(`[search-bench] load average ${load}; idle host's event-loop delay p99 ${figures.idleDelay.p99.toFixed(1)} ms (the machine's share of the delay below)`);
  console.log(`[search-bench] first results ${figures.firstResultsMs.toFixed(1)} ms (≤ 1000 ms: ${met(figures.firstResultsMs <= 1000)}); complete ${figures.completedMs.toFixed(1)} ms; event-loop delay p99 ${figures.loopDelay.p99.toFixed(1)} ms (< 50 ms: ${met(figures.loopDelay.p99 < 50)})`);
  const rb = figures.readBack;
  console.log(`[search-bench] read-back of ${rb.hits} hits past their previews ${rb.ms.toFixed(1)} ms; event-loop delay p99 ${rb.loopDelay.p99.toFixed(1)} ms, max ${rb.loopDelay.max.toFixed(1)} ms`);
  if (opts.json) {
    writeFileSync(opts.json, JSON.stringify({ measuredAt: new Date().toISOString(), loadAverage: loadavg(), ...figures }, null, 2) + "\n");
    process.stderr.write(`[search-bench] figures written to ${opts.json}\n`);
  }
} else process.stderr.write("[search-bench] no figures: the test did not get that far\n");
process.exit(code);
