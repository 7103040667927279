/**
 * Pi in `--mode rpc`, driven like an editor would: commands on stdin, every stdout record kept in
 * order, dialogs answered by the test, and an orderly close (then SIGTERM, then SIGKILL the group).
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { JsonRecord } from "./jsonl-records.ts";
import { killGroup, PI_BIN, piArgs, piEnv, trackChild, type PiLaunchOptions } from "./pi-process.ts";

/** The options of an RPC session (see PiLaunchOptions for the ones a one-shot run shares). */
export interface StartPiRpcOptions extends PiLaunchOptions {
  /** Hard limit on the whole process life; default 30000. */
  timeoutMs?: number;
  /** Answer dialog requests (select/confirm/input/editor). Default: `{cancelled: true}`. */
  onDialog?: (req: JsonRecord) => Record<string, unknown> | undefined;
}

interface PromptOutcome {
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
  const argv = ["--mode", "rpc", ...piArgs(opts), ...(opts.args ?? [])];
  const child = spawn(PI_BIN, argv, { cwd: ws.cwd, env: piEnv(ws, opts.env), stdio: ["pipe", "pipe", "pipe"], detached: true });
  trackChild(child);

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
