#!/usr/bin/env node
// Runs the VS Code extension's integration tests in a real extension host, offline:
// code-server (VS Code 1.139.1 server, from npm, on Node 24 from npm) + Debian's Chromium as the
// workbench client, driven by playwright-core. See test/vscode/README.md.
//
//   node test/vscode/run.mjs [--workspace DIR] [--grep PATTERN] [--env KEY=VALUE]...
//                            [--timeout MS] [--summary FILE] [--keep] [--verbose] [--build-only] [--provision-only]
//
// Exit code: 0 = all passed; 1 = a test failed or the host broke; 2 = bad usage; 124 = timeout;
// 128+N = stopped by signal N. Always stops code-server (process group) and Chromium.
import { relative, join } from "node:path";
import { rmSync, writeFileSync } from "node:fs";
import { parseArgs, format, inspect, stripVTControlCharacters } from "node:util";
import { performance } from "node:perf_hooks";
import { provision, launchWorkbench, prepareWorkspace, repoRoot, DEFAULT_EXTENSION_PATH } from "./browser.mjs";
import { localDir } from "./lib/provision.mjs";
import { buildExtension, buildSuite } from "./lib/build-suite.mjs";
import { piSessionFixture } from "./lib/pi-fixture.mjs";
import { floorProbe, openPiPrunerView, paintObserver, paintObserverArgs, PAINT_REPORT, TIMELINE_REPORT } from "./lib/paint-probe.mjs";

const USAGE = `usage: node test/vscode/run.mjs [options]
  --workspace DIR     folder to open (default: temp copy of test/vscode/fixtures/workspace, else empty temp dir)
  --grep PATTERN      run only tests whose full title matches PATTERN (mocha grep)
  --env KEY=VALUE     set a variable in the extension host's environment (repeatable); each one
                      is also asserted to arrive by the suite. The runner's own environment is
                      inherited too (e.g. PI_CODING_AGENT_DIR=... node test/vscode/run.mjs).
  --timeout MS        overall bound for start + tests (default 300000, env PI_PRUNER_VSCODE_TIMEOUT)
  --summary FILE      write the mocha counts there as JSON {passed, failed, skipped} (for npm test)
  --keep              keep the run's temp dir (user data, logs, workspace copy)
  --verbose           also print code-server's output and the page console
  --paint-probe       open the Pi Pruner view by its icon and print when the first session row shows
                      its reclaim in the rendered page, and when a context timeline's chart is drawn
                      with all its requests (BENCH-JSON lines, for the editor benchmark)
  --probe-floor       with --paint-probe: open the one-item floor's view instead and time its row
  --extension DIR     load this extension too, beside Pi Pruner (repeatable; the bench's floors)
  --build-only        build the extension and the suite, print the test entry path, exit
  --provision-only    provision the cache (.vscode-test/) and exit`;

let opts;
try {
  opts = parseArgs({
    options: {
      workspace: { type: "string" },
      grep: { type: "string" },
      env: { type: "string", multiple: true, default: [] },
      timeout: { type: "string" },
      summary: { type: "string" },
      keep: { type: "boolean", default: false },
      verbose: { type: "boolean", default: false },
      "paint-probe": { type: "boolean", default: false },
      "probe-floor": { type: "boolean", default: false },
      extension: { type: "string", multiple: true, default: [] },
      "build-only": { type: "boolean", default: false },
      "provision-only": { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  }).values;
} catch (e) {
  console.error(`${e.message}\n${USAGE}`);
  process.exit(2);
}
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}

const userEnv = {};
for (const kv of opts.env) {
  const i = kv.indexOf("=");
  if (i <= 0) {
    console.error(`--env expects KEY=VALUE, got ${kv}`);
    process.exit(2);
  }
  userEnv[kv.slice(0, i)] = kv.slice(i + 1);
}
const timeoutMs = Number(opts.timeout ?? process.env.PI_PRUNER_VSCODE_TIMEOUT ?? 300_000);
if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
  console.error(`bad --timeout ${opts.timeout}`);
  process.exit(2);
}

const say = (msg) => process.stderr.write(`[vscode-test] ${msg}\n`);
let counts; // {passed, failed, skipped} as the suite reported them (for --summary)
const secs = (t0) => ((performance.now() - t0) / 1000).toFixed(1);
const tStart = performance.now();

// --- 1. provision (cached; not needed to only build for a desktop VS Code) -----------------------
if (!opts["build-only"]) {
  const tProv = performance.now();
  const prov = await provision().catch((e) => {
    say(`provisioning failed: ${e.message}`);
    writeSummary(1);
    process.exit(1);
  });
  say(prov.provisioned ? `provisioned in ${secs(tProv)} s` : `cache ok (${relative(repoRoot, prov.cache) || "."})`);
  if (opts["provision-only"]) process.exit(0);
}

// --- 2. build the extension and the suite --------------------------------------------------------
const tBuild = performance.now();
let testEntry;
try {
  await buildExtension();
  testEntry = await buildSuite();
} catch (e) {
  say(`build failed: ${e.message}`);
  writeSummary(1);
  process.exit(1);
}
say(`built extension + suite in ${secs(tBuild)} s`);
if (opts["build-only"]) {
  // For .vscode/launch.json "Extension Tests": a fresh copy of the fixture workspace to open.
  const debugWs = join(localDir, "debug-workspace");
  rmSync(debugWs, { recursive: true, force: true });
  prepareWorkspace(localDir, undefined, debugWs);
  console.log(testEntry);
  process.exit(0);
}

// --- 3. fixtures: a session written by our pruner through the real `pi` (cached by its inputs) ------
let piFixture;
try {
  const tFixture = performance.now();
  piFixture = await piSessionFixture();
  say(piFixture.generated ? `generated the real-Pi fixture session in ${secs(tFixture)} s` : "real-Pi fixture session cached");
} catch (e) {
  // The suite's tests of this fixture fail and say why; the rest still runs.
  say(`could not generate the real-Pi fixture session: ${e.message}`);
}

// --- 4. run ---------------------------------------------------------------------------------------
const colors = process.stdout.isTTY && !process.env.CI && !process.env.NO_COLOR;
// The extension host inherits the runner's environment; the suite asserts that the PI_* variables
// (e.g. PI_CODING_AGENT_DIR pointing at fixture sessions) and every --env arrive unchanged.
const expectEnv = { ...userEnv };
for (const [k, v] of Object.entries(process.env)) {
  if (/^PI_/.test(k) && !/^PI_PRUNER_(TEST|EXPECT|VSCODE)_/.test(k) && !(k in expectEnv)) expectEnv[k] = v;
}
const env = {
  PI_PRUNER_TEST_HOST: "code-server",
  PI_PRUNER_EXPECT_ENV: JSON.stringify(expectEnv),
  PI_PRUNER_TEST_COLORS: colors ? "1" : "0",
  PI_PRUNER_TEST_SUMMARY: "1",
  ...(piFixture ? { PI_PRUNER_FIXTURE_PI_SESSION: piFixture.dir } : {}),
  ...(opts.grep ? { MOCHA_GREP: opts.grep } : {}),
  ...userEnv,
};

let settle;
const result = new Promise((res) => (settle = res));
let wb;
let cleaning;

function cleanup() {
  return (cleaning ??= wb ? wb.stop().catch((e) => say(`cleanup: ${e.message}`)) : Promise.resolve());
}

for (const [sig, num] of [["SIGINT", 2], ["SIGTERM", 15], ["SIGHUP", 1]]) {
  process.once(sig, () => settle({ code: 128 + num, reason: `${sig}: stopping` }));
}

const timer = setTimeout(() => settle({ code: 124, reason: `timed out after ${timeoutMs} ms` }), timeoutMs);
timer.unref();

const tRun = performance.now();
let sawOutput = false;
const TAG = "@@pi-pruner-test@@";
const SUMMARY_TAG = "@@pi-pruner-summary@@";
env.PI_PRUNER_TEST_OUTPUT_TAG = TAG;
const workbenchLog = []; // the workbench's own log lines (not the suite's): shown on failure or --verbose
const expose = {
  // The workbench forwards its log here when the smoke-test driver is on: its own messages and the
  // extension host's console (where mocha's reporter writes), as console-style argument arrays.
  codeAutomationLog: (level, message) => {
    const args = Array.isArray(message) ? message : [message];
    const text = typeof args[0] === "string" ? format(...args) : args.map((a) => (typeof a === "string" ? a : inspect(a))).join(" ");
    if (text.startsWith(TAG)) {
      sawOutput = true;
      const out = text.slice(TAG.length);
      if (out.startsWith(SUMMARY_TAG)) {
        try {
          counts = JSON.parse(out.slice(SUMMARY_TAG.length));
        } catch {}
        return;
      }
      // some of mocha's pieces (picocolors) colour whenever CI is set; plain means plain
      process.stdout.write(`${colors ? out : stripVTControlCharacters(out)}\n`);
      return;
    }
    const line = `[workbench:${level}] ${text}`;
    if (opts.verbose) process.stderr.write(`${line}\n`);
    else if ((level === "warn" || level === "error") && !/^Canceled\b/.test(text)) {
      workbenchLog.push(line.split("\n")[0].slice(0, 500));
      if (workbenchLog.length > 100) workbenchLog.shift();
    }
  },
  // Called once the extension host has run `run()` and exited: 0 = resolved, else rejected.
  // `logs` are the workbench's log files ({ relativePath, contents }).
  codeAutomationExit: (code, logs) => {
    if (code !== 0 && Array.isArray(logs) && opts.verbose) {
      for (const l of logs) process.stderr.write(`--- ${l.relativePath}\n${l.contents}\n`);
    }
    settle({ code: Number(code) || 0 });
  },
};

let clickedAt;
if (opts["paint-probe"]) {
  expose[PAINT_REPORT] = (json) => {
    const seen = JSON.parse(json);
    process.stdout.write(`BENCH-JSON ${JSON.stringify({ kind: "dom", ...seen, clickedAt })}\n`);
  };
  expose[TIMELINE_REPORT] = (json) => process.stdout.write(`BENCH-JSON ${JSON.stringify({ kind: "timelineDom", ...JSON.parse(json) })}\n`);
}

try {
  const launching = launchWorkbench({
    workspace: opts.workspace,
    extensionDevelopmentPath: DEFAULT_EXTENSION_PATH,
    extraExtensionPaths: opts.extension,
    extensionTestsPath: testEntry,
    env,
    expose,
    verbose: opts.verbose,
    keep: opts.keep,
    waitForWorkbench: false,
    ...(opts["paint-probe"] ? { initScript: { script: paintObserver, arg: opts["probe-floor"] ? floorProbe.observerArgs : paintObserverArgs } } : {}),
  });
  // A launch that fails or outlives the timeout settles the run.
  launching.then(
    (w) => {
      wb = w;
      say(`workbench at ${w.server.origin} (workspace ${w.workspace}), running tests…`);
      w.server.exited.then(({ code, signal }) => settle({ code: 1, reason: `code-server exited during the run (${signal ?? code})` }));
      w.page.on("crash", () => settle({ code: 1, reason: "the workbench page crashed" }));
      w.browser.on("disconnected", () => settle({ code: 1, reason: "the browser went away" }));
      const view = opts["probe-floor"] ? { container: floorProbe.container, header: floorProbe.header } : {};
      // A loaded machine can take minutes to show the icon: the run's own bound applies.
      if (opts["paint-probe"]) openPiPrunerView(w.page, { onClick: (at) => (clickedAt = at), timeoutMs, ...view }).catch((e) => settle({ code: 1, reason: e.message }));
    },
    (e) => settle({ code: 1, reason: `could not start the workbench: ${e.message}` }),
  );
  const outcome = await result;
  if (outcome.reason) say(outcome.reason);
  if (outcome.code !== 0 && workbenchLog.length > 0) {
    say(`last workbench warnings/errors (first lines; everything with --verbose):`);
    for (const l of workbenchLog.slice(-15)) process.stderr.write(`  ${l}\n`);
  }
  if (outcome.code === 124 && !sawOutput) say("no output arrived from the workbench: is the payload honoured (--vscode-option enable-smoke-test-driver)?");
  if (!wb) {
    // launch still in flight (timed out or interrupted while starting): its own steps are bounded,
    // so wait for it and stop what it started rather than leave a server behind
    wb = await launching.catch(() => undefined);
  }
  say(`tests ${outcome.code === 0 ? "passed" : "FAILED"} (exit ${outcome.code}); run ${secs(tRun)} s, total ${secs(tStart)} s`);
  writeSummary(outcome.code);
  await cleanup();
  process.exit(outcome.code);
} catch (e) {
  say(e.stack || e.message);
  writeSummary(1);
  await cleanup();
  process.exit(1);
}

/** The counts for `--summary`; a run that broke before the suite reported counts as one failure. */
function writeSummary(code) {
  if (!opts.summary) return;
  const summary = counts ?? { passed: 0, failed: code === 0 ? 0 : 1, skipped: 0 };
  if (!counts) say("the suite reported no counts; the summary records the run as one failure");
  writeFileSync(opts.summary, `${JSON.stringify(summary)}\n`);
}
