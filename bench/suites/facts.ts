// What the agent keeps: tool outputs with planted facts (an error line in the middle of a 30 KB
// build log, the failing test names at its end, exported names in a file read, paths in a grep, …).
// Measured: the share of the facts that reach the summarizer's input (ours within the per-call
// budget, and pi-condense's on the same outputs when its checkout is given), the characters sent
// per call, and the share the model still sees after pruning (stub, summary, spill preview) when
// the outputs go through the real extension in the bench's host. Three guarantees are asserted on
// the same run: every pruned output comes back whole by its ref, a protected output stays verbatim,
// and the open task's outputs reach the model raw at least once before anything is stubbed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { summarizerInput } from "../../core/src/prune/summarizer-input.ts";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";
import { rebuildIndex } from "../../core/src/prune/prune-index.ts";
import { fileSpillStorage } from "../../core/src/session/blobs.ts";
import { contentText, type AgentMessage } from "../../core/src/shapes/messages.ts";
import { formatQueryResult } from "../../pi-extension/src/query-tool.ts";
import { ReplayHost } from "../lib/pi-host.ts";
import { Rng, SKILL_PATH, prose, skillText, type ScriptCall } from "../lib/gen.ts";
import { loadPiCondense } from "../lib/peers.ts";
import { figure, newSuite, type SuiteOutput } from "../lib/results.ts";

export interface FactsOptions {
  quick: boolean;
  log: (line: string) => void;
  peers: { piCondense?: string };
}

interface Fact {
  /** What the fact is, for the report. */
  label: string;
  /** The text that must reach the summarizer (or the model) for the fact to count as kept. */
  text: string;
}

export interface FactOutput {
  name: string;
  toolName: string;
  args: Record<string, unknown>;
  text: string;
  isError: boolean;
  facts: Fact[];
}

// ---- the outputs ------------------------------------------------------------------------------

function filler(rng: Rng, count: number, line: (rng: Rng, i: number) => string): string[] {
  return Array.from({ length: count }, (_, i) => line(rng, i));
}

function buildLog(rng: Rng): FactOutput {
  const error = "src/parser/lexer.ts(212,17): error TS2322: Type 'string' is not assignable to type 'Token'.";
  const failing = ["test/parser.test.ts > parser > keeps nested blocks", "test/render.test.ts > render > escapes html in titles"];
  const lines = ["> app@1.4.0 test", "> tsc -p tsconfig.json && vitest run", ""];
  lines.push(...filler(rng, 250, (r, i) => `  transpiled src/modules/${prose(r, 1)}-${i}/index.ts in ${r.int(2, 90)}ms (${r.int(800, 9000)} bytes)`));
  lines.push(error);
  lines.push(...filler(rng, 250, (r, i) => ` ✓ test/unit/${prose(r, 1)}-${i}.test.ts > ${prose(r, 4)} ${r.int(1, 30)}ms`));
  lines.push(` × ${failing[0]} 12ms`, "   → expected 3 to be 4", ` × ${failing[1]} 4ms`, "   → expected '<b>' to be '&lt;b&gt;'", "");
  lines.push(" Test Files  2 failed | 248 passed (250)", "      Tests  2 failed | 499 passed (501)", "   Duration  6.02s");
  return {
    name: "build log (npm test, 30 KB)",
    toolName: "bash",
    args: { command: "npm test" },
    text: lines.join("\n"),
    isError: true,
    facts: [
      { label: "type error in the middle", text: error },
      { label: "failing test 1 (at the end)", text: failing[0]! },
      { label: "failing test 2 (at the end)", text: failing[1]! },
      { label: "the failure count", text: "Tests  2 failed | 499 passed (501)" },
    ],
  };
}

function fileRead(rng: Rng): FactOutput {
  const names = ["parseManifest", "ManifestSection", "resolveIncludes", "ManifestError", "DEFAULT_MANIFEST_NAME"];
  const decl = [
    "export function parseManifest(text: string, options: ParseOptions = {}): Manifest {",
    "export interface ManifestSection {",
    "export async function resolveIncludes(manifest: Manifest, root: string): Promise<Manifest> {",
    "export class ManifestError extends Error {",
    'export const DEFAULT_MANIFEST_NAME = "app.manifest.json";',
  ];
  const lines = ['import { readFile } from "node:fs/promises";', 'import { join } from "node:path";', ""];
  for (const d of decl) {
    lines.push(`/** ${prose(rng, 10)}. */`, d);
    lines.push(...filler(rng, 70, (r, i) => `  const ${prose(r, 1)}${i} = ${prose(r, 1)}(${r.int(0, 999)}, "${prose(r, 2)}"); // ${prose(r, 3)}`));
    lines.push("}", "");
  }
  return {
    name: "file read (src/manifest.ts, 5 exports)",
    toolName: "read",
    args: { path: "src/manifest.ts" },
    text: lines.join("\n"),
    isError: false,
    facts: names.map((n, i) => ({ label: `export ${n}`, text: decl[i]!.slice(0, decl[i]!.indexOf(n) + n.length) })),
  };
}

function grep(rng: Rng): FactOutput {
  const planted = ["src/net/retry-budget.ts", "src/jobs/scheduler/backoff.ts", "test/net/retry-budget.test.ts"];
  const lines: string[] = [];
  const files = filler(rng, 24, (r, i) => `src/${prose(r, 1)}/${prose(r, 1)}-${i}.ts`);
  files.splice(9, 0, planted[0]!);
  files.splice(17, 0, planted[1]!);
  files.push(planted[2]!);
  for (const f of files) for (let m = 0; m < 8; m++) lines.push(`${f}:${rng.int(1, 400)}: const delay = retryDelay(${prose(rng, 2).replace(/ /g, ", ")}); // ${prose(rng, 3)}`);
  return {
    name: "grep (27 files)",
    toolName: "grep",
    args: { pattern: "retryDelay" },
    text: lines.join("\n"),
    isError: false,
    facts: planted.map((p) => ({ label: `path ${p}`, text: p })),
  };
}

function esbuild(rng: Rng): FactOutput {
  const lines = ["> app@1.4.0 build", "> node scripts/build.mjs", ""];
  lines.push(...filler(rng, 150, (r, i) => `  bundling chunk ${i}: ${prose(r, 2)} (${r.int(1, 400)} kB)`));
  lines.push('✘ [ERROR] Could not resolve "zod"', "", "    src/schema/user.ts:3:18:", '      3 │ import { z } from "zod";', "        ╵                   ~~~~~", "");
  lines.push(...filler(rng, 150, (r, i) => `  bundling chunk ${150 + i}: ${prose(r, 2)} (${r.int(1, 400)} kB)`));
  lines.push("1 error", "build failed in 2.1s");
  return {
    name: "esbuild failure",
    toolName: "bash",
    args: { command: "npm run build" },
    text: lines.join("\n"),
    isError: true,
    facts: [
      { label: "the unresolved import", text: 'Could not resolve "zod"' },
      { label: "its location", text: "src/schema/user.ts:3:18" },
    ],
  };
}

function pytest(rng: Rng): FactOutput {
  const lines = ["============================= test session starts ==============================", "platform linux -- Python 3.12.3, pytest-8.2.0", "collected 412 items", ""];
  lines.push(...filler(rng, 260, (r, i) => `tests/${prose(r, 1)}/test_${prose(r, 1)}_${i}.py ........................ [ ${Math.round(((i + 1) / 412) * 100)}%]`));
  lines.push("=================================== FAILURES ===================================", "_______________________________ test_create_user _______________________________", "", '    def test_create_user(client):', '        response = client.post("/users", json={"name": ""})', ">       assert response.status_code == 400", "E       assert 201 == 400", "", "tests/api/test_users.py:48: AssertionError");
  lines.push(...filler(rng, 20, (r) => `    ${prose(r, 6)}`));
  lines.push("=========================== short test summary info ============================", "FAILED tests/api/test_users.py::test_create_user - assert 201 == 400", "======================== 1 failed, 411 passed in 9.81s =========================");
  return {
    name: "pytest failure",
    toolName: "bash",
    args: { command: "pytest -q" },
    text: lines.join("\n"),
    isError: true,
    facts: [
      { label: "the failing test", text: "FAILED tests/api/test_users.py::test_create_user" },
      { label: "the failed assertion with its location", text: "tests/api/test_users.py:48: AssertionError" },
    ],
  };
}

function cargo(rng: Rng): FactOutput {
  const lines = ["   Compiling app v0.3.0 (/srv/app)"];
  lines.push(...filler(rng, 220, (r) => `   Compiling ${prose(r, 1)}-${prose(r, 1)} v${r.int(0, 3)}.${r.int(0, 30)}.${r.int(0, 9)}`));
  lines.push("error[E0308]: mismatched types", "  --> src/config/loader.rs:42:13", "   |", "42 |     let port: u16 = settings.get(\"port\");", "   |               ---   ^^^^^^^^^^^^^^^^^^^^^ expected `u16`, found `Option<&str>`");
  lines.push(...filler(rng, 60, (r) => `   Compiling ${prose(r, 1)} v1.${r.int(0, 30)}.0`));
  lines.push("error: could not compile `app` (bin \"app\") due to 1 previous error");
  return {
    name: "cargo build failure",
    toolName: "bash",
    args: { command: "cargo build" },
    text: lines.join("\n"),
    isError: true,
    facts: [
      { label: "the compiler error", text: "error[E0308]: mismatched types" },
      { label: "its location", text: "src/config/loader.rs:42:13" },
    ],
  };
}

function eslint(rng: Rng): FactOutput {
  const lines: string[] = [];
  for (let f = 0; f < 90; f++) {
    const path = f === 61 ? "/srv/app/src/ui/dialog.tsx" : `/srv/app/src/${prose(rng, 1)}/${prose(rng, 1)}-${f}.ts`;
    lines.push(path);
    for (let p = 0; p < 2; p++) {
      const planted = f === 61 && p === 1;
      lines.push(planted ? "  88:5  warning  React Hook useEffect has a missing dependency: 'onClose'  react-hooks/exhaustive-deps" : `  ${rng.int(1, 300)}:${rng.int(1, 40)}  info  ${prose(rng, 5)}  style/${prose(rng, 1)}`);
    }
    lines.push("");
  }
  lines.push("✖ 181 problems (0 errors, 1 warning)");
  return {
    name: "eslint report",
    toolName: "bash",
    args: { command: "npx eslint src" },
    text: lines.join("\n"),
    isError: false,
    facts: [
      { label: "the warning", text: "React Hook useEffect has a missing dependency: 'onClose'" },
      { label: "the file it is in", text: "/srv/app/src/ui/dialog.tsx" },
    ],
  };
}

function pythonRead(rng: Rng): FactOutput {
  const decl = ["class RateLimiter:", "def token_bucket(capacity: int, refill: float) -> Bucket:", "async def drain_queue(queue: Queue, limit: int = 100) -> int:"];
  const lines = ['"""Rate limiting for the public API."""', "import asyncio", "import time", ""];
  for (const d of decl) {
    lines.push(d, `    """${prose(rng, 8)}."""`);
    lines.push(...filler(rng, 90, (r, i) => `    ${prose(r, 1)}_${i} = ${prose(r, 1)}(${r.int(0, 99)}, "${prose(r, 2)}")  # ${prose(r, 3)}`));
    lines.push("");
  }
  return {
    name: "file read (limits.py)",
    toolName: "read",
    args: { path: "app/limits.py" },
    text: lines.join("\n"),
    isError: false,
    facts: decl.map((d) => ({ label: d.replace(/[:(].*$/, ""), text: d.replace(/\(.*$/, "").replace(/:$/, "") })),
  };
}

function gitDiff(rng: Rng): FactOutput {
  const files = ["src/server/routes.ts", "src/server/auth/session.ts", "test/server/routes.test.ts"];
  const lines: string[] = [];
  for (const [i, f] of files.entries()) {
    lines.push(`diff --git a/${f} b/${f}`, `index ${(1000 + i).toString(16)}a..${(2000 + i).toString(16)}b 100644`, `--- a/${f}`, `+++ b/${f}`);
    for (let h = 0; h < 3; h++) {
      lines.push(`@@ -${h * 80 + 1},60 +${h * 80 + 1},64 @@ ${prose(rng, 3)}`);
      lines.push(...filler(rng, 60, (r) => `${r.chance(0.15) ? "+" : r.chance(0.1) ? "-" : " "}  ${prose(r, 1)}(${prose(r, 3).replace(/ /g, ", ")});`));
    }
  }
  return {
    name: "git diff (3 files)",
    toolName: "bash",
    args: { command: "git diff" },
    text: lines.join("\n"),
    isError: false,
    facts: files.map((f) => ({ label: `changed file ${f}`, text: `diff --git a/${f} b/${f}` })),
  };
}

function listing(rng: Rng): FactOutput {
  const lines = ["total 184"];
  lines.push(...filler(rng, 30, (r, i) => `-rw-r--r--  1 dev dev ${String(r.int(100, 99999)).padStart(6)} Mar  3 09:${String(i).padStart(2, "0")} ${prose(r, 1)}-${i}.ts`));
  lines.splice(17, 0, "-rw-r--r--  1 dev dev  48213 Mar  3 09:41 migrations.sql");
  return {
    name: "ls -l (under the budget)",
    toolName: "bash",
    args: { command: "ls -l src" },
    text: lines.join("\n"),
    isError: false,
    facts: [{ label: "a file in the listing", text: "migrations.sql" }],
  };
}

/** The outputs with their planted facts; the same every run. */
export function factOutputs(): FactOutput[] {
  const rng = new Rng(12);
  return [buildLog(rng), fileRead(rng), grep(rng), esbuild(rng), pytest(rng), cargo(rng), eslint(rng), pythonRead(rng), gitDiff(rng), listing(rng)];
}

/** An output big enough to be spilled: what survives of it is the preview in its stub. */
function spilledOutput(rng: Rng): FactOutput {
  const head = '{"generatedAt":"2025-03-03T09:00:00Z","schemaVersion":7,"records":[';
  const records = filler(rng, 1700, (r, i) => `{"id":${i},"name":"${prose(r, 2)}","score":${r.int(0, 999)}}`);
  records.splice(700, 0, '{"id":"planted","name":"orphaned invoice 88231","score":-1}');
  return {
    name: "spilled JSON dump (> spill threshold)",
    toolName: "bash",
    args: { command: "node scripts/dump.mjs" },
    text: `${head}\n${records.join(",\n")}\n]}`,
    isError: false,
    facts: [
      { label: "schema version (head)", text: '"schemaVersion":7' },
      { label: "a record in the middle", text: "orphaned invoice 88231" },
    ],
  };
}

// ---- measurement -------------------------------------------------------------------------------

interface Share {
  kept: number;
  total: number;
  missed: string[];
}

function share(outputs: readonly FactOutput[], sent: (o: FactOutput) => string): Share {
  const result: Share = { kept: 0, total: 0, missed: [] };
  for (const o of outputs) {
    const text = sent(o);
    for (const f of o.facts) {
      result.total++;
      if (text.includes(f.text)) result.kept++;
      else result.missed.push(`${o.name}: ${f.label}`);
    }
  }
  return result;
}

/** pi-condense's own serialization of a batch for its summarizer, through its real module. */
async function piCondenseInput(dir: string): Promise<{ version: string; serialize: (o: FactOutput) => string }> {
  const peer = await loadPiCondense(dir);
  const mod = await peer.importModule<{
    captureBatch: (message: unknown, results: unknown[], turnIndex: number, timestamp: number) => unknown;
    serializeBatchForSummarizer: (batch: unknown) => string;
  }>("src/batch-capture.ts");
  if (typeof mod.captureBatch !== "function" || typeof mod.serializeBatchForSummarizer !== "function") throw new Error("pi-condense's src/batch-capture.ts no longer exports captureBatch and serializeBatchForSummarizer");
  return {
    version: peer.info.version,
    serialize(o) {
      const message = { role: "assistant", content: [{ type: "toolCall", id: "call_1", name: o.toolName, arguments: o.args }], timestamp: 1 };
      const result = { role: "toolResult", toolCallId: "call_1", toolName: o.toolName, content: [{ type: "text", text: o.text }], isError: o.isError, timestamp: 2 };
      return mod.serializeBatchForSummarizer(mod.captureBatch(message, [result], 0, 1));
    },
  };
}

function messageText(m: AgentMessage): string {
  if (m.role === "assistant") return m.content.map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? JSON.stringify(b.arguments) : "")).join("\n");
  return contentText((m as { content?: Parameters<typeof contentText>[0] }).content);
}

interface HostRun {
  visible: Share;
  spilledVisible: Share;
  summarized: number;
  spilled: number;
  recoverable: number;
  protectedVerbatim: boolean;
  seenRawFirst: number;
  turnsChecked: number;
  summarizerCalls: number;
}

/**
 * The outputs through the real extension in the bench's host: one task per output (the call, then
 * the final reply), a read of the skill file among them, one spilled output, then `/pruner now`
 * so that every batch is pruned, and one last request: what the model sees then.
 */
async function runThroughHost(outputs: readonly FactOutput[], spilled: FactOutput): Promise<HostRun> {
  const root = mkdtempSync(join(tmpdir(), "pi-pruner-facts-"));
  try {
    const host = await ReplayHost.create({ root, contextPrune: {} });
    const skill = skillText();
    const tasks: { output: FactOutput | undefined; call: ScriptCall }[] = [
      ...outputs.map((o) => ({ output: o, call: { name: o.toolName, args: o.args, result: o.text, isError: o.isError, kind: o.name } })),
      { output: undefined, call: { name: "read", args: { path: SKILL_PATH }, result: skill, isError: false, kind: "skill" } },
      { output: spilled, call: { name: spilled.toolName, args: spilled.args, result: spilled.text, isError: false, kind: "spill" } },
    ];
    let seenRawFirst = 0;
    let turnsChecked = 0;
    for (const [i, task] of tasks.entries()) {
      await host.user(`Task ${i + 1}: look into ${task.output?.name ?? "the release skill"}.`);
      await host.request();
      await host.assistantTurn({ kind: "assistant", text: "Checking.", calls: [task.call] });
      // The model's next request is its first sight of the output: it must be there raw (a
      // spilled output is the exception by design: it is replaced by its preview at once).
      const next = (await host.request()).map(messageText).join("\n");
      if (task.call.result.length < DEFAULT_CONFIG.spillThreshold) {
        turnsChecked++;
        if (next.includes(task.call.result)) seenRawFirst++;
      }
      await host.assistantTurn({ kind: "assistant", text: `Done with task ${i + 1}.`, calls: [] });
    }
    await host.command("pruner", "now");
    await host.user("What did we find?");
    const finalText = (await host.request()).map(messageText).join("\n");

    const { index } = rebuildIndex(host.entries);
    const storage = fileSpillStorage(join(host.sessionDir, `${host.sessionId}.jsonl`), host.sessionId);
    let recoverable = 0;
    let summarized = 0;
    let spilledCount = 0;
    for (const call of index.calls.values()) {
      if (call.record.spillPath) spilledCount++;
      else summarized++;
      const original = tasks.find((t) => t.call.args === call.record.args || JSON.stringify(t.call.args) === JSON.stringify(call.record.args))?.call.result;
      if (original === undefined) continue;
      const answer = await formatQueryResult([call.shortRef], index, storage);
      const read = call.record.spillPath ? await storage.read(call.record.spillPath) : undefined;
      // The query tool pages through Pi's truncation: a spilled output comes back by its head there and whole from its file.
      const whole = read ? read.ok && read.text === original && answer.includes(original.slice(0, 20_000)) : answer.includes(`Output:\n${original}`);
      if (whole) recoverable++;
    }
    const protectedVerbatim = finalText.includes(skill) && ![...index.calls.values()].some((c) => c.record.args?.path === SKILL_PATH);
    return {
      visible: share(outputs, () => finalText),
      spilledVisible: share([spilled], () => finalText),
      summarized,
      spilled: spilledCount,
      recoverable,
      protectedVerbatim,
      seenRawFirst,
      turnsChecked,
      summarizerCalls: host.summarizerCalls.length,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

export async function runFacts(options: FactsOptions): Promise<SuiteOutput> {
  const out = newSuite();
  const outputs = factOutputs();
  const budget = DEFAULT_CONFIG.summarizerInputChars;
  const factCount = outputs.reduce((n, o) => n + o.facts.length, 0);
  options.log(`facts: ${factCount} facts over ${outputs.length} outputs, budget ${budget} characters per call`);

  const ours = (o: FactOutput) => summarizerInput(o.toolName, o.args, o.text, budget);
  const oursShare = share(outputs, ours);
  const oursChars = outputs.map((o) => ours(o).length);
  out.figures["facts.input.ours"] = figure(oursShare.kept / oursShare.total, "share", { target: { op: ">=", value: 0.95 }, note: `${oursShare.kept} of ${oursShare.total} facts reach the summarizer's input` });
  out.figures["facts.input.ours.maxChars"] = figure(Math.max(...oursChars), "characters", { target: { op: "<=", value: 4000 }, note: "the most any one call's output takes of the summarizer's prompt" }, 0);
  out.figures["facts.input.ours.meanChars"] = figure(oursChars.reduce((a, b) => a + b, 0) / oursChars.length, "characters", {}, 0);
  const rows: Record<string, unknown>[] = outputs.map((o, i) => ({
    name: o.name,
    chars: o.text.length,
    facts: o.facts.length,
    oursChars: oursChars[i],
    oursKept: o.facts.filter((f) => ours(o).includes(f.text)).length,
  }));

  let condense: { version: string; missed: string[] } | undefined;
  if (options.peers.piCondense) {
    const peer = await piCondenseInput(options.peers.piCondense);
    const peerShare = share(outputs, peer.serialize);
    const peerChars = outputs.map((o) => peer.serialize(o).length);
    out.figures["facts.input.piCondense"] = figure(peerShare.kept / peerShare.total, "share", { note: `${peerShare.kept} of ${peerShare.total} facts (pi-condense ${peer.version}, serializeBatchForSummarizer)` });
    out.figures["facts.input.piCondense.maxChars"] = figure(Math.max(...peerChars), "characters", {}, 0);
    out.figures["facts.input.piCondense.meanChars"] = figure(peerChars.reduce((a, b) => a + b, 0) / peerChars.length, "characters", {}, 0);
    outputs.forEach((o, i) => {
      rows[i]!.peerChars = peerChars[i];
      rows[i]!.peerKept = o.facts.filter((f) => peer.serialize(o).includes(f.text)).length;
    });
    condense = { version: peer.version, missed: peerShare.missed };
  }

  const host = await runThroughHost(outputs, spilledOutput(new Rng(13)));
  out.figures["facts.visible.ours"] = figure(host.visible.kept / host.visible.total, "share", { note: `${host.visible.kept} of ${host.visible.total} facts in what the model is sent after every batch is pruned (stubs and the scripted summaries)` });
  out.figures["facts.visible.spillPreview"] = figure(host.spilledVisible.kept / host.spilledVisible.total, "share", { note: `${host.spilledVisible.kept} of ${host.spilledVisible.total} facts of the spilled output in its stub's preview` });
  out.figures["facts.recoverable"] = figure(host.recoverable / Math.max(1, host.summarized + host.spilled), "share", { target: { op: ">=", value: 1 }, note: `${host.recoverable} of ${host.summarized + host.spilled} pruned outputs (${host.spilled} spilled) come back whole by their ref` });
  out.figures["facts.protectedVerbatim"] = figure(host.protectedVerbatim ? 1 : 0, "yes/no", { target: { op: ">=", value: 1 }, note: "the skill file's read is sent verbatim after the flush" }, 0);
  out.figures["facts.openTaskSeenRaw"] = figure(host.seenRawFirst / Math.max(1, host.turnsChecked), "share", { target: { op: ">=", value: 1 }, note: `${host.seenRawFirst} of ${host.turnsChecked} outputs reach the model raw on the request after their call` });
  out.data = { budget, outputs: rows, missedOurs: oursShare.missed, missedPiCondense: condense?.missed, piCondenseVersion: condense?.version, visibleMissed: host.visible.missed, host: { ...host, visible: undefined, spilledVisible: undefined } };
  if (oursShare.missed.length) out.notes.push(`facts that did not reach our summarizer input: ${oursShare.missed.join("; ")}`);
  if (!host.protectedVerbatim || host.seenRawFirst < host.turnsChecked || host.recoverable < host.summarized + host.spilled) {
    out.notes.push("a guarantee failed in the facts run: see facts.recoverable, facts.protectedVerbatim and facts.openTaskSeenRaw");
    process.exitCode = 1;
  }
  options.log(`facts: ours ${oursShare.kept}/${oursShare.total}${condense ? `, pi-condense ${out.figures["facts.input.piCondense"]!.note}` : ""}; visible after pruning ${host.visible.kept}/${host.visible.total}; recoverable ${host.recoverable}/${host.summarized + host.spilled}`);
  return out;
}
