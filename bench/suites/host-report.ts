// Section 5 of docs/benchmarks.md, "Host overhead", from the host suite's figures; its prose is in
// host-report.md.
import { openSection, chart, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate } from "../lib/report-template.ts";

const TEXT = readTemplate(new URL("./host-report.md", import.meta.url));

/** The runs beside the two that make the headline, each also as a ratio to the run without: see host.ts. */
const PARTS = ["floor", "noFlush"] as const;

export const hostReport: ReportSection = {
  headline: () => [
    ["host.ratio", "Host overhead, `pi -p` wall time with ÷ without the extension"],
    ["host.cpu.ratio", "Host overhead, CPU time with ÷ without"],
  ],

  write(d, results) {
    const s = openSection(d, results, "host", TEXT.block("title"));
    if (!s) return;
    const pairs = (s.data.pairs as number) ?? 0;
    d.push(
      TEXT.block("intro", {
        requests: d.f("host.without")?.note?.match(/\d+ model requests/)?.[0] ?? TEXT.block("requests-unknown"),
        pairs: String(pairs),
        summarizerRequests: d.f("host.with")?.note?.match(/\d+(?= summarizer requests)/)?.[0] ?? TEXT.block("summarizer-requests-unknown"),
      }),
      "",
      TEXT.block("table", {
        without: d.spread("host.without"),
        cpuWithout: d.spread("host.cpu.without"),
        rssWithout: d.val("host.peakRss.without"),
        with: d.spread("host.with"),
        cpuWith: d.spread("host.cpu.with"),
        rssWith: d.val("host.peakRss.with"),
      }),
      ...PARTS.filter((part) => d.f(`host.${part}`)).map((part) => TEXT.block("table-part", { label: TEXT.block(`label-${part}`), wall: d.spread(`host.${part}`), cpu: d.spread(`host.${part}.cpu`), rss: d.val(`host.peakRss.${part}`) })),
      "",
      TEXT.block("ratio", { wall: d.spread("host.ratio"), status: d.status("host.ratio"), cpu: d.spread("host.cpu.ratio") }),
      "",
    );
    const cpu = d.v("host.cpu.ratio");
    if (PARTS.every((part) => d.f(`host.${part}.ratio`))) {
      d.push(
        TEXT.block("split", {
          floorWall: d.spread("host.floor.ratio"),
          floorCpu: d.spread("host.floor.cpu.ratio"),
          noFlushWall: d.spread("host.noFlush.ratio"),
          noFlushCpu: d.spread("host.noFlush.cpu.ratio"),
          wall: d.val("host.ratio"),
          cpu: d.val("host.cpu.ratio"),
          summarizerRequests: d.f("host.with")?.note?.match(/\d+(?= summarizer requests)/)?.[0] ?? TEXT.block("summarizer-requests-unknown"),
        }),
        "",
      );
    }
    d.push(TEXT.block("loading"), "");
    if (d.f("host.ratio")?.met && cpu > 1.05) d.push(TEXT.block("why-waiting"), "");
    d.push(chart("host.svg", "Wall time with and without the extension"), "");
  },
};
