#!/usr/bin/env node
// Editor figures in the real extension host: the first tree paint of a large session after the
// extension activates, its context timeline from the command to the chart drawn, and the cost of
// applying a one-line append. Builds a workspace whose agent dir holds one session of --mb
// megabytes (default 5), then runs suite/benchmark.test.ts through run.mjs, whose --paint-probe
// opens the Pi Pruner view and times the session's row with its reclaim in the page, and the frame
// that draws the timeline's chart with every request in its webview.
//
// Both floor extensions (test/vscode/floor/) are loaded beside ours in every host. With
// `--subject floor` the host is the floors' own: its agent dir is empty (ours lists nothing), the
// probe opens the one-item floor's view by its icon and times its row from the floor's activate(),
// and 3 s after activation the empty webview's command is timed to its page drawn, as ours are.
// The first view container and the first webview of a fresh host pay its one-time costs, so each
// subject gets a fresh host of its own.
//
//   node test/vscode/bench.mjs [--mb 5] [--subject ours|floor]
import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { makeRunDir } from "./browser.mjs";
import { importTs } from "./lib/ts-module.mjs";

const { values: opts } = parseArgs({ options: { mb: { type: "string", default: "5" }, subject: { type: "string", default: "ours" } } });
const megabytes = Number(opts.mb);
if (!(megabytes > 0)) {
  console.error(`bad --mb ${opts.mb}`);
  process.exit(2);
}
if (opts.subject !== "ours" && opts.subject !== "floor") {
  console.error(`bad --subject ${opts.subject} (ours or floor)`);
  process.exit(2);
}
const floor = opts.subject === "floor";
const FLOORS = ["one-item", "empty-webview"].map((name) => join(import.meta.dirname, "floor", name));

const sessions = await importTs("test/vscode/fixtures/sessions.ts");
const root = makeRunDir("pi-pruner-bench-");
const workspace = join(root, "workspace");
const agentDir = join(root, "agent");
mkdirSync(workspace, { recursive: true });
const sessionDir = join(agentDir, "sessions", sessions.sessionDirName(workspace));
if (floor) mkdirSync(sessionDir, { recursive: true });
else {
  const session = sessions.largeSession(workspace, megabytes * 1_000_000);
  const file = sessions.writeSession(sessionDir, session);
  process.stderr.write(`[bench] ${file}: ${(session.text.length / 1e6).toFixed(1)} MB\n`);
}

const found = {};
let pending = "";
const code = await new Promise((resolve) => {
  const args = ["--workspace", workspace, "--grep", floor ? "^benchmark floor" : "^benchmark", "--env", `PI_PRUNER_BENCH=${floor ? "floor" : "1"}`, "--paint-probe", ...(floor ? ["--probe-floor"] : []), ...FLOORS.flatMap((dir) => ["--extension", dir])];
  const child = spawn(process.execPath, [join(import.meta.dirname, "run.mjs"), ...args], {
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
if (floor) {
  if (found.floorPaint && found.dom) console.log(`ONE-ITEM FLOOR as seen (its activate() → its one row drawn in the workbench): ${(found.dom.paintedAt - found.floorPaint.activatedAtEpoch).toFixed(0)} ms`);
  else console.log("ONE-ITEM FLOOR: not measured (its row was never seen)");
  if (found.floorWebview && found.timelineDom) console.log(`EMPTY-WEBVIEW FLOOR (its command → its page loaded and drawn): ${(found.timelineDom.paintedAt - found.floorWebview.commandAtEpoch).toFixed(0)} ms`);
  else console.log("EMPTY-WEBVIEW FLOOR: not measured (its page was never seen drawn)");
  rmSync(root, { recursive: true, force: true });
  process.exit(code !== 0 ? code : found.floorPaint && found.dom && found.timelineDom ? 0 : 1);
}
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
