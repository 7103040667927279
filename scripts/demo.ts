// `npm run demo`: the real `pi` with the pruner on a scripted multi-prompt coding task, against a
// built-in scripted model server on 127.0.0.1 (no API key needed). The same task runs twice, with
// and without the extension, so every request can be compared: what the model was sent vs. what it
// would have been sent. `--vscode` then opens the session in code-server with the editor extension.
import { existsSync } from "node:fs";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { startModelServer, type ModelRequest, type Reply } from "../test/helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../test/helpers/pi-workspace.ts";
import { REPO_ROOT } from "../test/helpers/pi-process.ts";
import { assertRunOk, runPi } from "../test/helpers/run-pi.ts";
import { agentRequests, isSummarizerRequest, refsAsked, requestChars } from "../test/helpers/pruner-e2e.ts";
import { readSessionFile } from "../core/src/session/session-reader.ts";
import { buildSessionView } from "../core/src/view/session-view.ts";
import { DEFAULT_CONFIG } from "../core/src/settings/config.ts";

const SKILL = `# Code review skill

Follow every step; do not skip the gate.

1. Read the sources you are asked to review.
2. Run the build and read its output in full.
3. Gate: the review is complete only when the build passes.
4. Report findings as a numbered list.
`;

function source(name: string, functions: number): string {
  const out = [`// ${name}: part of the demo project`];
  for (let i = 0; i < functions; i++) {
    out.push(`export function ${name.replace(/\W/g, "")}Step${i}(input: number): number {`, `  // step ${i} of the pipeline`, `  return input * ${i + 2} + ${i};`, "}", "");
  }
  return out.join("\n");
}

function buildLog(): string {
  const lines = ["> demo@1.0.0 build", "> tsc -p . && node scripts/bundle.js", ""];
  for (let i = 0; i < 420; i++) lines.push(`[bundle] src/module${i % 37}.ts → dist/module${i % 37}.js (${1200 + i * 7} bytes, ${i % 5} warnings suppressed)`);
  lines.push("src/util.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.", "Build failed with 1 error.");
  return lines.join("\n");
}

const FILES: Record<string, string> = {
  "skills/review/SKILL.md": SKILL,
  "src/app.ts": source("app", 40),
  "src/util.ts": source("util", 30),
  "src/server.ts": source("server", 45),
  "README.md": "# demo\n\nA small project for the pi-pruner demo.\n",
  "build.log": buildLog(),
};

/** The agent's side of the task, one list of replies per prompt. */
const PROMPTS: { prompt: string; replies: Reply[] }[] = [
  {
    prompt: "Review the project using the review skill.",
    replies: [
      { toolCalls: [{ name: "read", arguments: { path: "skills/review/SKILL.md" } }, { name: "read", arguments: { path: "src/app.ts" } }, { name: "read", arguments: { path: "src/util.ts" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "src/server.ts" } }, { name: "bash", arguments: { command: "cat build.log" } }] },
      { text: "Read the skill, the sources and the build log. The build fails in src/util.ts line 12." },
    ],
  },
  {
    prompt: "Look at util.ts again and check the config file.",
    replies: [
      { toolCalls: [{ name: "read", arguments: { path: "src/util.ts" } }, { name: "read", arguments: { path: "config/settings.json" } }] },
      { text: "util.ts is unchanged; there is no config/settings.json (the read failed)." },
    ],
  },
  {
    prompt: "What exactly does serverStep3 in server.ts compute?",
    replies: [
      { toolCalls: [{ name: "context_tree_query", arguments: { toolCallIds: ["t4"] } }] },
      { text: "serverStep3(input) returns input * 5 + 3 (recovered from the pruned read of server.ts, ref t4)." },
    ],
  },
  { prompt: "Summarize the review.", replies: [{ text: "1. Build fails (TS2322 in util.ts). 2. The gate is not passed yet." }] },
];

/** The scripted summarizer: for each call, its first meaningful line, so summaries say something real. */
function scriptedSummary(req: ModelRequest): Reply {
  const prompt = req.body.messages?.map((m) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((c) => c.text ?? "").join(""))).join("\n") ?? "";
  const bullets = refsAsked(req).map(({ ref, tool }) => {
    const section = prompt.split(`### ${ref} — `)[1] ?? "";
    const args = /Arguments: (.*)/.exec(section)?.[1] ?? "";
    const output = section.split("Output:\n")[1] ?? "";
    const firstLine = output.split("\n").find((l) => l.trim() && !l.startsWith("//")) ?? "";
    const lines = output.split("\n").length;
    return `- \`${ref}\` ${tool} ${args}: ${lines} lines; starts with "${firstLine.trim().slice(0, 60)}"`;
  });
  return { text: bullets.join("\n") };
}

async function runTask(withPruner: boolean): Promise<{ ws: PiWorkspace; requests: ModelRequest[]; sessionFile: string }> {
  const server = await startModelServer();
  server.route(isSummarizerRequest, scriptedSummary);
  server.route(() => true, PROMPTS.flatMap((p) => p.replies));
  const ws = createPiWorkspace({
    baseUrl: server.baseUrl,
    files: FILES,
    prefix: withPruner ? "pi-pruner-demo-" : "pi-pruner-demo-raw-",
    // A smaller spill threshold than the default so the demo's build log (~40 KB; Pi caps tool output at 50 KB) is spilled.
    settings: withPruner ? { contextPrune: { spillThreshold: 32_000 } } : {},
    model: { contextWindow: 200_000 },
  });
  try {
    const run = await runPi({
      workspace: ws,
      extension: withPruner ? "pi-extension" : undefined,
      prompts: PROMPTS.map((p) => p.prompt),
      sessionId: "demo",
      timeoutMs: 60_000,
    });
    assertRunOk(run);
    if (!run.sessionFile) throw new Error("pi wrote no session file");
    return { ws, requests: [...server.requests], sessionFile: run.sessionFile };
  } finally {
    await server.close();
  }
}

const n = (x: number) => x.toLocaleString("en-US");

async function main(): Promise<void> {
  if (!existsSync(join(REPO_ROOT, "pi-extension", "dist", "index.js"))) {
    throw new Error("pi-extension/dist/index.js is missing: run `npm run build` first");
  }
  console.log("pi-pruner demo: the real `pi` on a scripted 4-prompt coding task (scripted model on 127.0.0.1)\n");
  const pruned = await runTask(true);
  const raw = await runTask(false);
  raw.ws.cleanup();

  const data = await readSessionFile(pruned.sessionFile);
  const view = buildSessionView(data, { config: { ...DEFAULT_CONFIG, protectedPaths: [...DEFAULT_CONFIG.protectedPaths] } });
  const byState = (state: string) => view.calls.filter((c) => c.state === state);
  const describe = (c: (typeof view.calls)[number]) => `${c.shortRef ?? "  "} ${c.toolName} ${c.path ?? c.command ?? ""}`.trim();

  console.log("What the pruner did:");
  console.log(`  summarized: ${byState("summarized").map(describe).join("; ") || "-"}`);
  console.log(`  protected:  ${byState("protected").map((c) => `${c.toolName} ${c.path} (${c.protectedBy?.kind === "path" ? `matches ${c.protectedBy.pattern}` : "protected tool"})`).join("; ") || "-"}`);
  console.log(`  deduped:    ${byState("deduped").map((c) => `${c.toolName} ${c.path ?? ""} → alias of ${c.aliasOf}`).join("; ") || "-"}`);
  console.log(`  spilled:    ${byState("spilled").map((c) => `${describe(c)} (${n(c.spillBytes ?? 0)} bytes → ${c.spillPath})`).join("; ") || "-"}`);
  console.log(`  raw:        ${byState("raw").map(describe).join("; ") || "-"}`);
  console.log(`  summaries:  ${view.summaries.length}, summarizer calls: ${pruned.requests.filter(isSummarizerRequest).length}`);
  if (pruned.requests.filter(isSummarizerRequest).length === 0) {
    console.log("  Nothing was summarized: under the default cache-aware policy this task is too short for a flush to repay");
    console.log("  its summarizer calls and the cache rewrite, so the reads stay raw (the recovery of `t4` below finds no such ref)");
    console.log("  and only the oversized build log was spilled. `contextPrune.cacheAware: false` flushes on every final reply.");
  }

  const withP = agentRequests(pruned.requests);
  const without = agentRequests(raw.requests);
  console.log("\nCharacters the model was sent per request (messages, system prompt excluded):");
  console.log("  request  without pruning  with pruning  saved");
  for (let i = 0; i < Math.max(withP.length, without.length); i++) {
    const a = without[i] ? requestChars(without[i]!.body) : 0;
    const b = withP[i] ? requestChars(withP[i]!.body) : 0;
    const saved = a ? `${Math.round(((a - b) / a) * 100)}%` : "-";
    console.log(`  ${String(i + 1).padStart(7)}  ${n(a).padStart(15)}  ${n(b).padStart(12)}  ${saved.padStart(5)}`);
  }
  const lastA = requestChars(without.at(-1)!.body);
  const lastB = requestChars(withP.at(-1)!.body);
  console.log(`\nLast request: ${n(lastA)} → ${n(lastB)} characters (${Math.round(((lastA - lastB) / lastA) * 100)}% less).`);
  console.log(`\nSession file: ${pruned.sessionFile}`);
  console.log(`Workspace:    ${pruned.ws.cwd}`);
  console.log(`Inspect it:   npx pi-pruner inspect ${pruned.sessionFile}`);
  console.log(`Model view:   npx pi-pruner view ${pruned.sessionFile}`);

  if (process.argv.includes("--vscode")) {
    const opener = join(REPO_ROOT, "test", "vscode", "open-demo.mjs");
    if (!existsSync(opener)) throw new Error("the VS Code demo opener (test/vscode/open-demo.mjs) is not available yet");
    console.log("\nOpening the session in code-server with the Pi Pruner extension…");
    const child = spawn(process.execPath, [opener, pruned.ws.agentDir, pruned.ws.cwd], { stdio: "inherit" });
    await new Promise<void>((resolve) => child.on("exit", () => resolve()));
  }
}

main().catch((error: unknown) => {
  console.error(`demo failed: ${(error as Error).message}`);
  process.exit(1);
});
