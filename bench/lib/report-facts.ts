// The "what the agent keeps" section of docs/benchmarks.md, from the facts suite's figures.
import type { Figure, SuiteOutput } from "./results.ts";

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

/** The section's lines; "Not run." when the suite did not run. */
export function factsSection(s: SuiteOutput | undefined): string[] {
  const lines = ["## 7. What the agent keeps", ""];
  if (!s) return [...lines, "Not run.", ""];
  const f = (name: string) => s.figures[name];
  const rows = (s.data.outputs ?? []) as OutputRow[];
  const budget = s.data.budget as number;
  const peer = f("facts.input.piCondense");
  const version = (s.data.piCondenseVersion as string | undefined) ?? "";
  const total = rows.reduce((n, r) => n + r.facts, 0);
  lines.push(
    `A scripted model cannot judge a summary, so this measures what can be measured: ${rows.length} tool outputs with ${total} facts planted in them (generated the same every run by \`bench/suites/facts.ts\`: an error line in the middle of a 30 KB build log and the failing test names at its end, exported names in a file read, paths in a grep, an esbuild, a pytest, a cargo and an eslint failure with their locations, a Python module's declarations, the files of a diff, a listing under the budget). A fact counts as kept when its text appears word for word.`,
    "",
    "**Reaching the summarizer.** Ours is `summarizerInput` within `summarizerInputChars` " +
      `(${int(budget)} characters per call): the head and the tail, every error, failure and warning line with its file and line, failing test names, a few stack frames, a file read's declarations with their line numbers, a search's paths, a diff's files. ` +
      (peer
        ? `pi-condense ${version} is measured through its own \`serializeBatchForSummarizer\` (its \`src/batch-capture.ts\`, loaded from the checkout through the bench's jiti loader), which sends the first 2,000 characters of each output.`
        : "pi-condense was not given (`--peer-pi-condense DIR`), so its column is empty."),
    "",
    "| | facts reaching the summarizer | characters per call (mean · most) | target |",
    "|---|---:|---:|---|",
    `| pi-pruner | ${pct(f("facts.input.ours")?.value)} (${f("facts.input.ours")?.note?.match(/^\d+ of \d+/)?.[0] ?? "—"}) | ${int(f("facts.input.ours.meanChars")?.value)} · ${int(f("facts.input.ours.maxChars")?.value)} | ≥ 95% with ≤ 4,000 characters per call: ${status(f("facts.input.ours"))}, ${status(f("facts.input.ours.maxChars"))} |`,
    `| pi-condense ${version} | ${pct(peer?.value)}${peer ? ` (${peer.note?.match(/^\d+ of \d+/)?.[0]})` : ""} | ${int(f("facts.input.piCondense.meanChars")?.value)} · ${int(f("facts.input.piCondense.maxChars")?.value)} | |`,
    "",
    "The characters are the output's part of the prompt (without the instructions, the arguments and the call's header, which both add).",
    "",
    "| output | characters | facts | ours: kept · characters sent | pi-condense: kept · characters sent |",
    "|---|---:|---:|---:|---:|",
    ...rows.map((r) => `| ${r.name} | ${int(r.chars)} | ${r.facts} | ${r.oursKept} · ${int(r.oursChars)} | ${r.peerKept === undefined ? "—" : `${r.peerKept} · ${int(r.peerChars)}`} |`),
    "",
  );
  const missed = (s.data.missedOurs ?? []) as string[];
  if (missed.length) lines.push(`Facts our input missed: ${missed.join("; ")}.`, "");
  const visible = f("facts.visible.ours");
  lines.push(
    `**Visible to the model after pruning.** The same outputs run through the real extension in the bench's host, one task each (the call, then the final reply), with a read of the skill file and one output over the spill threshold among them; then \`/pruner now\` prunes every batch and one more request is made. Of the ${total} facts, ${pct(visible?.value)} are in what that request sends (stubs, summaries). The bench's summarizer is scripted: its summary of a call names the ref, the tool and the start of the arguments and fills the rest with generated prose, so this share counts only what a stub and such a summary can hold — a real summarizer can carry at most what reached its input (the share above). Of the spilled output's facts, ${pct(f("facts.visible.spillPreview")?.value)} are in its stub's preview (the head; the fact in its middle is not).`,
    "",
    "Checked in the same run:",
    "",
    `- every pruned output comes back whole by its ref (\`context_tree_query\`'s answer, and the spill file for the spilled one): ${f("facts.recoverable")?.note ?? "—"} — ${status(f("facts.recoverable"))};`,
    `- the protected output (the skill file's read) is sent verbatim after the flush and is in no summary: ${status(f("facts.protectedVerbatim"))};`,
    `- the open task's outputs reach the model raw before anything stubs them: ${f("facts.openTaskSeenRaw")?.note ?? "—"} — ${status(f("facts.openTaskSeenRaw"))} (the spilled output is replaced by its preview at once, by design).`,
    "",
  );
  return lines;
}
