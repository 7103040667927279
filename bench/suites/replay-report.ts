// Section 3 of docs/benchmarks.md, "Cost replay", from the replay suite's figures and data; its
// prose is in replay-report.md. The models, prices and cache limits it states are core's own price
// models (core/src/cost/price-rules.ts), so the page describes the rules the replay billed with.
import { ANTHROPIC_LOOKBACK_BLOCKS, CACHE_RULES, PRICE_MODELS, type PriceModelName as CacheRules } from "../../core/src/cost/price-rules.ts";
import type { PiHead, ReplayResult } from "../lib/replay.ts";
import { openSection, chart, num, type ReportDoc, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate, sentence } from "../lib/report-template.ts";
import { RULES_NAME, TABLE_RULES, TARGET_RULES } from "./replay-rules.ts";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";

const TEXT = readTemplate(new URL("./replay-report.md", import.meta.url));

/** The replay suite's data as bench/results.json keeps it. */
interface ReplayData {
  head: PiHead;
  rules: CacheRules[];
  maskingWindow: number;
  piCondense?: { name: string; version: string; settings: unknown };
  policies: { id: string; label: string; peer: boolean }[];
  sessions: ReplaySession[];
}

interface ReplaySession {
  name: string;
  label: string;
  requests: number;
  prompts: number;
  seeds: number[];
  runs: { seed?: number; results: ReplayResult[] }[];
}

/** A multiple of the base input price as the page writes it: 1.25, 0.1, 1. */
const price = (multiple: number) => String(Math.round(multiple * 1e4) / 1e4);
const { anthropic, openai, simple } = PRICE_MODELS;
/** The model id of a price model's "provider/id". */
const modelName = (model: string) => model.slice(model.indexOf("/") + 1);
/** A model's registry prices as the page states them: dollars per million tokens in, out, cache read, cache write. */
const dollars = (rules: typeof anthropic) => {
  const perMillion = (multiple: number) => `$${Math.round(rules.inputPerMillion * multiple * 1e4) / 1e4}`;
  return `${perMillion(1)} in, ${perMillion(rules.output)} out, ${perMillion(rules.read)} cache read${rules.write !== rules.uncached ? `, ${perMillion(rules.write)} cache write` : ""} per million tokens`;
};
const int = (value: number) => Math.round(value).toLocaleString("en-US");
const names = (rules: readonly CacheRules[]) => rules.map((r) => RULES_NAME[r]).join(" and ");

function introduction(d: ReportDoc, data: ReplayData): void {
  const condense = data.piCondense;
  d.push(
    TEXT.block("sessions"),
    "",
    ...data.sessions.map((x) =>
      TEXT.block("session", {
        label: x.label,
        requests: String(x.requests),
        prompts: String(x.prompts),
        seeds: x.seeds.length > 1 ? sentence(TEXT.block("session-seeds", { first: String(x.seeds[0]), count: String(x.seeds.length), seeds: x.seeds.join(", ") })) : "",
        about: sentence(TEXT.block(x.name === "generated" ? "session-generated" : "session-recorded")),
      }),
    ),
    ...(data.sessions.some((x) => x.name === "long") ? [] : [TEXT.block("no-long")]),
    "",
    TEXT.block("policies", { maskingWindow: String(data.maskingWindow) }),
    condense ? TEXT.block("pi-condense", { version: condense.version, settings: JSON.stringify(condense.settings) }) : TEXT.block("pi-condense-missing"),
    "",
    TEXT.block("how-it-runs", {
      systemChars: data.head.systemChars.toLocaleString("en-US"),
      toolsChars: data.head.toolsChars.toLocaleString("en-US"),
      lookbackBlocks: String(ANTHROPIC_LOOKBACK_BLOCKS),
      anthropicModel: modelName(anthropic.model),
      anthropicPrices: dollars(anthropic),
      writePrice: price(anthropic.write),
      readPrice: price(anthropic.read),
      anthropicOutput: price(anthropic.output),
      minCachedTokens: anthropic.minCachedTokens.toLocaleString("en-US"),
      openaiModel: modelName(openai.model),
      openaiPrices: dollars(openai),
      openaiReadPrice: price(openai.read),
      openaiOutput: price(openai.output),
      openaiMinimum: openai.minCachedTokens.toLocaleString("en-US"),
      simpleReadPrice: price(simple.read),
      simpleWritePrice: price(simple.write),
      uncachedPrice: price(anthropic.uncached),
    }),
    "",
  );
}

function targets(d: ReportDoc, data: ReplayData): void {
  const status = (name: string, what: string) => {
    const f = d.f(name);
    const lead = what ? `${what} ` : "";
    return f ? `${lead}${d.spread(name)} — ${f.target ? (f.met ? "met" : d.status(name)) : "(no target)"}` : `${lead}not measured`;
  };
  const byRules = (fn: (r: CacheRules) => string) => TARGET_RULES.map((r) => `${RULES_NAME[r]}: ${fn(r)}`).join("; ");
  const sessionName = (x: ReplaySession) => (x.name === "generated" ? "generated (median)" : x.name);
  const mainSessions = data.sessions.filter((x) => x.name !== "recorded");
  const lines: string[] = [];
  const target = (title: string, parts: string[]) => lines.push(`- **${title}** — ${parts.join("; ")}.`);
  target("Defaults ≤ 0.40× no pruning", mainSessions.map((x) => `${sessionName(x)}: ${byRules((r) => status(`replay.${x.name}.defaults.${r}.vsNone`, ""))}`));
  target("Defaults ≤ 0.90× pi-condense", data.piCondense ? mainSessions.map((x) => `${sessionName(x)}: ${byRules((r) => status(`replay.${x.name}.defaultsVsPiCondense.${r}`, ""))}`) : ["not measured (pi-condense not run)"]);
  target(
    "Defaults ≤ 1.00× no pruning on every session",
    data.sessions.map((x) => {
      const parts = TARGET_RULES.map((r) => {
        const f = d.f(`replay.${x.name}.defaults.${r}.vsNone`);
        if (!f) return `${RULES_NAME[r]}: not measured`;
        const worst = f.max ?? f.value;
        return `${RULES_NAME[r]}: ${worst <= 1 ? "met" : "**missed**"} (${f.max !== undefined ? `highest seed ${num(worst)}×` : `${num(worst)}×`})`;
      });
      return `${x.name}: ${parts.join(", ")}`;
    }),
  );
  target("Defaults ≤ observation masking", data.sessions.map((x) => `${x.name}: ${byRules((r) => status(`replay.${x.name}.defaultsVsMasking.${r}`, ""))}`));
  target("Peak context ≤ 0.25× no pruning", mainSessions.map((x) => status(`replay.${x.name}.defaults.peakVsNone`, `${x.name}:`)));
  d.push(TEXT.block("targets"), "", ...lines, "");
}

function sessionTables(d: ReportDoc, data: ReplayData): void {
  const label = Object.fromEntries(data.policies.map((p) => [p.id, p.label]));
  for (const session of data.sessions) {
    const ids = data.policies.map((p) => p.id).filter((id) => session.runs[0]!.results.some((r) => r.policy === id));
    d.push(TEXT.block("session-table", { label: session.label }));
    for (const id of ids) {
      const f = (k: string) => (id === "none" && !k.includes("summarizer") ? "1×" : d.spread(`replay.${session.name}.${id}.${k}`));
      d.push(`| ${label[id] ?? id} | ${f("simple.vsNone")} | ${f("anthropic.vsNone")} | ${f("openai.vsNone")} | ${f("peakVsNone")} | ${f("anthropic.cacheWritesVsNone")} | ${id === "none" ? "—" : d.spread(`replay.${session.name}.${id}.summarizerInput`)} |`);
    }
    const primary = session.runs[0]!;
    if (primary.results.some((r) => r.policy === "none")) {
      d.push(
        "",
        primary.seed !== undefined ? TEXT.block("detail-seed", { seed: String(primary.seed) }) : TEXT.block("detail"),
        "",
        `| policy | ${data.rules.map((r) => `billed, ${RULES_NAME[r]}`).join(" | ")} | peak context | summarizer calls | thinking | tool-call arguments | tool results | pruner summaries | other text |`,
        `|---|${data.rules.map(() => "---:").join("|")}|---:|---:|---:|---:|---:|---:|---:|`,
        ...primary.results.map((r) => `| ${label[r.policy] ?? r.policy} | ${data.rules.map((x) => int(r.cost[x].billed)).join(" | ")} | ${int(r.peakContext)} | ${r.summarizerCalls} | ${int(r.composition.thinking ?? 0)} | ${int(r.composition.toolArgs ?? 0)} | ${int(r.composition.toolResults ?? 0)} | ${int(r.composition.summaries ?? 0)} | ${int(r.composition.text ?? 0)} |`),
        "",
      );
    }
    d.push(chart(`replay-context-${session.name}.svg`, `Context per request, ${session.label}`), "");
  }
  for (const r of CACHE_RULES) d.push(chart(`replay-cost-${r}.svg`, `Billed cost relative to no pruning, ${RULES_NAME[r]}`), "");
}

function seedTable(d: ReportDoc, generated: ReplaySession): void {
  const ratio = (rs: ReplayResult[], id: string, r: CacheRules, over = "none") => {
    const a = rs.find((x) => x.policy === id);
    const b = rs.find((x) => x.policy === over);
    return a && b ? `${num(a.cost[r].billed / b.cost[r].billed)}×` : "—";
  };
  d.push(
    TEXT.block("seeds"),
    ...generated.runs.map((run) => {
      const none = run.results.find((x) => x.policy === "none");
      return `| ${run.seed} | ${Math.round(none?.peakContext ?? 0).toLocaleString("en-US")} | ${ratio(run.results, "defaults", "anthropic")} | ${ratio(run.results, "defaults", "openai")} | ${ratio(run.results, "defaults", "simple")} | ${ratio(run.results, "defaults", "anthropic", "picondense")} | ${ratio(run.results, "defaults", "openai", "picondense")} |`;
    }),
    "",
  );
}

function stripFinding(d: ReportDoc, generated: ReplaySession, defaults: ReplayResult, strip: ReplayResult, per: (key: string) => string): string {
  const stripAnthropic = d.v("replay.generated.stripVsDefaults.anthropic");
  if (strip.thinkingBlocksLast === defaults.thinkingBlocksLast && Math.abs(stripAnthropic - 1) < 1e-6) {
    return TEXT.block("strip-same", { blocks: String(strip.thinkingBlocksLast), seed: String(generated.runs[0]!.seed), ratios: per("stripVsDefaults") });
  }
  // Within half a percent the strip neither saves nor costs: OpenAI bills no reasoning of earlier
  // turns, so stripping it changes nothing there.
  const ratio = (r: CacheRules) => d.v(`replay.generated.stripVsDefaults.${r}`);
  const saves = TABLE_RULES.filter((r) => ratio(r) < 0.995);
  const even = TABLE_RULES.filter((r) => ratio(r) >= 0.995 && ratio(r) <= 1.005);
  const worse = TABLE_RULES.filter((r) => ratio(r) > 1.005);
  const verdict = [
    saves.length ? TEXT.block("strip-saves", { rules: names(saves) }) : "",
    even.length ? TEXT.block(even.some((r) => r !== "simple") ? "strip-even-providers" : "strip-even", { rules: names(even) }) : "",
    worse.length ? TEXT.block("strip-worse", { rules: names(worse) }) : "",
  ]
    .filter(Boolean)
    .join("; ");
  const byDefault = TEXT.block(DEFAULT_CONFIG.thinkingStrip.enabled ? "strip-on-by-default" : "strip-off-by-default", { long: d.val("replay.long.stripVsDefaults.anthropic"), longOpenai: d.val("replay.long.stripVsDefaults.openai") });
  return TEXT.block("strip", { ratios: per("stripVsDefaults"), verdict, byDefault: sentence(byDefault) });
}

function naiveFinding(d: ReportDoc, per: (key: string) => string): string {
  const cheaper = TABLE_RULES.filter((r) => d.v(`replay.generated.naiveVsDefaults.${r}`) < 1);
  const dearer = TABLE_RULES.filter((r) => d.v(`replay.generated.naiveVsDefaults.${r}`) >= 1);
  const verdict = cheaper.length
    ? dearer.length
      ? TEXT.block("naive-cheaper-dearer", { cheaper: names(cheaper), dearer: names(dearer) })
      : TEXT.block("naive-cheaper", { cheaper: names(cheaper) })
    : dearer.length
      ? TEXT.block("naive-never-cheaper-dearer", { dearer: names(dearer) })
      : TEXT.block("naive-never-cheaper");
  return TEXT.block("naive", {
    ratios: per("naiveVsDefaults"),
    verdict,
    anthropic: dearer.includes("anthropic") ? TEXT.block("naive-anthropic", { naiveWrites: d.spread("replay.generated.naive.anthropic.cacheWritesVsNone"), defaultsWrites: d.spread("replay.generated.defaults.anthropic.cacheWritesVsNone") }) : "",
    long: d.f("replay.long.naiveVsDefaults.anthropic") ? sentence(TEXT.block("naive-long", { ratios: TABLE_RULES.map((r) => `${d.val(`replay.long.naiveVsDefaults.${r}`)} (${RULES_NAME[r]})`).join(", ") })) : "",
  });
}

function findings(d: ReportDoc, data: ReplayData): void {
  const sessionNamed = (name: string) => data.sessions.find((x) => x.name === name);
  const generated = sessionNamed("generated");
  const items: string[] = [];
  const per = (key: string) => TABLE_RULES.map((r) => `${RULES_NAME[r]} ${d.spread(`replay.generated.${key}.${r}`)}`).join(", ");
  const primaryGen = generated?.runs[0]?.results ?? [];
  const def = primaryGen.find((r) => r.policy === "defaults");
  const strip = primaryGen.find((r) => r.policy === "strip");
  if (generated && def && strip) items.push(stripFinding(d, generated, def, strip, per));
  if (d.f("replay.generated.naiveVsDefaults.anthropic")) items.push(naiveFinding(d, per));
  if (def && data.piCondense) {
    const pc = primaryGen.find((r) => r.policy === "picondense");
    if (pc) {
      items.push(
        TEXT.block("pi-condense-seed", {
          seed: String(generated!.runs[0]!.seed),
          oursInput: int(def.summarizerInputTokens),
          peerInput: int(pc.summarizerInputTokens),
          oursCalls: String(def.summarizerCalls),
          peerCalls: String(pc.summarizerCalls),
          oursWrites: int(def.cost.anthropic.cacheWriteTokens),
          peerWrites: int(pc.cost.anthropic.cacheWriteTokens),
          oursPeak: int(def.peakContext),
          peerPeak: int(pc.peakContext),
        }),
      );
    }
  }
  if (primaryGen.some((r) => r.policy === "masking")) {
    items.push(
      TEXT.block("masking", {
        ratios: TABLE_RULES.map((r) => `${RULES_NAME[r]} ${d.spread(`replay.generated.masking.${r}.vsNone`)}`).join(", "),
        window: String(data.maskingWindow),
        writes: d.spread("replay.generated.masking.anthropic.cacheWritesVsNone"),
        uncachedPrice: price(anthropic.uncached),
        writePrice: price(anthropic.write),
      }),
    );
  }
  const recorded = sessionNamed("recorded");
  const rec = recorded?.runs[0]?.results;
  if (recorded && rec) {
    const rn = rec.find((r) => r.policy === "none");
    const rd = rec.find((r) => r.policy === "defaults");
    if (rn && rd) {
      items.push(
        TEXT.block("recorded", {
          requests: String(recorded.requests),
          ratios: TABLE_RULES.map((r) => `${num(rd.cost[r].billed / rn.cost[r].billed)}× (${RULES_NAME[r]})`).join(", "),
          input: int(rd.summarizerInputTokens),
          saved: int(rn.cost.anthropic.billed - rd.cost.anthropic.mainBilled),
        }),
      );
    }
  }
  if (items.length) d.push(TEXT.block("findings"), "", ...items, "");
}

export const replayReport: ReportSection = {
  headline: () => [
    ["replay.generated.defaults.anthropic.vsNone", "Cost of the defaults vs. no pruning, Anthropic rules (median over the generated 200-turn sessions)"],
    ["replay.generated.defaults.openai.vsNone", "Cost of the defaults vs. no pruning, OpenAI rules (same sessions)"],
    ["replay.long.defaults.anthropic.vsNone", "Cost of the defaults vs. no pruning, Anthropic rules (long recorded session)"],
    ["replay.generated.defaultsVsPiCondense.anthropic", "Defaults ÷ pi-condense 2.9.1, Anthropic rules (generated sessions)"],
    ["replay.long.defaults.openai.vsNone", "Cost of the defaults vs. no pruning, OpenAI rules (long recorded session)"],
    ["replay.recorded.defaults.anthropic.vsNone", "Cost of the defaults vs. no pruning, Anthropic rules (short recorded session: never more than no pruning)"],
    ["replay.recorded.defaults.openai.vsNone", "Cost of the defaults vs. no pruning, OpenAI rules (short recorded session)"],
    ["replay.generated.defaultsVsPiCondense.openai", "Defaults ÷ pi-condense 2.9.1, OpenAI rules (generated sessions)"],
    ["replay.long.defaultsVsPiCondense.anthropic", "Defaults ÷ pi-condense 2.9.1, Anthropic rules (long recorded session)"],
    ["replay.long.defaultsVsPiCondense.openai", "Defaults ÷ pi-condense 2.9.1, OpenAI rules (long recorded session)"],
    ["replay.generated.defaultsVsMasking.anthropic", "Defaults ÷ observation masking, Anthropic rules (generated sessions)"],
    ["replay.generated.defaults.peakVsNone", "Peak context of the defaults ÷ no pruning (generated sessions)"],
    ["replay.long.defaults.peakVsNone", "Peak context of the defaults ÷ no pruning (long recorded session)"],
  ],

  write(d, results) {
    const s = openSection(d, results, "replay", TEXT.block("title"));
    if (!s) return;
    const data = s.data as unknown as ReplayData;
    if (!Array.isArray(data.policies)) {
      d.push(TEXT.block("stale"), "");
      return;
    }
    introduction(d, data);
    targets(d, data);
    sessionTables(d, data);
    const generated = data.sessions.find((x) => x.name === "generated");
    if (generated && generated.runs.length > 1) seedTable(d, generated);
    findings(d, data);
  },
};
