#!/usr/bin/env node
// Opens a workspace and its Pi sessions in VS Code (code-server, on 127.0.0.1) with the Pi Pruner
// extension loaded unpackaged from vscode-extension/, prints the URL and waits until Ctrl-C.
//
//   node test/vscode/open-demo.mjs <agentDir> <workspaceDir> [--port N] [--verbose] [--dry-run]
//
// <agentDir> is Pi's agent directory the sessions were written under (PI_CODING_AGENT_DIR);
// <workspaceDir> the folder Pi ran in. The extension host gets PI_CODING_AGENT_DIR=<agentDir>.
// Nothing comes from Microsoft; the first run sets up Debian's chromium, Node 24 and code-server
// (built from npm) in .vscode-test/, which takes several minutes: it says so first, then reports
// each step, and a long step says every 20 s that it is still going. --dry-run prints what a run
// would do and exits.
import { existsSync, rmSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_EXTENSION_PATH, makeRunDir, provision, startCodeServer, workbenchUrl } from "./browser.mjs";
import { buildExtension } from "./lib/build-suite.mjs";
import { cacheDir, firstRunNotice, provisionSteps } from "./lib/provision.mjs";

const USAGE = "usage: node test/vscode/open-demo.mjs <agentDir> <workspaceDir> [--port N] [--verbose] [--dry-run]";
let parsed;
try {
  parsed = parseArgs({ options: { port: { type: "string" }, verbose: { type: "boolean", default: false }, "dry-run": { type: "boolean", default: false }, help: { type: "boolean", short: "h" } }, allowPositionals: true });
} catch (e) {
  console.error(`${e.message}\n${USAGE}`);
  process.exit(2);
}
const { values: opts, positionals } = parsed;
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
if (positionals.length !== 2) {
  console.error(USAGE);
  process.exit(2);
}
const [agentDir, workspace] = positionals.map((p) => resolve(p));
for (const [what, dir] of [["agent dir", agentDir], ["workspace", workspace]]) {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    console.error(`open-demo: the ${what} ${dir} is not a directory`);
    process.exit(2);
  }
}
const port = opts.port === undefined ? 0 : Number(opts.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`open-demo: bad --port ${opts.port}`);
  process.exit(2);
}

const say = (msg) => process.stderr.write(`[open-demo] ${msg}\n`);
const seconds = (t0) => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
const steps = provisionSteps();
if (opts["dry-run"]) {
  for (const line of steps.length ? firstRunNotice(steps) : [`the VS Code host is ready in ${cacheDir()}: a run starts in seconds`]) say(line);
  say("then: build the extension (vscode-extension/dist), start code-server on 127.0.0.1 and print the workbench URL");
  process.exit(0);
}
let t0 = performance.now();
say(steps.length ? "1/3 setting up the VS Code host (first use; several minutes, once):" : `1/3 the VS Code host is ready (${cacheDir()})`);
await provision();
if (steps.length) say(`1/3 the VS Code host is set up, in ${seconds(t0)}`);
t0 = performance.now();
say("2/3 building the extension…");
await buildExtension();
say(`2/3 built in ${seconds(t0)}`);
t0 = performance.now();
say("3/3 starting code-server on 127.0.0.1…");
const runDir = makeRunDir("pi-pruner-demo-");
let server;
const stop = async (code) => {
  await server?.stop();
  rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
  process.exit(code);
};
process.once("SIGINT", () => void stop(0));
process.once("SIGTERM", () => void stop(0));
try {
  server = await startCodeServer({
    runDir,
    workspace,
    env: { PI_CODING_AGENT_DIR: agentDir },
    verbose: opts.verbose,
    // A person opens the URL when they like: no idle shutdown for a week (code-server allows no "never"), and the chosen port when given.
    extraArgs: ["--idle-timeout-seconds", String(7 * 24 * 3600), ...(port ? ["--bind-addr", `127.0.0.1:${port}`] : [])],
  });
} catch (e) {
  say(`could not start code-server: ${e.message}`);
  await stop(1);
}
const url = workbenchUrl(server.origin, { workspace, extensionDevelopmentPath: DEFAULT_EXTENSION_PATH });
say(`3/3 code-server is up, in ${seconds(t0)}`);
console.log(url);
say(`VS Code with Pi Pruner on ${server.origin} (agent dir ${agentDir}); open the URL above, then the Pi Pruner view in the activity bar. Ctrl-C stops it.`);
server.exited.then(({ code, signal }) => {
  say(`code-server exited (${signal ?? code})`);
  void stop(1);
});
