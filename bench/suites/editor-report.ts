// Section 6 of docs/benchmarks.md, "Editor", from the editor suite's figures: first paint, the
// context timeline and search across sessions in a real extension host; its prose is in
// editor-report.md.
import { openSection, PAGE, num, pct, type ReportDoc, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate, sentence } from "../lib/report-template.ts";
import type { SuiteOutput } from "../lib/results.ts";

const TEXT = readTemplate(new URL("./editor-report.md", import.meta.url));

function timeline(d: ReportDoc, s: SuiteOutput): void {
  d.push(TEXT.block("timeline-title"), "");
  if (!d.f("editor.timeline.5MB")) {
    d.push(PAGE.block("not-measured"), "");
    return;
  }
  const rounds = (s.data.timelines ?? []) as { by: string }[];
  const polled = rounds.filter((r) => r.by === "poll").length;
  d.push(
    TEXT.block("timeline", {
      requests: d.val("editor.timeline.requests", false),
      polled: polled ? sentence(TEXT.block("timeline-polled", { polled: String(polled), rounds: String(rounds.length) })) : "",
    }),
    "",
    TEXT.block("timeline-steps", { panel: d.spread("editor.timelinePanel.5MB") }),
    ...(d.f("editor.timelineReady.5MB") ? [TEXT.block("timeline-step-ready", { value: d.spread("editor.timelineReady.5MB") })] : []),
    TEXT.block("timeline-steps-drawn", {
      built: d.spread("editor.timelineBuilt.5MB"),
      dom: d.spread("editor.timelineDom.5MB"),
      heard: d.spread("editor.timelineHeard.5MB"),
      drawn: d.spread("editor.timeline.5MB"),
    }),
    ...(d.f("editor.timelineSinceLoad.5MB") ? [TEXT.block("timeline-since-load", { value: d.spread("editor.timelineSinceLoad.5MB"), status: d.status("editor.timelineSinceLoad.5MB") })] : []),
    ...(d.f("editor.timelineRatio.5MB") ? [TEXT.block("timeline-floor", { floor: d.spread("editor.webviewFloor.empty"), ratio: d.spread("editor.timelineRatio.5MB"), status: d.status("editor.timelineRatio.5MB") })] : []),
    "",
  );
  const built = d.v("editor.timelineBuilt.5MB");
  const ready = d.v("editor.timelineReady.5MB");
  const drawn = d.v("editor.timeline.5MB");
  if (Number.isFinite(built) && Number.isFinite(drawn)) {
    const after = Math.max(built, Number.isFinite(ready) ? ready : 0);
    const pageSlower = Number.isFinite(ready) && ready > built;
    d.push(
      TEXT.block("timeline-paths", {
        buildShare: pct(built / drawn),
        longerPath: TEXT.block(pageSlower ? "timeline-page-slower" : "timeline-build-slower"),
        crossing: num(drawn - after),
      }),
      "",
    );
  }
}

function search(d: ReportDoc, s: SuiteOutput): void {
  d.push(TEXT.block("search-title"), "");
  if (!d.f("editor.search.firstResults.500")) {
    d.push(PAGE.block("not-measured"), "");
    return;
  }
  const rounds = ((s.data.searches ?? []) as unknown[]).length;
  d.push(
    TEXT.block("search", {
      sessions: d.val("editor.search.sessions", false),
      megabytes: num(d.v("editor.search.megabytes")),
      rounds: rounds === 1 ? TEXT.block("search-round") : TEXT.block("search-rounds", { count: String(rounds) }),
      parts: d.val("editor.search.parts", false),
      hits: d.val("editor.search.hits", false),
      sessionsWithHits: d.val("editor.search.sessionsWithHits", false),
      firstResults: d.spread("editor.search.firstResults.500"),
      firstResultsStatus: d.status("editor.search.firstResults.500"),
      completed: d.spread("editor.search.completed.500"),
      loopP99: d.spread("editor.search.loopP99.500"),
      loopP99Status: d.status("editor.search.loopP99.500"),
      loopP50: d.spread("editor.search.loopP50.500"),
      loopMax: d.spread("editor.search.loopMax.500"),
      idleP99: d.spread("editor.search.idleP99.500"),
      gcMax: d.spread("editor.search.gcMax.500"),
    }),
    "",
  );
}

export const editorReport: ReportSection = {
  headline: () => [
    ["editor.paint.5MB", "Editor: first paint of a 5 MB session, activation → its row with its reclaim in the rendered workbench (Playwright reads the DOM; fresh hosts)"],
    ["editor.paintRatio.5MB", "Editor: that first paint ÷ the one-item floor (an extension's activate() → its one tree item drawn; a fresh host each, round by round)"],
    ["editor.timeline.5MB", "Editor: that session's context timeline, its command → the chart with every request drawn in its webview (Playwright in the webview's frame; fresh hosts)"],
    ["editor.timelineRatio.5MB", "Editor: that timeline ÷ the empty-webview floor (a command → an empty webview page loaded and drawn; a fresh host each, round by round)"],
    ["editor.timelineSinceLoad.5MB", "Editor: that timeline's page, its load finished → its chart drawn (the points posted while it loaded; the page's own clock)"],
    ["editor.append.5MB", "Editor: a 1-line append applied to the open session"],
    ["editor.search.firstResults.500", "Editor: search over 500 sessions (the load test's agent dir), first results in the tree"],
    // The issue bounds the scan without a number: every session indexed (the test asserts it) is the bound.
    ["editor.search.completed.500", "Editor: the same search, every session scanned and indexed", ["bounded", "met: every session indexed in every round"]],
    ["editor.search.loopP99.500", "Editor: the extension host's event-loop delay p99 during that search", ["< 50 ms"]],
  ],

  write(d, results) {
    const s = openSection(d, results, "editor", TEXT.block("title"));
    if (!s) return;
    const rounds = ((s.data.rounds ?? []) as unknown[]).length;
    d.push(
      TEXT.block("intro", { rounds: String(rounds), megabytes: num(d.v("editor.session.bytes") / 1e6), entries: d.val("editor.session.entries", false) }),
      "",
      TEXT.block("steps", {
        listed: d.spread("editor.listed.5MB"),
        estimated: d.f("editor.estimated.5MB") ? `${TEXT.block("step-estimated", { value: d.spread("editor.estimated.5MB") })}\n` : "",
        viewBuilt: d.spread("editor.viewBuilt.5MB"),
        parse: d.spread("editor.parse.5MB"),
        parseCpu: d.f("editor.parseCpu.5MB") ? TEXT.block("parse-cpu", { cpu: d.spread("editor.parseCpu.5MB") }) : "",
        viewModel: d.spread("editor.viewModel.5MB"),
        viewModelCpu: d.f("editor.viewModelCpu.5MB") ? TEXT.block("view-model-cpu", { cpu: d.spread("editor.viewModelCpu.5MB") }) : "",
        viewModelWarm: d.spread("editor.viewModelWarm.5MB"),
        items: d.spread("editor.items.5MB"),
        treeItems: d.spread("editor.treeItems.5MB"),
      }),
      ...(d.f("editor.viewOpened.5MB") ? [TEXT.block("step-view-opened", { value: d.spread("editor.viewOpened.5MB") })] : []),
      ...(d.f("editor.paintDom.5MB") ? [TEXT.block("step-paint-dom", { value: d.spread("editor.paintDom.5MB") })] : []),
      TEXT.block("step-paint", { value: d.spread("editor.paint.5MB"), status: d.status("editor.paint.5MB") }),
      ...(d.f("editor.paintRatio.5MB") ? [TEXT.block("step-paint-floor", { floor: d.spread("editor.paintFloor.oneItem"), ratio: d.spread("editor.paintRatio.5MB"), status: d.status("editor.paintRatio.5MB") })] : []),
      "",
      ...(d.f("editor.paintFloor.oneItem") || d.f("editor.webviewFloor.empty") ? [TEXT.block("floors"), ""] : []),
      TEXT.block("append", { append: d.spread("editor.append.5MB"), tail: d.spread("editor.tail.5MB"), status: d.status("editor.append.5MB") }),
      "",
    );
    timeline(d, s);
    search(d, s);
    const loads = s.data.loadAverage as { rounds: number[]; searchRounds: number[] } | undefined;
    if (loads) {
      const range = (v: number[]) => (!v.length ? "—" : Math.min(...v) === Math.max(...v) ? num(v[0]!) : `${num(Math.min(...v))}–${num(Math.max(...v))}`);
      d.push(TEXT.block("load-average", { rounds: range(loads.rounds), searchRounds: range(loads.searchRounds) }), "");
    }
  },
};
