// What a person reads in the session view: summaries by the prompt they belong to, in plain words;
// a branch by its last prompt; reclaim figures that add up, with the rewinds counted and a reason
// whenever more is sent than Pi alone would send.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { MulliganMarkers } from "../../helpers/mulligan-sessions.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { firstWords, lastPromptOf, markdownToPlain } from "../../../core/src/session/labels.ts";
import { buildSessionView, summaryPreview } from "../../../core/src/view/session-view.ts";

const config = DEFAULT_CONFIG;

function resultTimestamp(b: SessionBuilder, toolCallId: string): number {
  const entry = b.entries.find((e) => e.type === "message" && (e as { message: { toolCallId?: string } }).message.toolCallId === toolCallId) as { message: { timestamp: number } };
  return entry.message.timestamp;
}

/** A summarized read, the index and summary as pi-condense writes them (its footer included). */
function summarizedRead(b: SessionBuilder, id: string, path: string, ref: string, body: string): void {
  b.toolUse("read", { path }, "A".repeat(1500), { id });
  const ts = resultTimestamp(b, id);
  b.custom("context-prune-index", { toolCalls: [{ toolCallId: id, toolName: "read", args: { path }, resultText: "A".repeat(1500), isError: false, turnIndex: 0, resultTimestamp: ts }], refs: [{ shortId: ref, toolCallId: id, resultTimestamp: ts }] });
  b.customMessage(
    "context-prune-summary",
    `${body}\n\n---\n**Summarized tool refs**: \`${ref}\`\nUse \`context_tree_query\` with these refs to retrieve the original full outputs.`,
    { toolCallRefs: [{ shortId: ref, toolCallId: id, resultTimestamp: ts }], toolNames: ["read"], turnIndex: 0 },
  );
}

describe("labels", () => {
  it("markdown becomes the words it shows", () => {
    expect(markdownToPlain("## Findings\n\n- `t1` read **src/a.ts**: exports `parse()`\n- see [the docs](https://x.test)\n\n---\n> quoted *note*")).toBe(
      "Findings t1 read src/a.ts: exports parse() see the docs quoted note",
    );
    expect(markdownToPlain("snake_case_name and a*b*c stay")).toBe("snake_case_name and a*b*c stay");
  });

  it("first words are cut at a word boundary", () => {
    expect(firstWords("refactor the parser so that it handles nested rules", 24)).toBe("refactor the parser so…");
    expect(firstWords("short prompt", 24)).toBe("short prompt");
    expect(firstWords("averyveryverylongsingleword", 10)).toBe("averyvery…");
  });
});

describe("summary labels", () => {
  const b = new SessionBuilder({ sessionId: "s-labels", cwd: "/w" });
  b.user("fix the parser so nested rules work");
  summarizedRead(b, "r1", "src/parser.ts", "t1", "- `t1` read **src/parser.ts**: `parse()` is a stub");
  b.assistant("The parser is a stub.");
  b.user("now the lexer");
  summarizedRead(b, "r2", "src/lexer.ts", "t2", "## Lexer\n- `t2` read src/lexer.ts: splits on spaces");
  b.assistant("done");
  const view = buildSessionView(parseSessionText(b.toJsonl()), { config });

  it("names the prompt each summary's calls were made for, and its number on the branch", () => {
    expect(view.summaries.map((s) => [s.prompt, s.promptNumber])).toEqual([
      ["fix the parser so nested rules work", 1],
      ["now the lexer", 2],
    ]);
  });

  it("gives the summary as plain words, without pi-condense's ref footer", () => {
    expect(view.summaries.map((s) => s.preview)).toEqual(["t1 read src/parser.ts: parse() is a stub", "Lexer t2 read src/lexer.ts: splits on spaces"]);
    expect(summaryPreview("- `t3` ran the tests\n\nPruned refs: `t3`. The full outputs are kept: call context_tree_query with these refs to read them.")).toBe("t3 ran the tests");
  });

  it("a branch is named by its last prompt", () => {
    const data = parseSessionText(b.toJsonl());
    expect(lastPromptOf(data, view.leafId)).toBe("now the lexer");
    expect(lastPromptOf(data, data.entries[1]!.id)).toBe("fix the parser so nested rules work");
  });
});

describe("reclaim totals", () => {
  it("a session with an unreadable line that cut its branch says why more is sent than raw", () => {
    const b = new SessionBuilder({ sessionId: "s-cut", cwd: "/w" });
    b.user("read it");
    summarizedRead(b, "r1", "a.ts", "t1", `- \`t1\` read a.ts: ${"all A's, ".repeat(60)}`);
    b.assistant("done");
    const lines = b.toJsonl().split("\n");
    const index = lines.findIndex((l) => l.includes('"context-prune-index"'));
    lines[index] = lines[index]!.slice(0, 40);
    const view = buildSessionView(parseSessionText(lines.join("\n")), { config });
    expect(view.errors).toHaveLength(1);
    expect(view.totals.modelChars!).toBeGreaterThan(view.totals.rawChars);
    expect(view.totals.cutAt).toBe(view.summaries[0]!.entryId);
    expect(view.totals.excess).toMatch(/^the pruner's summaries \(\d+ characters\) are sent while the calls they stand for are not stubbed \(1 not on this branch\); the branch starts at entry /);
  });

  it("a call still waiting for its result: the stand-in error result sent in its place is the reason", () => {
    const b = new SessionBuilder({ sessionId: "s-waiting", cwd: "/w" });
    b.user("build it");
    b.assistant({ toolCalls: [{ id: "w1", name: "bash", args: { command: "npm run build" } }] });
    const view = buildSessionView(parseSessionText(b.toJsonl()), { config });
    expect(view.totals.modelChars!).toBeGreaterThan(view.totals.rawChars);
    expect(view.totals.excess).toMatch(/^calls without a result yet are sent with a short error result in its place \(\d+ characters\)$/);
  });

  it("sent never exceeds raw without a reason: none when it does not", () => {
    const b = new SessionBuilder({ sessionId: "s-ok", cwd: "/w" });
    b.user("read it");
    summarizedRead(b, "r1", "a.ts", "t1", "- `t1` read a.ts: all A's");
    b.assistant("done");
    const view = buildSessionView(parseSessionText(b.toJsonl()), { config });
    expect(view.totals.modelChars!).toBeLessThan(view.totals.rawChars);
    expect(view.totals.excess).toBeUndefined();
    expect(view.totals.cutAt).toBeUndefined();
  });

  it("rewound spans are counted: a rewind that hides most of the context shows in both the figure and its share", () => {
    const b = new SessionBuilder({ sessionId: "s-rewound", cwd: "/w" });
    const markers = new MulliganMarkers(b);
    b.user("find the bug");
    b.assistant({ toolCalls: [{ id: "g1", name: "bash", args: { command: "grep -rn TODO ." } }] });
    const call = b.lastId;
    b.toolResult("g1", "bash", "x.ts:1: TODO\n".repeat(1500));
    const result = b.lastId;
    b.assistant({ toolCalls: [{ id: "rw", name: "context_rewind", args: {} }] });
    markers.rewind({ id: "rw-1", granularity: "last_tool_call_group", excludeToolCallId: "rw", hideEntryIds: [call, result], note: { what_happened: "an unfiltered grep", true_current_state: "nothing found yet", next: "grep src only" } });
    b.toolResult("rw", "context_rewind", "Rewound.");
    b.assistant("Grepping src only next.");
    const view = buildSessionView(parseSessionText(b.toJsonl()), { config });
    const { rawChars, modelChars, rewoundChars } = view.totals;
    expect(rawChars).toBeGreaterThan(19_000);
    expect(modelChars!).toBeLessThan(rawChars / 10);
    expect(rewoundChars).toBeGreaterThan(19_000);
    expect(rawChars - modelChars!).toBeGreaterThanOrEqual(rewoundChars!);
    expect(view.totals.rewindsNotApplied).toBeUndefined();
  });
});
