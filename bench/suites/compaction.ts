// Figure 9: Pi's own compaction on the long session. The real `pi` in RPC mode plays the long
// recorded session's script (bench/lib/long-session.ts) against the scripted model server, and
// Pi's `compact` command runs after three of its tasks; once with pi-pruner (the built bundle, its
// defaults) and once without it. What the server logged of Pi's compaction requests (recognized by
// Pi's summarization prompt) is measured: their input, in characters and estimated tokens. The
// session's compaction entries are checked against the files the tasks' read, edit and write calls
// touched before each cut: Pi's file lists (`readFiles`, `modifiedFiles`) must name every one.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { messageText, startModelServer, type ModelRequest } from "../../test/helpers/model-server.ts";
import { createPiWorkspace } from "../../test/helpers/pi-workspace.ts";
import { REPO_ROOT } from "../../test/helpers/pi-process.ts";
import { startPiRpc } from "../../test/helpers/pi-rpc.ts";
import type { JsonRecord } from "../../test/helpers/jsonl-records.ts";
import { isSummarizerRequest } from "../../test/helpers/pruner-e2e.ts";
import { isCompactionRequest } from "../../test/helpers/pi-compaction.ts";
import { scriptedAgent } from "../../test/helpers/real-session.ts";
import { estimateTokens } from "../../core/src/shapes/size.ts";
import { LONG_FILES, LONG_PROMPTS, LONG_SCRIPT } from "../lib/long-session.ts";
import { scriptedSummary } from "../lib/pi-host.ts";
import { registryModel } from "../lib/wire-session.ts";
import { WIRE_PROVIDERS } from "../lib/wire-plan.ts";
import { figure, newSuite, type SuiteOutput } from "../lib/results.ts";
import { barChart } from "../lib/svg.ts";

export interface CompactionOptions {
  quick: boolean;
  log: (line: string) => void;
}

/** The tasks (1-based) after which `/compact` runs: early, halfway, and at the session's end. */
const COMPACT_AFTER = [3, 6, 10] as const;

/** The target for the compaction's input with pi-pruner, as a share of Pi's own. */
const TARGET_SHARE = 1;

/** What a scripted summarizer answers Pi's compaction; Pi appends its file lists. */
const CHECKPOINT = "## Goal\nThe session's tasks so far (a scripted checkpoint).";

/** The provider the runs are configured with: the wire suite's OpenAI one, answered at once. */
const openai = () => WIRE_PROVIDERS.find((p) => p.name === "openai")!;

/** The agent's requests offer Pi's tools; the summarizers' offer none or carry pi-pruner's instructions. */
const isAgentRequest = (req: ModelRequest) => req.toolNames.includes("read") && !isSummarizerRequest(req);

/** Everything a request sends as text: the system prompt and the message Pi serialized the history into. */
const requestChars = (req: ModelRequest) => (req.body.messages ?? []).reduce((n, m) => n + messageText(m).length, 0);

/** One `/compact`: the requests it made, and what its entry says. */
interface CompactionPlayed {
  afterTask: number;
  requests: number;
  chars: number;
  tokens: number;
  /** Whether the entry came from an extension (pi-pruner's), not Pi's own summarizer. */
  fromExtension: boolean;
  /** Files the tasks' read, edit and write calls touched before the cut. */
  touched: number;
  /** Of those, the ones the entry's file lists or its summary do not name. */
  missing: string[];
}

interface PlayedSession {
  compactions: CompactionPlayed[];
  agentRequests: number;
  wallMs: number;
}

/** The path a read, edit or write call names, as Pi's file tracking reads it. */
function touchedPath(block: JsonRecord): string | undefined {
  if (block.type !== "toolCall" || !["read", "edit", "write"].includes(block.name)) return undefined;
  return typeof block.arguments?.path === "string" ? block.arguments.path : undefined;
}

/** Files touched by calls in `entries` before the one with id `firstKeptId`. */
function touchedBefore(entries: JsonRecord[], firstKeptId: string): Set<string> {
  const files = new Set<string>();
  for (const entry of entries) {
    if (entry.id === firstKeptId) break;
    if (entry.type !== "message" || entry.message?.role !== "assistant" || !Array.isArray(entry.message.content)) continue;
    for (const block of entry.message.content as JsonRecord[]) {
      const path = touchedPath(block);
      if (path) files.add(path);
    }
  }
  return files;
}

/** Plays the long session through `pi --mode rpc`, compacting after COMPACT_AFTER's tasks. */
async function playWithCompactions(withPruner: boolean): Promise<PlayedSession> {
  const { provider, model: id, api } = openai();
  const model = registryModel(provider, id, api);
  const server = await startModelServer();
  const agent = scriptedAgent(LONG_PROMPTS, LONG_SCRIPT, {
    isMain: isAgentRequest,
    other: (req) => ({ text: isCompactionRequest(req) ? CHECKPOINT : scriptedSummary(req.allText) }),
  });
  server.respond = agent;
  const ws = createPiWorkspace({
    baseUrl: server.baseUrl,
    files: LONG_FILES,
    model: { api: model.api, id: model.id, cost: model.prices, contextWindow: 200_000, maxTokens: 8192, reasoning: true },
    // Only the `compact` commands compact: Pi's own threshold stays out of the comparison.
    settings: { compaction: { enabled: false } },
    prefix: "pprb-compact-",
  });
  const rpc = await startPiRpc({ workspace: ws, extension: withPruner ? join(REPO_ROOT, "pi-extension") : undefined, model: ws.modelRef, timeoutMs: 1_500_000 });
  try {
    const t0 = performance.now();
    const asked: { afterTask: number; requests: ModelRequest[] }[] = [];
    for (let task = 1; task <= LONG_PROMPTS.length; task++) {
      await rpc.prompt(LONG_PROMPTS[task - 1]!, { timeoutMs: 600_000 });
      if (!(COMPACT_AFTER as readonly number[]).includes(task)) continue;
      const from = server.requests.length;
      const response = await rpc.send({ type: "compact" }, 600_000);
      if (!response.success) throw new Error(`compact after task ${task} failed: ${response.error}`);
      asked.push({ afterTask: task, requests: server.requests.slice(from).filter(isCompactionRequest) });
    }
    const wallMs = performance.now() - t0;
    if (server.warnings.length) throw new Error(`the script did not fit the run:\n${server.warnings.slice(0, 5).join("\n")}`);
    const entries = await rpc.getEntries();
    const compactionEntries = entries.filter((e) => e.type === "compaction");
    if (compactionEntries.length !== asked.length) throw new Error(`${asked.length} compact commands left ${compactionEntries.length} compaction entries`);
    const compactions = asked.map(({ afterTask, requests }, i): CompactionPlayed => {
      const entry = compactionEntries[i]!;
      const named = new Set<string>([...(entry.details?.readFiles ?? []), ...(entry.details?.modifiedFiles ?? [])]);
      const touched = touchedBefore(entries, entry.firstKeptEntryId);
      const missing = [...touched].filter((file) => !named.has(file) || !String(entry.summary).includes(file));
      const chars = requests.reduce((n, r) => n + requestChars(r), 0);
      return { afterTask, requests: requests.length, chars, tokens: estimateTokens(chars), fromExtension: entry.fromHook === true, touched: touched.size, missing };
    });
    return { compactions, agentRequests: server.requests.filter(isAgentRequest).length, wallMs };
  } finally {
    await rpc.close();
    await server.close();
    ws.cleanup();
  }
}

export async function runCompaction(options: CompactionOptions): Promise<SuiteOutput> {
  const out = newSuite();
  if (options.quick) {
    out.skipped = "quick";
    out.notes.push("not run in --quick: it plays the long session twice through the real pi (about a minute)");
    return out;
  }
  const build = spawnSync(process.execPath, [join(REPO_ROOT, "scripts", "build.mjs")], { cwd: REPO_ROOT, encoding: "utf8" });
  if (build.status !== 0) throw new Error(`build failed: ${build.stderr}`);

  const own = await playWithCompactions(false);
  options.log(`compaction, Pi's own: ${own.compactions.map((c) => `${c.chars} chars`).join(", ")} (${(own.wallMs / 1000).toFixed(1)} s)`);
  const pruned = await playWithCompactions(true);
  options.log(`compaction, pi-pruner: ${pruned.compactions.map((c) => `${c.chars} chars${c.fromExtension ? "" : " (Pi's own)"}`).join(", ")} (${(pruned.wallMs / 1000).toFixed(1)} s)`);

  const runs = { own, pruned } as const;
  for (const [id, run] of Object.entries(runs)) {
    for (const c of run.compactions) {
      const key = `compaction.${id}.after${c.afterTask}`;
      out.figures[`${key}.chars`] = figure(c.chars, "chars", { note: `the compaction request${c.requests > 1 ? "s" : ""} after task ${c.afterTask}` }, 0);
      out.figures[`${key}.tokens`] = figure(c.tokens, "tokens", {}, 0);
      out.figures[`${key}.missingFiles`] = figure(c.missing.length, "files", { target: { op: "<=", value: 0 }, note: `of ${c.touched} files the tasks touched before the cut` }, 0);
    }
    const chars = run.compactions.reduce((n, c) => n + c.chars, 0);
    out.figures[`compaction.${id}.total.chars`] = figure(chars, "chars", {}, 0);
    out.figures[`compaction.${id}.total.tokens`] = figure(estimateTokens(chars), "tokens", {}, 0);
  }
  for (let i = 0; i < COMPACT_AFTER.length; i++) {
    const ours = pruned.compactions[i]!;
    const theirs = own.compactions[i]!;
    out.figures[`compaction.share.after${ours.afterTask}`] = figure(ours.chars / theirs.chars, "ratio", { target: { op: "<=", value: TARGET_SHARE }, note: `pi-pruner's compaction input ÷ Pi's own, after task ${ours.afterTask}` });
  }
  out.figures["compaction.share.total"] = figure(out.figures["compaction.pruned.total.chars"]!.value / out.figures["compaction.own.total.chars"]!.value, "ratio", {
    target: { op: "<=", value: TARGET_SHARE },
    note: `pi-pruner's compaction input ÷ Pi's own, the ${COMPACT_AFTER.length} compactions together`,
  });
  const fellBack = pruned.compactions.filter((c) => !c.fromExtension);
  out.figures["compaction.pruned.fellBack"] = figure(fellBack.length, "compactions", { target: { op: "<=", value: 0 }, note: "compactions Pi wrote itself in the run with pi-pruner (the pruner's try failed or had nothing to change)" }, 0);
  for (const [id, run] of Object.entries(runs)) for (const c of run.compactions) if (c.missing.length) out.notes.push(`${id}, after task ${c.afterTask}: the file lists leave out ${c.missing.join(", ")}`);

  out.data = {
    compactAfter: COMPACT_AFTER,
    model: registryModel(openai().provider, openai().model, openai().api).id,
    runs: Object.fromEntries(Object.entries(runs).map(([id, run]) => [id, { agentRequests: run.agentRequests, wallMs: Math.round(run.wallMs), compactions: run.compactions }])),
  };
  out.charts["compaction.svg"] = barChart({
    title: "Pi's compaction request on the long session, estimated input tokens",
    yLabel: "tokens",
    labels: (v) => `${Math.round(v).toLocaleString("en-US")}`,
    groups: COMPACT_AFTER.map((task, i) => ({
      label: `after task ${task}`,
      bars: [
        { name: "Pi's own", value: own.compactions[i]!.tokens },
        { name: "with pi-pruner", value: pruned.compactions[i]!.tokens },
      ],
    })),
  });
  return out;
}
