// Figure 6: the editor in a real extension host — the first paint of a 5 MB session after the
// extension activates, as a person sees it (Playwright reads the rendered workbench: the session's
// row with its reclaim), that session's context timeline from its command to the chart drawn in
// its webview, and a one-line append applied to the open session. Each round starts a fresh
// code-server (so activation and the code are cold) through test/vscode/bench.mjs, which runs
// test/vscode/suite/benchmark.test.ts and prints its figures, and the page's, as BENCH-JSON lines.
// Each round also times the floors (test/vscode/floor/) in a fresh code-server of their own, loaded
// with the same extensions: activate() → one tree item drawn in its own view container, and an
// empty webview's command → its page drawn. Ours is given as a ratio to them, round by round; which
// of the two hosts starts first alternates. Then search across the load test's 500 sessions, one
// fresh code-server per round through test/vscode/search-bench.mjs.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { figure, newSuite, spreadFigure, type SuiteOutput } from "../lib/results.ts";
import { median, spread } from "../lib/stats.ts";

const here = dirname(fileURLToPath(import.meta.url));
const BENCH = join(here, "..", "..", "test", "vscode", "bench.mjs");
const SEARCH_BENCH = join(here, "..", "..", "test", "vscode", "search-bench.mjs");
/** The load test's agent dir, as the issue sets the search figure. */
const SEARCH_SESSIONS = 500;

export interface EditorOptions {
  quick: boolean;
  log: (line: string) => void;
}

interface PaintRound {
  bytes: number;
  /** Epoch ms of activate(), to set against the page's times. */
  activatedAtEpoch: number;
  entries: number;
  listedMs: number;
  /** activate() → the session's reclaim estimated (the row can show it, marked ≈); absent when none was. */
  estimatedMs?: number;
  viewBuiltMs: number;
  parseMs: number;
  viewModelMs: number;
  /** CPU time of the host's thread, where its Node has threadCpuUsage. */
  parseCpuMs?: number;
  viewModelCpuMs?: number;
  rootItemsMs: number;
  childrenMs: number;
  paintMs: number;
  warmMs: number[];
}

/** What the page saw (test/vscode/lib/paint-probe.mjs), epoch ms. */
interface DomRound {
  seenAt: number;
  paintedAt: number;
  clickedAt?: number;
  text: string;
}

/** The timeline in the host (suite/benchmark.test.ts): ms after its command, which is at `commandAtEpoch`. */
interface TimelineRound {
  commandAtEpoch: number;
  requests: number;
  panelMs: number;
  builtMs: number;
  heardMs: number;
  /** The page loaded and asked for its points. */
  readyMs?: number;
  /** The page's own clock: its load finished → its chart drawn. */
  sinceLoadMs?: number;
}

/** What the timeline's webview showed (test/vscode/lib/paint-probe.mjs), epoch ms. */
interface TimelineDomRound {
  seenAt: number;
  paintedAt: number;
  requests: number;
  by: "observer" | "poll";
}

/** suite/search.test.ts's figures, as search-bench.mjs writes them. */
interface SearchRound {
  sessions: number;
  sessionMB: number;
  indexedParts: number;
  firstResultsMs: number;
  completedMs: number;
  loopDelay: { p50: number; p99: number; max: number };
  idleDelay: { p50: number; p99: number; max: number };
  gcPausesMs: { count: number; max: number; over16: number };
  hits: number;
  sessionsWithHits: number;
}

interface AppendRound {
  appliedMs: number[];
  tailMs: number[];
  updateMs: number[];
  shownMs: number[];
}

/** The floors' host (bench.mjs --subject floor): the floors' own epoch marks, and what the page saw. */
interface FloorRound {
  /** activate() of the one-item floor → its row drawn, ms. */
  paintMs?: number;
  /** The empty webview's command → its page drawn, ms. */
  webviewMs?: number;
  /** In the host: the command → the page's `loaded` heard. */
  webviewHeardMs?: number;
  code: number;
}

interface Round {
  paint: PaintRound;
  append: AppendRound;
  dom: DomRound;
  timeline?: TimelineRound;
  timelineDom?: TimelineDomRound;
  /** bench.mjs's exit code: not 0 when a test failed or the timeline was never seen drawn. */
  code: number;
}

function run(script: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code: code ?? 1, out, err }));
  });
}

async function oneRound(megabytes: number): Promise<Round> {
  const { code, out, err } = await run(BENCH, ["--mb", String(megabytes)]);
  const found = new Map<string, unknown>();
  for (const line of out.split("\n")) {
    const at = line.indexOf("BENCH-JSON ");
    if (at < 0) continue;
    const figure = JSON.parse(line.slice(at + "BENCH-JSON ".length)) as { kind: string };
    found.set(figure.kind, figure);
  }
  const paint = found.get("paint") as PaintRound | undefined;
  const append = found.get("append") as AppendRound | undefined;
  const dom = found.get("dom") as DomRound | undefined;
  // The first paint and the append are this round's own figures; a round that lost the timeline keeps them (the suite says so).
  if (!paint || !append || !dom) throw new Error(`test/vscode/bench.mjs exited with ${code}${dom ? "" : " (the page never showed the row with its reclaim)"}:\n${(out + err).slice(-3000)}`);
  return { paint, append, dom, timeline: found.get("timeline") as TimelineRound | undefined, timelineDom: found.get("timelineDom") as TimelineDomRound | undefined, code };
}

async function floorRound(): Promise<FloorRound> {
  const { code, out } = await run(BENCH, ["--subject", "floor"]);
  const found = new Map<string, Record<string, number>>();
  for (const line of out.split("\n")) {
    const at = line.indexOf("BENCH-JSON ");
    if (at < 0) continue;
    const figure = JSON.parse(line.slice(at + "BENCH-JSON ".length)) as { kind: string } & Record<string, number>;
    found.set(figure.kind, figure);
  }
  const paint = found.get("floorPaint");
  const dom = found.get("dom");
  const webview = found.get("floorWebview");
  const page = found.get("timelineDom");
  return {
    paintMs: paint && dom ? dom.paintedAt! - paint.activatedAtEpoch! : undefined,
    webviewMs: webview && page ? page.paintedAt! - webview.commandAtEpoch! : undefined,
    webviewHeardMs: webview?.heardMs,
    code,
  };
}

async function searchRound(): Promise<SearchRound> {
  const dir = mkdtempSync(join(tmpdir(), "pi-pruner-search-bench-"));
  try {
    const json = join(dir, "search.json");
    const { code, out, err } = await run(SEARCH_BENCH, ["--sessions", String(SEARCH_SESSIONS), "--json", json]);
    if (code !== 0) throw new Error(`test/vscode/search-bench.mjs exited with ${code}:\n${(out + err).slice(-3000)}`);
    return JSON.parse(readFileSync(json, "utf8")) as SearchRound;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const load1 = () => Math.round(loadavg()[0]! * 100) / 100;

export async function runEditor(options: EditorOptions): Promise<SuiteOutput> {
  const out = newSuite();
  const rounds = options.quick ? 3 : 7;
  const megabytes = 5;
  const paints: PaintRound[] = [];
  const shown: number[] = [];
  const shownTexts: string[] = [];
  const domSeen: number[] = [];
  const opened: number[] = [];
  const applied: number[] = [];
  const tails: number[] = [];
  const timelines: { host: TimelineRound; drawnMs: number; seenMs: number; by: string }[] = [];
  const loads: number[] = [];
  const floorPaints: number[] = [];
  const floorWebviews: number[] = [];
  const paintRatios: number[] = [];
  const timelineRatios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    loads.push(load1());
    // Ours and the floors each in a fresh host; which starts first alternates, so a machine that
    // gets busier or quieter over a round favours neither.
    const floorFirst = r % 2 === 1;
    const floorBefore = floorFirst ? await floorRound() : undefined;
    let round: Round;
    try {
      round = await oneRound(megabytes);
    } catch (error) {
      // A host that never came up (a loaded machine) loses its round, not the others'.
      out.notes.push(`editor round ${r + 1} lost: ${(error as Error).message.split("\n")[0]}`);
      options.log(`editor round ${r + 1}/${rounds} lost: ${(error as Error).message.slice(0, 2000)}`);
      continue;
    }
    const { paint, append, dom, timeline, timelineDom, code } = round;
    const floor = floorBefore ?? (await floorRound());
    paints.push(paint);
    if (timeline && timelineDom) {
      timelines.push({ host: timeline, drawnMs: timelineDom.paintedAt - timeline.commandAtEpoch, seenMs: timelineDom.seenAt - timeline.commandAtEpoch, by: timelineDom.by });
      if (timelineDom.requests !== timeline.requests) out.notes.push(`editor round ${r + 1}: the chart was seen with ${timelineDom.requests} requests, the branch has ${timeline.requests}`);
      // The command waits for the workbench; a first paint later than it means the two overlapped.
      if (dom.paintedAt > timeline.commandAtEpoch) out.notes.push(`editor round ${r + 1}: the timeline's command ran ${(dom.paintedAt - timeline.commandAtEpoch).toFixed(0)} ms before the first paint was seen, so the two overlapped`);
    }
    else out.notes.push(`editor round ${r + 1}: the timeline was ${timeline ? "built in the host but never seen drawn in its webview" : "not measured (its test failed)"}; bench.mjs exited with ${code}`);
    shown.push(dom.paintedAt - paint.activatedAtEpoch);
    shownTexts.push(dom.text);
    domSeen.push(dom.seenAt - paint.activatedAtEpoch);
    if (dom.clickedAt !== undefined) opened.push(dom.clickedAt - paint.activatedAtEpoch);
    applied.push(median(append.appliedMs));
    tails.push(median(append.tailMs));
    if (floor.paintMs !== undefined) {
      floorPaints.push(floor.paintMs);
      paintRatios.push(shown[shown.length - 1]! / floor.paintMs);
    } else out.notes.push(`editor round ${r + 1}: the one-item floor's row was never seen (bench.mjs --subject floor exited with ${floor.code})`);
    const ourTimeline = timeline && timelineDom ? timelineDom.paintedAt - timeline.commandAtEpoch : undefined;
    if (floor.webviewMs !== undefined) {
      floorWebviews.push(floor.webviewMs);
      if (ourTimeline !== undefined) timelineRatios.push(ourTimeline / floor.webviewMs);
    } else out.notes.push(`editor round ${r + 1}: the empty webview's page was never seen drawn (bench.mjs --subject floor exited with ${floor.code})`);
    options.log(`editor round ${r + 1}/${rounds} floors (${floorFirst ? "their host first" : "ours first"}): one tree item drawn ${floor.paintMs?.toFixed(0) ?? "?"} ms after its activation (ours ${shown[shown.length - 1]!.toFixed(0)} ms: ${floor.paintMs ? (shown[shown.length - 1]! / floor.paintMs).toFixed(2) : "?"}×); empty webview drawn ${floor.webviewMs?.toFixed(0) ?? "?"} ms after its command (our timeline ${ourTimeline?.toFixed(0) ?? "?"} ms: ${floor.webviewMs && ourTimeline ? (ourTimeline / floor.webviewMs).toFixed(2) : "?"}×)`);
    options.log(`editor round ${r + 1}/${rounds}: row with reclaim shown ${shown[shown.length - 1]!.toFixed(0)} ms after activation ("${dom.text}"; the view's icon clicked at ${dom.clickedAt === undefined ? "?" : (dom.clickedAt - paint.activatedAtEpoch).toFixed(0)} ms); tree items ready ${paint.paintMs.toFixed(0)} ms (listed ${paint.listedMs.toFixed(0)}, parse ${paint.parseMs.toFixed(0)}, view model ${paint.viewModelMs.toFixed(0)}, items ${(paint.rootItemsMs + paint.childrenMs).toFixed(0)}); append applied ${median(append.appliedMs).toFixed(2)} ms; timeline ${timeline && timelineDom ? `of ${timeline.requests} requests drawn ${(timelineDom.paintedAt - timeline.commandAtEpoch).toFixed(0)} ms after its command (built in the host at ${timeline.builtMs.toFixed(0)} ms)` : "not measured"}; load average ${loads[loads.length - 1]}`);
  }
  const searches: SearchRound[] = [];
  const searchRounds = options.quick ? 1 : 3;
  const searchLoads: number[] = [];
  for (let r = 0; r < searchRounds; r++) {
    searchLoads.push(load1());
    const found = await searchRound();
    searches.push(found);
    options.log(`editor search round ${r + 1}/${searchRounds}: ${found.sessions} sessions (${found.sessionMB.toFixed(1)} MB): first results ${found.firstResultsMs.toFixed(0)} ms, complete ${found.completedMs.toFixed(0)} ms, event-loop delay p99 ${found.loopDelay.p99.toFixed(1)} ms, max ${found.loopDelay.max.toFixed(1)} ms (idle host p99 ${found.idleDelay.p99.toFixed(1)} ms); load average ${searchLoads[searchLoads.length - 1]}`);
  }
  if (paints.length === 0) throw new Error(`every editor round was lost: ${out.notes.join("; ")}`);
  const f = out.figures;
  const of = (pick: (p: PaintRound) => number) => spread(paints.map(pick));
  f["editor.paint.5MB"] = spreadFigure(spread(shown), "ms", { target: { op: "<=", value: 300 }, note: "activation → the session's row with its reclaim drawn in the workbench (Playwright reads the DOM; the frame after the row is in it; one fresh code-server per round)" });
  if (paintRatios.length) {
    f["editor.paintFloor.oneItem"] = spreadFigure(spread(floorPaints), "ms", { note: "the one-item floor: its activate() → its one tree item drawn in its own view container, opened by its icon as ours is (a fresh code-server per round, the same extensions loaded)" });
    f["editor.paintRatio.5MB"] = spreadFigure(spread(paintRatios), "ratio", { target: { op: "<=", value: 1.5 }, note: "first paint ÷ the one-item floor, each round's pair of fresh hosts" });
  }
  f["editor.paintDom.5MB"] = spreadFigure(spread(domSeen), "ms", { note: "activation → the row with its reclaim in the DOM (before its frame)" });
  if (opened.length) f["editor.viewOpened.5MB"] = spreadFigure(spread(opened), "ms", { note: "activation → the click on the Pi Pruner icon that opened the view (negative: before activation)" });
  f["editor.treeItems.5MB"] = spreadFigure(of((p) => p.paintMs), "ms", { note: "in the host: activation → the session's row with its reclaim and its children built as tree items" });
  f["editor.listed.5MB"] = spreadFigure(of((p) => p.listedMs), "ms", { note: "activation → sessions listed (rows with name and age, from each file's head)" });
  if (paints.every((p) => p.estimatedMs !== undefined)) f["editor.estimated.5MB"] = spreadFigure(of((p) => p.estimatedMs!), "ms", { note: "activation → the session's reclaim estimated in one quick pass over its file (the row shows it marked ≈ until the view model gives the figure)" });
  // What the first paint showed: the estimate (≈) or the view's own figure.
  out.data.firstPaintTexts = shownTexts;
  f["editor.viewBuilt.5MB"] = spreadFigure(of((p) => p.viewBuiltMs), "ms", { note: "activation → parsed and view model built (reclaim known)" });
  f["editor.parse.5MB"] = spreadFigure(of((p) => p.parseMs), "ms", { note: "readSessionFile with lazyBodies, in the extension host, cold" });
  f["editor.viewModel.5MB"] = spreadFigure(of((p) => p.viewModelMs), "ms", { note: "buildSessionView, in the extension host, cold" });
  if (paints.every((p) => p.parseCpuMs !== undefined && p.viewModelCpuMs !== undefined)) {
    f["editor.parseCpu.5MB"] = spreadFigure(of((p) => p.parseCpuMs!), "ms", { note: "CPU time of the extension host's thread during the parse" });
    f["editor.viewModelCpu.5MB"] = spreadFigure(of((p) => p.viewModelCpuMs!), "ms", { note: "CPU time of the extension host's thread during the view model build" });
  }
  f["editor.items.5MB"] = spreadFigure(of((p) => p.rootItemsMs + p.childrenMs), "ms", { note: "tree items: the session's row, then its children" });
  f["editor.viewModelWarm.5MB"] = spreadFigure(spread(paints.map((p) => median(p.warmMs.slice(-3)))), "ms", { note: "buildSessionView again in the same host, once warm (median of the last 3 of 5 rebuilds)" });
  f["editor.append.5MB"] = spreadFigure(spread(applied), "ms", { target: { op: "<=", value: 5 }, note: "one appended line: tail read + view update in the store (median of 30 appends per round)" });
  f["editor.tail.5MB"] = spreadFigure(spread(tails), "ms", { note: "the tail read alone" });
  if (timelines.length) {
    const t = (pick: (x: (typeof timelines)[number]) => number) => spread(timelines.map(pick));
    // Its target is the ratio to the empty webview below: a fresh host's first webview takes most of it.
    f["editor.timeline.5MB"] = spreadFigure(t((x) => x.drawnMs), "ms", { note: "the timeline command → the frame that draws the chart with every request of the session in its webview (Playwright's observer in the webview's frame; one fresh code-server per round)" });
    f["editor.timelineDom.5MB"] = spreadFigure(t((x) => x.seenMs), "ms", { note: "the command → the chart drawn with every request (the page's data-drawn, set by uPlot's draw hook), before its frame" });
    f["editor.timelinePanel.5MB"] = spreadFigure(t((x) => x.host.panelMs), "ms", { note: "the command → its panel created (the page starts loading)" });
    if (timelines.every((x) => x.host.readyMs !== undefined)) f["editor.timelineReady.5MB"] = spreadFigure(t((x) => x.host.readyMs!), "ms", { note: "in the host: the command → the page loaded and asking for its points" });
    if (timelines.every((x) => typeof x.host.sinceLoadMs === "number")) f["editor.timelineSinceLoad.5MB"] = spreadFigure(t((x) => x.host.sinceLoadMs!), "ms", { target: { op: "<=", value: 100 }, note: "in the page: its load finished → its chart with every request drawn (the points were posted while it loaded)" });
    f["editor.timelineBuilt.5MB"] = spreadFigure(t((x) => x.host.builtMs), "ms", { note: "in the host: the command → the whole timeline built in core (the session's bodies read back from disk) and posted to the page" });
    f["editor.timelineHeard.5MB"] = spreadFigure(t((x) => x.host.heardMs), "ms", { note: "in the host: the command → the page's notice that its chart is drawn" });
    f["editor.timeline.requests"] = figure(timelines[0]!.host.requests, "requests");
  }
  if (floorWebviews.length) f["editor.webviewFloor.empty"] = spreadFigure(spread(floorWebviews), "ms", { note: "the empty-webview floor: its command → its page loaded and drawn (the frame after it marks itself), the first webview of a fresh code-server, 3 s after activation as ours" });
  if (timelineRatios.length) f["editor.timelineRatio.5MB"] = spreadFigure(spread(timelineRatios), "ratio", { target: { op: "<=", value: 1.2 }, note: "the timeline drawn ÷ the empty-webview floor, each round's pair of fresh hosts" });
  if (searches.length) {
    const q = (pick: (x: SearchRound) => number) => spread(searches.map(pick));
    const n = SEARCH_SESSIONS;
    f[`editor.search.firstResults.${n}`] = spreadFigure(q((x) => x.firstResultsMs), "ms", { target: { op: "<=", value: 1000 }, note: "Search Sessions… run → its first results in the tree (one fresh code-server per round)" });
    f[`editor.search.completed.${n}`] = spreadFigure(q((x) => x.completedMs), "ms", { note: "the command → every session scanned and indexed, its outputs read from disk" });
    f[`editor.search.loopP99.${n}`] = spreadFigure(q((x) => x.loopDelay.p99), "ms", { target: { op: "<=", value: 50 }, note: "the extension host's event-loop delay p99 during the search (monitorEventLoopDelay, 10 ms resolution); the issue's target is < 50 ms" });
    f[`editor.search.loopP50.${n}`] = spreadFigure(q((x) => x.loopDelay.p50), "ms", { note: "event-loop delay p50 during the search" });
    f[`editor.search.loopMax.${n}`] = spreadFigure(q((x) => x.loopDelay.max), "ms", { note: "the longest event-loop delay during the search" });
    f[`editor.search.idleP99.${n}`] = spreadFigure(q((x) => x.idleDelay.p99), "ms", { note: "context: event-loop delay p99 of the same host idle for 1 s before the search" });
    f[`editor.search.gcMax.${n}`] = spreadFigure(q((x) => x.gcPausesMs.max), "ms", { note: "context: the longest garbage-collection pause during the search" });
    f["editor.search.sessions"] = figure(searches[0]!.sessions, "sessions");
    f["editor.search.megabytes"] = figure(searches[0]!.sessionMB, "MiB");
    f["editor.search.parts"] = figure(searches[0]!.indexedParts, "parts");
    f["editor.search.hits"] = figure(searches[0]!.hits, "hits");
    f["editor.search.sessionsWithHits"] = figure(searches[0]!.sessionsWithHits, "sessions");
  }
  f["editor.session.bytes"] = figure(paints[0]!.bytes, "bytes");
  f["editor.session.entries"] = figure(paints[0]!.entries, "entries");
  out.data.rounds = paints;
  out.data.shownMs = shown;
  out.data.timelines = timelines;
  out.data.searches = searches;
  out.data.loadAverage = { rounds: loads, searchRounds: searchLoads };
  out.data.floors = { paintMs: floorPaints, webviewMs: floorWebviews, paintRatios, timelineRatios };
  return out;
}
