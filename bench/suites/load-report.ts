// Section 2 of docs/benchmarks.md, "Session load", from the load suite's figures; its prose is in
// load-report.md.
import { openSection, chart, num, pct, type ReportDoc, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate, sentence } from "../lib/report-template.ts";

const TEXT = readTemplate(new URL("./load-report.md", import.meta.url));

interface LoadRow {
  mb: number;
  bytes: number;
  entries: number;
  summary: Record<string, number>;
}

/** What the figures of the largest file say against their targets. */
function judgements(d: ReportDoc, big: LoadRow): string[] {
  const k = `${big.mb}MB`;
  const ratio = d.f(`load.ratio.${k}`);
  const readShare = d.v(`load.read.${k}`) / d.v(`load.view.${k}`);
  const items: string[] = [];
  items.push(
    TEXT.block("view", {
      mb: String(big.mb),
      view: d.spread(`load.view.${k}`),
      floor: d.spread(`load.floor.${k}`),
      ratio: d.spread(`load.ratio.${k}`),
      status: ratio?.target ? d.status(`load.ratio.${k}`) : TEXT.block("target-at-100"),
      plainFloor: d.spread(`load.plainFloor.${k}`),
      plainRatio: d.spread(`load.ratioPlain.${k}`),
      why: ratio && ratio.value > 1.3 ? sentence(TEXT.block("view-why", { readShare: pct(readShare), read: d.val(`load.read.${k}`), readVsFloor: num(d.v(`load.read.${k}`) / d.v(`load.floor.${k}`)) })) : "",
    }),
  );
  if (d.f(`load.modelView.${k}`)) items.push(TEXT.block("later", { mb: String(big.mb), rest: d.spread(`load.deferred.${k}`), modelView: d.spread(`load.modelView.${k}`) }));
  if (d.f(`load.peak.viewVsPi.${k}`)) {
    const ownView = d.v(`load.peakOwn.view.${k}`);
    const ownPi = d.v(`load.peakOwn.pi.${k}`);
    items.push(
      TEXT.block("memory", {
        view: d.val(`load.peak.view.${k}`),
        pi: d.val(`load.peak.pi.${k}`),
        ratio: d.val(`load.peak.viewVsPi.${k}`),
        status: d.status(`load.peak.viewVsPi.${k}`),
        why: ownView > ownPi ? sentence(TEXT.block("memory-why", { view: num(ownView), pi: num(ownPi) })) : "",
      }),
    );
  }
  items.push(
    TEXT.block("append", {
      small: d.spread(`load.append.1MB`),
      large: d.spread(`load.append.${k}`),
      mb: String(big.mb),
      growth: d.val("load.append.growth"),
      tail: d.spread(`load.tail.${k}`),
      status: d.status(`load.append.${k}`),
    }),
  );
  return items;
}

export const loadReport: ReportSection = {
  headline: (results) => {
    const size = results.mode === "quick" ? "10" : "100";
    return [
      [`load.ratio.${size}MB`, `View-model load ÷ tight floor (1 MiB chunks split on newline bytes, \`JSON.parse\` per line), ${size} MB`],
      [`load.ratioPlain.${size}MB`, `Context only: view-model load ÷ plain \`readFileSync\` floor, ${size} MB`],
      [`load.peak.viewVsPi.${size}MB`, "Peak memory, view model ÷ Pi's `SessionManager.open`"],
      [`load.append.${size}MB`, `1-line append applied to the view, ${size} MB file`],
    ];
  },

  write(d, results) {
    const s = openSection(d, results, "load", TEXT.block("title"));
    if (!s) return;
    const rows = (s.data.rows ?? []) as LoadRow[];
    d.push(TEXT.block("intro"));
    for (const r of rows) {
      const k = `${r.mb}MB`;
      d.push(`| ${r.mb} MB (${(r.bytes / 2 ** 20).toFixed(1)} MiB) | ${r.entries.toLocaleString("en-US")} | ${d.spread(`load.view.${k}`)} | ${d.val(`load.read.${k}`)} | ${d.spread(`load.floor.${k}`)} | ${d.spread(`load.ratio.${k}`)} | ${d.spread(`load.plainFloor.${k}`)} | ${d.spread(`load.ratioPlain.${k}`)} | ${d.val(`load.deferred.${k}`)} | ${d.val(`load.modelView.${k}`)} | ${d.val(`load.peak.view.${k}`)} | ${d.val(`load.peak.pi.${k}`)} | ${d.val(`load.peak.floor.${k}`)} | ${d.val(`load.peak.viewVsPi.${k}`)} | ${d.spread(`load.append.${k}`)} |`);
    }
    const largest = `${rows[rows.length - 1]?.mb}MB`;
    d.push(
      "",
      TEXT.block("baseline", {
        coreBaseline: num(d.v(`load.peak.view.${largest}`) - d.v(`load.peakOwn.view.${largest}`)),
        piBaseline: num(d.v(`load.peak.pi.${largest}`) - d.v(`load.peakOwn.pi.${largest}`)),
        view: d.val(`load.peakOwn.view.${largest}`),
        pi: d.val(`load.peakOwn.pi.${largest}`),
        floor: d.val(`load.peakOwn.floor.${largest}`),
      }),
      "",
      chart("load-time.svg", "Load time against file size"),
      "",
      chart("load-memory.svg", "Peak memory per loader and file size"),
      "",
    );
    const big = rows[rows.length - 1];
    if (big) d.push(...judgements(d, big), "");
  },
};
