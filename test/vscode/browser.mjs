// The offline VS Code host: code-server (the real VS Code server + extension host) with Debian's
// Chromium as the workbench client, driven by playwright-core. Used by run.mjs (integration tests)
// and by UI checks (ui-smoke.mjs and later Playwright checks that click tree items and take
// screenshots).
//
//   const wb = await launchWorkbench({ workspace, extensionDevelopmentPath });
//   await wb.page.getByRole("treeitem", { name: "…" }).click();
//   await wb.page.screenshot({ path });
//   await wb.stop();
//
// Everything a run writes (user data, extensions dir, XDG dirs, Chromium profile) lives in one temp
// dir that stop() removes. code-server runs in its own process group and stop() kills the group.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, cpSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, delimiter } from "node:path";
import { chromium } from "playwright-core";
import { provision, CHROMIUM_PATH, repoRoot } from "./lib/provision.mjs";

export { provision, repoRoot };

export const DEFAULT_EXTENSION_PATH = join(repoRoot, "vscode-extension");

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

/** User settings that keep the workbench quiet, offline and deterministic. */
export const DEFAULT_SETTINGS = {
  "chat.disableAIFeatures": true,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "extensions.ignoreRecommendations": true,
  "update.mode": "none",
  "security.workspace.trust.enabled": false,
  "git.openRepositoryInParentFolders": "never",
  "window.restoreWindows": "none",
  "workbench.secondarySideBar.defaultVisibility": "hidden",
};

const say = (msg) => process.stderr.write(`[vscode-host] ${msg}\n`);

/** Makes a temp dir for one run. `keep` leaves it on disk after stop(). */
export function makeRunDir(prefix = "pi-pruner-vscode-") {
  // realpath: /tmp may be a symlink and VS Code compares paths as URIs
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

/**
 * A workspace for a run: `dir` as given; else a temp copy of test/vscode/fixtures/workspace when
 * it exists; else an empty temp dir.
 */
export function prepareWorkspace(runDir, dir, target = join(runDir, "workspace")) {
  if (dir) {
    const abs = resolve(dir);
    if (!existsSync(abs)) throw new Error(`workspace ${abs} does not exist`);
    return realpathSync(abs);
  }
  const ws = target;
  const fixture = join(repoRoot, "test", "vscode", "fixtures", "workspace");
  if (existsSync(fixture)) cpSync(fixture, ws, { recursive: true });
  else mkdirSync(ws, { recursive: true });
  return ws;
}

/** Environment for code-server (and so the extension host): the caller's, cleaned, plus `env`. */
function serverEnv(p, runDir, env) {
  const base = {};
  for (const [k, v] of Object.entries(process.env)) {
    // VSCODE_IPC_HOOK_CLI (set in VS Code terminals) makes code-server forward its arguments to
    // the outer editor instead of starting; other VSCODE_* variables confuse the server too.
    if (k.startsWith("VSCODE_") || k === "ELECTRON_RUN_AS_NODE") continue;
    base[k] = v;
  }
  return {
    ...base,
    PATH: `${p.node24Bin}${delimiter}${process.env.PATH ?? ""}`,
    XDG_CONFIG_HOME: join(runDir, "xdg", "config"),
    XDG_DATA_HOME: join(runDir, "xdg", "data"),
    XDG_CACHE_HOME: join(runDir, "xdg", "cache"),
    XDG_STATE_HOME: join(runDir, "xdg", "state"),
    EXTENSIONS_GALLERY: "{}",
    ...env,
  };
}

function killGroup(child, signal) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {}
  }
}

/**
 * Starts code-server on 127.0.0.1 (a port the OS picks), isolated in `runDir`.
 * Returns { port, origin, child, output(), exited, stop() }.
 */
export async function startCodeServer({
  runDir,
  workspace,
  env = {},
  settings = {},
  verbose = false,
  startTimeoutMs = 60_000,
  extraArgs = [],
  extraExtensions = [],
} = {}) {
  const p = await provision();
  const userDataDir = join(runDir, "user-data");
  const extensionsDir = join(runDir, "extensions");
  for (const d of [userDataDir, join(userDataDir, "User"), extensionsDir, join(runDir, "xdg", "config"), join(runDir, "xdg", "data"), join(runDir, "xdg", "cache"), join(runDir, "xdg", "state")]) {
    mkdirSync(d, { recursive: true });
  }
  // Installed as a user's extensions are (the server takes only one development path): a folder
  // `publisher.name-version` in the extensions dir, found when the server first scans it.
  for (const dir of extraExtensions) {
    const { publisher, name, version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    cpSync(dir, join(extensionsDir, `${publisher}.${name}-${version}`), { recursive: true });
  }
  writeFileSync(join(userDataDir, "User", "settings.json"), JSON.stringify({ ...DEFAULT_SETTINGS, ...settings }, null, 2));

  const args = [
    p.csEntry,
    "--bind-addr",
    "127.0.0.1:0",
    "--auth",
    "none",
    "--disable-telemetry",
    "--disable-update-check",
    "--disable-workspace-trust",
    "--disable-getting-started-override",
    "--ignore-last-opened",
    "--idle-timeout-seconds",
    "300", // safety net: an orphaned server (runner SIGKILLed) exits once no client is connected
    "--user-data-dir",
    userDataDir,
    "--extensions-dir",
    extensionsDir,
    // The built workbench honours the `payload` URL parameter (extensionDevelopmentPath,
    // extensionTestsPath) only with the smoke-test driver on.
    "--vscode-option",
    "enable-smoke-test-driver",
    // Use this process's environment as-is for the extension host; never run a login shell.
    "--vscode-option",
    "force-disable-user-env",
    ...extraArgs,
  ];
  if (workspace) args.push(workspace);

  const child = spawn(p.node24, args, {
    cwd: runDir,
    env: serverEnv(p, runDir, env),
    detached: true, // own process group: stop() kills the server and everything it spawned
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const onData = (chunk) => {
    const s = chunk.toString();
    out = (out + s).slice(-64_000);
    if (verbose) process.stderr.write(s.replace(/^/gm, "[code-server] "));
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const exited = new Promise((res) => child.on("exit", (code, signal) => res({ code, signal })));

  const port = await new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`code-server did not listen within ${startTimeoutMs} ms\n${out}`)), startTimeoutMs);
    const check = () => {
      const m = /HTTP server listening on https?:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout.off("data", check);
        child.stderr.off("data", check);
        res(Number(m[1]));
      }
    };
    child.stdout.on("data", check);
    child.stderr.on("data", check);
    child.on("error", (e) => {
      clearTimeout(timer);
      rej(e);
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      rej(new Error(`code-server exited early (${signal ?? code})\n${out}`));
    });
  }).catch((e) => {
    killGroup(child, "SIGKILL");
    throw e;
  });
  const origin = `http://127.0.0.1:${port}`;
  await waitHealthy(origin, startTimeoutMs);

  let stopping;
  const stop = () =>
    (stopping ??= (async () => {
      killGroup(child, "SIGTERM");
      const done = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 5000))]);
      if (!done) killGroup(child, "SIGKILL");
      // whatever else is left in the group (extension host, watchers, terminals)
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    })());
  return { port, origin, child, userDataDir, extensionsDir, exited, output: () => out, stop };
}

async function waitHealthy(origin, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (r.ok) return;
      last = `HTTP ${r.status}`;
    } catch (e) {
      last = e.message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`code-server at ${origin} not healthy: ${last}`);
}

/** The workbench URL: folder + payload (extensionDevelopmentPath, extensionTestsPath, …). */
export function workbenchUrl(origin, { workspace, extensionDevelopmentPath, extensionTestsPath, payload = [] }) {
  const remote = (abs) => `vscode-remote://${new URL(origin).host}${abs}`;
  const entries = [];
  if (extensionDevelopmentPath) entries.push(["extensionDevelopmentPath", remote(resolve(extensionDevelopmentPath))]);
  if (extensionTestsPath) entries.push(["extensionTestsPath", remote(resolve(extensionTestsPath))]);
  entries.push(["skipWelcome", "true"], ...payload);
  const q = new URLSearchParams();
  if (workspace) q.set("folder", workspace);
  q.set("payload", JSON.stringify(entries));
  return `${origin}/?${q.toString()}`;
}

/** Launches Debian's Chromium headless through playwright-core (never downloads a browser). */
export async function launchChromium({ headless = true, args = [] } = {}) {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`${CHROMIUM_PATH} not found (apt-get install chromium)`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless,
    args: [...CHROMIUM_ARGS.filter((a) => headless || a !== "--headless"), ...args],
    timeout: 60_000,
    // the caller owns signals and cleanup (stop()); playwright's own handlers would race it
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
}

/**
 * Starts code-server and opens the workbench on `workspace` with the extension loaded from
 * `extensionDevelopmentPath` (default: vscode-extension/), and any `extraExtensionPaths` installed beside it. With `extensionTestsPath` the workbench
 * runs that test entry; give `expose` ({ codeAutomationLog, codeAutomationExit }) to hear it.
 * `initScript` ({ script, arg }, as Playwright's addInitScript takes them) runs before the page's own scripts.
 *
 * Returns { page, browser, context, server, url, workspace, runDir, stop() }. stop() is idempotent
 * and always leaves nothing running.
 */
export async function launchWorkbench({
  workspace,
  extensionDevelopmentPath = DEFAULT_EXTENSION_PATH,
  extraExtensionPaths = [],
  extensionTestsPath,
  env = {},
  settings = {},
  expose = {},
  viewport = { width: 1400, height: 900 },
  verbose = false,
  keep = false,
  waitForWorkbench = true,
  headless = true,
  initScript,
} = {}) {
  const runDir = makeRunDir();
  let server;
  let browser;
  let stopping;
  const stop = () =>
    (stopping ??= (async () => {
      await Promise.race([browser?.close().catch(() => {}), new Promise((r) => setTimeout(r, 10_000))]);
      await server?.stop();
      if (!keep) rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
      else say(`kept run dir ${runDir}`);
    })());
  try {
    const ws = prepareWorkspace(runDir, workspace);
    server = await startCodeServer({ runDir, workspace: ws, env, settings, verbose, extraExtensions: extraExtensionPaths });
    browser = await launchChromium({ headless });
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    for (const [name, fn] of Object.entries(expose)) await page.exposeFunction(name, fn);
    // Runs in the page before the workbench's own scripts (e.g. an observer that times a paint).
    if (initScript) await page.addInitScript(initScript.script, initScript.arg);
    if (verbose) {
      page.on("console", (m) => process.stderr.write(`[page:${m.type()}] ${m.text()}\n`));
      page.on("pageerror", (e) => process.stderr.write(`[page:error] ${e.message}\n`));
    }
    const url = workbenchUrl(server.origin, { workspace: ws, extensionDevelopmentPath, extensionTestsPath });
    await page.goto(url, { waitUntil: "domcontentloaded", timeout: 60_000 });
    if (waitForWorkbench) await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 90_000 });
    return { page, browser, context, server, url, workspace: ws, runDir, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Waits until the workbench has restored (explorer and status bar rendered). */
export async function waitForWorkbenchReady(page, timeoutMs = 90_000) {
  await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: timeoutMs });
  await page.locator(".statusbar").waitFor({ state: "visible", timeout: timeoutMs });
  await page.locator(".part.sidebar, .part.activitybar").first().waitFor({ state: "attached", timeout: timeoutMs });
}

/**
 * Opens the command palette (F1) filtered to `title` ("Category: Title") and waits for the row.
 * Returns { input, row }; press Enter on `input` to run it, Escape to close.
 */
export async function findInCommandPalette(page, title, timeoutMs = 60_000) {
  // The palette lists the commands known when it opens; an extension's commands appear only once
  // the extension host has scanned it (seconds later on a loaded 2-core machine). So retry the
  // gesture: reopen the palette until the row shows up.
  const deadline = Date.now() + timeoutMs;
  const input = page.locator(".quick-input-widget input");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
  for (;;) {
    await page.keyboard.press("F1");
    await input.waitFor({ state: "visible", timeout: Math.max(1000, deadline - Date.now()) });
    await input.fill(`>${title}`);
    try {
      await row.waitFor({ state: "visible", timeout: Math.min(3000, Math.max(1, deadline - Date.now())) });
      return { input, row };
    } catch (e) {
      if (Date.now() >= deadline) throw new Error(`command palette never offered "${title}" within ${timeoutMs} ms`);
      await input.press("Escape");
      await input.waitFor({ state: "hidden", timeout: 5000 }).catch(() => {});
    }
  }
}

/** Runs a command by its title through the command palette. */
export async function runCommandFromPalette(page, title, timeoutMs = 30_000) {
  const { input } = await findInCommandPalette(page, title, timeoutMs);
  await input.press("Enter");
}
