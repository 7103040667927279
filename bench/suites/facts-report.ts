// Section 7 of docs/benchmarks.md, "What the agent keeps", from the facts suite's figures; its
// prose is in facts-report.md.
import { openSection, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate } from "../lib/report-template.ts";
import type { Figure } from "../lib/results.ts";

const TEXT = readTemplate(new URL("./facts-report.md", import.meta.url));

interface OutputRow {
  name: string;
  chars: number;
  facts: number;
  oursChars: number;
  oursKept: number;
  peerChars?: number;
  peerKept?: number;
}

function pct(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? "—" : `${(value * 100).toFixed(1)}%`;
}

function int(value: number | undefined): string {
  return value === undefined ? "—" : Math.round(value).toLocaleString("en-US");
}

function status(f: Figure | undefined): string {
  if (!f?.target) return "";
  return f.met ? "met" : `**missed** (${f.value} vs ${f.target.op === "<=" ? "≤" : "≥"} ${f.target.value})`;
}

/** "3 of 4" from a figure's note. */
const keptOf = (f: Figure | undefined) => f?.note?.match(/^\d+ of \d+/)?.[0];

export const factsReport: ReportSection = {
  headline: () => [["facts.input.ours", "Planted facts reaching the summarizer's input (≤ 4,000 characters per call)"]],

  write(d, results) {
    const s = openSection(d, results, "facts", TEXT.block("title"));
    if (!s) return;
    const f = (name: string) => s.figures[name];
    const rows = (s.data.outputs ?? []) as OutputRow[];
    const budget = s.data.budget as number;
    const peer = f("facts.input.piCondense");
    const version = (s.data.piCondenseVersion as string | undefined) ?? "";
    const total = rows.reduce((n, r) => n + r.facts, 0);
    d.push(
      TEXT.block("intro", { outputs: String(rows.length), facts: String(total) }),
      "",
      TEXT.block("summarizer", { budget: int(budget), peer: peer ? TEXT.block("summarizer-peer", { version }) : TEXT.block("summarizer-no-peer") }),
      "",
      TEXT.block("input-table", {
        ours: pct(f("facts.input.ours")?.value),
        oursKept: keptOf(f("facts.input.ours")) ?? "—",
        oursMean: int(f("facts.input.ours.meanChars")?.value),
        oursMost: int(f("facts.input.ours.maxChars")?.value),
        oursStatus: status(f("facts.input.ours")),
        oursMostStatus: status(f("facts.input.ours.maxChars")),
        version,
        peer: pct(peer?.value),
        peerKept: peer ? ` (${keptOf(peer)})` : "",
        peerMean: int(f("facts.input.piCondense.meanChars")?.value),
        peerMost: int(f("facts.input.piCondense.maxChars")?.value),
      }),
      "",
      TEXT.block("outputs"),
      ...rows.map((r) => `| ${r.name} | ${int(r.chars)} | ${r.facts} | ${r.oursKept} · ${int(r.oursChars)} | ${r.peerKept === undefined ? "—" : `${r.peerKept} · ${int(r.peerChars)}`} |`),
      "",
    );
    const missed = (s.data.missedOurs ?? []) as string[];
    if (missed.length) d.push(TEXT.block("missed", { missed: missed.join("; ") }), "");
    d.push(
      TEXT.block("visible", { facts: String(total), visible: pct(f("facts.visible.ours")?.value), spillPreview: pct(f("facts.visible.spillPreview")?.value) }),
      "",
      TEXT.block("checked", {
        recoverable: f("facts.recoverable")?.note ?? "—",
        recoverableStatus: status(f("facts.recoverable")),
        protectedStatus: status(f("facts.protectedVerbatim")),
        openTask: f("facts.openTaskSeenRaw")?.note ?? "—",
        openTaskStatus: status(f("facts.openTaskSeenRaw")),
      }),
      "",
    );
  },
};
