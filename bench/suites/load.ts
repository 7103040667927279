// Figure 2: session load — building the view model from 1, 10 and 100 MB generated session files
// (what the Sessions tree's row needs) vs. the floor of reading the file and JSON.parse-ing each
// line in the same process, and what the view leaves for later (the rest of the tree, the model
// view opened); peak memory
// vs. Pi's own SessionManager.open of the same file; and a 1-line append read with readSessionTail
// and applied to the view.
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateSession } from "../lib/sessions.ts";
import { figure, newSuite, spreadFigure, type SuiteOutput } from "../lib/results.ts";
import { median, spread } from "../lib/stats.ts";
import { barChart, lineChart } from "../lib/svg.ts";

const WORKER = join(dirname(fileURLToPath(import.meta.url)), "..", "workers", "load-worker.ts");
const MB = 1024 * 1024;

export interface LoadOptions {
  quick: boolean;
  log: (line: string) => void;
}

/** A worker's heap in MiB: loading the 100 MB file peaks near 330 MiB of resident memory (Pi's SessionManager.open), far below it. */
const WORKER_HEAP_MIB = 4096;

function worker(args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--expose-gc", `--max-old-space-size=${WORKER_HEAP_MIB}`, WORKER, ...args], { maxBuffer: 64 * MB }, (error, stdout, stderr) => {
      if (!error) return resolve(JSON.parse(stdout.trim().split("\n").pop()!) as Record<string, unknown>);
      const killed = error.signal ? ` was killed by ${error.signal}${error.signal === "SIGABRT" ? ` (most likely out of memory: its heap is capped at ${WORKER_HEAP_MIB} MiB)` : ""};` : " failed:";
      reject(new Error(`load worker ${args[0]}${killed} ${stderr.trim() || error.message}`));
    });
  });
}

export async function runLoad(options: LoadOptions): Promise<SuiteOutput> {
  const out = newSuite();
  const sizes = options.quick ? [1, 10] : [1, 10, 100];
  if (options.quick) out.notes.push("quick run: the 100 MB file is left out");
  const root = mkdtempSync(join(tmpdir(), "pprb-load-"));
  const rows: Record<string, unknown>[] = [];
  try {
    for (const mb of sizes) {
      const dir = join(root, `${mb}mb`);
      mkdirSync(dir, { recursive: true });
      const t0 = performance.now();
      const { host } = await generateSession({ root: dir, seed: 5, bytes: mb * MB });
      const file = join(dir, "session.jsonl");
      const bytes = host.writeSession(file);
      const genSeconds = (performance.now() - t0) / 1000;
      const entries = host.entries.length;
      options.log(`load ${mb} MB: generated ${entries} entries, ${bytes} bytes in ${genSeconds.toFixed(1)} s`);

      const rounds = options.quick ? 3 : mb >= 100 ? 5 : mb >= 10 ? 7 : 11;
      const time = (await worker(["time", file, String(rounds)])) as { floorMs: number[]; plainFloorMs: number[]; viewMs: number[]; readMs: number[]; floorCpuMs: number[]; viewCpuMs: number[]; restMs: number[]; modelViewMs: number[]; summary: Record<string, number> };
      const ratios = time.viewMs.map((v, i) => v / time.floorMs[i]!);
      const plainRatios = time.viewMs.map((v, i) => v / time.plainFloorMs[i]!);
      const cpuRatios = time.viewCpuMs.map((v, i) => v / Math.max(1, time.floorCpuMs[i]!));

      // Peak memory: each in its own process; Pi's loader gets a copy (it may write to the file).
      // Quick runs measure memory on the largest file only.
      const memRuns = options.quick ? (mb === sizes[sizes.length - 1] ? 1 : 0) : mb >= 100 ? 2 : 3;
      const floorPeak: number[] = [];
      const viewPeak: number[] = [];
      const piPeak: number[] = [];
      const floorOwn: number[] = [];
      const viewOwn: number[] = [];
      const piOwn: number[] = [];
      const piMs: number[] = [];
      for (let r = 0; r < memRuns; r++) {
        const f = (await worker(["floor", file])) as { peakKb: number; baselineHwmKb: number };
        const v = (await worker(["view", file])) as { peakKb: number; baselineHwmKb: number };
        const copy = join(dir, `pi-copy-${r}.jsonl`);
        copyFileSync(file, copy);
        const p = (await worker(["pi", copy, join(dir, `pi-sessions-${r}`)])) as { peakKb: number; baselineHwmKb: number; ms: number };
        rmSync(copy, { force: true });
        floorPeak.push(f.peakKb / 1024);
        viewPeak.push(v.peakKb / 1024);
        piPeak.push(p.peakKb / 1024);
        floorOwn.push((f.peakKb - f.baselineHwmKb) / 1024);
        viewOwn.push((v.peakKb - v.baselineHwmKb) / 1024);
        piOwn.push((p.peakKb - p.baselineHwmKb) / 1024);
        piMs.push(p.ms);
      }

      // A 1-line append: readSessionTail + appendToSessionView on a copy that grows by one line at a time.
      const appendCopy = join(dir, "append-copy.jsonl");
      copyFileSync(file, appendCopy);
      const append = (await worker(["append", appendCopy, options.quick ? "10" : "30"])) as { tailMs: number[]; applyMs: number[] };
      rmSync(appendCopy, { force: true });

      const key = `${mb}MB`;
      const f = out.figures;
      f[`load.view.${key}`] = spreadFigure(spread(time.viewMs), "ms", { note: "readSessionFile + buildSessionView + the session row's fields read (what the tree shows first)" });
      f[`load.deferred.${key}`] = spreadFigure(spread(time.restMs), "ms", { note: "left for later: the session's summaries, chains and compactions, made when first read" });
      f[`load.modelView.${key}`] = spreadFigure(spread(time.modelViewMs), "ms", { note: "left for later: the next request's model view opened (bodies read back, rendered, set out as text)" });
      f[`load.read.${key}`] = spreadFigure(spread(time.readMs), "ms", { note: "readSessionFile alone" });
      f[`load.floor.${key}`] = spreadFigure(spread(time.floorMs), "ms", { note: "tight floor: 1 MiB reads split on newlines, JSON.parse of each line" });
      f[`load.plainFloor.${key}`] = spreadFigure(spread(time.plainFloorMs), "ms", { note: "plain floor: readFileSync, split on newlines, JSON.parse of each line" });
      // Context only, no target: a whole-file string turns two-byte at its first non-ASCII
      // character and is then slow for reasons no session reader has.
      f[`load.ratioPlain.${key}`] = spreadFigure(spread(plainRatios), "ratio", { note: "view ÷ plain floor (context only), paired rounds in one process" });
      // The headline: against the tight floor, the fastest plain loop over the same bytes.
      f[`load.ratio.${key}`] = spreadFigure(spread(ratios), "ratio", mb === 100 || (options.quick && mb === 10) ? { target: { op: "<=", value: 1.3 }, note: "view ÷ tight floor, paired rounds in one process" } : { note: "view ÷ tight floor, paired rounds in one process" });
      if (memRuns > 0) {
        f[`load.ratioCpu.${key}`] = spreadFigure(spread(cpuRatios), "ratio", { note: "view ÷ floor in CPU time of the main thread, paired rounds" });
      f[`load.peak.view.${key}`] = spreadFigure(spread(viewPeak), "MiB", { note: "VmHWM of the process" });
        f[`load.peak.floor.${key}`] = spreadFigure(spread(floorPeak), "MiB", { note: "VmHWM of the process" });
        f[`load.peak.pi.${key}`] = spreadFigure(spread(piPeak), "MiB", { note: "VmHWM of the process: Pi's SessionManager.open" });
        f[`load.peakOwn.view.${key}`] = spreadFigure(spread(viewOwn), "MiB", { note: "VmHWM growth over the process after its imports" });
        f[`load.peakOwn.pi.${key}`] = spreadFigure(spread(piOwn), "MiB", { note: "VmHWM growth over the process after its imports" });
        f[`load.peakOwn.floor.${key}`] = spreadFigure(spread(floorOwn), "MiB", { note: "VmHWM growth over the process after its imports" });
        f[`load.peak.viewVsPi.${key}`] = figure(median(viewPeak) / median(piPeak), "ratio", { target: { op: "<=", value: 1 }, note: "peak memory, view model ÷ Pi's SessionManager.open" });
        f[`load.pi.open.${key}`] = spreadFigure(spread(piMs), "ms", { note: "Pi's SessionManager.open (its own process)" });
      }
      f[`load.append.${key}`] = spreadFigure(spread(append.applyMs), "ms", { target: { op: "<=", value: 5 }, note: "one appended line applied: readSessionTail + appendToSessionView (median over appends; min/max over appends)" });
      f[`load.tail.${key}`] = spreadFigure(spread(append.tailMs), "ms", { note: "readSessionTail of one appended line alone" });
      rows.push({ mb, bytes, entries, generateSeconds: genSeconds, summary: time.summary, floorMs: time.floorMs, plainFloorMs: time.plainFloorMs, viewMs: time.viewMs, readMs: time.readMs, restMs: time.restMs, modelViewMs: time.modelViewMs, viewPeak, floorPeak, piPeak, viewOwn, piOwn, floorOwn, appendMs: append.applyMs, tailMs: append.tailMs });
      options.log(`load ${mb} MB: view ${median(time.viewMs).toFixed(0)} ms vs floor ${median(time.floorMs).toFixed(0)} ms (×${median(ratios).toFixed(2)}), plain floor ${median(time.plainFloorMs).toFixed(0)} ms (×${median(plainRatios).toFixed(2)}); later: the rest ${median(time.restMs).toFixed(0)} ms, the model view opened ${median(time.modelViewMs).toFixed(0)} ms;${memRuns ? ` peak view ${median(viewPeak).toFixed(0)} MiB, Pi ${median(piPeak).toFixed(0)} MiB, floor ${median(floorPeak).toFixed(0)} MiB;` : ""} append applied ${median(append.applyMs).toFixed(2)} ms (tail read ${median(append.tailMs).toFixed(2)} ms)`);
      rmSync(dir, { recursive: true, force: true });
    }
    const last = sizes[sizes.length - 1]!;
    out.figures["load.append.growth"] = figure(median((rows[rows.length - 1] as { appendMs: number[] }).appendMs) / median((rows[0] as { appendMs: number[] }).appendMs), "ratio", { note: `append time at ${last} MB ÷ at 1 MB (1 = flat)` });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  out.data.rows = rows;
  const r = rows as { mb: number; floorMs: number[]; viewMs: number[]; viewPeak: number[]; piPeak: number[]; floorPeak: number[]; appendMs: number[] }[];
  out.charts["load-time.svg"] = lineChart({
    title: "Session load: view model vs. the floor (median of rounds)",
    xLabel: "session file size, MB (log scale)",
    yLabel: "milliseconds (log scale)",
    logX: true,
    logY: true,
    xTicks: sizes,
    markers: true,
    series: [
      { name: "view: readSessionFile + buildSessionView", points: r.map((x) => [x.mb, median(x.viewMs)]) },
      { name: "later: the next request's model view opened", points: r.map((x) => [x.mb, median((x as unknown as { modelViewMs: number[] }).modelViewMs)]) },
      { name: "floor, tight: 1 MiB reads + JSON.parse per line", points: r.map((x) => [x.mb, median(x.floorMs)]) },
      { name: "floor, plain: readFileSync + split + JSON.parse", points: r.map((x) => [x.mb, median((x as unknown as { plainFloorMs: number[] }).plainFloorMs)]) },
      { name: "1-line append applied (tail read + view update)", points: r.map((x) => [x.mb, median(x.appendMs)]) },
    ],
  });
  out.charts["load-memory.svg"] = barChart({
    title: "Peak memory (VmHWM) of a process that loads the file",
    yLabel: "MiB",
    labels: (v) => v.toFixed(0),
    groups: r.filter((x) => x.viewPeak.length).map((x) => ({
      label: `${x.mb} MB`,
      bars: [
        { name: "pi-pruner view model", value: median(x.viewPeak), min: Math.min(...x.viewPeak), max: Math.max(...x.viewPeak) },
        { name: "Pi SessionManager.open", value: median(x.piPeak), min: Math.min(...x.piPeak), max: Math.max(...x.piPeak) },
        { name: "floor (parse every line)", value: median(x.floorPeak), min: Math.min(...x.floorPeak), max: Math.max(...x.floorPeak) },
      ],
    })),
  });
  return out;
}

export function fileSize(path: string): number {
  return statSync(path).size;
}
