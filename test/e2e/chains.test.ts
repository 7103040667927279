// Chain compression inside the real `pi` binary, against the scripted model server on loopback.
// The server's log of request bodies is the proof of what the model saw.
import { afterEach, describe, expect, it } from "vitest";
import { startModelServer, type ChatMessage, type ChatRequestBody, type ModelRequest, type ModelServer, type Reply } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { runPi } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, goodSummary, isSummarizerRequest, requestChars } from "../helpers/pruner-e2e.ts";
import { expectRequestViewsMatch } from "../helpers/request-equality.ts";

const SKILL = "# Release skill\n\n1. Run the release gate before tagging.\n2. Never skip step 1.\n";
const FUSED = "- `t1` and `t2`: src/a.ts and src/b.ts hold the compute helpers; nothing to change there (fused).";
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");

const servers: ModelServer[] = [];
const workspaces: PiWorkspace[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  for (const w of workspaces.splice(0)) w.cleanup();
});

const isFusion = (req: ModelRequest) => req.systemText.includes("You merge several summaries");

async function setup(agentReplies: Reply[], settings: Record<string, unknown>) {
  const server = await startModelServer();
  server.route(isSummarizerRequest, (req) => (isFusion(req) ? { text: FUSED } : goodSummary(req)));
  server.route(() => true, agentReplies);
  const files: Record<string, string> = { "skills/release/SKILL.md": SKILL };
  for (const name of ["a", "b", "c", "d", "e", "f"]) files[`src/${name}.ts`] = lines(name, 60);
  // Chain mechanics on a small scripted session: every final reply flushes (cacheAware off); the default policy is tested in policy.test.ts.
  const ws = createPiWorkspace({ baseUrl: server.baseUrl, files, settings: { contextPrune: { cacheAware: false, ...settings } }, model: { contextWindow: 400_000 } });
  servers.push(server);
  workspaces.push(ws);
  return { server, ws };
}

function text(m: ChatMessage): string {
  return typeof m.content === "string" ? m.content : (m.content ?? []).map((c) => c.text ?? "").join("");
}

/**
 * What a provider checks: every `tool` message answers a call of the assistant message right
 * before its run of tool messages, and every call of an assistant message is answered in that run.
 */
function providerProblems(body: ChatRequestBody): string[] {
  const problems: string[] = [];
  const messages = body.messages ?? [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "tool") {
      problems.push(`message ${i}: a tool message outside an assistant's run of results`);
      continue;
    }
    if (m.role !== "assistant") continue;
    const calls = (m.tool_calls ?? []).map((c) => c.id);
    const answered: string[] = [];
    let j = i + 1;
    for (; j < messages.length && messages[j]!.role === "tool"; j++) {
      const id = String(messages[j]!.tool_call_id);
      if (!calls.includes(id)) problems.push(`message ${j}: tool result ${id} answers no call of message ${i}`);
      if (answered.includes(id)) problems.push(`message ${j}: a second result for ${id}`);
      answered.push(id);
    }
    for (const id of calls) if (!answered.includes(id)) problems.push(`message ${i}: call ${id} has no result`);
    i = j - 1;
  }
  return problems;
}

function blocksOf(body: ChatRequestBody): { index: number; id: string; text: string }[] {
  return (body.messages ?? []).flatMap((m, index) => {
    const t = text(m);
    const match = m.role === "user" ? /^<compressed-chain id="(b\d+)"/.exec(t) : null;
    return match ? [{ index, id: match[1]!, text: t }] : [];
  });
}

function indexOfPrompt(body: ChatRequestBody, prompt: string): number {
  return (body.messages ?? []).findIndex((m) => m.role === "user" && text(m) === prompt);
}

function customEntries(entries: JsonRecord[], customType: string): JsonRecord[] {
  return entries.filter((e) => (e.type === "custom" || e.type === "custom_message") && e.customType === customType);
}

const PROMPTS = ["chain one", "chain two", "chain three", "chain four", "chain five", "chain six", "recover t1"];

/** Six tool-using chains, then a seventh turn that reuses chain one's tool-call id to recover t1. */
const SIX_CHAINS: Reply[] = [
  { toolCalls: [{ id: "dup_1", name: "read", arguments: { path: "src/a.ts" } }] },
  { toolCalls: [{ name: "read", arguments: { path: "src/b.ts" } }] },
  { text: "one done" },
  { toolCalls: [{ name: "read", arguments: { path: "skills/release/SKILL.md" } }, { name: "read", arguments: { path: "src/c.ts" } }] },
  { text: "two done" },
  { toolCalls: [{ name: "bash", arguments: { command: "echo tiny" } }] },
  { text: "three done" },
  { toolCalls: [{ name: "read", arguments: { path: "src/d.ts" } }] },
  { text: "four done" },
  { toolCalls: [{ name: "read", arguments: { path: "src/e.ts" } }] },
  { text: "five done" },
  { toolCalls: [{ name: "read", arguments: { path: "src/f.ts" } }] },
  { text: "six done" },
  { toolCalls: [{ id: "dup_1", name: "context_tree_query", arguments: { toolCallIds: ["t1"] } }] },
  { text: "recovered" },
];

describe("chain compression in real Pi", () => {
  it("six closed chains with K=3: the three oldest reach the model as compressed blocks, the request stays valid, reload renders the same", async () => {
    const { server, ws } = await setup([...SIX_CHAINS, { text: "after reload" }], { pruneOn: "agent-message", chainCompression: { rollingWindow: 3 } });
    const run = await runPi({ workspace: ws, extension: EXTENSION, sessionId: "six-chains", prompts: PROMPTS, timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);

    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(15);
    const last = requests.at(-1)!.body;
    expect(providerProblems(last)).toEqual([]);

    // The three oldest chains are blocks right after their prompts; chains four to six are raw.
    const blocks = blocksOf(last);
    expect(blocks.map((b) => b.id)).toEqual(["b1", "b2", "b3"]);
    expect(blocks.map((b) => b.index - 1)).toEqual([indexOfPrompt(last, "chain one"), indexOfPrompt(last, "chain two"), indexOfPrompt(last, "chain three")]);
    for (const b of blocks) expect(last.messages![b.index + 1]).toMatchObject({ role: "assistant" });
    expect(blocks[0]!.text).toBe(`<compressed-chain id="b1" tools="t1,t2">\n${FUSED}\n</compressed-chain>`);
    expect(blocks[1]!.text).toMatch(/^<compressed-chain id="b2" tools="t3">\n- `t3` read: looked at it/);
    expect(blocks[1]!.text).toContain(`<protected-output tool="read">${SKILL}</protected-output>`);
    expect(blocks[2]!.text).toMatch(/^<compressed-chain id="b3" tools="t\d+">\n- `t\d+` bash echo tiny\n<\/compressed-chain>$/);
    const chainFour = indexOfPrompt(last, "chain four");
    expect(last.messages!.slice(chainFour).filter((m) => m.role === "tool")).toHaveLength(4); // d, e, f and the live query
    expect(last.messages!.slice(0, chainFour).some((m) => m.role === "tool" || (m.tool_calls ?? []).length > 0)).toBe(false);

    // The live turn reuses chain one's tool-call id and is intact; the query recovered t1 from inside b1.
    const callsNamedDup = last.messages!.flatMap((m) => (m.tool_calls ?? []).filter((c) => c.id === "dup_1"));
    expect(callsNamedDup).toEqual([expect.objectContaining({ function: expect.objectContaining({ name: "context_tree_query" }) })]);
    const recovered = last.messages!.at(-1)!;
    expect(recovered).toMatchObject({ role: "tool", tool_call_id: "dup_1" });
    expect(text(recovered)).toContain("## t1 — read");
    expect(text(recovered)).toContain("a line 60: const value59");

    // What was persisted: one fusion call, four chains (the seventh turn closed a chain too), stats.
    expect(server.requests.filter(isFusion)).toHaveLength(1);
    const chains = customEntries(run.entries, "context-prune-chain").map((e) => e.data);
    expect(chains.map((c) => [c.blockId, c.bodySource])).toEqual([
      ["b1", "range-summary"],
      ["b2", "batch-summaries"],
      ["b3", "call-list"],
      ["b4", "batch-summaries"],
    ]);
    expect(chains[0]).toMatchObject({ rangeSummaryText: FUSED, toolRefs: ["t1", "t2"], droppedToolCallIds: ["dup_1", expect.any(String)] });
    expect(chains[1]!.protectedToolCallIds).toHaveLength(1);
    expect(customEntries(run.entries, "context-prune-stats").at(-1)!.data).toMatchObject({ chainsCompressed: 4, rangesSummarized: 1 });

    // Reload: a new process rebuilds from the session file and sends the same bytes for the old part.
    const again = await runPi({ workspace: ws, extension: EXTENSION, sessionId: "six-chains", prompts: ["after reload"], timeoutMs: 30_000 });
    expect(again.code, again.stderr).toBe(0);
    const reloaded = agentRequests(server.requests).at(-1)!.body;
    expect(providerProblems(reloaded)).toEqual([]);
    const from = indexOfPrompt(last, "chain one");
    expect(JSON.stringify(reloaded.messages!.slice(from, indexOfPrompt(reloaded, "chain four")))).toBe(JSON.stringify(last.messages!.slice(from, chainFour)));
    expect(blocksOf(reloaded).map((b) => b.id)).toEqual(["b1", "b2", "b3", "b4"]);

    // The same script without chain compression, for the size the model is sent on the last request.
    const plain = await setup([...SIX_CHAINS], { pruneOn: "agent-message", chainCompression: { enabled: false } });
    const plainRun = await runPi({ workspace: plain.ws, extension: EXTENSION, prompts: PROMPTS, timeoutMs: 60_000 });
    expect(plainRun.code, plainRun.stderr).toBe(0);
    const plainLast = agentRequests(plain.server.requests).at(-1)!.body;
    expect(blocksOf(plainLast)).toEqual([]);
    expect(providerProblems(plainLast)).toEqual([]);
    const withChains = requestChars(last);
    const withoutChains = requestChars(plainLast);
    console.log(`six-chain test, last request: ${withChains} characters with chain compression, ${withoutChains} without`);
    // The whole saving is in the three compressed chains: from chain four on, both requests are the same size.
    const part = (body: ChatRequestBody, from: string, to?: string) => requestChars({ messages: body.messages!.slice(indexOfPrompt(body, from), to ? indexOfPrompt(body, to) : undefined) });
    const plainChainFour = indexOfPrompt(plainLast, "chain four");
    expect(plainChainFour).toBeGreaterThan(0);
    expect(part(last, "chain four")).toBe(part(plainLast, "chain four"));
    const compressedPart = part(last, "chain one", "chain four");
    const plainPart = part(plainLast, "chain one", "chain four");
    console.log(`six-chain test, chains one to three: ${compressedPart} characters compressed, ${plainPart} without`);
    expect(withoutChains - withChains).toBe(plainPart - compressedPart);
    // Each chain here is one small call: its block replaces the call, its short stub and its summary.
    expect(compressedPart).toBeLessThan(plainPart * 0.85);
    await expectRequestViewsMatch(again.sessionFile!, agentRequests(server.requests));
    await expectRequestViewsMatch(plainRun.sessionFile!, agentRequests(plain.server.requests));
  });

  it("/pruner compact summarizes what is pending and compresses every closed chain at once", async () => {
    const { server, ws } = await setup(
      [
        { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] },
        { text: "first done" },
        { toolCalls: [{ name: "read", arguments: { path: "src/b.ts" } }] },
        { text: "second done" },
        { text: "third done" },
      ],
      { pruneOn: "on-demand" },
    );
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 60_000 });
    try {
      await rpc.prompt("first");
      await rpc.prompt("second");
      expect(blocksOf(agentRequests(server.requests).at(-1)!.body)).toEqual([]);
      await rpc.prompt("/pruner compact");
      expect(rpc.notifications().at(-1)!.message).toBe("pi-pruner: compressed 2 chain(s): b1, b2");
      await rpc.prompt("third");
      const last = agentRequests(server.requests).at(-1)!.body;
      expect(providerProblems(last)).toEqual([]);
      expect(blocksOf(last).map((b) => b.text)).toEqual([
        expect.stringMatching(/^<compressed-chain id="b1" tools="t1">\n- `t1` read: looked at it/),
        expect.stringMatching(/^<compressed-chain id="b2" tools="t2">\n- `t2` read: looked at it/),
      ]);
      // The batch summaries are inside the blocks, not sent a second time.
      expect(last.messages!.filter((m) => text(m).includes("Pruned refs:")).length).toBe(2);
      expect(last.messages!.some((m) => m.role === "tool")).toBe(false);
      // The third exchange used no tools: there is nothing left to compress.
      await rpc.prompt("/pruner compact");
      expect(rpc.notifications().at(-1)!.message).toBe("pi-pruner: no closed chain left to compress");
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });
});
