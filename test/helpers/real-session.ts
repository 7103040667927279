// A real Pi session with several tool calls, for other tests and the stored fixture
// (test/fixtures/pi/real-session.jsonl), and the scripted agent that plays it.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { messageText, startModelServer } from "./model-server.ts";
import type { ModelRequest, Reply } from "./model-server.ts";
import type { JsonRecord } from "./jsonl-records.ts";
import { PI_PACKAGE_DIR, REPO_ROOT } from "./pi-process.ts";
import { createPiWorkspace, type PiWorkspace } from "./pi-workspace.ts";
import { assertRunOk, runPi, type RunPiResult } from "./run-pi.ts";

/** Where test/fixtures/pi lives (probe extension, stored session). */
export const PI_FIXTURES_DIR = join(REPO_ROOT, "test", "fixtures", "pi");

const REAL_SESSION_FILES: Record<string, string> = {
  "notes.txt": "Project notes\n- the build uses esbuild\n- NOTES-MARKER-7f3a\n",
  "skills/demo/SKILL.md": "---\nname: demo\ndescription: A demo skill used by the harness.\n---\n\n# Demo skill\n\n1. Always run the tests before committing (SKILL-MARKER-91c2).\n",
  "src/app.ts": "export const answer = 42;\n",
};

const REAL_SESSION_PROMPTS = ["Look at the notes and the demo skill, then check the source folder.", "Thanks. Anything else?"];

/**
 * The main agent's script: per user prompt (REAL_SESSION_PROMPTS[i]), the n-th main-agent
 * request after it gets REAL_SESSION_SCRIPT[i][n]. Requests that offer no `read` tool (an
 * extension's summarizer) never consume it.
 */
const REAL_SESSION_SCRIPT: Reply[][] = [
  [
    {
      text: "Reading both files.",
      toolCalls: [
        { name: "read", arguments: { path: "notes.txt" } },
        { name: "read", arguments: { path: "skills/demo/SKILL.md" } },
      ],
    },
    { toolCalls: [{ name: "bash", arguments: { command: "ls src && cat src/app.ts" } }] },
    { toolCalls: [{ name: "read", arguments: { path: "missing.txt" } }] },
    { text: "The notes say the build uses esbuild; the demo skill says to run tests before committing; src/app.ts exports answer = 42; missing.txt does not exist." },
  ],
  [{ text: "Nothing else for now." }],
];

/**
 * A reply function that plays `script` for the prompts `prompts`: the prompt is the latest of
 * `prompts` found in the request's user messages, the step is how many main-agent requests for
 * that prompt came before. Counting requests (not messages) keeps it right when an extension
 * rewrites or adds messages. Requests for which `isMain` is false get `other`.
 */
export function scriptedAgent(
  prompts: string[],
  script: Reply[][],
  opts: { isMain?: (req: ModelRequest) => boolean; other?: Reply | ((req: ModelRequest) => Reply) } = {},
): (req: ModelRequest) => Reply {
  const served = new Map<number, number>();
  const isMain = opts.isMain ?? ((req: ModelRequest) => req.toolNames.includes("read"));
  return (req) => {
    if (!isMain(req)) {
      const o = opts.other;
      return typeof o === "function" ? o(req) : (o ?? { text: "ok" });
    }
    const users = (req.body.messages ?? []).filter((m) => m.role === "user").map((m) => messageText(m));
    let p = -1;
    for (let i = users.length - 1; i >= 0 && p < 0; i--) p = prompts.findIndex((t) => users[i].includes(t));
    p = Math.max(0, p);
    const step = served.get(p) ?? 0;
    served.set(p, step + 1);
    return script[p]?.[step] ?? { text: "ok" };
  };
}

export interface MakeRealSessionOptions {
  /** `-e` extension(s) to load during the run. */
  extension?: string | string[];
  settings?: Record<string, unknown>;
  projectSettings?: Record<string, unknown>;
  /** Reply for requests that are not the main agent's (no `read` tool offered), e.g. a summarizer. */
  otherReply?: Reply | ((req: ModelRequest) => Reply);
  sessionId?: string;
  timeoutMs?: number;
  /** Replace or add workspace files (e.g. larger contents, so a pruner has something to summarize). */
  files?: Record<string, string>;
}

export interface RealSession {
  sessionFile: string;
  entries: JsonRecord[];
  workspace: PiWorkspace;
  /** Every request the (now closed) model server received. */
  requests: ModelRequest[];
  run: RunPiResult;
  /** Remove the temp workspace (and with it the session file). */
  cleanup(): void;
}

/**
 * Produce a real Pi 1.6 session file: one prompt whose turns call `read notes.txt` and
 * `read skills/demo/SKILL.md` (in one response), `bash ls src && cat src/app.ts`, a failing
 * `read missing.txt`, then a text answer; then a second prompt answered with text.
 */
export async function makeRealSession(opts: MakeRealSessionOptions = {}): Promise<RealSession> {
  const server = await startModelServer();
  server.respond = scriptedAgent(REAL_SESSION_PROMPTS, REAL_SESSION_SCRIPT, { other: opts.otherReply });
  const workspace = createPiWorkspace({ baseUrl: server.baseUrl, files: { ...REAL_SESSION_FILES, ...opts.files }, settings: opts.settings, projectSettings: opts.projectSettings });
  try {
    const run = await runPi({
      workspace,
      prompts: REAL_SESSION_PROMPTS,
      extension: opts.extension,
      sessionId: opts.sessionId,
      timeoutMs: opts.timeoutMs ?? 20_000,
    });
    assertRunOk(run);
    if (!run.sessionFile) throw new Error("makeRealSession: no session file was written");
    return { sessionFile: run.sessionFile, entries: run.entries, workspace, requests: server.requests, run, cleanup: () => workspace.cleanup() };
  } catch (e) {
    workspace.cleanup();
    throw e;
  } finally {
    await server.close();
  }
}

/** Placeholders used in stored fixtures for machine-specific paths. */
export const FIXTURE_PLACEHOLDERS = {
  cwd: "/workspace",
  agentDir: "/home/user/.pi/agent",
  piPackage: "/usr/lib/node_modules/@earendil-works/pi-coding-agent",
  root: "/tmp/pi-e2e",
} as const;

/** Replace machine-specific absolute paths of a session's text with neutral placeholders. */
export function neutralizeSessionText(text: string, ws: Pick<PiWorkspace, "cwd" | "agentDir" | "root">): string {
  const pairs: Array<[string, string]> = [
    [ws.cwd, FIXTURE_PLACEHOLDERS.cwd],
    [ws.agentDir, FIXTURE_PLACEHOLDERS.agentDir],
    [ws.root, FIXTURE_PLACEHOLDERS.root],
    [PI_PACKAGE_DIR, FIXTURE_PLACEHOLDERS.piPackage],
    [REPO_ROOT, "/repo"],
  ];
  let out = text;
  for (const [from, to] of pairs) out = out.split(from).join(to);
  return out;
}

/** Generate a real session and write it, neutralized, to `dest` (used to refresh test/fixtures/pi/real-session.jsonl). */
export async function writeRealSessionFixture(dest: string, opts: MakeRealSessionOptions = {}): Promise<string> {
  const s = await makeRealSession(opts);
  try {
    const text = neutralizeSessionText(readFileSync(s.sessionFile, "utf8"), s.workspace);
    mkdirSync(dirname(dest), { recursive: true });
    writeFileSync(dest, text);
    return text;
  } finally {
    s.cleanup();
  }
}
