// One measurement of the session-load benchmark, in a process of its own (peak memory is per
// process). Prints one JSON line on stdout.
//
//   node --expose-gc bench/workers/load-worker.ts time   <file> <rounds>   floor and view, interleaved; then what the view left for later
//   node --expose-gc bench/workers/load-worker.ts floor  <file>            peak memory of the floor
//   node --expose-gc bench/workers/load-worker.ts view   <file>            peak memory of the view model
//   node --expose-gc bench/workers/load-worker.ts pi     <file> <tmpdir>   peak memory of Pi's SessionManager.open
//   node --expose-gc bench/workers/load-worker.ts append <file> <count>    readSessionTail per appended line
import { appendFileSync, openSync, readSync, closeSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { collectGarbage as gc, threadCpuMs } from "../lib/stats.ts";

const [mode, file, arg] = process.argv.slice(2);

function status(): { rssKb: number; hwmKb: number } {
  const text = readFileSync("/proc/self/status", "utf8");
  const num = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(text)?.[1] ?? 0);
  return { rssKb: num("VmRSS"), hwmKb: num("VmHWM") };
}


/** The floor: read the file in 1 MiB chunks, split on newlines, JSON.parse each line, keep the values. */
function floor(path: string): unknown[] {
  const values: unknown[] = [];
  const fd = openSync(path, "r");
  try {
    const chunkSize = 1024 * 1024;
    let carry: Buffer | undefined;
    for (;;) {
      const chunk = Buffer.allocUnsafe(chunkSize);
      const n = readSync(fd, chunk, 0, chunkSize, null);
      if (n === 0) break;
      let data = chunk.subarray(0, n);
      if (carry) {
        data = Buffer.concat([carry, data]);
        carry = undefined;
      }
      let start = 0;
      for (;;) {
        const nl = data.indexOf(10, start);
        if (nl < 0) break;
        if (nl > start) values.push(JSON.parse(data.toString("utf8", start, nl)));
        start = nl + 1;
      }
      if (start < data.length) carry = Buffer.from(data.subarray(start));
    }
    if (carry && carry.length) values.push(JSON.parse(carry.toString("utf8")));
  } finally {
    closeSync(fd);
  }
  return values;
}

/**
 * The plain floor: the program most people would write for "read the file and JSON.parse each
 * line" — the whole file as one string, split on newlines, each non-blank line parsed.
 */
function plainFloor(path: string): unknown[] {
  const values: unknown[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) if (line.trim()) values.push(JSON.parse(line));
  return values;
}

async function loadCore() {
  const session = await import("../../core/src/session/session-reader.ts");
  const view = await import("../../core/src/view/session-view.ts");
  const model = await import("../../core/src/view/model-view.ts");
  const state = await import("../../core/src/view/call-state.ts");
  const config = await import("../../core/src/settings/config.ts");
  return { ...session, ...view, ...model, ...state, DEFAULT_CONFIG: config.DEFAULT_CONFIG };
}

type Core = Awaited<ReturnType<typeof loadCore>>;

/**
 * What the Sessions tree's row of a session shows, read as the editor's store reads it once the
 * view is built (its name, sizes, bad lines, calls and how many are pruned): part of the view's time.
 */
function rowOf(core: Core, view: ReturnType<Core["buildSessionView"]>): number {
  const t = view.totals;
  const pruned = view.calls.filter((c) => core.isPrunedState(c.state)).length;
  return (view.session.name?.length ?? 0) + (view.session.firstPrompt?.length ?? 0) + t.rawChars + (t.modelChars ?? 0) + (t.excess?.length ?? 0) + view.errors.length + view.calls.length + pruned;
}

/**
 * What the view leaves for later, timed: the parts made when first read (summaries, chains,
 * compactions: the session's children in the tree), then the next request's model view opened
 * (its bodies read back from the file, rendered and set out as text).
 */
async function deferredParts(core: Core, file: string, data: Awaited<ReturnType<Core["readSessionFile"]>>, view: ReturnType<Core["buildSessionView"]>): Promise<{ restMs: number; modelViewMs: number }> {
  const t0 = performance.now();
  const rest = view.summaries.length + view.chains.length + view.compactions.length;
  const t1 = performance.now();
  const model = await core.buildModelViewWithBodies(file, data, { leafId: view.leafId ?? undefined, config: core.DEFAULT_CONFIG });
  const text = core.modelViewText(model);
  const t2 = performance.now();
  if (rest < 0 || text.length === 0) throw new Error("empty model view");
  return { restMs: t1 - t0, modelViewMs: t2 - t1 };
}

async function main(): Promise<unknown> {
  if (!file) throw new Error("usage: load-worker <mode> <file> [arg]");
  if (mode === "time") {
    const core = await loadCore();
    const rounds = Number(arg ?? 3);
    const floorMs: number[] = [];
    const plainFloorMs: number[] = [];
    const viewMs: number[] = [];
    const readMs: number[] = [];
    const floorCpuMs: number[] = [];
    const viewCpuMs: number[] = [];
    const restMs: number[] = [];
    const modelViewMs: number[] = [];
    let summary: Record<string, number> = {};
    // Warm both paths once (JIT), then alternate which goes first.
    floor(file);
    plainFloor(file);
    await core.readSessionFile(file, { lazyBodies: true });
    for (let r = 0; r < rounds; r++) {
      const order = [["floor", "view", "plain"], ["view", "plain", "floor"], ["plain", "floor", "view"]][r % 3]!;
      for (const which of order) {
        gc();
        if (which === "floor") {
          const c0 = threadCpuMs();
          const t0 = performance.now();
          const values = floor(file);
          floorMs.push(performance.now() - t0);
          floorCpuMs.push(threadCpuMs() - c0);
          if (!values.length) throw new Error("empty file");
        } else if (which === "plain") {
          const t0 = performance.now();
          const values = plainFloor(file);
          plainFloorMs.push(performance.now() - t0);
          if (!values.length) throw new Error("empty file");
        } else {
          const c0 = threadCpuMs();
          const t0 = performance.now();
          const data = await core.readSessionFile(file, { lazyBodies: true });
          const t1 = performance.now();
          const view = core.buildSessionView(data, { config: core.DEFAULT_CONFIG });
          if (rowOf(core, view) <= 0) throw new Error("an empty session row");
          const t2 = performance.now();
          viewCpuMs.push(threadCpuMs() - c0);
          readMs.push(t1 - t0);
          viewMs.push(t2 - t0);
          // Outside the paired rounds: what was left for later, timed on its own.
          const later = await deferredParts(core, file, data, view);
          restMs.push(later.restMs);
          modelViewMs.push(later.modelViewMs);
          summary = { entries: data.entries.length, errors: data.errors.length, calls: view.calls.length, summaries: view.summaries.length, chains: view.chains.length, modelChars: view.totals.modelChars ?? 0, rawChars: view.totals.rawChars };
        }
      }
    }
    return { floorMs, plainFloorMs, viewMs, readMs, floorCpuMs, viewCpuMs, restMs, modelViewMs, summary };
  }
  if (mode === "floor" || mode === "view" || mode === "pi") {
    let keep: unknown;
    let loaded: () => Promise<unknown>;
    if (mode === "floor") loaded = async () => floor(file);
    else if (mode === "view") {
      const core = await loadCore();
      loaded = async () => {
        const data = await core.readSessionFile(file, { lazyBodies: true });
        const view = core.buildSessionView(data, { config: core.DEFAULT_CONFIG });
        return [data, view, rowOf(core, view)];
      };
    } else {
      const { SessionManager } = await import("@earendil-works/pi-coding-agent");
      loaded = async () => {
        const manager = SessionManager.open(file, arg);
        return [manager, manager.getBranch().length];
      };
    }
    gc();
    const before = status();
    const t0 = performance.now();
    keep = await loaded();
    const ms = performance.now() - t0;
    const after = status();
    if (!keep) throw new Error("nothing loaded");
    return { ms, baselineRssKb: before.rssKb, baselineHwmKb: before.hwmKb, peakKb: after.hwmKb, rssKb: after.rssKb };
  }
  if (mode === "append") {
    const core = await loadCore();
    const { appendToSessionView } = await import("../../core/src/view/view-append.ts");
    const count = Number(arg ?? 20);
    const data = await core.readSessionFile(file, { lazyBodies: true });
    let view = core.buildSessionView(data, { config: core.DEFAULT_CONFIG });
    const last = data.entries[data.entries.length - 1]!;
    const tailMs: number[] = [];
    const applyMs: number[] = [];
    let parentId = last.id;
    for (let i = 0; i < count; i++) {
      const entry = {
        type: "message",
        id: `append-${i}`,
        parentId,
        timestamp: new Date(Date.UTC(2030, 0, 1, 0, 0, i)).toISOString(),
        message: { role: "user", content: `one more line ${i}`, timestamp: Date.UTC(2030, 0, 1, 0, 0, i) },
      };
      parentId = entry.id;
      appendFileSync(file, JSON.stringify(entry) + "\n");
      const t0 = performance.now();
      const tail = await core.readSessionTail(file, data);
      const t1 = performance.now();
      const applied = appendToSessionView(view, data, tail.entries, core.DEFAULT_CONFIG);
      const t2 = performance.now();
      if (tail.reset || tail.entries.length !== 1) throw new Error(`tail read got ${tail.entries.length} entries (reset: ${tail.reset})`);
      if (!applied) throw new Error("the append path declined a plain user message");
      view = applied.view;
      tailMs.push(t1 - t0);
      applyMs.push(t2 - t0);
    }
    return { tailMs, applyMs, entries: data.entries.length };
  }
  throw new Error(`unknown mode ${mode}`);
}

main().then(
  (result) => {
    process.stdout.write(JSON.stringify(result) + "\n");
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
