// Section 5 of docs/benchmarks.md, "Host overhead", from the host suite's figures; its prose is in
// host-report.md.
import { openSection, chart, num, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate } from "../lib/report-template.ts";

const TEXT = readTemplate(new URL("./host-report.md", import.meta.url));

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
      ...(d.f("host.diagnostic") ? [TEXT.block("table-diagnostic", { wall: d.spread("host.diagnostic"), cpu: d.spread("host.diagnostic.cpu"), rss: d.val("host.peakRss.diagnostic") })] : []),
      "",
      TEXT.block("ratio", { wall: d.spread("host.ratio"), status: d.status("host.ratio"), cpu: d.spread("host.cpu.ratio") }),
      "",
    );
    const cpu = d.v("host.cpu.ratio");
    if (d.f("host.diagnostic")) {
      d.push(
        TEXT.block("why", {
          diagnosticCpu: d.spread("host.diagnostic.cpu.ratio"),
          cpu: num(cpu),
          diagnosticRss: d.val("host.peakRss.diagnostic"),
          rss: d.val("host.peakRss.with"),
          waiting: d.f("host.ratio")?.met && cpu > 1.05 ? TEXT.block("why-waiting") : "",
        }),
        "",
      );
    }
    d.push(chart("host.svg", "Wall time with and without the extension"), "");
  },
};
