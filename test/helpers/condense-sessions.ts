// A session in the shapes pi-condense 2.9.1 really writes, for the tests of how a view tells a
// person what another writer did: its summaries (with its own ref footer), index entries (a spill
// with an absolute path and no short ref), frontier, stats, one flush-metrics entry per flush
// attempt, its chain entries (a fused one, and a deterministic one it wrote after Pi's compaction
// had removed the chain), and the diagnostics its render wrote for chains it could not find.
//
// What pi-condense's code writes, as read from its source:
// - a summarized batch: the summary custom_message first, then its index entry; the summary ends
//   with "\n\n---\n**Summarized tool refs**: `t1`\nUse `context_tree_query` …";
// - an oversized result is spilled at turn_end, before any summary, to
//   <sessionDir>/<sessionId>-blobs/<id>_<resultTimestamp>.txt (absolute), and indexed with no short ref;
// - a flush ends with frontier and stats entries, then any chain entries, and always (whatever its
//   outcome, even "empty" or "error") one `context-prune-flush-metrics` entry
//   {ts, trigger, capturedBatches, processedBatches, outcome, metrics};
// - a chain is found on the raw branch (not the compacted context), so it compresses chains Pi's
//   compaction already removed; one no summary covers gets a backfilled index entry and a
//   deterministic body; its render then writes `context-prune-diagnostic`
//   {kind: "unresolved-range", detail: "blockId=bN start=… final=…"} for every chain it cannot find.
//
// The story (rolling window 1): task 1 reads the parser, runs the tests (a 70 KB log, spilled) and
// reads the README, summarized at its end; task 2 reads and edits the rule table (trivial batches),
// and its flush compresses task 1's chain (b1, a fused summary); task 3 runs the whole suite and its
// flush fails (the summarizer answered HTTP 500); Pi compacts before task 4, keeping task 3 on;
// task 4 recovers `t1` with context_tree_query, and a budget flush summarizes the pending work and
// compresses task 2's chain (b2, deterministic), which compaction had already removed.
import { SessionBuilder } from "./session-builder.ts";

export const CONDENSE_SESSION_ID = "condense-2-9-1";

const CONDENSE_TEXT = {
  parser: ["export function parse(input: string) {", "  const rules = loadRules();", ...Array.from({ length: 40 }, (_, i) => `  // rule ${i}: see rules.ts`), "  return apply(rules, input);", "}"].join("\n"),
  testLog: Array.from({ length: 1400 }, (_, i) => `FAIL test/parser.test.ts > rule ${i} > matches (expected a token, got none)`).join("\n"),
  readme: "# Parser\n\n" + "The parser reads a rule table and applies it.\n".repeat(30),
  rules: "export const rules = [];\n",
  suiteLog: Array.from({ length: 400 }, (_, i) => `PASS test/suite-${i}.test.ts (${i % 9} ms)`).join("\n"),
  fusedSummary: "Read the parser and the README; the test log (spilled) shows every rule failing because the rule table is empty.",
} as const;

export interface CondenseSession {
  builder: SessionBuilder;
  /** The spill file pi-condense wrote: its name, and the absolute path its record keeps. */
  spill: { fileName: string; recordedPath: string; text: string };
  ids: {
    task1User: string;
    readParser: string;
    testRun: string;
    readReadme: string;
    task1Final: string;
    task2User: string;
    readRules: string;
    editRules: string;
    task2Final: string;
    task3User: string;
    suiteRun: string;
    task3Final: string;
    failedFlush: string;
    compaction: string;
    recovery: string;
    budgetFlush: string;
    chainB1: string;
    chainB2: string;
    unresolvedB1: string;
    unresolvedB2: string;
  };
}

const METRICS = { openCycleThinkingTokens: 0, largestChainSharePct: 40, frontierGapTokens: 0 };

/** pi-condense's summary text: the summarizer's bullets with their refs, then its footer. */
function summaryText(bullets: string, refs: string[]): string {
  return `${bullets}\n\n---\n**Summarized tool refs**: ${refs.map((r) => `\`${r}\``).join(", ")}\nUse \`context_tree_query\` with these refs to retrieve the original full outputs.`;
}

/**
 * The session, its file written where `oldSessionDir` says pi-condense ran it: the spill's
 * recorded path names that folder's blobs, not the folder the file is read from later.
 * `spillBytes` is the size the spill's record gives (default the log's own): another makes the
 * session file's copy of the log not the spilled output, so nothing but the spill file holds it.
 */
export function condenseSession(options: { cwd?: string; oldSessionDir?: string; sessionId?: string; spillBytes?: number } = {}): CondenseSession {
  const oldSessionDir = options.oldSessionDir ?? "/home/alice/.pi/agent/sessions/--home-alice-parser--";
  const sessionId = options.sessionId ?? CONDENSE_SESSION_ID;
  const b = new SessionBuilder({ sessionId, cwd: options.cwd ?? "/home/alice/parser", startTime: Date.UTC(2025, 2, 3, 9, 0, 0) });
  const ts = (entryId: string) => (b.entry(entryId) as unknown as { message: { timestamp: number } }).message.timestamp;
  const entryTime = () => Date.parse(b.entry(b.lastId).timestamp);
  const use = (name: string, args: Record<string, unknown>, text: string, id: string) => {
    b.assistant({ toolCalls: [{ name, args, id }] });
    b.toolResult(id, name, text);
    return b.lastId;
  };
  const record = (id: string, name: string, args: Record<string, unknown>, text: string, resultEntry: string, turnIndex: number) => ({
    toolCallId: id,
    toolName: name,
    args,
    resultText: text,
    isError: false,
    turnIndex,
    timestamp: ts(resultEntry) - 1000,
    resultTimestamp: ts(resultEntry),
  });
  const summarize = (ref: string, bullet: string, rec: ReturnType<typeof record>) => {
    b.customMessage("context-prune-summary", summaryText(`- \`${ref}\` ${bullet}`, [ref]), {
      toolCallRefs: [{ shortId: ref, toolCallId: rec.toolCallId, resultTimestamp: rec.resultTimestamp }],
      toolNames: [rec.toolName],
      turnIndex: rec.turnIndex,
      timestamp: rec.timestamp,
    });
    b.custom("context-prune-index", { toolCalls: [rec] });
  };
  const flushEnd = (trigger: string, outcome: string, captured: number, processed: number) => {
    b.custom("context-prune-flush-metrics", { ts: 0, trigger, capturedBatches: captured, processedBatches: processed, outcome, metrics: METRICS });
    (b.entry(b.lastId) as unknown as { data: { ts: number } }).data.ts = entryTime();
    return b.lastId;
  };
  const frontier = (rec: { toolCallId: string; toolName: string; turnIndex: number; timestamp: number }, outcome: string, batches: number) =>
    b.custom("context-prune-frontier", {
      lastAttemptedToolCallId: rec.toolCallId,
      lastAttemptedToolName: rec.toolName,
      lastAttemptedTurnIndex: rec.turnIndex,
      lastAttemptedTimestamp: rec.timestamp,
      attemptedBatchCount: batches,
      attemptedToolCallCount: batches,
      rawCharCount: 2000,
      summaryCharCount: 300,
      outcome,
    });
  const stats = (calls: number, chains: number, ranges: number) =>
    b.custom("context-prune-stats", { totalInputTokens: 900 * calls, totalOutputTokens: 120 * calls, totalCost: 0.002 * calls, callCount: calls, chainsCompressed: chains, rangesSummarized: ranges });

  b.modelChange("mock", "m");
  b.raw({ type: "thinking_level_change", thinkingLevel: "off" });

  // Task 1.
  b.user("The parser test fails: find out why.");
  const task1User = b.lastId;
  const readParser = use("read", { path: "src/parser.ts" }, CONDENSE_TEXT.parser, "call_read_parser");
  const testRun = use("bash", { command: "npm test" }, CONDENSE_TEXT.testLog, "call_npm_test");
  // turn_end spills the oversized log at once, under no short ref.
  const spillName = `call_npm_test_${ts(testRun)}.txt`;
  const recordedPath = `${oldSessionDir}/${sessionId}-blobs/${spillName}`;
  const testRecord = record("call_npm_test", "bash", { command: "npm test" }, "", testRun, 1);
  b.custom("context-prune-index", {
    toolCalls: [{ ...testRecord, spillPath: recordedPath, spillBytes: options.spillBytes ?? CONDENSE_TEXT.testLog.length, resultPreview: CONDENSE_TEXT.testLog.slice(0, 200), contentHash: "5f0c" }],
  });
  const readReadme = use("read", { path: "README.md" }, CONDENSE_TEXT.readme, "call_read_readme");
  b.assistant("The rule table is empty: every rule fails to match. See the test log.");
  const task1Final = b.lastId;
  const parserRecord = record("call_read_parser", "read", { path: "src/parser.ts" }, CONDENSE_TEXT.parser, readParser, 0);
  const readmeRecord = record("call_read_readme", "read", { path: "README.md" }, CONDENSE_TEXT.readme, readReadme, 2);
  summarize("t1", "read src/parser.ts: parse() applies the rules loadRules() returns.", parserRecord);
  summarize("t2", "read README.md: the parser reads a rule table and applies it.", readmeRecord);
  frontier(readmeRecord, "summarized", 2);
  stats(2, 0, 0);
  flushEnd("message-end", "summarized", 2, 2);

  // Task 2: two small calls (below minBatchChars); its flush compresses task 1's chain.
  b.user("Fix the rule table.");
  const task2User = b.lastId;
  const readRules = use("read", { path: "src/rules.ts" }, CONDENSE_TEXT.rules, "call_read_rules");
  const editRules = use("edit", { path: "src/rules.ts", oldText: "[]", newText: "[wordRule]" }, "Successfully replaced text in src/rules.ts.", "call_edit_rules");
  b.assistant("Fixed: the rule table now holds the word rule.");
  const task2Final = b.lastId;
  frontier(record("call_edit_rules", "edit", {}, "", editRules, 4), "skipped-trivial", 2);
  stats(3, 1, 1);
  b.custom("context-prune-chain", {
    blockId: "b1",
    startUserTimestamp: ts(task1User),
    droppedToolCallIds: ["call_read_parser", "call_npm_test", "call_read_readme"],
    finalAssistantTimestamp: ts(task1Final),
    toolRefs: ["t1", "t2"],
    compressedAt: ts(task2Final) + 10,
    rangeSummaryText: CONDENSE_TEXT.fusedSummary,
    droppedOccurrenceKeys: [`call_read_parser@${ts(readParser)}`, `call_npm_test@${ts(testRun)}`, `call_read_readme@${ts(readReadme)}`],
  });
  const chainB1 = b.lastId;
  flushEnd("message-end", "skipped-trivial", 2, 2);

  // Task 3: its flush fails (the summarizer answered HTTP 500); nothing is persisted but the record.
  b.user("Run the whole suite.");
  const task3User = b.lastId;
  const suiteRun = use("bash", { command: "npm run test:all" }, CONDENSE_TEXT.suiteLog, "call_suite");
  b.assistant("All 400 suites pass.");
  const task3Final = b.lastId;
  const failedFlush = flushEnd("message-end", "error", 1, 0);

  // Pi compacts before task 4, keeping task 3 on.
  b.compaction({ firstKeptEntryId: task3User, summary: "The parser's rule table was empty; it now holds the word rule and the suite passes.", tokensBefore: 30000 });
  const compaction = b.lastId;

  // Task 4: the agent reads t1 back; a budget flush summarizes what is pending and compresses
  // task 2's chain from the raw branch, though compaction removed it.
  b.user("Now update the changelog.");
  const recovery = use("context_tree_query", { toolCallIds: ["t1"] }, `Tool: read\nArguments: {"path":"src/parser.ts"}\nOutput:\n${CONDENSE_TEXT.parser}`, "call_recover");
  const suiteRecord = record("call_suite", "bash", { command: "npm run test:all" }, CONDENSE_TEXT.suiteLog, suiteRun, 5);
  const recoveryRecord = record("call_recover", "context_tree_query", { toolCallIds: ["t1"] }, "recovered", recovery, 6);
  summarize("t3", "bash npm run test:all: all 400 suites pass.", suiteRecord);
  summarize("t4", "context_tree_query t1: the parser source, recovered.", recoveryRecord);
  frontier(recoveryRecord, "summarized", 2);
  const rulesRecord = record("call_read_rules", "read", { path: "src/rules.ts" }, CONDENSE_TEXT.rules, readRules, -1);
  const editRecord = record("call_edit_rules", "edit", { path: "src/rules.ts", oldText: "[]", newText: "[wordRule]" }, "Successfully replaced text in src/rules.ts.", editRules, -1);
  b.custom("context-prune-index", {
    toolCalls: [rulesRecord, editRecord],
    backfilled: true,
    refs: [
      { shortId: "t5", toolCallId: "call_read_rules", resultTimestamp: rulesRecord.resultTimestamp },
      { shortId: "t6", toolCallId: "call_edit_rules", resultTimestamp: editRecord.resultTimestamp },
    ],
  });
  b.custom("context-prune-chain", {
    blockId: "b2",
    startUserTimestamp: ts(task2User),
    droppedToolCallIds: ["call_read_rules", "call_edit_rules"],
    finalAssistantTimestamp: ts(task2Final),
    toolRefs: ["t5", "t6"],
    compressedAt: ts(recovery) + 10,
    rangeSummaryText: "- `t5` read src/rules.ts\n- `t6` edit src/rules.ts",
    bodySource: "deterministic",
    droppedOccurrenceKeys: [`call_read_rules@${ts(readRules)}`, `call_edit_rules@${ts(editRules)}`],
  });
  const chainB2 = b.lastId;
  stats(5, 2, 1);
  const budgetFlush = flushEnd("budget", "summarized", 2, 2);
  // Its render finds neither chain in the compacted context.
  b.custom("context-prune-diagnostic", { kind: "unresolved-range", detail: `blockId=b1 start=${ts(task1User)} final=${ts(task1Final)}` });
  const unresolvedB1 = b.lastId;
  b.custom("context-prune-diagnostic", { kind: "unresolved-range", detail: `blockId=b2 start=${ts(task2User)} final=${ts(task2Final)}` });
  const unresolvedB2 = b.lastId;
  use("edit", { path: "CHANGELOG.md", oldText: "## Unreleased", newText: "## Unreleased\n- parser: the word rule" }, "Successfully replaced text in CHANGELOG.md.", "call_changelog");
  b.assistant("Updated the changelog.");
  flushEnd("message-end", "empty", 0, 0);

  return {
    builder: b,
    spill: { fileName: spillName, recordedPath, text: CONDENSE_TEXT.testLog },
    ids: {
      task1User,
      readParser,
      testRun,
      readReadme,
      task1Final,
      task2User,
      readRules,
      editRules,
      task2Final,
      task3User,
      suiteRun,
      task3Final,
      failedFlush,
      compaction,
      recovery,
      budgetFlush,
      chainB1,
      chainB2,
      unresolvedB1,
      unresolvedB2,
    },
  };
}
