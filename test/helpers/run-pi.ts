/**
 * One headless run of the real `pi` CLI in an isolated workspace, against the scripted model
 * server of ./model-server.ts:
 *
 *   const server = await startModelServer({ replies: [...] });
 *   const ws = createPiWorkspace({ baseUrl: server.baseUrl, files: { "a.txt": "hi" } });
 *   const run = await runPi({ workspace: ws, prompts: ["read a.txt"] });
 *   // run.sessionFile, run.entries, server.requests[1].body.messages ...
 *   ws.cleanup(); await server.close();
 *
 * In print/json mode stdin is closed (Pi reads piped stdin as prompt input and waits for EOF) and
 * a timeout SIGKILLs the whole process group.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { parseJsonl, readJsonlRecords, type JsonRecord } from "./jsonl-records.ts";
import { killGroup, PI_BIN, piArgs, piEnv, trackChild, type PiLaunchOptions } from "./pi-process.ts";
import { startPiRpc } from "./pi-rpc.ts";
import type { PiWorkspace } from "./pi-workspace.ts";

export interface RunPiOptions extends PiLaunchOptions {
  /** Prompts, run in order (a `/command` prompt runs the extension command without a model turn). */
  prompts?: string[];
  /** Default "print" (`-p`). "json" = `--mode json`; "rpc" drives `--mode rpc` with `prompt` commands. */
  mode?: "print" | "json" | "rpc";
  /** Hard limit; the process group is SIGKILLed after it. Default 15000. */
  timeoutMs?: number;
  /** Text piped to stdin (print/json). Default: stdin is /dev/null. */
  stdin?: string;
  /** Sample the Pi process's peak RSS from /proc (Linux). */
  measure?: boolean;
  /** Told each piece of Pi's stderr as it arrives (print/json), while Pi runs. */
  onStderr?: (text: string) => void;
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
  const argv = [...(opts.mode === "json" ? ["--mode", "json"] : ["-p"]), ...piArgs(opts), ...(opts.args ?? []), ...(opts.prompts ?? [])];
  const before = snapshot(ws);
  const startedAt = Date.now();
  const timeoutMs = opts.timeoutMs ?? 15_000;

  const child = spawn(PI_BIN, argv, {
    cwd: ws.cwd,
    env: piEnv(ws, opts.env),
    stdio: [opts.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    detached: true, // own process group: the timeout kills Pi and every tool child it started
  });
  trackChild(child);
  if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);

  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
    opts.onStderr?.(d);
  });

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
    entries: sessionFile ? readJsonlRecords(sessionFile) : [],
    events,
  };
  if (timedOut) stderr += `\n[run-pi] killed after ${timeoutMs} ms`;
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

/** `mode: "rpc"`: the prompts sent through an RPC session, reported like a one-shot run. */
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
    stderr: failure ? `${stderr}\n[run-pi] ${String(failure)}` : stderr,
    durationMs: Date.now() - startedAt,
    argv: ["--mode", "rpc", ...piArgs(opts), ...(opts.args ?? [])],
    sessionFile,
    entries: sessionFile ? readJsonlRecords(sessionFile) : [],
    events: rpc.records,
    uiRequests: rpc.uiRequests(),
    responses: rpc.records.filter((r) => r.type === "response"),
  };
}
