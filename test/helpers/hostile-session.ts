// Hostile Pi session files for property tests: a fast-check arbitrary of "line recipes" and an
// assembler that turns them into bytes together with what a correct reader must make of each line.
//
// The expectation is computed from the recipe, not by parsing: a recipe knows whether it wrote a
// well-formed entry, a header, a blank line or something that must be reported. The reader's rules
// it encodes (documented in core/src/session.ts and docs/reliability.md):
//   - only the first non-blank line may be the header; an entry there is kept and also reported;
//   - an entry needs a string `type`, a string `id`, a `parentId` that is a string or null, a
//     `message` object with a string `role` (type "message"), and the string fields its known type
//     needs (customType, summary, firstKeptEntryId, targetId); anything else in it is not checked;
//   - the second entry with an id already taken is reported, the first one is kept;
//   - a line that is not JSON, or JSON that is not such an object, is reported by line number.
import fc from "fast-check";
import { prunedSessionBuilder } from "./fixtures.ts";
import type { SessionBuilder } from "./session-builder.ts";

const ISO = "2025-01-01T12:00:00.000Z";

// Small pools, so random references often hit something that exists.
const CALL_IDS = ["c1", "c2", "c3", "call_1"] as const;
const TOOL_NAMES = ["read", "bash", "grep", "context_tree_query", "fetch_page"] as const;
const RESULT_TIMESTAMPS = [1_000, 2_000, 3_000] as const;
const SHORT_IDS = ["t1", "t2", "t3", "t10"] as const;
const PATHS = ["src/a.ts", "skills/x/SKILL.md", "../../etc/passwd", "/abs/path.txt", "C:\\u\\skills\\x\\SKILL.md"] as const;
export const PRUNE_TYPES = [
  "context-prune-index",
  "context-prune-summary",
  "context-prune-dedup-alias",
  "context-prune-chain",
  "context-prune-frontier",
  "context-prune-stats",
] as const;
const MULLIGAN_TYPES = ["mulligan:rewind", "mulligan:shrink", "mulligan:cancel", "mulligan:turn-metric", "mulligan:note"] as const;

/** A marker replaced by raw invalid UTF-8 bytes after JSON encoding (it only ever sits inside a JSON string). */
const BAD_UTF8_MARK = "@@BAD-UTF8@@";
/** A string value replaced by `[[[…"bottom"…]]]` nested this deep after encoding (JSON.stringify itself overflows at a few thousand). */
const DEEP_MARK = /"@@DEEP:(\d+)@@"/;
const BAD_UTF8_SEQUENCES = [[0xff], [0xfe, 0xfe], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]];

// ------------------------------------------------------------------------------------ values

/** Any JSON value, small. */
const weird: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, 0, -1, "", "t1", [], {}, true, false, 1e308, "\u0000", "\u2028", "<script>x</script>", "\u001b[31mred"),
  // An object that cannot become a string: `${x}`, String(x) and [x].join() throw on it.
  fc.constantFrom({ toString: 1 }, { toString: null, valueOf: null }, [{ toString: 1 }]),
  fc.jsonValue({ maxDepth: 2 }),
);

/** Mostly the valid arbitrary, sometimes anything at all. */
function maybe<T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 4, arbitrary: valid as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: weird });
}

const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constant(`before ${BAD_UTF8_MARK} after`) },
  { weight: 1, arbitrary: fc.constantFrom("line 1\nline 2\r\nline 3", "\ud800 lone surrogate", "x".repeat(3000)) },
);

const callId = maybe(fc.constantFrom(...CALL_IDS));
const toolName = maybe(fc.constantFrom(...TOOL_NAMES));
const resultTimestamp = maybe(fc.constantFrom(...RESULT_TIMESTAMPS));
const shortId = maybe(fc.constantFrom(...SHORT_IDS));
const args = maybe(
  fc.record({ path: maybe(fc.constantFrom(...PATHS)), command: maybe(text), nested: maybe(fc.jsonValue({ maxDepth: 3 })) }, { requiredKeys: [] }),
);

const textBlock = fc.record({ type: fc.constant("text"), text: maybe(text) });
const block: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: textBlock },
  { weight: 1, arbitrary: fc.record({ type: fc.constant("image"), data: maybe(fc.base64String({ maxLength: 40 })), mimeType: maybe(fc.constant("image/png")) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant("thinking"), thinking: maybe(text), thinkingSignature: maybe(fc.string()) }) },
  { weight: 3, arbitrary: fc.record({ type: fc.constant("toolCall"), id: callId, name: toolName, arguments: args }, { requiredKeys: ["type"] }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constantFrom("video", "future_block"), payload: weird }) },
  { weight: 1, arbitrary: weird },
);
const content = maybe(fc.oneof(text, fc.array(block, { maxLength: 4 })));

const message = fc.record(
  {
    role: fc.constantFrom("user", "assistant", "toolResult", "system", "bashExecution", "custom", "branchSummary", "compactionSummary", "future_role"),
    content,
    toolCallId: callId,
    toolName,
    isError: maybe(fc.boolean()),
    timestamp: resultTimestamp,
    command: maybe(text),
    output: maybe(text),
    summary: maybe(text),
    customType: maybe(fc.constantFrom(...PRUNE_TYPES)),
    stopReason: maybe(fc.constantFrom("stop", "toolUse", "length", "error")),
    details: weird,
  },
  { requiredKeys: ["role"] },
);

const toolCallRef = maybe(fc.record({ shortId, toolCallId: callId, resultTimestamp }, { requiredKeys: [] }));
const toolCallRecord = maybe(
  fc.record(
    {
      toolCallId: callId,
      toolName,
      args,
      resultText: maybe(text),
      isError: maybe(fc.boolean()),
      turnIndex: maybe(fc.nat(5)),
      resultTimestamp,
      spillPath: maybe(fc.constantFrom("/blobs/c1.txt", "../../outside.txt")),
      spillBytes: maybe(fc.nat()),
      resultPreview: maybe(text),
      contentHash: maybe(fc.string({ maxLength: 8 })),
    },
    { requiredKeys: [] },
  ),
);

const pruneData: Record<(typeof PRUNE_TYPES)[number], fc.Arbitrary<unknown>> = {
  "context-prune-index": maybe(fc.record({ toolCalls: maybe(fc.array(toolCallRecord, { maxLength: 4 })), refs: maybe(fc.array(toolCallRef, { maxLength: 4 })) }, { requiredKeys: [] })),
  "context-prune-summary": maybe(
    fc.record(
      { toolCallRefs: maybe(fc.array(toolCallRef, { maxLength: 4 })), toolCallIds: maybe(fc.array(callId, { maxLength: 3 })), toolNames: maybe(fc.array(toolName)), turnIndex: maybe(fc.nat(5)), timestamp: resultTimestamp },
      { requiredKeys: [] },
    ),
  ),
  "context-prune-dedup-alias": maybe(
    fc.record({ newToolCallId: callId, originalToolCallId: callId, newResultTimestamp: resultTimestamp, originalResultTimestamp: resultTimestamp }, { requiredKeys: [] }),
  ),
  "context-prune-chain": maybe(
    fc.record(
      {
        blockId: maybe(fc.constantFrom("b1", "b2", "b99")),
        startUserTimestamp: maybe(fc.nat()),
        finalAssistantTimestamp: maybe(fc.nat()),
        droppedToolCallIds: maybe(fc.array(callId, { maxLength: 3 })),
        droppedOccurrenceKeys: maybe(fc.array(maybe(fc.constantFrom("c1@1000", "c2@2000")), { maxLength: 3 })),
        protectedToolCallIds: maybe(fc.array(callId, { maxLength: 2 })),
        toolRefs: maybe(fc.array(shortId, { maxLength: 3 })),
        rangeSummaryText: maybe(text),
      },
      { requiredKeys: [] },
    ),
  ),
  "context-prune-frontier": maybe(
    fc.record({ lastAttemptedToolCallId: callId, lastAttemptedTimestamp: resultTimestamp, attemptedBatchCount: maybe(fc.nat()), outcome: maybe(fc.constantFrom("summarized", "skipped-trivial", "future-outcome")) }, { requiredKeys: [] }),
  ),
  "context-prune-stats": maybe(fc.record({ totalInputTokens: maybe(fc.nat()), totalCost: maybe(fc.double()), callCount: maybe(fc.nat()) }, { requiredKeys: [] })),
};

const mulliganData = maybe(
  fc.record({ schema: fc.constant("pi-mulligan"), v: maybe(fc.nat(3)), kind: maybe(fc.string()), markerId: maybe(fc.constantFrom("m1", "m2")), targetMarkerId: maybe(fc.constantFrom("m1", "m2")) }, { requiredKeys: [] }),
);

type Fields = { type: string } & Record<string, unknown>;

/** Fields of an entry whose envelope is well-formed (type, id and parentId are added by the assembler). */
const entryFields: fc.Arbitrary<Fields> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ type: fc.constant("message"), message }) as fc.Arbitrary<Fields> },
  {
    weight: 3,
    arbitrary: fc.constantFrom(...PRUNE_TYPES).chain((customType): fc.Arbitrary<Fields> =>
      customType === "context-prune-summary"
        ? fc.record({ type: fc.constant("custom_message"), customType: fc.constant(customType), content, display: maybe(fc.boolean()), details: pruneData[customType] })
        : fc.record({ type: fc.constant("custom"), customType: fc.constant(customType), data: pruneData[customType] }),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(...MULLIGAN_TYPES).chain((customType): fc.Arbitrary<Fields> =>
      customType === "mulligan:note"
        ? fc.record({ type: fc.constant("custom_message"), customType: fc.constant(customType), content })
        : fc.record({ type: fc.constant("custom"), customType: fc.constant(customType), data: mulliganData }),
    ),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant("compaction"), summary: text, firstKeptEntryId: fc.constantFrom("e1", "e2", "e5", "nowhere"), tokensBefore: maybe(fc.nat()) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant("branch_summary"), summary: text, fromId: maybe(fc.constantFrom("e1", "e3")) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant("context_edit"), targetId: fc.constantFrom("e1", "e2", "e3", "e4", "nowhere"), replacement: maybe(fc.oneof(fc.constant(null), fc.record({ content }))) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant("label"), targetId: fc.constantFrom("e1", "e2"), label: maybe(fc.constantFrom("mulligan:checkpoint:before", "plain")) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constantFrom("model_change", "thinking_level_change", "session_info", "usage"), name: maybe(text), provider: maybe(fc.string()) }) },
  // Entries of types a future Pi may add, with fields nobody knows.
  { weight: 1, arbitrary: fc.record({ type: fc.constantFrom("reaction", "snapshot_v4", "tool_approval"), payload: weird, message: weird }) },
);

/** Valid JSON that is not a usable line: each of these must be reported. */
const wrongShape: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, 42, "just a string", true, [1, 2], [{ type: "message" }]),
  fc.record({ id: fc.string(), parentId: fc.constant(null) }), // no type
  fc.record({ type: fc.oneof(fc.integer(), fc.constant(null), fc.array(fc.string())), id: fc.string() }),
  fc.record({ type: fc.constantFrom("custom", "message", "reaction"), id: fc.oneof(fc.integer(), fc.constant(null)), parentId: fc.constant(null) }),
  fc.record({ type: fc.constantFrom("custom", "reaction"), id: fc.string(), customType: fc.constant("x"), parentId: fc.oneof(fc.integer(), fc.constant({}), fc.constant([])) }),
  fc.record({ type: fc.constant("custom"), id: fc.string(), customType: fc.constant("x") }), // parentId missing
  fc.record({ type: fc.constant("message"), id: fc.string(), parentId: fc.constant(null), message: fc.oneof(fc.constant(null), fc.string(), fc.constant([]), fc.record({ content: fc.string() }), fc.record({ role: fc.integer() })) }),
  fc.record({ type: fc.constantFrom("custom", "custom_message"), id: fc.string(), parentId: fc.constant(null), customType: fc.oneof(fc.integer(), fc.constant(null)) }),
  fc.record({ type: fc.constant("compaction"), id: fc.string(), parentId: fc.constant(null), summary: fc.string() }), // no firstKeptEntryId
  fc.record({ type: fc.constantFrom("context_edit", "label"), id: fc.string(), parentId: fc.constant(null), targetId: fc.integer() }),
  fc.record({ type: fc.constant("branch_summary"), id: fc.string(), parentId: fc.constant(null), summary: fc.constant(null) }),
);

/** Bytes that are never JSON and never blank (each starts with a byte no JSON text can start with). */
const garbage: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.tuple(fc.constantFrom("#", "}", "NaN ", "undefined", "{'a':1}", "<html>", "\u001b[2J", "{\"type\":\"message\",\"id\":"), fc.string({ maxLength: 60 })).map(([head, tail]) =>
    new Uint8Array(Buffer.from((head + tail).replace(/\n/g, " "), "utf8")),
  ),
  fc.uint8Array({ maxLength: 80 }).map((bytes) => new Uint8Array([0xff, ...bytes.filter((b) => b !== 0x0a)])),
);

type IdChoice = { fresh: true } | { duplicate: number };
type ParentChoice = "root" | "previous" | "self" | { earlier: number } | { forward: number } | { dangling: string };

type LineRecipe =
  | { kind: "header"; version: unknown; cwd: unknown }
  | { kind: "entry"; fields: { type: string } & Record<string, unknown>; id: IdChoice; parent: ParentChoice; badUtf8: number; crlf: boolean; timestamp: unknown }
  | { kind: "coherent"; calls: number; summarize: boolean; spill: boolean }
  | { kind: "wrong"; value: unknown }
  | { kind: "garbage"; bytes: Uint8Array }
  | { kind: "blank"; text: string }
  | { kind: "big"; chars: number }
  | { kind: "deep"; depth: number };

const parentChoice: fc.Arbitrary<ParentChoice> = fc.oneof(
  { weight: 6, arbitrary: fc.constant("previous" as const) },
  { weight: 1, arbitrary: fc.constant("root" as const) },
  { weight: 1, arbitrary: fc.constant("self" as const) },
  { weight: 2, arbitrary: fc.nat(30).map((n) => ({ earlier: n })) },
  { weight: 1, arbitrary: fc.nat(30).map((n) => ({ forward: n })) },
  { weight: 1, arbitrary: fc.constantFrom("gone", "e999", "").map((id) => ({ dangling: id })) },
);

const lineRecipe: fc.Arbitrary<LineRecipe> = fc.oneof(
  {
    weight: 48,
    arbitrary: fc.record({
      kind: fc.constant("entry" as const),
      fields: entryFields,
      id: fc.oneof({ weight: 8, arbitrary: fc.constant({ fresh: true as const }) }, { weight: 1, arbitrary: fc.nat(30).map((n) => ({ duplicate: n })) }),
      parent: parentChoice,
      badUtf8: fc.nat(BAD_UTF8_SEQUENCES.length - 1),
      crlf: fc.boolean(),
      timestamp: maybe(fc.constantFrom(ISO, "not a date")),
    }),
  },
  { weight: 12, arbitrary: fc.record({ kind: fc.constant("coherent" as const), calls: fc.integer({ min: 1, max: 3 }), summarize: fc.boolean(), spill: fc.boolean() }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("wrong" as const), value: wrongShape }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("garbage" as const), bytes: garbage }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("blank" as const), text: fc.constantFrom("", " ", "\t", "\r", "  \t \r") }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("header" as const), version: maybe(fc.constantFrom(3, 4, 99)), cwd: maybe(fc.constantFrom("/workspace", "relative/dir", "")) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("big" as const), chars: fc.integer({ min: 10_000, max: 120_000 }) }) },
  // JSON.stringify overflows the stack somewhere past a few thousand levels; JSON.parse does not.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("deep" as const), depth: fc.integer({ min: 100, max: 8_000 }) }) },
);

export interface HostileFileRecipe {
  /** Start with a header line (most real files do); its cwd and version may be of any type. */
  header: boolean;
  headerFields: { cwd: unknown; version: unknown };
  lines: LineRecipe[];
  /** Leave the last line without its newline. */
  tornEnd: boolean;
  /** Prefix the file with a UTF-8 byte-order mark. */
  bom: boolean;
}

export const hostileFile: fc.Arbitrary<HostileFileRecipe> = fc.record({
  header: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  headerFields: fc.record({ cwd: maybe(fc.constant("/workspace")), version: maybe(fc.constant(3)) }),
  lines: fc.array(lineRecipe, { minLength: 0, maxLength: 40 }),
  tornEnd: fc.boolean(),
  bom: fc.boolean(),
});

// ------------------------------------------------------------------------------------ assembly

interface ExpectedLine {
  /** 1-based line number. */
  line: number;
  /** The entry id this line must produce. */
  entryId?: string;
  header?: boolean;
  /** The line must be listed among the bad lines. */
  bad: boolean;
}

export interface HostileFile {
  bytes: Buffer;
  lines: ExpectedLine[];
  /** Ids of the entries a reader must return, in file order. */
  entryIds: string[];
  /** Line numbers a reader must report. */
  badLines: number[];
  hasHeader: boolean;
}

type PlannedLine =
  | { kind: "json"; value: Record<string, unknown>; role: "entry" | "header"; badUtf8?: number; crlf?: boolean }
  | { kind: "bad"; bytes: Buffer }
  | { kind: "blank"; text: string };


/** Expands recipes into lines, assigns ids and parents, and computes what a reader must see. */
export function assemble(recipe: HostileFileRecipe): HostileFile {
  const planned: PlannedLine[] = [];
  if (recipe.header) planned.push({ kind: "json", role: "header", value: { type: "session", version: recipe.headerFields.version, id: "hostile-session", timestamp: ISO, cwd: recipe.headerFields.cwd } });

  // Pass 1: give every entry its id (so forward references and cycles are possible).
  const ids: string[] = [];
  let counter = 0;
  type Pending = { fields: Record<string, unknown>; id: string; parent: ParentChoice; badUtf8?: number; crlf?: boolean; timestamp?: unknown };
  const pendingEntries: (Pending | PlannedLine)[] = [];
  let turns = 0;
  const addEntry = (fields: Record<string, unknown>, idChoice: IdChoice, parent: ParentChoice, extra: { badUtf8?: number; crlf?: boolean; timestamp?: unknown } = {}) => {
    const id = "duplicate" in idChoice && ids.length > 0 ? ids[idChoice.duplicate % ids.length]! : `e${++counter}`;
    ids.push(id);
    pendingEntries.push({ fields, id, parent, ...extra });
  };
  for (const line of recipe.lines) {
    switch (line.kind) {
      case "entry":
        addEntry(line.fields, line.id, line.parent, { badUtf8: line.badUtf8, crlf: line.crlf, timestamp: line.timestamp });
        break;
      case "coherent":
        for (const fields of coherentBlock(line, ++turns)) addEntry(fields, { fresh: true }, "previous");
        break;
      case "big":
        addEntry({ type: "message", message: { role: "toolResult", toolCallId: "c1", toolName: "read", content: [{ type: "text", text: "B".repeat(line.chars) }], isError: false, timestamp: 1_000 } }, { fresh: true }, "previous");
        break;
      case "deep":
        addEntry({ type: "message", message: { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "read", arguments: { path: "src/a.ts", nested: `@@DEEP:${line.depth}@@` } }], timestamp: 1 } }, { fresh: true }, "previous");
        break;
      case "header":
        pendingEntries.push({ kind: "json", role: "header", value: { type: "session", version: line.version, id: "second-header", timestamp: ISO, cwd: line.cwd } });
        break;
      case "wrong":
        pendingEntries.push({ kind: "bad", bytes: Buffer.from(JSON.stringify(line.value), "utf8") });
        break;
      case "garbage":
        pendingEntries.push({ kind: "bad", bytes: Buffer.from(line.bytes) });
        break;
      case "blank":
        pendingEntries.push({ kind: "blank", text: line.text });
        break;
    }
  }

  // Pass 2: resolve parents.
  let entryIndex = -1;
  let previousId: string | null = null;
  for (const item of pendingEntries) {
    if (!("id" in item)) {
      planned.push(item);
      continue;
    }
    entryIndex++;
    const parentId = resolveParent(item.parent, item.id, entryIndex, ids, previousId);
    planned.push({ kind: "json", role: "entry", value: { type: item.fields.type, id: item.id, parentId, timestamp: item.timestamp ?? ISO, ...withoutType(item.fields) }, badUtf8: item.badUtf8, crlf: item.crlf });
    previousId = item.id;
  }

  // Pass 3: bytes, and the reader's expected view of each line.
  const chunks: Buffer[] = [];
  const expected: ExpectedLine[] = [];
  const accepted = new Set<string>();
  let seenFirst = false;
  let hasHeader = false;
  planned.forEach((line, i) => {
    const lineNumber = i + 1;
    let bytes: Buffer;
    const exp: ExpectedLine = { line: lineNumber, bad: false };
    if (line.kind === "blank") {
      bytes = Buffer.from(line.text, "utf8");
    } else if (line.kind === "bad") {
      bytes = line.bytes;
      exp.bad = true;
      seenFirst = true;
    } else {
      bytes = encodeJsonLine(line.value, line.badUtf8);
      if (line.crlf) bytes = Buffer.concat([bytes, Buffer.from("\r")]);
      if (line.role === "header") {
        if (!seenFirst) {
          exp.header = true;
          hasHeader = true;
        } else exp.bad = true;
      } else {
        const id = line.value.id as string;
        if (!seenFirst) exp.bad = true; // no header: the entry is kept and the line reported
        if (accepted.has(id)) exp.bad = true;
        else {
          accepted.add(id);
          exp.entryId = id;
        }
      }
      seenFirst = true;
    }
    if (i === 0 && recipe.bom) bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    chunks.push(bytes);
    if (i < planned.length - 1 || !recipe.tornEnd) chunks.push(Buffer.from([0x0a]));
    expected.push(exp);
  });
  // A blank line with nothing after it is still a line for numbering but never reported.
  return {
    bytes: Buffer.concat(chunks),
    lines: expected,
    entryIds: expected.filter((l) => l.entryId !== undefined).map((l) => l.entryId!),
    badLines: expected.filter((l) => l.bad).map((l) => l.line),
    hasHeader,
  };
}

function withoutType(fields: Record<string, unknown>): Record<string, unknown> {
  const { type: _type, ...rest } = fields;
  return rest;
}

function resolveParent(choice: ParentChoice, ownId: string, index: number, ids: string[], previousId: string | null): string | null {
  if (choice === "root") return null;
  if (choice === "previous") return previousId;
  if (choice === "self") return ownId;
  if ("earlier" in choice) return index === 0 ? null : ids[choice.earlier % index]!;
  if ("forward" in choice) return index + 1 >= ids.length ? previousId : ids[index + 1 + (choice.forward % (ids.length - index - 1))]!;
  return choice.dangling;
}

function encodeJsonLine(value: Record<string, unknown>, badUtf8: number | undefined): Buffer {
  let json = JSON.stringify(value);
  const deep = DEEP_MARK.exec(json);
  if (deep) {
    const depth = Number(deep[1]);
    json = json.replace(DEEP_MARK, "[".repeat(depth) + '"bottom"' + "]".repeat(depth));
  }
  if (!json.includes(BAD_UTF8_MARK)) return Buffer.from(json, "utf8");
  const bad = Buffer.from(BAD_UTF8_SEQUENCES[(badUtf8 ?? 0) % BAD_UTF8_SEQUENCES.length]!);
  const parts = json.split(BAD_UTF8_MARK).map((p) => Buffer.from(p, "utf8"));
  const out: Buffer[] = [];
  parts.forEach((p, i) => {
    if (i > 0) out.push(bad);
    out.push(p);
  });
  return Buffer.concat(out);
}

/** A realistic turn: user prompt, assistant calls, results, and (optionally) the pruner's entries for them. */
function coherentBlock(recipe: { calls: number; summarize: boolean; spill: boolean }, n: number): Record<string, unknown>[] {
  const calls = Array.from({ length: recipe.calls }, (_, i) => ({ id: CALL_IDS[(n + i) % CALL_IDS.length]!, name: TOOL_NAMES[(n + i) % 3]!, ts: RESULT_TIMESTAMPS[i % RESULT_TIMESTAMPS.length]! + n }));
  const out: Record<string, unknown>[] = [
    { type: "message", message: { role: "user", content: `turn ${n}`, timestamp: n } },
    {
      type: "message",
      message: { role: "assistant", content: calls.map((c) => ({ type: "toolCall", id: c.id, name: c.name, arguments: { path: PATHS[n % PATHS.length] } })), stopReason: "toolUse", timestamp: n },
    },
    ...calls.map((c) => ({ type: "message", message: { role: "toolResult", toolCallId: c.id, toolName: c.name, content: [{ type: "text", text: `output of ${c.id} `.repeat(50) }], isError: false, timestamp: c.ts } })),
  ];
  if (recipe.summarize) {
    const refs = calls.map((c, i) => ({ shortId: `t${n * 10 + i}`, toolCallId: c.id, resultTimestamp: c.ts }));
    const records = calls.map((c) => ({
      toolCallId: c.id,
      toolName: c.name,
      args: { path: PATHS[n % PATHS.length] },
      resultText: recipe.spill ? "" : `output of ${c.id} `.repeat(50),
      isError: false,
      turnIndex: n,
      resultTimestamp: c.ts,
      ...(recipe.spill ? { spillPath: `/blobs/${c.id}-${c.ts}.txt`, spillBytes: 900, resultPreview: "output of" } : {}),
    }));
    out.push({ type: "custom", customType: "context-prune-index", data: { toolCalls: records, refs } });
    if (!recipe.spill) out.push({ type: "custom_message", customType: "context-prune-summary", content: refs.map((r) => `- \`${r.shortId}\` done`).join("\n"), display: false, details: { toolCallRefs: refs, toolNames: [], turnIndex: n } });
    out.push({ type: "custom", customType: "context-prune-frontier", data: { lastAttemptedToolCallId: calls.at(-1)!.id, lastAttemptedTimestamp: calls.at(-1)!.ts, outcome: "summarized" } });
  }
  out.push({ type: "message", message: { role: "assistant", content: [{ type: "text", text: `done ${n}` }], stopReason: "stop", timestamp: n } });
  return out;
}

// ------------------------------------------------------------------------------------ sessions to cut

/**
 * A session holding every entry the pruner writes: a spilled record, a summarized batch with its
 * summary and frontier, a dedup alias, the chain entry that compresses the first exchange, and
 * stats; the same entries and fields the pruner persists, built rather than recorded.
 */
export function everyPrunerEntrySession(): SessionBuilder {
  const b = prunedSessionBuilder();
  const message = (match: (m: { role: string; toolCallId?: string; content?: unknown }) => boolean) =>
    (b.entries.find((e) => e.type === "message" && match((e as { message: { role: string } }).message)) as { message: { timestamp: number } }).message.timestamp;
  const resultAt = (id: string) => message((m) => m.role === "toolResult" && m.toolCallId === id);
  const textOf = (m: { content?: unknown }) => (Array.isArray(m.content) ? m.content.map((c: { text?: string }) => c.text ?? "").join("") : String(m.content));
  b.custom("context-prune-frontier", { lastAttemptedToolCallId: "c4", lastAttemptedToolName: "read", lastAttemptedTimestamp: resultAt("c4"), attemptedBatchCount: 2, attemptedToolCallCount: 3, outcome: "skipped-deduped" });
  b.custom("context-prune-chain", {
    blockId: "b1",
    startUserTimestamp: message((m) => m.role === "user" && textOf(m) === "fix the build"),
    finalAssistantTimestamp: message((m) => m.role === "assistant" && textOf(m) === "built"),
    droppedToolCallIds: ["c2", "c3"],
    droppedOccurrenceKeys: [`c2@${resultAt("c2")}`, `c3@${resultAt("c3")}`],
    protectedToolCallIds: ["c1"],
    toolRefs: ["t1", "t2"],
    compressedAt: resultAt("c4") + 500,
    bodySource: "batch-summaries",
  });
  b.custom("context-prune-stats", { totalInputTokens: 420, totalOutputTokens: 36, totalCost: 0.0021, callCount: 1, chainsCompressed: 1, rangesSummarized: 0 });
  b.user("and now?");
  b.assistant("nothing left to do");
  return b;
}

/**
 * `count` cut offsets of a session file from a seed: its two ends, then in turn the end of a
 * line without its newline, the byte after the newline, and a point inside a line.
 */
export function sampleCuts(bytes: Buffer, count: number, seed: number): number[] {
  const lineEnds: number[] = [];
  for (let i = bytes.indexOf(0x0a); i >= 0; i = bytes.indexOf(0x0a, i + 1)) lineEnds.push(i);
  const picks = fc.sample(fc.tuple(fc.nat(), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true })), { numRuns: count - 2, seed });
  return [
    0,
    bytes.length,
    ...picks.map(([k, f], i) => {
      const line = k % lineEnds.length;
      const start = line === 0 ? 0 : lineEnds[line - 1]! + 1;
      if (i % 3 === 0) return lineEnds[line]!;
      if (i % 3 === 1) return lineEnds[line]! + 1;
      return start + Math.floor(f * (lineEnds[line]! - start));
    }),
  ];
}
