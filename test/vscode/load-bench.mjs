#!/usr/bin/env node
// The extension under load, full size: 500 session files for the open workspace
// and one session that another process appends to 50 times a second for a minute. Runs
// suite/load.test.ts in the real extension host through run.mjs with PI_PRUNER_LOAD set, prints the
// figures (event-loop delay, tree answers, write → shown, memory, lost entries) and, with --json,
// writes them to a file. The suite runs a 100-session, 5-second variant of the same test in CI.
//
//   node test/vscode/load-bench.mjs [--sessions 500] [--rate 50] [--seconds 60] [--json FILE]
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: opts } = parseArgs({
  options: {
    sessions: { type: "string", default: "500" },
    rate: { type: "string", default: "50" },
    seconds: { type: "string", default: "60" },
    json: { type: "string" },
  },
});
for (const key of ["sessions", "rate", "seconds"]) {
  if (!(Number(opts[key]) > 0)) {
    console.error(`bad --${key} ${opts[key]}`);
    process.exit(2);
  }
}
const spec = `sessions=${opts.sessions},rate=${opts.rate},seconds=${opts.seconds}`;
const timeoutMs = (Number(opts.seconds) + 240) * 1000;
process.stderr.write(`[load-bench] ${spec}\n`);

let figures;
let tail = "";
const code = await new Promise((resolve) => {
  const child = spawn(process.execPath, [join(import.meta.dirname, "run.mjs"), "--grep", "^load", "--env", `PI_PRUNER_LOAD=${spec}`, "--timeout", String(timeoutMs)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  child.stdout.on("data", (chunk) => {
    const text = tail + chunk.toString();
    const lines = text.split("\n");
    tail = lines.pop() ?? "";
    for (const line of lines) {
      const at = line.indexOf("@@load-figures@@");
      if (at >= 0) figures = JSON.parse(line.slice(at + "@@load-figures@@".length));
      else process.stdout.write(line + "\n");
    }
  });
  child.on("exit", (c) => resolve(c ?? 1));
});
if (tail) process.stdout.write(tail + "\n");
if (figures && opts.json) {
  writeFileSync(opts.json, JSON.stringify({ measuredAt: new Date().toISOString(), ...figures }, null, 2) + "\n");
  process.stderr.write(`[load-bench] figures written to ${opts.json}\n`);
}
if (!figures) process.stderr.write("[load-bench] no figures: the test did not get that far\n");
process.exit(code);
