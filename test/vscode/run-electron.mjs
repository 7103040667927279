#!/usr/bin/env node
// The standard route: @vscode/test-electron downloads desktop VS Code into .vscode-test/ and runs
// the same mocha entry (test/vscode/suite/index.ts) in its extension host. Use it where VS Code can
// be downloaded (a developer machine, CI with internet). On this project's offline machines the
// download fails at once (no route to Microsoft's update server): use test/vscode/run.mjs there.
//
//   node test/vscode/run-electron.mjs [--workspace DIR] [--grep PATTERN] [--env KEY=VALUE]...
//                                     [--vscode-version 1.139.1|stable|insiders]
//                                     [--vscode-executable PATH]
//
// Headless Linux needs a display: `xvfb-run -a node test/vscode/run-electron.mjs`.
import { mkdtempSync, rmSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runTests } from "@vscode/test-electron";
import { cacheDir } from "./lib/provision.mjs";
import { buildExtension, buildSuite } from "./lib/build-suite.mjs";
import { piSessionFixture } from "./lib/pi-fixture.mjs";
import { prepareWorkspace, DEFAULT_EXTENSION_PATH } from "./browser.mjs";

// Same VS Code as code-server 4.139.1, so both routes test one version.
const DEFAULT_VSCODE_VERSION = "1.139.1";

const { values: opts } = parseArgs({
  options: {
    workspace: { type: "string" },
    grep: { type: "string" },
    env: { type: "string", multiple: true, default: [] },
    "vscode-version": { type: "string" },
    "vscode-executable": { type: "string" },
  },
});
const userEnv = Object.fromEntries(
  opts.env.map((kv) => {
    const i = kv.indexOf("=");
    if (i <= 0) {
      console.error(`--env expects KEY=VALUE, got ${kv}`);
      process.exit(2);
    }
    return [kv.slice(0, i), kv.slice(i + 1)];
  }),
);
const say = (msg) => process.stderr.write(`[vscode-test:electron] ${msg}\n`);

if (process.platform === "linux" && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) {
  say("no DISPLAY: on headless Linux run this under `xvfb-run -a`");
}

await buildExtension();
const extensionTestsPath = await buildSuite();
// The session our pruner writes through the real pi, as run.mjs provides it (its tests fail without it).
const piFixture = await piSessionFixture().catch((e) => say(`could not generate the real-Pi fixture session: ${e.message}`));
const runDir = realpathSync(mkdtempSync(join(tmpdir(), "pi-pruner-vscode-electron-")));
let code = 1;
try {
  const workspace = prepareWorkspace(runDir, opts.workspace);
  code = await runTests({
    version: opts["vscode-version"] ?? process.env.VSCODE_VERSION ?? DEFAULT_VSCODE_VERSION,
    vscodeExecutablePath: opts["vscode-executable"],
    cachePath: cacheDir(),
    timeout: 30_000, // idle timeout of the download
    extensionDevelopmentPath: DEFAULT_EXTENSION_PATH,
    extensionTestsPath,
    extensionTestsEnv: {
      PI_PRUNER_TEST_HOST: "electron",
      PI_PRUNER_EXPECT_ENV: JSON.stringify(userEnv),
      PI_PRUNER_TEST_COLORS: process.stdout.isTTY && !process.env.CI ? "1" : "0",
      ...(piFixture ? { PI_PRUNER_FIXTURE_PI_SESSION: piFixture.dir } : {}),
      ...(opts.grep ? { MOCHA_GREP: opts.grep } : {}),
      ...userEnv,
    },
    launchArgs: [
      workspace,
      "--disable-extensions", // other installed extensions stay off; the one under test loads
      "--disable-workspace-trust",
      "--skip-welcome",
      "--skip-release-notes",
      "--disable-gpu",
      `--user-data-dir=${join(runDir, "user-data")}`,
      `--extensions-dir=${join(runDir, "extensions")}`,
    ],
  });
} catch (e) {
  const msg = String(e?.message ?? e);
  say(`failed: ${msg}`);
  if (/download|ENOTFOUND|ECONNREFUSED|EAI_AGAIN|ENETUNREACH|getaddrinfo|update\.code\.visualstudio\.com|fetch/i.test(msg)) {
    say("VS Code could not be downloaded here. Offline, use: node test/vscode/run.mjs (code-server + Chromium)");
  }
  code = typeof e?.code === "number" ? e.code : 1;
} finally {
  rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
}
say(`exit ${code}`);
process.exit(code);
