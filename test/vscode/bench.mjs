#!/usr/bin/env node
// Editor figures in the real extension host: the first tree paint of a large session after the
// extension activates, its context timeline from the command to the chart drawn, and the cost of
// applying a one-line append. Builds a workspace whose agent dir holds one session of --mb
// megabytes (default 5), then runs suite/benchmark.test.ts through run.mjs, whose --paint-probe
// opens the Pi Pruner view and times the session's row with its reclaim in the page, and the frame
// that draws the timeline's chart with every request in its webview.
//
//   node test/vscode/bench.mjs [--mb 5]
import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { makeRunDir } from "./browser.mjs";
import { importTs } from "./lib/ts-module.mjs";

const { values: opts } = parseArgs({ options: { mb: { type: "string", default: "5" } } });
const megabytes = Number(opts.mb);
if (!(megabytes > 0)) {
  console.error(`bad --mb ${opts.mb}`);
  process.exit(2);
}

const sessions = await importTs("test/vscode/fixtures/sessions.ts");
const root = makeRunDir("pi-pruner-bench-");
const workspace = join(root, "workspace");
const agentDir = join(root, "agent");
mkdirSync(workspace, { recursive: true });
const sessionDir = join(agentDir, "sessions", sessions.sessionDirName(workspace));
const session = sessions.largeSession(workspace, megabytes * 1_000_000);
const file = sessions.writeSession(sessionDir, session);
process.stderr.write(`[bench] ${file}: ${(session.text.length / 1e6).toFixed(1)} MB\n`);

const found = {};
let pending = "";
const code = await new Promise((resolve) => {
  const child = spawn(process.execPath, [join(import.meta.dirname, "run.mjs"), "--workspace", workspace, "--grep", "^benchmark", "--env", "PI_PRUNER_BENCH=1", "--paint-probe"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, PI_CODING_AGENT_DIR: agentDir },
  });
  // Passed through as it comes; the host's and the page's BENCH-JSON lines are also kept.
  child.stdout.on("data", (chunk) => {
    process.stdout.write(chunk);
    const lines = (pending + chunk.toString()).split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const at = line.indexOf("BENCH-JSON ");
      if (at < 0) continue;
      const figure = JSON.parse(line.slice(at + "BENCH-JSON ".length));
      found[figure.kind] = figure;
    }
  });
  child.on("exit", (c) => resolve(c ?? 1));
});
if (found.paint && found.dom) {
  const at = (t) => `${(t - found.paint.activatedAtEpoch).toFixed(0)} ms`;
  console.log(`FIRST PAINT as seen (activation → the session's row with its reclaim drawn in the workbench): ${at(found.dom.paintedAt)} ("${found.dom.text}"; in the DOM at ${at(found.dom.seenAt)}; the view opened by its icon at ${found.dom.clickedAt === undefined ? "?" : at(found.dom.clickedAt)})`);
} else console.log("FIRST PAINT: not measured (no row with its reclaim was seen)");
if (found.timeline && found.timelineDom) {
  const at = (t) => `${(t - found.timeline.commandAtEpoch).toFixed(0)} ms`;
  console.log(`TIMELINE drawn (its command → the chart with all ${found.timelineDom.requests} requests drawn in the webview): ${at(found.timelineDom.paintedAt)} (in the DOM at ${at(found.timelineDom.seenAt)}; built in the host at ${found.timeline.builtMs.toFixed(0)} ms)`);
} else console.log("TIMELINE: not measured (the page never showed the chart with every request)");
rmSync(root, { recursive: true, force: true });
process.exit(code !== 0 ? code : found.dom && found.timelineDom ? 0 : 1);
