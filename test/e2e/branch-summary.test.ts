// Pi's branch summary inside the real `pi` binary, with short refs numbered per branch. Branch A
// prunes three reads (`t3`–`t5`, after the shared `t1`, `t2`); the person goes back with a summary
// of A (`/branch-from`, which calls Pi's navigateTree as `/tree` does); branch B prunes its own `t3`.
// The scripted server's log is the proof: what Pi's branch summarizer was sent, and what the model
// on B got back from `context_tree_query` for the ref the summary of A gave it.
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequest, Reply } from "../helpers/model-server.ts";
import { startPiRpc, type PiRpc } from "../helpers/pi-rpc.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, isSummarizerRequest, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";
import { QUERY_TOOL } from "../../core/src/shapes/entries.ts";

const NAVIGATE = "test/fixtures/pi/tree-navigate.ts";
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");
const FILES = Object.fromEntries(["base1", "base2", "a1", "a2", "a3", "b1"].map((name) => [`src/${name}.ts`, lines(name, 60)]));
const read = (...names: string[]): Reply => ({ toolCalls: names.map((name) => ({ name: "read", arguments: { path: `src/${name}.ts` } })) });
const PROMPT_A = "read the a files";

/** Pi's branch summarizer: its system prompt is Pi's summarization one, its prompt asks for a branch summary. */
const isBranchSummaryRequest = (req: ModelRequest): boolean => req.allText.includes("Create a structured summary of this conversation branch");

/** The pruner's summarizer, naming each call's path next to its ref (as a real one does). */
function summaryNamingPaths(req: ModelRequest): Reply {
  const calls = [...req.lastUserText.matchAll(/^### (t\d+) — read\nArguments: \{"path":"([^"]+)"\}/gm)];
  return { text: calls.map((m) => `- \`${m[1]}\` read ${m[2]}: the file's constants`).join("\n") };
}

/** Refs as the text names them next to a read path: `` `REF` read PATH `` (a pruner summary line). */
const refsByPath = (text: string): Map<string, string> => new Map([...text.matchAll(/`([^`\s]+)` read (\S+):/g)].map((m) => [m[2]!, m[1]!]));

/** A branch summarizer that keeps exact names, as Pi's prompt asks: each read with the ref it was sent under. */
function branchSummaryKeepingRefs(req: ModelRequest): Reply {
  const done = [...refsByPath(req.lastUserText)].map(([path, ref]) => `- [x] Read ${path} (\`${ref}\`)`);
  return { text: `## Goal\nRead the a files.\n\n## Progress\n### Done\n${done.join("\n")}` };
}

/** The ref the branch summary in a request gives for `path`. */
function summaryRefOf(req: ModelRequest, path: string): string {
  const found = new RegExp(`Read ${path.replace(/[.]/g, "\\.")} \\(\`([^\`]+)\`\\)`).exec(req.allText);
  expect(found, `the request carries the branch summary's line for ${path}`).not.toBeNull();
  return found![1]!;
}

const pi = scriptedPi();
afterEach(pi.stop);

/** The id of the user message whose text is `text`. */
function userEntryId(entries: JsonRecord[], text: string): string {
  const entry = entries.find((e) => e.type === "message" && e.message?.role === "user" && JSON.stringify(e.message.content).includes(text));
  expect(entry, `a user message "${text}"`).toBeDefined();
  return String(entry!.id);
}

/** The shared start, then branch A: two reads pruned (`t1`, `t2`), then three (`t3`–`t5`); `/pruner compact` compresses the chains too (`b1`, `b2`). */
async function branchA(rpc: PiRpc, prune = "/pruner now"): Promise<void> {
  await rpc.prompt("read the base files");
  await rpc.prompt(prune);
  await rpc.prompt(PROMPT_A);
  await rpc.prompt(prune);
}

/** Back to before branch A with a summary of it, then branch B: one read pruned (B's own `t3`). */
async function branchB(rpc: PiRpc, prune = "/pruner now"): Promise<void> {
  const target = userEntryId(await rpc.getEntries(), PROMPT_A);
  const from = rpc.records.length;
  await rpc.prompt(`/branch-from ${target}`, { timeoutMs: 30_000 });
  // The command's own report, or Pi's of its failure.
  const outcome = await rpc.waitFor((r) => (r.type === "extension_ui_request" && String(r.message).startsWith("branch-from:")) || r.type === "extension_error", { from });
  expect(outcome.message ?? JSON.stringify(outcome)).toBe("branch-from: done");
  await rpc.prompt("read the b file");
  await rpc.prompt(prune);
}

/** The agent's answers: task one, task A, task B, then a question answered with `context_tree_query` calls, one per ask. */
function agentScript(...asks: Array<(req: ModelRequest) => string[]>): (req: ModelRequest) => Reply | undefined {
  const replies: Array<Reply | ((req: ModelRequest) => Reply)> = [
    read("base1", "base2"),
    { text: "Read the base." },
    read("a1", "a2", "a3"),
    { text: "Read the a files." },
    read("b1"),
    { text: "Read b." },
    ...asks.map((ask) => (req: ModelRequest): Reply => ({ toolCalls: [{ name: QUERY_TOOL, arguments: { toolCallIds: ask(req) } }] })),
    { text: "Done." },
  ];
  return (req) => {
    const next = replies.shift();
    return typeof next === "function" ? next(req) : next;
  };
}

async function setup(agent: (req: ModelRequest) => Reply | undefined, branchSummary: (req: ModelRequest) => Reply) {
  const started = await pi.start(
    agent,
    {
      files: FILES,
      settings: { compaction: { enabled: false }, contextPrune: { pruneOn: "on-demand", cacheAware: false, selfControl: NO_NUDGES } },
      model: { contextWindow: 400_000 },
    },
    summaryNamingPaths,
  );
  // Consulted before every route: Pi's branch summarizer has the system prompt of its compaction.
  const { server } = started;
  server.respond = (req) => (isBranchSummaryRequest(req) ? branchSummary(req) : undefined);
  return started;
}

/** The text of the newest tool result a request carries: the query tool's answer in the request after its call. */
const lastToolResult = (req: ModelRequest): string => toolMessages(req.body).at(-1)!.text;

/** The agent's own requests (not the pruner's summarizer, not Pi's branch summarizer). */
const agentOnly = (requests: readonly ModelRequest[]): ModelRequest[] => agentRequests(requests).filter((r) => !isSummarizerRequest(r) && !isBranchSummaryRequest(r));

const branchSummaries = (entries: JsonRecord[]) => entries.filter((e) => e.type === "branch_summary");

describe("a branch summary keeps its refs apart", () => {
  it("Pi's branch summarizer is sent A's refs named by branch, and the model on B asking the summary's ref for a1 gets a1's output, not B's t3", async () => {
    const { server, ws } = await setup(
      agentScript((req) => [summaryRefOf(req, "src/a1.ts")]),
      branchSummaryKeepingRefs,
    );
    const rpc = await startPiRpc({ workspace: ws, extension: [EXTENSION, NAVIGATE], timeoutMs: 90_000 });
    try {
      await branchA(rpc);
      const leafA = String((await rpc.getEntries()).at(-1)!.id);
      await branchB(rpc);

      const summaryRequests = server.requests.filter(isBranchSummaryRequest);
      expect(summaryRequests).toHaveLength(1);
      const sent = summaryRequests[0]!.lastUserText;
      // A's reads reached the branch summarizer with refs that name A, none bare.
      const sentRefs = refsByPath(sent);
      expect([...sentRefs.keys()]).toEqual(["src/a1.ts", "src/a2.ts", "src/a3.ts"]);
      for (const ref of sentRefs.values()) expect(ref).toMatch(/^[0-9a-f]+\/t[345]$/);
      expect(sent).not.toMatch(/(?<![\w/])t[345](?![\w/])/);

      // Pi's summary entry: written from the pruner's request, with Pi's file lists of the branch left.
      const [entry] = branchSummaries(await rpc.getEntries());
      expect(entry!.fromId).toBe(leafA);
      expect(entry!.fromHook).toBe(true);
      expect(entry!.details.readFiles).toEqual(["src/a1.ts", "src/a2.ts", "src/a3.ts"]);
      expect(entry!.summary).toContain("<read-files>\nsrc/a1.ts\nsrc/a2.ts\nsrc/a3.ts\n</read-files>");

      await rpc.prompt("what did src/a1.ts hold?");
      const agent = agentOnly(server.requests);
      const asking = agent.at(-2)!;
      // B's request: its own t3 (b1's) and the summary's refs to A, each with one meaning.
      expect(asking.allText).toMatch(/pruned: see ref `t3`/);
      expect(asking.allText).toContain("`t3` read src/b1.ts");
      expect(asking.allText).not.toMatch(/(?<![\w/])t3` read src\/a1/);
      expect(summaryRefOf(asking, "src/a1.ts")).toBe(`${leafA}/t3`);

      const answer = lastToolResult(agent.at(-1)!);
      expect(answer).toContain(`## ${leafA}/t3 — read`);
      expect(answer).toContain("a1 line 1: const value0");
      expect(answer).not.toContain("b1 line 1");
      expect(answer).not.toContain("Unknown");
      // The editor's view of each request sent on B, rendered from the session, is what went out.
      const onB = agent.filter((r) => !r.allText.includes(PROMPT_A));
      expect(onB).toHaveLength(6);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), onB);
    } finally {
      await rpc.close();
    }
  });

  it("when Pi writes the summary itself (the pruner's try failed), its bare t3 is A's: asking t3 on B says so before B's own output, and the ref it names reads A's", async () => {
    let branchSummaryCalls = 0;
    const { server, ws } = await setup(
      agentScript(() => ["t3"], (req) => [/Note: [^\n]*`([0-9a-f]+\/t3)` \(read src\/a1\.ts\)/.exec(lastToolResult(req))?.[1] ?? "no ref in the note"]),
      (req) => (++branchSummaryCalls === 1 ? { status: 500, body: { error: { message: "summarizer down" } } } : branchSummaryKeepingRefs(req)),
    );
    const rpc = await startPiRpc({ workspace: ws, extension: [EXTENSION, NAVIGATE], timeoutMs: 90_000 });
    try {
      await branchA(rpc);
      const leafA = String((await rpc.getEntries()).at(-1)!.id);
      await branchB(rpc);

      // The pruner's request failed; Pi's own went out with A's bare refs, and its summary kept them.
      const summaryRequests = server.requests.filter(isBranchSummaryRequest);
      expect(summaryRequests).toHaveLength(2);
      expect(refsByPath(summaryRequests[0]!.lastUserText).get("src/a1.ts")).toBe(`${leafA}/t3`);
      expect(refsByPath(summaryRequests[1]!.lastUserText).get("src/a1.ts")).toBe("t3");
      const [entry] = branchSummaries(await rpc.getEntries());
      expect(entry!.fromHook).toBeFalsy();
      expect(entry!.summary).toContain("Read src/a1.ts (`t3`)");
      const reports = rpc.notifications().filter((n) => n.message.includes("could not send Pi's branch summary the pruned branch"));
      expect(reports).toHaveLength(1);
      expect(reports[0]!.notifyType).toBe("error");

      await rpc.prompt("what did src/a1.ts hold?");
      const agent = agentOnly(server.requests);
      // Asked `t3`: B's own output, after a note naming A's `t3` by its branch.
      const first = lastToolResult(agent.at(-2)!);
      const note = first.indexOf(`Note: a branch summary in this context names \`t3\` of another branch, where it is another output: \`${leafA}/t3\` (read src/a1.ts)`);
      expect(note).toBeGreaterThanOrEqual(0);
      expect(first.indexOf("## t3 — read")).toBeGreaterThan(note);
      expect(first).toContain("b1 line 1: const value0");
      expect(first).not.toContain("a1 line 1");
      // Asked the ref the note named: A's output.
      const second = lastToolResult(agent.at(-1)!);
      expect(second).toContain(`## ${leafA}/t3 — read`);
      expect(second).toContain("a1 line 1: const value0");
      expect(second).not.toContain("b1 line 1");
    } finally {
      await rpc.close();
    }
  });

  it("a compressed chain of A reaches Pi's branch summarizer as the model saw it, the block and its refs named by A, and Pi's file lists still name A's files", async () => {
    const { server, ws } = await setup(
      agentScript((req) => [summaryRefOf(req, "src/a2.ts")]),
      branchSummaryKeepingRefs,
    );
    const rpc = await startPiRpc({ workspace: ws, extension: [EXTENSION, NAVIGATE], timeoutMs: 90_000 });
    try {
      await branchA(rpc, "/pruner compact");
      expect(rpc.notifications().at(-1)!.message).toBe("pi-pruner: compressed 1 chain(s): b2");
      const leafA = String((await rpc.getEntries()).at(-1)!.id);
      await branchB(rpc, "/pruner compact");
      // B compressed its own b2.
      expect(rpc.notifications().at(-1)!.message).toBe("pi-pruner: compressed 1 chain(s): b2");

      const [request] = server.requests.filter(isBranchSummaryRequest);
      const sent = request!.lastUserText;
      expect(sent).toContain(`<compressed-chain id="${leafA}/b2" tools="${leafA}/t3,${leafA}/t4,${leafA}/t5">`);
      // The turns the block stands for are not sent a second time.
      expect(sent).not.toContain('read(path="src/a1.ts")');
      expect(sent).not.toMatch(/(?<![\w/])[tb][2345](?![\w/])/);
      const [entry] = branchSummaries(await rpc.getEntries());
      expect(entry!.details.readFiles).toEqual(["src/a1.ts", "src/a2.ts", "src/a3.ts"]);
      expect(entry!.summary).toContain("<read-files>\nsrc/a1.ts\nsrc/a2.ts\nsrc/a3.ts\n</read-files>");

      await rpc.prompt("what did src/a2.ts hold?");
      const agent = agentOnly(server.requests);
      expect(summaryRefOf(agent.at(-2)!, "src/a2.ts")).toBe(`${leafA}/t4`);
      const answer = lastToolResult(agent.at(-1)!);
      expect(answer).toContain(`## ${leafA}/t4 — read`);
      expect(answer).toContain("a2 line 1: const value0");
    } finally {
      await rpc.close();
    }
  });
});
