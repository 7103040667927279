/**
 * How the real `pi` CLI (node_modules/.bin/pi, Pi 1.6) is started and ended by the test harness:
 * where it is, its environment, its command line, and the bookkeeping that makes sure nothing we
 * spawn outlives the test process.
 *
 * Every process runs with PI_OFFLINE=1, PI_TELEMETRY=0, its workspace's own agent dir
 * (PI_CODING_AGENT_DIR), node_modules/.bin first on PATH (Pi needs Node >= 22.19), and in its own
 * process group, so a timeout can SIGKILL Pi and every tool child it started.
 */
import type { ChildProcess } from "node:child_process";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { MOCK_MODEL, type PiWorkspace } from "./pi-workspace.ts";

/** The monorepo root (this file lives in test/helpers/). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BIN_DIR = join(REPO_ROOT, "node_modules", ".bin");
/** Our Pi; test/fixtures/foreign/record.ts records an older Pi's sessions with `PI_PRUNER_RECORD_PI` set to its binary. */
export const PI_BIN = process.env.PI_PRUNER_RECORD_PI ?? join(BIN_DIR, "pi");
export const PI_PACKAGE_DIR = join(REPO_ROOT, "node_modules", "@earendil-works", "pi-coding-agent");

// ---------------------------------------------------------------------------------------------
// Process bookkeeping: nothing we spawn may outlive the test process.
// ---------------------------------------------------------------------------------------------

const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Signal a child's whole process group (Pi and the tool processes it started). */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL") {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* already gone */
    }
  }
}

/** Kill `child`'s process group when the test process exits, should it still be running then. */
export function trackChild(child: ChildProcess) {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => {
      for (const c of liveChildren) killGroup(c);
    });
  }
  liveChildren.add(child);
  child.once("exit", () => liveChildren.delete(child));
}

/** Pi's environment: isolated agent dir, offline, no telemetry, Node 22 first on PATH. */
export function piEnv(workspace: Pick<PiWorkspace, "agentDir">, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Never inherit a developer's Pi configuration or session location.
  for (const k of Object.keys(env)) if (k.startsWith("PI_")) delete env[k];
  Object.assign(env, {
    PATH: `${BIN_DIR}:${process.env.PATH ?? ""}`,
    PI_CODING_AGENT_DIR: workspace.agentDir,
    PI_OFFLINE: "1",
    PI_TELEMETRY: "0",
    NO_COLOR: "1",
  });
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

/** What every way of starting Pi (a one-shot run, an RPC session) shares. */
export interface PiLaunchOptions {
  workspace: PiWorkspace;
  /** Extension path(s) for `-e` (relative paths resolve against the repo root). */
  extension?: string | string[];
  /** Extra CLI arguments, after the common ones (and before the prompts of a one-shot run). */
  args?: string[];
  /** `--session-id X`: creates `<time>_X.jsonl`, appends on a rerun. */
  sessionId?: string;
  /** `--no-session` */
  noSession?: boolean;
  /** `--model`; default `mock/m`; `null` passes none (settings decide). */
  model?: string | null;
  /** true → `--approve`, false → `--no-approve`, absent → the workspace's `defaultProjectTrust`. */
  approve?: boolean;
  env?: Record<string, string | undefined>;
}

function resolveExtensionArgs(extension: string | string[] | undefined): string[] {
  const list = extension === undefined ? [] : Array.isArray(extension) ? extension : [extension];
  return list.flatMap((p) => ["-e", p.startsWith("builtin:") || isAbsolute(p) ? p : resolve(REPO_ROOT, p)]);
}

/** The arguments every mode shares: model, extensions, session and approval flags. */
export function piArgs(o: Omit<PiLaunchOptions, "workspace" | "args" | "env">): string[] {
  const a: string[] = [];
  if (o.model !== null) a.push("--model", o.model ?? MOCK_MODEL);
  a.push(...resolveExtensionArgs(o.extension));
  if (o.sessionId) a.push("--session-id", o.sessionId);
  if (o.noSession) a.push("--no-session");
  if (o.approve === true) a.push("--approve");
  if (o.approve === false) a.push("--no-approve");
  return a;
}
