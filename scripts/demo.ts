// `npm run demo`: the real `pi` with the pruner on a scripted multi-prompt coding session (review,
// build, tests, fixes, a failing edit, a recovery of a pruned read, the agent rewinding a bloated
// search and shrinking a large read), against a built-in scripted
// model server on 127.0.0.1 (no API key needed). Every figure of a request comes from core's
// request view of the session file, the one `pi-pruner view --request N` prints: what Pi alone would
// have sent of the conversation beside what the model was sent. `--vscode` then opens the session
// in code-server with the editor extension.
import { existsSync, rmSync } from "node:fs";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { startModelServer, toolResults, type ModelRequest, type ModelServer, type Reply } from "../test/helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../test/helpers/pi-workspace.ts";
import { REPO_ROOT } from "../test/helpers/pi-process.ts";
import { assertRunOk, runPi } from "../test/helpers/run-pi.ts";
import { agentRequests, isSummarizerRequest, refsAsked } from "../test/helpers/pruner-e2e.ts";
import { getBranch, readSessionFile } from "../core/src/session/session-reader.ts";
import { buildSessionView } from "../core/src/view/session-view.ts";
import { buildModelView } from "../core/src/view/model-view.ts";
import { RequestRenderer } from "../core/src/view/request-views.ts";
import { readControls } from "../core/src/control/read-controls.ts";
import { DEFAULT_CONFIG } from "../core/src/settings/config.ts";

const SKILL = `# Code review skill

Follow every step; do not skip the gate.

1. Read the sources you are asked to review.
2. Run the build and read its output in full.
3. Run the tests; fix what fails.
4. Gate: the review is complete only when the build and the tests pass.
5. Report findings as a numbered list.
`;

function steps(name: string, functions: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < functions; i++) {
    out.push(`export function ${name}Step${i}(input: number): number {`, `  // step ${i} of the pipeline`, `  return input * ${i + 2} + ${i};`, "}", "");
  }
  return out;
}

const UTIL = ["// util.ts: part of the demo project", 'export const SCALE: number = "2";', "", ...steps("util", 30)].join("\n");
const APP = ["// app.ts: part of the demo project", "export function appTotal(values: number[]): number {", "  return values.reduce((a, b) => a - b, 0);", "}", "", ...steps("app", 40)].join("\n");
const SERVER = [
  "// server.ts: part of the demo project",
  'import { appTotal } from "./app.ts";',
  "",
  "export function handleRequest(path: string, body: string): string {",
  "  const values = body.split(\",\").map(Number);",
  '  return path === "/total" ? String(appTotal(values)) : "not found";',
  "}",
  "",
  ...steps("server", 45),
].join("\n");
const TESTS = ['import { appTotal, appStep0 } from "../src/app.ts";', "", 'test("appTotal adds the values", () => expect(appTotal([1, 2, 3])).toBe(6));', ...Array.from({ length: 40 }, (_, i) => `test("appStep${i}", () => expect(appStep${i}(1)).toBe(${i + 2 + i}));`)].join("\n");

function buildLog(): string {
  const lines = ["> demo@1.0.0 build", "> tsc -p . && node scripts/bundle.js", ""];
  for (let i = 0; i < 420; i++) lines.push(`[bundle] src/module${i % 37}.ts → dist/module${i % 37}.js (${1200 + i * 7} bytes, ${i % 5} warnings suppressed)`);
  lines.push("src/util.ts(2,14): error TS2322: Type 'string' is not assignable to type 'number'.", "Build failed with 1 error.");
  return lines.join("\n");
}

// The build prints the whole bundle log (over the spill threshold below) while util.ts has its type
// error, and its first part once it compiles; the tests fail while appTotal subtracts.
const BUILD_SH = `if grep -q 'SCALE: number = "2"' src/util.ts; then cat build.log; exit 1; fi
head -n 160 build.log
echo "Build succeeded: 37 modules bundled."
`;
const TEST_SH = `echo "> demo@1.0.0 test"
failed=0
if grep -q 'a - b' src/app.ts; then echo "  ✗ appTotal adds the values: expected 6, received -6"; failed=1; else echo "  ✓ appTotal adds the values"; fi
i=0
while [ $i -lt 40 ]; do echo "  ✓ appStep$i returns input * $((i + 2)) + $i (test/app.test.ts)"; i=$((i + 1)); done
if [ $failed = 1 ]; then echo "Tests: 1 failed, 40 passed, 41 total"; exit 1; fi
echo "Tests: 41 passed, 41 total"
`;

const FILES: Record<string, string> = {
  "skills/review/SKILL.md": SKILL,
  "src/app.ts": APP,
  "src/util.ts": UTIL,
  "src/server.ts": SERVER,
  "test/app.test.ts": TESTS,
  "scripts/build.sh": BUILD_SH,
  "scripts/test.sh": TEST_SH,
  "README.md": "# demo\n\nA small project for the pi-pruner demo.\n\n## API\n\n- `POST /total` with comma-separated numbers: their sum.\n",
  "build.log": buildLog(),
};

/** A scripted reply, or one computed from the request the model was sent (`n`: the agent's request number, as the session's request view counts them). */
type Step = Reply | ((req: ModelRequest, n: number) => Reply);

const read = (path: string) => ({ name: "read", arguments: { path } });
const bash = (command: string) => ({ name: "bash", arguments: { command } });
const edit = (path: string, oldText: string, newText: string) => ({ name: "edit", arguments: { path, edits: [{ oldText, newText }] } });

const ORIGINAL_HANDLER = /export function handleRequest[\s\S]*?\n\}/;

/**
 * The ref of the first read of src/server.ts, as the pruner's summaries in the request name it
 * (the scripted summarizer writes one bullet per ref: "`t3` read {"path":"src/server.ts"}: …").
 * Without the pruner there is none: the other run records the one it used, so both runs send the same call.
 */
function serverReadRef(req: ModelRequest): string | undefined {
  return /`(t\d+)` read \{"path":"src\/server\.ts"\}/.exec(req.allText)?.[1];
}

/** What the recovery prompt found: the ref it asked for, and whether the query's result held the original. */
interface Recovery {
  ref?: string;
  fromQuery?: boolean;
}

const RECOVERY_QUESTION = "For the pull request description: how did handleRequest look before your change? Quote it exactly.";

const SELF_CONTROL_PROMPT = "Which files mention module1? List them.";
const REWIND_NOTE = {
  what_happened: "grep -rn over the whole project printed over a hundred bundle lines of build.log into the context; search with -l, and only in src and scripts.",
  true_current_state: "No file has been changed for this question; the build and the tests passed at the end of the previous prompt.",
  next: "Run grep -rln 'module1' src scripts and read only the files it lists.",
};
const SHRINK_REPLACEMENT = "src/server.ts: handleRequest(path, body) splits the body on commas, rejects values that are not numbers (\"bad request\"), answers appTotal for /total; then 45 serverStepN helpers. No module imports besides ./app.ts.";

/**
 * What the self-control prompt measured: the bloated search's output, the request that carried it
 * (the next one is the first after the rewind: their sizes come from the request view), the large
 * read before and after its shrink.
 */
interface SelfControlFigures {
  grepChars?: number;
  grepRequest?: number;
  grepGone?: boolean;
  readChars?: number;
  shrunkChars?: number;
}
const selfControl: SelfControlFigures = {};

/** The agent's side of the task, one list of replies per prompt; `recovery` records what the recovery prompt found. */
function script(recovery: Recovery): { prompt: string; replies: Step[] }[] {
  return [
    {
      prompt: "Review the project using the review skill.",
      replies: [
        { toolCalls: [read("skills/review/SKILL.md"), read("src/app.ts"), read("src/util.ts")] },
        { toolCalls: [read("src/server.ts"), bash("sh scripts/build.sh")] },
        { text: "Read the skill and the sources. The build fails: src/util.ts(2,14) TS2322, SCALE is declared a number but set to the string \"2\"." },
      ],
    },
    {
      prompt: "Fix the build error.",
      replies: [
        { toolCalls: [read("src/util.ts")] },
        // The first attempt quotes the line wrongly (single quotes), so the edit fails and is retried.
        { toolCalls: [edit("src/util.ts", "export const SCALE: number = '2';", "export const SCALE: number = 2;")] },
        { toolCalls: [edit("src/util.ts", 'export const SCALE: number = "2";', "export const SCALE: number = 2;")] },
        { toolCalls: [bash("sh scripts/build.sh")] },
        { text: "Fixed: SCALE is now the number 2 and the build succeeds." },
      ],
    },
    {
      prompt: "Now run the tests and fix whatever fails.",
      replies: [
        { toolCalls: [bash("sh scripts/test.sh")] },
        { toolCalls: [read("test/app.test.ts"), read("src/app.ts")] },
        { toolCalls: [edit("src/app.ts", "values.reduce((a, b) => a - b, 0)", "values.reduce((a, b) => a + b, 0)")] },
        { toolCalls: [bash("sh scripts/test.sh")] },
        { text: "appTotal subtracted instead of adding; fixed in src/app.ts. All 41 tests pass." },
      ],
    },
    {
      prompt: "Go through the review skill's checklist again and confirm the gate.",
      replies: [
        { toolCalls: [read("skills/review/SKILL.md")] },
        { toolCalls: [bash("sh scripts/build.sh && sh scripts/test.sh")] },
        { text: "Every step is done and the gate passes: the build succeeds and all 41 tests pass." },
      ],
    },
    {
      prompt: "handleRequest in server.ts accepts anything. Make it reject bodies that are not numbers.",
      replies: [
        { toolCalls: [read("src/server.ts")] },
        { toolCalls: [bash("grep -n 'handleRequest' -r src test")] },
        {
          toolCalls: [
            edit(
              "src/server.ts",
              '  const values = body.split(",").map(Number);\n',
              '  const values = body.split(",").map(Number);\n  if (values.some((v) => !Number.isFinite(v))) return "bad request";\n',
            ),
          ],
        },
        { toolCalls: [bash("sh scripts/test.sh")] },
        { text: "handleRequest now answers \"bad request\" when a value is not a number; the tests still pass." },
      ],
    },
    {
      prompt: RECOVERY_QUESTION,
      replies: [
        (req) => {
          recovery.ref ??= serverReadRef(req);
          return recovery.ref ? { toolCalls: [{ name: "context_tree_query", arguments: { toolCallIds: [recovery.ref] } }] } : { toolCalls: [read("src/server.ts")] };
        },
        (req) => {
          // The recovered output if the query found it, else the original read still in context.
          const recovered = ORIGINAL_HANDLER.exec(toolResults(req.body).at(-1)?.text ?? "")?.[0];
          recovery.fromQuery ??= recovered !== undefined;
          const original = recovered ?? ORIGINAL_HANDLER.exec(req.allText)?.[0];
          return { text: original ? `Before the change (from ref ${recovery.ref ?? "-"}):\n\n${original}` : "The original read is no longer available." };
        },
      ],
    },
    {
      prompt: "Document the new behaviour in the README.",
      replies: [
        { toolCalls: [read("README.md")] },
        { toolCalls: [edit("README.md", "their sum.\n", "their sum; `bad request` when a value is not a number.\n")] },
        { text: "README updated: POST /total answers `bad request` for a body that is not numbers." },
      ],
    },
    {
      prompt: SELF_CONTROL_PROMPT,
      replies: [
        // A search without a limit: every match in build.log and the sources lands in context.
        { toolCalls: [bash("grep -rn 'module1' .")] },
        (req, n) => {
          selfControl.grepChars = toolResults(req.body).at(-1)?.text.length;
          selfControl.grepRequest = n;
          return { toolCalls: [{ name: "context_rewind", arguments: { granularity: "last_tool_call_group", note: REWIND_NOTE } }] };
        },
        (req) => {
          selfControl.grepGone = !req.allText.includes("./build.log:");
          return { toolCalls: [bash("grep -rln 'module1' src scripts")] };
        },
        { toolCalls: [read("src/server.ts")] },
        (req) => {
          selfControl.readChars = toolResults(req.body).at(-1)?.text.length;
          return { toolCalls: [{ name: "context_shrink", arguments: { target: { by_tool_name: "read", occurrence: "last" }, replacement: SHRINK_REPLACEMENT } }] };
        },
        (req) => {
          selfControl.shrunkChars = toolResults(req.body).find((r) => r.text.includes("<context-shrunk>"))?.text.length;
          return { text: "Only build.log mentions module1 (its bundle lines); no source or script file does." };
        },
      ],
    },
    {
      prompt: "Run the build and the tests one last time and summarize the session.",
      replies: [
        { toolCalls: [bash("sh scripts/build.sh && sh scripts/test.sh")] },
        { text: "1. Build fixed (TS2322 in util.ts). 2. appTotal fixed; 41 tests pass. 3. handleRequest rejects non-numbers; README documents it. The gate passes." },
      ],
    },
  ];
}

/**
 * The scripted summarizer: for each call, its first meaningful line, so summaries say something
 * real. Asked to merge a chain's summaries into one, it keeps each of their bullets once.
 */
function scriptedSummary(req: ModelRequest): Reply {
  const prompt = req.body.messages?.map((m) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((c) => c.text ?? "").join(""))).join("\n") ?? "";
  if (req.systemText.includes("You merge several summaries")) {
    return { text: [...new Set(prompt.split("\n").filter((l) => l.startsWith("- `")))].join("\n") };
  }
  const bullets = refsAsked(req).map(({ ref, tool }) => {
    const section = prompt.split(`### ${ref} — `)[1] ?? "";
    const args = /Arguments: (.*)/.exec(section)?.[1] ?? "";
    const output = section.split("Output:\n")[1] ?? "";
    // A long output reaches the summarizer as numbered excerpts ("12: …"); the number is not content.
    const firstLine = output.split("\n").map((l) => l.replace(/^\d+: /, "")).find((l) => l.trim() && !l.startsWith("//")) ?? "";
    const lines = output.split("\n").length;
    return `- \`${ref}\` ${tool} ${args}: ${lines} lines; starts with "${firstLine.trim().slice(0, 60)}"`;
  });
  return { text: bullets.join("\n") };
}

/** A smaller spill threshold than the default so the demo's build log (~34 KB; Pi caps tool output at 50 KB) is spilled. */
const DEMO_SETTINGS = { spillThreshold: 32_000 };

/** The workspaces this run made: all are removed if it fails or is interrupted; on success the one it names is left for the person. */
const workspaces: PiWorkspace[] = [];

function removeWorkspaces(): void {
  for (const ws of workspaces.splice(0)) {
    try {
      // Pi may still be writing into it (it runs in its own process group and is stopped when the demo exits): retried while the folder is busy.
      rmSync(ws.root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch (error) {
      console.error(`demo: could not remove ${ws.root} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); remove it yourself`);
    }
  }
}

/**
 * For tests only: PI_PRUNER_DEMO_HOLD=N makes the scripted model hold its reply to the agent's
 * request N. When that request arrives (Pi is then mid-run, waiting on the model), the demo prints
 * `demo: holding the reply to request N` on stdout, and sends the reply once a line arrives on its
 * stdin or stdin ends. A test can so interrupt Pi mid-run on any machine, fast or slow.
 */
function holdFromEnv(server: ModelServer): void {
  const value = process.env.PI_PRUNER_DEMO_HOLD;
  if (value === undefined) return;
  if (!/^[1-9]\d{0,3}$/.test(value)) throw new Error(`PI_PRUNER_DEMO_HOLD must be a request number from 1 to 9999, not ${JSON.stringify(value)}`);
  const request = Number(value);
  const held = server.hold((req) => !isSummarizerRequest(req) && agentRequests(server.requests).length === request);
  void held.arrived.then(() => {
    console.log(`demo: holding the reply to request ${request}`);
    const release = () => {
      process.stdin.destroy();
      held.release();
    };
    process.stdin.once("data", release).once("end", release);
  });
}

async function runTask(recovery: Recovery): Promise<{ ws: PiWorkspace; requests: ModelRequest[]; sessionFile: string; prompts: string[] }> {
  const prompts = script(recovery);
  const steps = prompts.flatMap((p) => p.replies);
  const server = await startModelServer();
  holdFromEnv(server);
  server.route(isSummarizerRequest, scriptedSummary);
  let requestNumber = 0;
  server.route(() => true, (req) => {
    const step = steps.shift();
    requestNumber++;
    return typeof step === "function" ? step(req, requestNumber) : step;
  });
  const ws = createPiWorkspace({
    baseUrl: server.baseUrl,
    files: FILES,
    prefix: "pi-pruner-demo-",
    settings: { contextPrune: DEMO_SETTINGS },
    model: { contextWindow: 200_000 },
  });
  workspaces.push(ws);
  try {
    const run = await runPi({
      workspace: ws,
      extension: "pi-extension",
      prompts: prompts.map((p) => p.prompt),
      sessionId: "demo",
      timeoutMs: 60_000,
    });
    assertRunOk(run);
    if (!run.sessionFile) throw new Error("pi wrote no session file");
    if (steps.length) throw new Error(`the scripted model has ${steps.length} replies left: pi sent fewer requests than scripted`);
    if (server.warnings.length) throw new Error(`the scripted model: ${server.warnings.join("; ")}`);
    return { ws, requests: [...server.requests], sessionFile: run.sessionFile, prompts: prompts.map((p) => p.prompt) };
  } finally {
    await server.close();
  }
}

const n = (x: number) => x.toLocaleString("en-US");
const percentLess = (raw: number, sent: number) => (raw ? `${Math.round(((raw - sent) / raw) * 100)}%` : "-");

async function main(): Promise<void> {
  if (!existsSync(join(REPO_ROOT, "pi-extension", "dist", "index.js"))) {
    throw new Error("pi-extension/dist/index.js is missing: run `npm run build` first");
  }
  console.log(`pi-pruner demo: the real \`pi\` on a scripted ${script({}).length}-prompt coding session (scripted model on 127.0.0.1)\n`);
  const recovery: Recovery = {};
  const pruned = await runTask(recovery);
  const figures = { ...selfControl };

  // The settings the session ran with: the views below are those `pi-pruner` prints with the demo's agent folder.
  const config = { ...DEFAULT_CONFIG, ...DEMO_SETTINGS, protectedPaths: [...DEFAULT_CONFIG.protectedPaths] };
  const data = await readSessionFile(pruned.sessionFile);
  const branch = getBranch(data);
  const view = buildSessionView(data, { config });
  const calls = view.calls;
  const describe = (c: (typeof calls)[number]) => `${c.shortRef ?? ""} ${c.toolName} ${c.path ?? c.command ?? ""}${c.isError ? " (failed)" : ""}`.trim();
  const list = (items: string[]) => items.join("; ") || "-";
  const summarizerCalls = pruned.requests.filter(isSummarizerRequest).length;
  const recoveryPrompt = pruned.prompts.indexOf(RECOVERY_QUESTION) + 1;
  // A call inside a compressed chain has the state "compressed"; what happened to it before is in its other fields.
  const summarized = calls.filter((c) => c.summaryEntryId && !c.aliasOf);
  const deduped = calls.filter((c) => c.aliasOf);
  const spilled = calls.filter((c) => c.spillPath);
  const superseded = calls.filter((c) => c.state === "superseded");
  // Outputs the agent's own markers took out of what is sent: they are listed with the marker, not as raw.
  const markers = readControls(branch.entries).markers.filter((m) => m.state === "active");
  const rewoundEntries = new Set(markers.flatMap((m) => (m.kind === "rewind" ? m.hiddenEntryIds : [])));
  const shrunkEntries = new Set(markers.flatMap((m) => (m.kind === "shrink" && m.targetEntryId ? [m.targetEntryId] : [])));
  const rewound = calls.filter((c) => c.resultEntryId !== undefined && rewoundEntries.has(c.resultEntryId));
  const shrunk = calls.filter((c) => c.resultEntryId !== undefined && shrunkEntries.has(c.resultEntryId));
  // A chain names refs the lines above never give (edits, small outputs indexed when the chain was compressed): they are introduced here.
  const introduced = new Set([...summarized, ...spilled, ...superseded].map((c) => c.shortRef));
  const chainOnly = calls.filter((c) => c.shortRef && !c.aliasOf && !introduced.has(c.shortRef) && view.chains.some((chain) => chain.toolRefs.includes(c.shortRef!)));
  const protectedReads = new Map<string, { text: string; times: number }>();
  for (const c of calls.filter((call) => call.state === "protected")) {
    const text = `${c.toolName} ${c.path ?? ""} (${c.protectedBy?.kind === "path" ? `matches ${c.protectedBy.pattern}` : "protected tool"})`;
    const seen = protectedReads.get(text);
    if (seen) seen.times++;
    else protectedReads.set(text, { text, times: 1 });
  }

  console.log("What the pruner did (default settings but the spill threshold; the policy chose when a flush pays back):");
  console.log(`  summarized: ${list(summarized.map(describe))}`);
  const fused = view.chains.filter((c) => c.rangeSummaryText).length;
  console.log(`              (${view.summaries.length} batch summaries and ${fused} chains' merged summaries, from ${summarizerCalls} summarizer calls)`);
  console.log(`  spilled:    ${list(spilled.map((c) => `${describe(c)} (${n(c.spillBytes ?? 0)} bytes → ${c.spillPath})`))}`);
  if (superseded.length) console.log(`  superseded: ${list(superseded.map(describe))} (a later call's output made it stale: a stub stands in its place)`);
  console.log(`  compressed: ${list(view.chains.map((c) => `chain ${c.blockId} (${c.toolRefs.join(", ")})`))}; the newest ${DEFAULT_CONFIG.chainCompression.rollingWindow} closed chains stay whole`);
  if (chainOnly.length) console.log(`              refs first given when their chain was compressed: ${list(chainOnly.map(describe))}`);
  console.log(`  protected:  ${list([...protectedReads.values()].map((p) => (p.times > 1 ? `${p.text}, read ${p.times} times` : p.text)))}; sent verbatim`);
  console.log(`  deduped:    ${list(deduped.map((c) => `${c.toolName} ${c.path ?? c.command ?? ""} → alias of ${c.aliasOf}`))}`);
  console.log(`  raw:        ${list(calls.filter((c) => c.state === "raw" && !rewound.includes(c) && !shrunk.includes(c)).map(describe))}`);
  console.log(
    `  recovered:  ${
      recovery.ref
        ? `prompt ${recoveryPrompt} asks how handleRequest looked before the edit: context_tree_query ["${recovery.ref}"] (the pruned first read of src/server.ts) ${recovery.fromQuery ? "returned it" : "did not return it"}; without the pruner the tool does not exist and the call fails`
        : `- (no pruned read of src/server.ts was in context at prompt ${recoveryPrompt}, so the agent read the file again)`
    }`,
  );

  // Every request's two sizes, from the request view of the session file (what `pi-pruner view --request N` prints).
  const renderer = new RequestRenderer(branch.entries, { config });
  const logged = agentRequests(pruned.requests).length;
  if (renderer.count !== logged) throw new Error(`the session file holds ${renderer.count} requests, the scripted model answered ${logged}`);
  const requests = Array.from({ length: renderer.count }, (_, i) => renderer.render(i + 1));
  const selfPrompt = pruned.prompts.indexOf(SELF_CONTROL_PROMPT) + 1;
  const carried = figures.grepRequest ? requests[figures.grepRequest - 1] : undefined;
  const after = figures.grepRequest ? requests[figures.grepRequest] : undefined;
  console.log(
    `  rewound:    prompt ${selfPrompt}: the agent's \`grep -rn\` printed ${n(figures.grepChars ?? 0)} characters; it called context_rewind (last_tool_call_group) with a note, ` +
      `and the next request was ${n(carried?.modelChars ?? 0)} → ${n(after?.modelChars ?? 0)} characters (requests ${figures.grepRequest ?? "-"} and ${(figures.grepRequest ?? 0) + 1}; the search ${figures.grepGone ? "gone" : "STILL THERE"}, the note in its place)`,
  );
  console.log(`  shrunk:     then it read src/server.ts (${n(figures.readChars ?? 0)} characters) and called context_shrink on it: ${n(figures.shrunkChars ?? 0)} characters in its place from then on`);
  const missing = [
    !figures.grepGone && "the rewind hid nothing",
    !figures.shrunkChars && "the shrink replaced nothing",
    summarizerCalls === 0 && "nothing was summarized",
    view.chains.length === 0 && "no chain was compressed",
    deduped.length === 0 && "no read was deduplicated",
    spilled.length === 0 && "nothing was spilled",
    !recovery.fromQuery && "nothing was recovered",
  ].filter(Boolean);
  if (missing.length) console.log(`  Not in this run: ${missing.join(", ")}.`);

  console.log("\nCharacters per request (messages, system prompt excluded), from the session's request view (`pi-pruner view --request N`):");
  console.log("what Pi alone would have sent of this conversation, and what the model was sent.");
  console.log("  prompt  request  without pruning  with pruning  saved");
  let lastPromptEntry: string | undefined;
  let prompt = 0;
  for (const r of requests) {
    const newPrompt = r.request.promptEntryId !== undefined && r.request.promptEntryId !== lastPromptEntry;
    if (newPrompt) prompt++;
    lastPromptEntry = r.request.promptEntryId ?? lastPromptEntry;
    const cell = newPrompt ? String(prompt) : "";
    console.log(`  ${cell.padStart(6)}  ${String(r.request.n).padStart(7)}  ${n(r.rawChars).padStart(15)}  ${n(r.modelChars).padStart(12)}  ${percentLess(r.rawChars, r.modelChars).padStart(5)}`);
  }
  const last = requests.at(-1)!;
  console.log(`\nLast request (${last.request.n}): ${n(last.rawChars)} → ${n(last.modelChars)} characters (${percentLess(last.rawChars, last.modelChars)} less).`);
  const next = buildModelView(data, { config });
  console.log(
    `Next request (not sent yet: the session going on from its last reply, as \`pi-pruner inspect\` sizes it): ${n(next.rawChars)} → ${n(next.modelChars)} characters (${percentLess(next.rawChars, next.modelChars)} less).`,
  );

  const env = `PI_CODING_AGENT_DIR=${pruned.ws.agentDir}`;
  console.log(`\nSession file: ${pruned.sessionFile}`);
  console.log(`Workspace:    ${pruned.ws.cwd}`);
  console.log(`Inspect it:   ${env} npx pi-pruner inspect ${pruned.sessionFile}`);
  console.log(`Last request: ${env} npx pi-pruner view ${pruned.sessionFile} --request last`);
  console.log(`(PI_CODING_AGENT_DIR: the demo's own settings, so the figures are the ones above.)`);
  console.log(`\n${pruned.ws.root} is left on purpose so you can open the session; nothing else of the demo is left. Remove it with: rm -rf ${pruned.ws.root}`);
  // From here the workspace is the person's: a later interruption does not remove it.
  workspaces.length = 0;

  if (process.argv.includes("--vscode")) {
    const opener = join(REPO_ROOT, "test", "vscode", "open-demo.mjs");
    if (!existsSync(opener)) throw new Error("the VS Code demo opener (test/vscode/open-demo.mjs) is not available yet");
    console.log("\nOpening the session in code-server with the Pi Pruner extension…");
    const child = spawn(process.execPath, [opener, pruned.ws.agentDir, pruned.ws.cwd], { stdio: "inherit" });
    await new Promise<void>((resolve) => child.on("exit", () => resolve()));
  }
}

// Interrupted (Ctrl-C) or failed: nothing of the run is left behind.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    removeWorkspaces();
    process.exit(signal === "SIGINT" ? 130 : 143);
  });
}

main().catch((error: unknown) => {
  removeWorkspaces();
  console.error(`demo failed: ${(error as Error).message}`);
  process.exit(1);
});
