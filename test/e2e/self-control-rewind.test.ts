// The agent's rewinds, cancels and checkpoints in the real `pi`, against the scripted model. What
// the model was sent on the request after each tool call (the server's log) is the proof.
import { afterEach, describe, expect, it } from "vitest";
import { messageText, type ChatMessage, type ChatRequestBody, type ModelRequest, type ModelServer, type Reply } from "../helpers/model-server.ts";
import type { PiWorkspace } from "../helpers/pi-workspace.ts";
import { runPi, type RunPiResult } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, isSummarizerRequest, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { expectRequestViewsMatch } from "../helpers/request-equality.ts";

const SELF_CONTROL_OFF = "pi-pruner: refused: self-control is off (contextPrune.selfControl.enabled is false).";
const MUTATION_LINE = "Warning: the hidden work changed files or ran commands with side effects";

// ~9 KB of grep hits: what an unfiltered search drops into the context.
const LOG = Array.from({ length: 200 }, (_, i) => `needle line ${i + 1}: request handled in ${i % 17} ms by worker ${i % 5}`).join("\n");
const BLOAT = "request handled in"; // only the log has it
const GREP = "grep -n needle logs/app.log";

const SKILL = "# Release skill\n\n1. Run the release gate before tagging.\n";

const NOTE = {
  what_happened: "An unfiltered grep of the app log flooded the context with two hundred lines.",
  true_current_state: "The log holds only needle lines; no source file has been touched yet.",
  next: "Count the hits with grep -c needle logs/app.log instead.",
};

const pi = scriptedPi();
// The running test's server and workspace, for the helpers below.
let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
afterEach(async () => {
  await pi.stop();
  server = ws = undefined;
});

async function setup(replies: Reply[] | ((req: ModelRequest) => Reply | undefined), opts: { selfControl?: Record<string, unknown>; contextWindow?: number; prune?: Record<string, unknown> } = {}) {
  ({ server, ws } = await pi.start(replies, {
    files: { "logs/app.log": LOG, "src/app.ts": "export const answer = 42;\n", "skills/release/SKILL.md": SKILL },
    settings: {
      // Pi's own compaction would act on the small windows of the bound tests.
      compaction: { enabled: false },
      contextPrune: {
        // No summaries, and no nudges riding the requests: these tests watch the rewinds alone.
        pruneOn: "on-demand",
        selfControl: { bloatReminder: false, driftNudge: false, highWaterFraction: null, ...(opts.selfControl ?? {}) },
        ...(opts.prune ?? {}),
      },
    },
    model: { contextWindow: opts.contextWindow ?? 400_000 },
  }));
  return { server, ws };
}

async function run(prompts: string[]): Promise<RunPiResult> {
  const result = await runPi({ workspace: ws!, extension: EXTENSION, prompts, timeoutMs: 30_000 });
  expect(result.code, result.stderr).toBe(0);
  await expectRequestViewsMatch(result.sessionFile!, sent());
  return result;
}

const bash = (command: string): Reply => ({ toolCalls: [{ name: "bash", arguments: { command } }] });
const rewindCall = (args: Record<string, unknown> | string): Reply => ({ toolCalls: [{ name: "context_rewind", arguments: args }] });
const rewind = (granularity: string, extra: Record<string, unknown> = {}) => rewindCall({ granularity, note: NOTE, ...extra });

/** The agent's requests the server logged, in order. */
const sent = () => agentRequests(server!.requests);
const messagesOf = (body: ChatRequestBody): ChatMessage[] => (body.messages ?? []).filter((m) => m.role !== "system" && m.role !== "developer");
const textOf = (body: ChatRequestBody) => messagesOf(body).map((m) => [messageText(m), ...(m.tool_calls ?? []).map((c) => c.function.arguments)].join("\n")).join("\n");
const resultOf = (body: ChatRequestBody, tool: string) => {
  const calls = messagesOf(body).flatMap((m) => m.tool_calls ?? []).filter((c) => c.function.name === tool);
  const ids = new Set(calls.map((c) => c.id));
  return toolMessages(body).filter((t) => ids.has(t.id)).map((t) => t.text);
};

/** Every tool call the model is sent has its result right after its assistant message, and every result follows its call. */
function expectPaired(body: ChatRequestBody) {
  const messages = messagesOf(body);
  messages.forEach((m, i) => {
    const ids = (m.tool_calls ?? []).map((c) => c.id);
    if (ids.length === 0) return;
    const following = messages.slice(i + 1, i + 1 + ids.length);
    expect(following.map((f) => f.role), JSON.stringify(messages.map((x) => x.role))).toEqual(ids.map(() => "tool"));
    expect(new Set(following.map((f) => f.tool_call_id))).toEqual(new Set(ids));
  });
  messages.forEach((m, i) => {
    if (m.role !== "tool") return;
    let j = i - 1;
    while (j >= 0 && messages[j]!.role === "tool") j--;
    expect(messages[j]?.role).toBe("assistant");
    expect((messages[j]!.tool_calls ?? []).map((c) => c.id)).toContain(m.tool_call_id);
  });
}

/** The newest message of a request is the rewind's note. */
function expectNoteNewest(body: ChatRequestBody, granularity: string) {
  const last = messagesOf(body).at(-1)!;
  expect(last.role).toBe("user");
  expect(messageText(last)).toContain(`## Rewind note (${granularity})`);
  expect(messageText(last)).toContain(NOTE.what_happened);
  expect(messageText(last)).toContain(`Next: ${NOTE.next}`);
}

const custom = (entries: JsonRecord[], customType: string) => entries.filter((e) => (e.type === "custom" || e.type === "custom_message") && e.customType === customType);

describe("context_rewind in real Pi", () => {
  it("a rewound output is never summarized: the flush at the final reply leaves it out, and no summary brings it back", async () => {
    // Summaries on, flushed at every final reply: the grep's batch is still pending when the rewind lands.
    await setup([bash(GREP), rewind("last_tool_call_group"), bash("grep -c needle logs/app.log"), { text: "200 hits." }, { text: "ok" }], {
      prune: { pruneOn: "agent-message", cacheAware: false, minBatchChars: 0 },
    });
    await run(["find the needles", "thanks"]);
    const summarizer = server!.requests.filter(isSummarizerRequest);
    // The count's batch was summarized; the rewound grep was not sent to the summarizer.
    expect(summarizer.length).toBeGreaterThan(0);
    expect(summarizer.some((r) => r.allText.includes("grep -c needle"))).toBe(true);
    for (const r of summarizer) expect(r.allText).not.toContain(BLOAT);
    const last = sent().at(-1)!;
    expect(textOf(last.body)).not.toContain(BLOAT);
    expect(textOf(last.body)).not.toContain(GREP);
    expectPaired(last.body);
  });

  it("last_tool_call_group: the bloated grep leaves the next request, the note is its newest message, calls stay paired", async () => {
    await setup([bash(GREP), rewind("last_tool_call_group"), { text: "Counting instead." }]);
    const result = await run(["find the needles"]);
    const [, beforeRewind, afterRewind] = sent();
    expect(textOf(beforeRewind!.body)).toContain(BLOAT);

    const body = afterRewind!.body;
    expect(textOf(body)).not.toContain(BLOAT);
    expect(messagesOf(body).flatMap((m) => m.tool_calls ?? []).map((c) => c.function.name)).toEqual(["context_rewind"]);
    expectNoteNewest(body, "last_tool_call_group");
    expectPaired(body);
    const [answer] = resultOf(body, "context_rewind");
    expect(answer).toMatch(/^pi-pruner: rewound last_tool_call_group: 2 messages leave your context/);
    expect(answer).not.toContain(MUTATION_LINE); // a grep changes nothing

    const [marker] = custom(result.entries, "mulligan:rewind");
    expect(marker!.data).toMatchObject({ schema: "pi-mulligan", v: 1, kind: "rewind", granularity: "last_tool_call_group", ledger: { readFiles: [], modifiedFiles: [], bashSideEffects: [] } });
    expect(marker!.data.hideEntryIds).toHaveLength(2);
    const seqs = result.entries.filter((e) => e.type === "custom" && String(e.customType).startsWith("mulligan:")).map((e) => e.data.seq);
    expect(seqs.filter((seq) => seq === marker!.data.seq)).toHaveLength(1);
    const [note] = custom(result.entries, "mulligan:note");
    expect(note!.details).toEqual({ schema: "pi-mulligan", v: 1, kind: "note", rewindId: marker!.data.id });
  });

  it("last_turn: the agent's work since the latest prompt goes, earlier prompts stay; the note lists what the work touched and warns", async () => {
    await setup([
      { text: "First task done." },
      bash(`mkdir -p out && ${GREP} > out/hits.txt && cat out/hits.txt`),
      { toolCalls: [{ name: "read", arguments: { path: "src/app.ts" } }] },
      rewind("last_turn"),
      { text: "Redoing it properly." },
    ]);
    await run(["first task", "second task"]);
    const body = sent().at(-1)!.body;
    const text = textOf(body);
    expect(text).toContain("first task");
    expect(text).toContain("First task done.");
    expect(text).toContain("second task");
    expect(text).not.toContain(BLOAT);
    expect(text).not.toContain("export const answer");
    expect(messagesOf(body).flatMap((m) => m.tool_calls ?? []).map((c) => c.function.name)).toEqual(["context_rewind"]);
    expectNoteNewest(body, "last_turn");
    expectPaired(body);
    const note = messageText(messagesOf(body).at(-1)!);
    expect(note).toContain("<files-read>\nsrc/app.ts\n</files-read>");
    expect(note).toContain("<files-modified>\nout/hits.txt\n</files-modified>");
    expect(note).toContain(`<side-effects>\nmkdir -p out && ${GREP} > out/hits.txt && cat out/hits.txt\n</side-effects>`);
    expect(note).toContain(MUTATION_LINE);
    expect(resultOf(body, "context_rewind")[0]).toContain(MUTATION_LINE);
  });

  it("a protected skill read inside the rewound turn stays; the rest of the turn goes", async () => {
    await setup([{ toolCalls: [{ name: "read", arguments: { path: "skills/release/SKILL.md" } }] }, bash(GREP), rewind("last_turn"), { text: "ok" }]);
    await run(["release it"]);
    const body = sent().at(-1)!.body;
    expect(textOf(body)).toContain("Run the release gate before tagging.");
    expect(textOf(body)).not.toContain(BLOAT);
    expect(resultOf(body, "context_rewind")[0]).toMatch(/: 2 messages leave your context[^\n]*\n1 tool call in that span stays: protected output/);
    expect(messageText(messagesOf(body).at(-1)!)).not.toContain("SKILL.md"); // the ledger lists only what was hidden
    expectPaired(body);
  });

  it("the note sent as a JSON string is parsed back (prepareArguments) and the rewind goes ahead", async () => {
    await setup([bash(GREP), rewindCall({ granularity: "last_tool_call_group", note: JSON.stringify(NOTE) }), { text: "ok" }]);
    await run(["find the needles"]);
    const body = sent().at(-1)!.body;
    expect(textOf(body)).not.toContain(BLOAT);
    expectNoteNewest(body, "last_tool_call_group");
  });

  it("context_cancel by a target in the hidden output brings it back; cancelling again by the marker id is a no-op", async () => {
    let markerId = "";
    await setup((req) => {
      const n = sent().length;
      if (n === 1) return bash(GREP);
      if (n === 2) return rewind("last_tool_call_group");
      if (n === 3) {
        markerId = /Marker ([0-9a-f-]{36})/.exec(resultOf(req.body, "context_rewind")[0] ?? "")?.[1] ?? "";
        return { toolCalls: [{ name: "context_cancel", arguments: { target: { by_content_includes: "needle line 7:" } } }] };
      }
      if (n === 4) return { toolCalls: [{ name: "context_cancel", arguments: { markerId } }] };
      return { text: "ok" };
    });
    await run(["find the needles"]);
    const [, , afterRewind, afterCancel, last] = sent();
    expect(markerId).not.toBe("");
    expect(textOf(afterRewind!.body)).not.toContain(BLOAT);
    expect(textOf(afterCancel!.body)).toContain(BLOAT);
    expect(resultOf(afterCancel!.body, "context_cancel")[0]).toBe(`pi-pruner: cancelled rewind ${markerId}: the 2 entries it hid are back in your context from the next request on (a checkpoint it used stays used up).`);
    expectPaired(afterCancel!.body);
    expect(resultOf(last!.body, "context_cancel")[1]).toBe(`pi-pruner: nothing to cancel: rewind ${markerId} is already cancelled.`);
    expect(textOf(last!.body)).toContain(BLOAT);
  });

  it("a checkpoint set with /pruner checkpoint: a later prompt's work is rewound back to it across prompts, the checkpoint is used up and its line cleared", async () => {
    await setup([
      { text: "Plan ready." },
      { text: "Step one done." },
      bash(GREP),
      rewind("checkpoint", { checkpoint: "before-risk" }),
      rewind("checkpoint", { checkpoint: "before-risk" }),
      { text: "Back at the plan." },
    ]);
    const rpc = await startPiRpc({ workspace: ws!, extension: EXTENSION });
    let entries: JsonRecord[];
    try {
      await rpc.prompt("make a plan");
      await rpc.prompt("/pruner checkpoint before-risk");
      const widget = () => rpc.uiRequests().filter((r) => r.method === "setWidget" && r.widgetKey === "pi-pruner-checkpoint");
      expect(widget().at(-1)!.widgetLines).toEqual([expect.stringContaining('checkpoint "before-risk" set by you')]);
      expect(rpc.notifications().at(-1)!.message).toContain('checkpoint "before-risk" set');
      await rpc.prompt("risky step one");
      await rpc.prompt("risky step two");
      expect(widget().at(-1)!.widgetLines).toBeUndefined();
      entries = await rpc.getEntries();
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), sent());
    } finally {
      await rpc.close();
    }
    const [, , , , afterRewind, afterSecond] = sent();
    const text = textOf(afterRewind!.body);
    expect(text).toContain("make a plan");
    expect(text).toContain("Plan ready.");
    for (const gone of ["risky step one", "Step one done.", "risky step two", BLOAT]) expect(text).not.toContain(gone);
    expectNoteNewest(afterRewind!.body, "checkpoint");
    expectPaired(afterRewind!.body);
    expect(resultOf(afterRewind!.body, "context_rewind")[0]).toContain('rewound everything after checkpoint "before-risk" (the checkpoint is used up)');
    // The checkpoint went with the first rewind: the second is refused.
    expect(resultOf(afterSecond!.body, "context_rewind")[1]).toContain('pi-pruner: refused: no checkpoint named "before-risk" is set');
    const labels = entries.filter((e) => e.type === "label");
    expect(labels.map((l) => l.label)).toEqual(["mulligan:checkpoint:before-risk", undefined]);
    expect(labels[1]!.targetId).toBe(labels[0]!.targetId);
  });
});

describe("checkpoints across sessions", () => {
  it("a checkpoint set in one run shows its line when the session is resumed; revoking it clears the line and a rewind to it is refused", async () => {
    await setup([{ text: "Plan ready." }, bash(GREP), rewind("checkpoint", { checkpoint: "keep" }), { text: "done" }]);
    const first = await runPi({ workspace: ws!, extension: EXTENSION, sessionId: "resumed", prompts: ["make a plan", "/pruner checkpoint keep"], timeoutMs: 30_000 });
    expect(first.code, first.stderr).toBe(0);
    const rpc = await startPiRpc({ workspace: ws!, extension: EXTENSION, sessionId: "resumed" });
    const widget = () => rpc.uiRequests().filter((r) => r.method === "setWidget" && r.widgetKey === "pi-pruner-checkpoint");
    try {
      // The line is drawn on session_start, before anything is asked of the session.
      await rpc.getState();
      expect(widget().at(-1)!.widgetLines).toEqual([expect.stringContaining('checkpoint "keep" set by you')]);
      await rpc.prompt("/pruner checkpoint");
      expect(rpc.notifications().at(-1)!.message).toBe('pi-pruner: checkpoints set: "keep"');
      await rpc.prompt("/pruner checkpoint-revoke keep");
      expect(rpc.notifications().at(-1)!.message).toContain('checkpoint "keep" revoked');
      expect(widget().at(-1)!.widgetLines).toBeUndefined();
      await rpc.prompt("/pruner checkpoint-revoke keep");
      expect(rpc.notifications().at(-1)!.message).toBe('pi-pruner: no checkpoint named "keep" is set');
      await rpc.prompt("find the needles");
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), sent());
    } finally {
      await rpc.close();
    }
    const body = sent().at(-1)!.body;
    expect(resultOf(body, "context_rewind")[0]).toContain('pi-pruner: refused: no checkpoint named "keep" is set');
    expect(textOf(body)).toContain(BLOAT);
  });
});

describe("the rewind's guards in real Pi", () => {
  it("maxActiveRewinds: a rewind past the bound is refused and nothing more is hidden", async () => {
    await setup([bash("cat src/app.ts"), rewind("last_tool_call_group"), { text: "one" }, bash(GREP), rewind("last_tool_call_group"), { text: "two" }], { selfControl: { maxActiveRewinds: 1 } });
    await run(["first", "second"]);
    const body = sent().at(-1)!.body;
    expect(resultOf(body, "context_rewind")[1]).toBe("pi-pruner: refused: 1 rewind is already active (selfControl.maxActiveRewinds is 1); cancel one with context_cancel, or shrink a result instead.");
    expect(textOf(body)).toContain(BLOAT);
    expect(textOf(body)).not.toContain("export const answer");
    expectPaired(body);
  });

  it("maxRewindsPerPrompt: a second rewind landing back at the same prompt is refused", async () => {
    await setup([bash("cat src/app.ts"), rewind("last_tool_call_group"), bash(GREP), rewind("last_tool_call_group"), { text: "done" }], { selfControl: { maxRewindsPerPrompt: 1 } });
    await run(["find the needles"]);
    const body = sent().at(-1)!.body;
    expect(resultOf(body, "context_rewind")[1]).toContain("pi-pruner: refused: 1 rewind has already landed back at the latest user message (selfControl.maxRewindsPerPrompt is 1)");
    expect(textOf(body)).toContain(BLOAT);
    expect(textOf(body)).not.toContain("export const answer");
  });

  it("refuseRewindAtFraction: near a small window the rewind is refused and the output stays", async () => {
    await setup([bash(GREP), rewind("last_tool_call_group"), { text: "done" }], { contextWindow: 2000 });
    await run(["find the needles"]);
    const body = sent().at(-1)!.body;
    expect(resultOf(body, "context_rewind")[0]).toMatch(/^pi-pruner: refused: the context is at \d+% of the window \(selfControl\.refuseRewindAtFraction is 0\.9\)/);
    expect(textOf(body)).toContain(BLOAT);
  });

  it("a vacuous note is refused and nothing is hidden", async () => {
    await setup([bash(GREP), rewindCall({ granularity: "last_tool_call_group", note: { what_happened: "n/a", true_current_state: "n/a", next: "n/a" } }), { text: "done" }]);
    const result = await run(["find the needles"]);
    const body = sent().at(-1)!.body;
    expect(resultOf(body, "context_rewind")[0]).toBe('pi-pruner: refused: note.what_happened is a placeholder ("n/a"); say what is true.');
    expect(textOf(body)).toContain(BLOAT);
    expect(custom(result.entries, "mulligan:rewind")).toEqual([]);
  });

  it("selfControl.enabled false: the tool answers with the refusal and nothing is hidden", async () => {
    await setup([bash(GREP), rewind("last_tool_call_group"), { text: "done" }], { selfControl: { enabled: false } });
    const result = await run(["find the needles"]);
    const body = sent().at(-1)!.body;
    expect(resultOf(body, "context_rewind")).toEqual([SELF_CONTROL_OFF]);
    expect(textOf(body)).toContain(BLOAT);
    expect(custom(result.entries, "mulligan:rewind")).toEqual([]);
    expect(custom(result.entries, "mulligan:note")).toEqual([]);
  });
});
