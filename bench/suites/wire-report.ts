// Section 8 of docs/benchmarks.md, "On the wire", from the wire suite's figures and data; its prose
// is in wire-report.md. The prices it states are the ones the suite billed with (the registry's,
// kept in the suite's data), and the cache limits the wire bill's own.
import { SONNET_CACHE_LIMITS, type ModelPrices } from "../lib/wire-bill.ts";
import { openSection, chart, num, type ReportDoc, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate } from "../lib/report-template.ts";
import { WIRE_BASELINE, WIRE_PROVIDERS, WIRE_RUNS } from "../lib/wire-plan.ts";

const TEXT = readTemplate(new URL("./wire-report.md", import.meta.url));

/** The wire suite's data as bench/results.json keeps it. */
interface WireData {
  latency: { baseMs: number; perOutputTokenMs: number };
  piCondense?: { version: string };
  models: Record<string, { id: string; api: string; prices: ModelPrices }>;
}

const dollars = (value: number) => `$${value.toFixed(value < 1 ? 3 : 2)}`;
const int = (value: number) => Math.round(value).toLocaleString("en-US");
const label = (id: string, data: WireData) => (id === "picondense" && data.piCondense ? `pi-condense ${data.piCondense.version}` : WIRE_RUNS.find((r) => r.id === id)!.label);

function prices(d: ReportDoc, data: WireData): void {
  const [openai, anthropic] = [WIRE_PROVIDERS[0], WIRE_PROVIDERS[1]];
  const a = data.models[anthropic.name]!;
  const o = data.models[openai.name]!;
  d.push(
    TEXT.block("prices", {
      anthropicLabel: anthropic.label,
      anthropicModel: a.id,
      anthropicInput: String(a.prices.input),
      anthropicOutput: String(a.prices.output),
      anthropicRead: String(a.prices.cacheRead),
      anthropicWrite: String(a.prices.cacheWrite),
      minCacheTokens: int(SONNET_CACHE_LIMITS.minCacheTokens),
      lookbackBlocks: String(SONNET_CACHE_LIMITS.lookbackBlocks),
      openaiLabel: openai.label,
      openaiModel: o.id,
      openaiInput: String(o.prices.input),
      openaiOutput: String(o.prices.output),
      openaiRead: String(o.prices.cacheRead),
    }),
    "",
    TEXT.block("latency", { anthropicLabel: anthropic.label, openaiLabel: openai.label, baseSeconds: num(data.latency.baseMs / 1000), perTokenMs: String(data.latency.perOutputTokenMs) }),
    "",
  );
}

function tables(d: ReportDoc, data: WireData): void {
  const ids = WIRE_RUNS.map((r) => r.id).filter((id) => d.f(`wire.openai.${id}.dollars`));
  for (const provider of WIRE_PROVIDERS) {
    const f = (id: string, measure: string) => `wire.${provider.name}.${id}.${measure}`;
    d.push(TEXT.block("table-head", { provider: provider.label }));
    for (const id of ids) {
      d.push(
        TEXT.block("table-row", {
          label: label(id, data),
          dollars: dollars(d.v(f(id, "dollars"))),
          vsNone: id === "none" ? "1×" : d.val(f(id, "vsNone")),
          read: int(d.v(f(id, "cacheRead"))),
          write: int(d.v(f(id, "cacheWrite"))),
          uncached: int(d.v(f(id, "uncached"))),
          peak: int(d.v(f(id, "peakContext"))),
          peakVsNone: id === "none" ? "1×" : d.val(f(id, "peakVsNone")),
          calls: String(d.v(f(id, "summarizerCalls"))),
        }),
      );
    }
    d.push("");
  }
  const timed = WIRE_PROVIDERS.find((p) => p.latency)!;
  d.push(TEXT.block("wall-head", { anthropicLabel: timed.label }));
  for (const id of ids) d.push(TEXT.block("wall-row", { label: label(id, data), seconds: num(d.v(`wire.wall.${id}`)), vsNone: id === "none" ? "1×" : d.val(`wire.wall.${id}.vsNone`) }));
  d.push("", chart("wire-cost.svg", "Billed relative to no pruning on the wire, per provider"), "", chart("wire-wall.svg", "Wall time of the long session with a latency-modelled model"), "");
}

function targets(d: ReportDoc): void {
  // Counts as whole numbers ("30 calls"), ratios as the page writes them ("0.47×").
  const show = (value: number, unit: string) => (unit === "calls" ? `${int(value)} calls` : `${num(value)}×`);
  const row = (name: string, what: string, before?: number) => {
    const f = d.f(name);
    if (!f) return [];
    const was = before === undefined ? "" : TEXT.block("before", { value: show(before, f.unit) });
    if (!f.target) return [TEXT.block("observed", { what, value: show(f.value, f.unit), before: was })];
    return [TEXT.block("target", { what, value: show(f.value, f.unit), target: `${f.target.op === "<=" ? "≤" : "≥"} ${show(f.target.value, f.unit)}`, before: was, status: d.status(name) })];
  };
  const lines = [
    ...WIRE_PROVIDERS.flatMap((p) => row(`wire.${p.name}.defaultsVsPiCondense`, `defaults ÷ pi-condense, ${p.label}`)),
    ...WIRE_PROVIDERS.flatMap((p) => row(`wire.${p.name}.backgroundVsPiCondense`, `backgroundSummaries on ÷ pi-condense, ${p.label}`)),
    ...WIRE_PROVIDERS.flatMap((p) => row(`wire.${p.name}.defaults.vsNone`, `defaults ÷ no pruning, ${p.label}`)),
    ...WIRE_PROVIDERS.flatMap((p) => row(`wire.${p.name}.defaults.peakVsNone`, `peak context ÷ no pruning, ${p.label}`)),
    ...row("wire.defaults.worstVsNone", "never above no pruning (the larger of the two)"),
    ...WIRE_PROVIDERS.flatMap((p) => row(`wire.${p.name}.defaults.summarizerCalls`, `summarizer calls, ${p.label}`, WIRE_BASELINE.summarizerCalls)),
    ...row("wire.wall.defaults.vsNone", "wall time ÷ no pruning", WIRE_BASELINE.wallVsNone),
    ...row("wire.wall.background.vsNone", "wall time with backgroundSummaries on ÷ no pruning"),
    ...row("wire.wall.picondense.vsNone", "pi-condense's wall time ÷ no pruning", WIRE_BASELINE.piCondenseWallVsNone),
  ];
  d.push(TEXT.block("targets"), "", ...lines, "");
}

function emulated(d: ReportDoc): void {
  if (!d.f("wire.emulated.anthropic.vsNone")) {
    d.push(TEXT.block("emulated-missing", { wire: d.val("wire.anthropic.inputVsNone") }), "");
    return;
  }
  const peer = d.f("wire.emulated.anthropic.vsPiCondense")
    ? ` ${TEXT.block("emulated-peer", { emulated: d.val("wire.emulated.anthropic.vsPiCondense"), wire: d.val("wire.anthropic.inputVsPiCondense"), difference: signed(d.v("wire.emulatedMinusWire.vsPiCondense")) })}`
    : "";
  d.push(TEXT.block("emulated", { emulated: d.val("wire.emulated.anthropic.vsNone"), wire: d.val("wire.anthropic.inputVsNone"), difference: signed(d.v("wire.emulatedMinusWire.vsNone")), peer }), "");
}

const signed = (value: number) => `${value >= 0 ? "+" : "−"}${num(Math.abs(value))}`;

export const wireReport: ReportSection = {
  headline: () => [
    ["wire.anthropic.defaultsVsPiCondense", "Long session on the wire, Anthropic: defaults ÷ pi-condense"],
    ["wire.openai.defaultsVsPiCondense", "Long session on the wire, OpenAI: defaults ÷ pi-condense"],
    ["wire.anthropic.defaults.vsNone", "Long session on the wire, Anthropic: defaults ÷ no pruning"],
    ["wire.openai.defaults.vsNone", "Long session on the wire, OpenAI: defaults ÷ no pruning"],
    ["wire.anthropic.defaults.peakVsNone", "Long session on the wire, Anthropic: peak context ÷ no pruning"],
    ["wire.openai.defaults.peakVsNone", "Long session on the wire, OpenAI: peak context ÷ no pruning"],
    ["wire.defaults.worstVsNone", "Long session on the wire: never above no pruning"],
    ["wire.anthropic.defaults.summarizerCalls", `Long session on the wire, Anthropic: summarizer calls (${WIRE_BASELINE.summarizerCalls} before)`],
    ["wire.wall.defaults.vsNone", "Long session with a latency-modelled model: wall time ÷ no pruning"],
  ],

  write(d, results) {
    const s = openSection(d, results, "wire", TEXT.block("title"));
    if (!s) return;
    const data = s.data as unknown as WireData;
    d.push(TEXT.block("intro", { peer: data.piCondense ? TEXT.block("peer", { version: data.piCondense.version }) : TEXT.block("peer-missing") }), "");
    prices(d, data);
    tables(d, data);
    targets(d);
    emulated(d);
  },
};
