/**
 * Run the real `pi` CLI (node_modules/.bin/pi, Pi 1.6) headless and isolated, against the
 * scripted model server of ./model-server.ts.
 *
 *   const server = await startModelServer({ replies: [...] });
 *   const ws = createPiWorkspace({ baseUrl: server.baseUrl, files: { "a.txt": "hi" } });
 *   const run = await runPi({ workspace: ws, prompts: ["read a.txt"] });
 *   // run.sessionFile, run.entries, server.requests[1].body.messages ...
 *   ws.cleanup(); await server.close();
 *
 * Isolation: every workspace has its own agent dir (PI_CODING_AGENT_DIR) with settings.json
 * (retries off, project trust "always" unless told otherwise) and models.json (provider `mock`,
 * model `m`, api `openai-completions`). Every process runs with PI_OFFLINE=1, PI_TELEMETRY=0,
 * node_modules/.bin first on PATH (Pi needs Node >= 22.19), stdin closed in print/json mode
 * (Pi reads piped stdin as prompt input and waits for EOF) and a timeout that SIGKILLs the
 * whole process group.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { messageText, startModelServer } from "./model-server.ts";
import type { ModelRequest, Reply } from "./model-server.ts";
import { sessionDirFor } from "../../core/src/session/session-files.ts";

/** The monorepo root (this file lives in test/helpers/). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BIN_DIR = join(REPO_ROOT, "node_modules", ".bin");
export const PI_BIN = join(BIN_DIR, "pi");
export const PI_PACKAGE_DIR = join(REPO_ROOT, "node_modules", "@earendil-works", "pi-coding-agent");
/** Where test/fixtures/pi lives (probe extension, stored session). */
export const PI_FIXTURES_DIR = join(REPO_ROOT, "test", "fixtures", "pi");

export const MOCK_PROVIDER = "mock";
export const MOCK_MODEL_ID = "m";
export const MOCK_MODEL = `${MOCK_PROVIDER}/${MOCK_MODEL_ID}`;

// ---------------------------------------------------------------------------------------------
// Process bookkeeping: nothing we spawn may outlive the test process.
// ---------------------------------------------------------------------------------------------

const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

function killGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL") {
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

function track(child: ChildProcess) {
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
export function piEnv(workspace: PiWorkspace, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
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
// JSONL
// ---------------------------------------------------------------------------------------------

export type JsonRecord = Record<string, any>;

/** Parse JSONL text; split on LF only (not U+2028/9), tolerate CR, blank and bad lines. */
export function parseJsonl(text: string): { records: JsonRecord[]; bad: Array<{ line: number; text: string }> } {
  const records: JsonRecord[] = [];
  const bad: Array<{ line: number; text: string }> = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.trim() === "") return;
    try {
      records.push(JSON.parse(line) as JsonRecord);
    } catch {
      bad.push({ line: i + 1, text: line });
    }
  });
  return { records, bad };
}

/** Read a session file into its records (header first). */
export function readSessionFile(file: string): JsonRecord[] {
  return parseJsonl(readFileSync(file, "utf8")).records;
}

// ---------------------------------------------------------------------------------------------
// Workspace
// ---------------------------------------------------------------------------------------------

export interface MockModelOptions {
  contextWindow?: number;
  maxTokens?: number;
  reasoning?: boolean;
  /** Extra fields merged into the model entry (e.g. `compat`). */
  extra?: Record<string, unknown>;
}

export interface PiWorkspaceOptions {
  /** Files of the workspace cwd, by relative path. */
  files?: Record<string, string>;
  /** The model server's `baseUrl` (`server.baseUrl`); can be set later with `setBaseUrl`. */
  baseUrl?: string;
  /** Merged over the default agent settings (`retry.enabled: false`, trust, default model). */
  settings?: Record<string, unknown>;
  /** Written to `<cwd>/.pi/settings.json` (loaded when the project is trusted). */
  projectSettings?: Record<string, unknown>;
  /** `defaultProjectTrust` of the agent settings. Default "always" (project `.pi/` loads in print/json/rpc). */
  projectTrust?: "always" | "ask" | "never";
  /** Files of the agent dir, by relative path (e.g. `extensions/x.ts`, `AGENTS.md`). */
  agentFiles?: Record<string, string>;
  model?: MockModelOptions;
  /** Prefix of the temp dir name. */
  prefix?: string;
}

export interface PiWorkspace {
  /** The temp root holding both folders below. */
  root: string;
  /** PI_CODING_AGENT_DIR */
  agentDir: string;
  /** The cwd Pi runs in. */
  cwd: string;
  /** Pi's default session folder for `cwd`: `<agentDir>/sessions/--<cwd>--/`. */
  sessionDir: string;
  baseUrl: string;
  /** Write a workspace file (relative to cwd); returns its absolute path. */
  writeFile(rel: string, content: string): string;
  readFile(rel: string): string;
  /** Merge into agent settings.json (top-level keys replaced). */
  updateSettings(patch: Record<string, unknown>): void;
  readSettings(): Record<string, unknown>;
  /** Write `<cwd>/.pi/settings.json`. */
  writeProjectSettings(settings: Record<string, unknown>): void;
  /** Point the `mock` provider at another server (or a dead port). */
  setBaseUrl(baseUrl: string): void;
  /** Every session file under the agent dir, oldest first (by mtime). */
  sessionFiles(): string[];
  /** The session file of `sessionId`, or the newest one. */
  findSessionFile(sessionId?: string): string | undefined;
  /** Remove the temp root. */
  cleanup(): void;
}

function writeJson(file: string, value: unknown) {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function listJsonl(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...listJsonl(p));
    else if (e.isFile() && e.name.endsWith(".jsonl")) out.push(p);
  }
  return out;
}

export function createPiWorkspace(opts: PiWorkspaceOptions = {}): PiWorkspace {
  // realpath: Pi resolves the cwd, and /tmp may be a symlink (macOS).
  const root = realpathSync(mkdtempSync(join(tmpdir(), opts.prefix ?? "pi-e2e-")));
  const agentDir = join(root, "agent");
  const cwd = join(root, "workspace");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const settingsPath = join(agentDir, "settings.json");
  const modelsPath = join(agentDir, "models.json");
  let baseUrl = opts.baseUrl ?? "http://127.0.0.1:9/v1";

  const writeModels = () => {
    const m = opts.model ?? {};
    writeJson(modelsPath, {
      providers: {
        [MOCK_PROVIDER]: {
          baseUrl,
          api: "openai-completions",
          apiKey: "test-key",
          models: [
            {
              id: MOCK_MODEL_ID,
              name: "Mock model",
              contextWindow: m.contextWindow ?? 32000,
              maxTokens: m.maxTokens ?? 1024,
              ...(m.reasoning !== undefined ? { reasoning: m.reasoning } : {}),
              ...(m.extra ?? {}),
            },
          ],
        },
      },
    });
  };

  writeJson(settingsPath, {
    retry: { enabled: false },
    defaultProjectTrust: opts.projectTrust ?? "always",
    defaultProvider: MOCK_PROVIDER,
    defaultModel: MOCK_MODEL_ID,
    ...(opts.settings ?? {}),
  });
  writeModels();
  for (const [rel, content] of Object.entries(opts.agentFiles ?? {})) {
    mkdirSync(dirname(join(agentDir, rel)), { recursive: true });
    writeFileSync(join(agentDir, rel), content);
  }

  const ws: PiWorkspace = {
    root,
    agentDir,
    cwd,
    sessionDir: sessionDirFor(agentDir, cwd),
    get baseUrl() {
      return baseUrl;
    },
    writeFile(rel, content) {
      const p = join(cwd, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, content);
      return p;
    },
    readFile: (rel) => readFileSync(join(cwd, rel), "utf8"),
    updateSettings(patch) {
      writeJson(settingsPath, { ...ws.readSettings(), ...patch });
    },
    readSettings: () => JSON.parse(readFileSync(settingsPath, "utf8")) as Record<string, unknown>,
    writeProjectSettings(settings) {
      writeJson(join(cwd, ".pi", "settings.json"), settings);
    },
    setBaseUrl(url) {
      baseUrl = url;
      writeModels();
    },
    sessionFiles() {
      return listJsonl(join(agentDir, "sessions"))
        .map((f) => ({ f, t: statSync(f).mtimeMs }))
        .sort((a, b) => a.t - b.t)
        .map((x) => x.f);
    },
    findSessionFile(sessionId) {
      const files = ws.sessionFiles();
      if (sessionId) return files.find((f) => f.endsWith(`_${sessionId}.jsonl`));
      return files[files.length - 1];
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
  for (const [rel, content] of Object.entries(opts.files ?? {})) ws.writeFile(rel, content);
  if (opts.projectSettings) ws.writeProjectSettings(opts.projectSettings);
  return ws;
}

// ---------------------------------------------------------------------------------------------
// One headless run
// ---------------------------------------------------------------------------------------------

export interface RunPiOptions {
  workspace: PiWorkspace;
  /** Prompts, run in order (a `/command` prompt runs the extension command without a model turn). */
  prompts?: string[];
  /** Extra CLI arguments, placed before the prompts. */
  args?: string[];
  /** Extension path(s) for `-e` (relative paths resolve against the repo root). */
  extension?: string | string[];
  /** Default "print" (`-p`). "json" = `--mode json`; "rpc" drives `--mode rpc` with `prompt` commands. */
  mode?: "print" | "json" | "rpc";
  /** `--session-id X`: creates `<time>_X.jsonl`, appends on a rerun. */
  sessionId?: string;
  /** `--no-session` */
  noSession?: boolean;
  /** `--model`; default `mock/m`; `null` passes none (settings decide). */
  model?: string | null;
  /** true → `--approve`, false → `--no-approve`, absent → the workspace's `defaultProjectTrust`. */
  approve?: boolean;
  env?: Record<string, string | undefined>;
  /** Hard limit; the process group is SIGKILLed after it. Default 15000. */
  timeoutMs?: number;
  /** Text piped to stdin (print/json). Default: stdin is /dev/null. */
  stdin?: string;
  /** Sample the Pi process's peak RSS from /proc (Linux). */
  measure?: boolean;
}

export interface RunPiResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** Peak resident set of the Pi process in KiB (with `measure`, Linux only). */
  peakRssKb?: number;
  /** The command line after `pi`. */
  argv: string[];
  /** The session file written or appended by this run (undefined with --no-session). */
  sessionFile?: string;
  /** Records of `sessionFile` (header first). */
  entries: JsonRecord[];
  /** json mode: every stdout record (header first); rpc mode: every record from Pi. */
  events?: JsonRecord[];
  /** rpc mode: extension_ui_request records. */
  uiRequests?: JsonRecord[];
  /** rpc mode: command responses. */
  responses?: JsonRecord[];
}

function resolveExtensionArgs(extension: string | string[] | undefined): string[] {
  const list = extension === undefined ? [] : Array.isArray(extension) ? extension : [extension];
  return list.flatMap((p) => ["-e", p.startsWith("builtin:") || isAbsolute(p) ? p : resolve(REPO_ROOT, p)]);
}

function commonArgs(o: { extension?: string | string[]; sessionId?: string; noSession?: boolean; model?: string | null; approve?: boolean }): string[] {
  const a: string[] = [];
  if (o.model !== null) a.push("--model", o.model ?? MOCK_MODEL);
  a.push(...resolveExtensionArgs(o.extension));
  if (o.sessionId) a.push("--session-id", o.sessionId);
  if (o.noSession) a.push("--no-session");
  if (o.approve === true) a.push("--approve");
  if (o.approve === false) a.push("--no-approve");
  return a;
}

function readPeakRssKb(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

function locateSessionFile(ws: PiWorkspace, before: Map<string, number>, startedAt: number, sessionId?: string, headerId?: string): string | undefined {
  const id = sessionId ?? headerId;
  if (id) {
    const f = ws.findSessionFile(id);
    if (f) return f;
  }
  const files = ws.sessionFiles();
  const fresh = files.filter((f) => !before.has(f));
  if (fresh.length > 0) return fresh[fresh.length - 1];
  const touched = files.filter((f) => statSync(f).mtimeMs >= startedAt - 5 && statSync(f).mtimeMs !== before.get(f));
  return touched[touched.length - 1];
}

function snapshot(ws: PiWorkspace): Map<string, number> {
  return new Map(ws.sessionFiles().map((f) => [f, statSync(f).mtimeMs]));
}

export async function runPi(opts: RunPiOptions): Promise<RunPiResult> {
  if (opts.mode === "rpc") return runPiRpc(opts);
  const ws = opts.workspace;
  const argv = [...(opts.mode === "json" ? ["--mode", "json"] : ["-p"]), ...commonArgs(opts), ...(opts.args ?? []), ...(opts.prompts ?? [])];
  const before = snapshot(ws);
  const startedAt = Date.now();
  const timeoutMs = opts.timeoutMs ?? 15_000;

  const child = spawn(PI_BIN, argv, {
    cwd: ws.cwd,
    env: piEnv(ws, opts.env),
    stdio: [opts.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    detached: true, // own process group: the timeout kills Pi and every tool child it started
  });
  track(child);
  if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);

  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));

  let peak: number | undefined;
  const sampler = opts.measure && child.pid !== undefined
    ? setInterval(() => {
        const v = readPeakRssKb(child.pid!);
        if (v !== undefined) peak = Math.max(peak ?? 0, v);
      }, 20)
    : undefined;

  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child);
  }, timeoutMs);

  const closed = new Promise<void>((res) => child.once("close", () => res()));
  const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res, rej) => {
    child.once("error", rej);
    child.once("exit", (c, s) => res({ code: c, signal: s }));
  });
  clearTimeout(timer);
  if (sampler) clearInterval(sampler);
  // Tool children (bash) may linger in the group after Pi exits and hold the pipes open: end them.
  killGroup(child);
  await Promise.race([closed, new Promise((r) => setTimeout(r, 2_000))]);

  let events: JsonRecord[] | undefined;
  let headerId: string | undefined;
  if (opts.mode === "json") {
    events = parseJsonl(stdout).records;
    headerId = events.find((e) => e.type === "session")?.id;
  }
  const sessionFile = opts.noSession ? undefined : locateSessionFile(ws, before, startedAt, opts.sessionId, headerId);
  const result: RunPiResult = {
    code,
    signal,
    timedOut,
    stdout,
    stderr,
    durationMs: Date.now() - startedAt,
    peakRssKb: peak,
    argv,
    sessionFile,
    entries: sessionFile ? readSessionFile(sessionFile) : [],
    events,
  };
  if (timedOut) stderr += `\n[pi-runner] killed after ${timeoutMs} ms`;
  result.stderr = stderr;
  return result;
}

/** Throw with Pi's output when a run did not exit 0. */
export function assertRunOk(r: RunPiResult): RunPiResult {
  if (r.code !== 0 || r.timedOut) {
    throw new Error(`pi ${r.argv.join(" ")} → code ${r.code} signal ${r.signal}${r.timedOut ? " (timed out)" : ""}\n--- stderr ---\n${r.stderr}\n--- stdout ---\n${r.stdout.slice(0, 4000)}`);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// RPC mode
// ---------------------------------------------------------------------------------------------

/** The options an RPC session shares with a one-shot run (see RunPiOptions). */
export interface StartPiRpcOptions extends Pick<RunPiOptions, "workspace" | "extension" | "args" | "sessionId" | "noSession" | "model" | "approve" | "env"> {
  /** Hard limit on the whole process life; default 30000. */
  timeoutMs?: number;
  /** Answer dialog requests (select/confirm/input/editor). Default: `{cancelled: true}`. */
  onDialog?: (req: JsonRecord) => Record<string, unknown> | undefined;
}

export interface PromptOutcome {
  response: JsonRecord;
  /** Records that arrived from the prompt's sending until it settled. */
  events: JsonRecord[];
}

export interface PiRpc {
  child: ChildProcess;
  /** Every stdout record from Pi in order (responses, events, extension_ui_request). */
  records: JsonRecord[];
  /** Non-JSON stdout lines (should stay empty). */
  junk: string[];
  readonly stderr: string;
  readonly exited: boolean;
  /** Send a command (an `id` is added when absent) and await its response. */
  send(command: Record<string, unknown>, timeoutMs?: number): Promise<JsonRecord>;
  /** Send without waiting. */
  write(record: Record<string, unknown>): void;
  /**
   * Send a `prompt` and, when a run started (or was queued), wait for `until` (default
   * `agent_settled`) after it. A handled slash command returns right after its response.
   */
  prompt(message: string, opts?: { until?: "agent_settled" | "agent_end"; timeoutMs?: number; extra?: Record<string, unknown> }): Promise<PromptOutcome>;
  /** Wait for a record matching `pred` at index >= `from` (default 0). */
  waitFor(pred: (r: JsonRecord) => boolean, opts?: { timeoutMs?: number; from?: number }): Promise<JsonRecord>;
  getState(): Promise<JsonRecord>;
  getEntries(since?: string): Promise<JsonRecord[]>;
  /** `extension_ui_request` records. */
  uiRequests(): JsonRecord[];
  /** `notify` requests as `{message, notifyType}`. */
  notifications(): Array<{ message: string; notifyType: string }>;
  /** Latest `setStatus` text per key (undefined = cleared). */
  statuses(): Record<string, string | undefined>;
  /** Session events only (no responses, no UI requests). */
  events(): JsonRecord[];
  /** Close stdin, wait for the orderly exit (then SIGTERM, then SIGKILL the group). */
  close(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

export async function startPiRpc(opts: StartPiRpcOptions): Promise<PiRpc> {
  const ws = opts.workspace;
  const argv = ["--mode", "rpc", ...commonArgs(opts), ...(opts.args ?? [])];
  const child = spawn(PI_BIN, argv, { cwd: ws.cwd, env: piEnv(ws, opts.env), stdio: ["pipe", "pipe", "pipe"], detached: true });
  track(child);

  const records: JsonRecord[] = [];
  const junk: string[] = [];
  let stderr = "";
  let buf = "";
  let exited = false;
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const l of [...listeners]) l();
  };
  let nextId = 1;

  const hardTimer = setTimeout(() => killGroup(child), opts.timeoutMs ?? 30_000);
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      let line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line.trim() === "") continue;
      let rec: JsonRecord;
      try {
        rec = JSON.parse(line) as JsonRecord;
      } catch {
        junk.push(line);
        continue;
      }
      records.push(rec);
      if (rec.type === "extension_ui_request" && ["select", "confirm", "input", "editor"].includes(rec.method)) {
        const answer = opts.onDialog?.(rec) ?? { cancelled: true };
        api.write({ type: "extension_ui_response", id: rec.id, ...answer });
      }
    }
    notify();
  });
  const exitPromise = new Promise<void>((res) => {
    child.once("exit", (code, signal) => {
      exitInfo = { code, signal };
      clearTimeout(hardTimer);
      killGroup(child); // stray tool children holding the pipes
      const finish = () => {
        if (exited) return;
        exited = true;
        notify();
        res();
      };
      child.once("close", finish);
      setTimeout(finish, 2_000);
    });
  });
  child.stdin!.on("error", () => {
    /* EPIPE after exit: reported through waitFor */
  });

  const waitFor: PiRpc["waitFor"] = (pred, o = {}) => {
    const from = o.from ?? 0;
    const timeoutMs = o.timeoutMs ?? 15_000;
    return new Promise((resolvePromise, reject) => {
      let scanned = from;
      const check = () => {
        for (; scanned < records.length; scanned++) {
          if (pred(records[scanned])) {
            done();
            resolvePromise(records[scanned]);
            return;
          }
        }
        if (exited) {
          done();
          reject(new Error(`pi rpc exited (code ${exitInfo.code}, signal ${exitInfo.signal}) while waiting\n--- stderr ---\n${stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`pi rpc: timed out after ${timeoutMs} ms; last records: ${records.slice(-5).map((r) => r.type).join(", ")}\n--- stderr ---\n${stderr}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  };

  const api: PiRpc = {
    child,
    records,
    junk,
    get stderr() {
      return stderr;
    },
    get exited() {
      return exited;
    },
    write(record) {
      if (!exited && child.stdin!.writable) child.stdin!.write(`${JSON.stringify(record)}\n`);
    },
    async send(command, timeoutMs) {
      const id = typeof command.id === "string" ? command.id : `h${nextId++}`;
      const from = records.length;
      api.write({ ...command, id });
      const resp = await waitFor((r) => r.type === "response" && r.id === id, { from, timeoutMs });
      return resp;
    },
    async prompt(message, o = {}) {
      const from = records.length;
      const response = await api.send({ type: "prompt", message, ...(o.extra ?? {}) }, o.timeoutMs);
      if (!response.success) throw new Error(`prompt rejected: ${response.error}`);
      const disposition = response.data?.disposition;
      if (disposition === "started" || disposition === "queued") {
        const until = o.until ?? "agent_settled";
        await waitFor((r) => r.type === until, { from, timeoutMs: o.timeoutMs });
      }
      return { response, events: records.slice(from) };
    },
    waitFor,
    async getState() {
      const r = await api.send({ type: "get_state" });
      return r.data as JsonRecord;
    },
    async getEntries(since) {
      const r = await api.send({ type: "get_entries", ...(since ? { since } : {}) });
      if (!r.success) throw new Error(`get_entries failed: ${r.error}`);
      return r.data.entries as JsonRecord[];
    },
    uiRequests: () => records.filter((r) => r.type === "extension_ui_request"),
    notifications: () =>
      api
        .uiRequests()
        .filter((r) => r.method === "notify")
        .map((r) => ({ message: String(r.message), notifyType: String(r.notifyType ?? "info") })),
    statuses() {
      const out: Record<string, string | undefined> = {};
      for (const r of api.uiRequests()) if (r.method === "setStatus") out[r.statusKey] = r.statusText;
      return out;
    },
    events: () => records.filter((r) => r.type !== "response" && r.type !== "extension_ui_request"),
    async close(timeoutMs = 5_000) {
      if (!exited) {
        child.stdin!.end();
        const t1 = setTimeout(() => killGroup(child, "SIGTERM"), timeoutMs);
        const t2 = setTimeout(() => killGroup(child), timeoutMs + 2_000);
        await exitPromise;
        clearTimeout(t1);
        clearTimeout(t2);
      }
      killGroup(child); // stray tool children
      return { ...exitInfo, stderr };
    },
  };
  return api;
}

async function runPiRpc(opts: RunPiOptions): Promise<RunPiResult> {
  const ws = opts.workspace;
  const before = snapshot(ws);
  const startedAt = Date.now();
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const rpc = await startPiRpc({ ...opts, timeoutMs });
  let failure: unknown;
  let sessionFromState: string | undefined;
  try {
    for (const p of opts.prompts ?? []) await rpc.prompt(p, { timeoutMs });
    sessionFromState = (await rpc.getState()).sessionFile;
  } catch (e) {
    failure = e;
  }
  const { code, signal, stderr } = await rpc.close();
  const sessionFile = opts.noSession ? undefined : sessionFromState && existsSync(sessionFromState) ? sessionFromState : locateSessionFile(ws, before, startedAt, opts.sessionId);
  return {
    code: failure ? (code ?? 1) || 1 : code,
    signal,
    timedOut: Date.now() - startedAt >= timeoutMs,
    stdout: rpc.records.map((r) => JSON.stringify(r)).join("\n"),
    stderr: failure ? `${stderr}\n[pi-runner] ${String(failure)}` : stderr,
    durationMs: Date.now() - startedAt,
    argv: ["--mode", "rpc", ...commonArgs(opts), ...(opts.args ?? [])],
    sessionFile,
    entries: sessionFile ? readSessionFile(sessionFile) : [],
    events: rpc.records,
    uiRequests: rpc.uiRequests(),
    responses: rpc.records.filter((r) => r.type === "response"),
  };
}

// ---------------------------------------------------------------------------------------------
// A real session with several tool calls, for other tests and the stored fixture
// ---------------------------------------------------------------------------------------------

export const REAL_SESSION_FILES: Record<string, string> = {
  "notes.txt": "Project notes\n- the build uses esbuild\n- NOTES-MARKER-7f3a\n",
  "skills/demo/SKILL.md": "---\nname: demo\ndescription: A demo skill used by the harness.\n---\n\n# Demo skill\n\n1. Always run the tests before committing (SKILL-MARKER-91c2).\n",
  "src/app.ts": "export const answer = 42;\n",
};

export const REAL_SESSION_PROMPTS = ["Look at the notes and the demo skill, then check the source folder.", "Thanks. Anything else?"];

/**
 * The main agent's script: per user prompt (REAL_SESSION_PROMPTS[i]), the n-th main-agent
 * request after it gets REAL_SESSION_SCRIPT[i][n]. Requests that offer no `read` tool (an
 * extension's summarizer) never consume it.
 */
export const REAL_SESSION_SCRIPT: Reply[][] = [
  [
    {
      text: "Reading both files.",
      toolCalls: [
        { name: "read", arguments: { path: "notes.txt" } },
        { name: "read", arguments: { path: "skills/demo/SKILL.md" } },
      ],
    },
    { toolCalls: [{ name: "bash", arguments: { command: "ls src && cat src/app.ts" } }] },
    { toolCalls: [{ name: "read", arguments: { path: "missing.txt" } }] },
    { text: "The notes say the build uses esbuild; the demo skill says to run tests before committing; src/app.ts exports answer = 42; missing.txt does not exist." },
  ],
  [{ text: "Nothing else for now." }],
];

/**
 * A reply function that plays `script` for the prompts `prompts`: the prompt is the latest of
 * `prompts` found in the request's user messages, the step is how many main-agent requests for
 * that prompt came before. Counting requests (not messages) keeps it right when an extension
 * rewrites or adds messages. Requests for which `isMain` is false get `other`.
 */
export function scriptedAgent(
  prompts: string[],
  script: Reply[][],
  opts: { isMain?: (req: ModelRequest) => boolean; other?: Reply | ((req: ModelRequest) => Reply) } = {},
): (req: ModelRequest) => Reply {
  const served = new Map<number, number>();
  const isMain = opts.isMain ?? ((req: ModelRequest) => req.toolNames.includes("read"));
  return (req) => {
    if (!isMain(req)) {
      const o = opts.other;
      return typeof o === "function" ? o(req) : (o ?? { text: "ok" });
    }
    const users = (req.body.messages ?? []).filter((m) => m.role === "user").map((m) => messageText(m));
    let p = -1;
    for (let i = users.length - 1; i >= 0 && p < 0; i--) p = prompts.findIndex((t) => users[i].includes(t));
    p = Math.max(0, p);
    const step = served.get(p) ?? 0;
    served.set(p, step + 1);
    return script[p]?.[step] ?? { text: "ok" };
  };
}

export interface MakeRealSessionOptions {
  /** `-e` extension(s) to load during the run. */
  extension?: string | string[];
  settings?: Record<string, unknown>;
  projectSettings?: Record<string, unknown>;
  /** Reply for requests that are not the main agent's (no `read` tool offered), e.g. a summarizer. */
  otherReply?: Reply | ((req: ModelRequest) => Reply);
  sessionId?: string;
  timeoutMs?: number;
  /** Replace or add workspace files (e.g. larger contents, so a pruner has something to summarize). */
  files?: Record<string, string>;
}

export interface RealSession {
  sessionFile: string;
  entries: JsonRecord[];
  workspace: PiWorkspace;
  /** Every request the (now closed) model server received. */
  requests: ModelRequest[];
  run: RunPiResult;
  /** Remove the temp workspace (and with it the session file). */
  cleanup(): void;
}

/**
 * Produce a real Pi 1.6 session file: one prompt whose turns call `read notes.txt` and
 * `read skills/demo/SKILL.md` (in one response), `bash ls src && cat src/app.ts`, a failing
 * `read missing.txt`, then a text answer; then a second prompt answered with text.
 */
export async function makeRealSession(opts: MakeRealSessionOptions = {}): Promise<RealSession> {
  const server = await startModelServer();
  server.respond = scriptedAgent(REAL_SESSION_PROMPTS, REAL_SESSION_SCRIPT, { other: opts.otherReply });
  const workspace = createPiWorkspace({ baseUrl: server.baseUrl, files: { ...REAL_SESSION_FILES, ...opts.files }, settings: opts.settings, projectSettings: opts.projectSettings });
  try {
    const run = await runPi({
      workspace,
      prompts: REAL_SESSION_PROMPTS,
      extension: opts.extension,
      sessionId: opts.sessionId,
      timeoutMs: opts.timeoutMs ?? 20_000,
    });
    assertRunOk(run);
    if (!run.sessionFile) throw new Error("makeRealSession: no session file was written");
    return { sessionFile: run.sessionFile, entries: run.entries, workspace, requests: server.requests, run, cleanup: () => workspace.cleanup() };
  } catch (e) {
    workspace.cleanup();
    throw e;
  } finally {
    await server.close();
  }
}

/** Placeholders used in stored fixtures for machine-specific paths. */
export const FIXTURE_PLACEHOLDERS = {
  cwd: "/workspace",
  agentDir: "/home/user/.pi/agent",
  piPackage: "/usr/lib/node_modules/@earendil-works/pi-coding-agent",
  root: "/tmp/pi-e2e",
} as const;

/** Replace machine-specific absolute paths of a session's text with neutral placeholders. */
export function neutralizeSessionText(text: string, ws: Pick<PiWorkspace, "cwd" | "agentDir" | "root">): string {
  const pairs: Array<[string, string]> = [
    [ws.cwd, FIXTURE_PLACEHOLDERS.cwd],
    [ws.agentDir, FIXTURE_PLACEHOLDERS.agentDir],
    [ws.root, FIXTURE_PLACEHOLDERS.root],
    [PI_PACKAGE_DIR, FIXTURE_PLACEHOLDERS.piPackage],
    [REPO_ROOT, "/repo"],
  ];
  let out = text;
  for (const [from, to] of pairs) out = out.split(from).join(to);
  return out;
}

/** Generate a real session and write it, neutralized, to `dest` (used to refresh test/fixtures/pi/real-session.jsonl). */
export async function writeRealSessionFixture(dest: string, opts: MakeRealSessionOptions = {}): Promise<string> {
  const s = await makeRealSession(opts);
  try {
    const text = neutralizeSessionText(readFileSync(s.sessionFile, "utf8"), s.workspace);
    mkdirSync(dirname(dest), { recursive: true });
    writeFileSync(dest, text);
    return text;
  } finally {
    s.cleanup();
  }
}
