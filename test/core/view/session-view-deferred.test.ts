// The session view makes what the Sessions tree's row does not show (summaries, chains, compactions)
// when it is first read. Read late, it must be what a view read at once holds: after the file grew
// and its new lines were read into the same data, through copies and JSON, on sessions of each writer.
import { afterAll, describe, expect, it } from "vitest";
import { appendFileSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readSessionFile, readSessionTail, type SessionData } from "../../../core/src/session/session-reader.ts";
import { buildSessionView, type SessionView } from "../../../core/src/view/session-view.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { prunedSessionBuilder } from "../../helpers/fixtures.ts";
import { condenseSession } from "../../helpers/condense-sessions.ts";

const config = DEFAULT_CONFIG;
const dir = mkdtempSync(join(tmpdir(), "pi-pruner-deferred-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fixture = (name: string) => new URL(`../../fixtures/${name}`, import.meta.url).pathname;
const FILES: [string, () => string][] = [
  ["pi-pruner's own session (summaries, a spill, an alias, markers)", () => written("pruned.jsonl", prunedSessionBuilder().toJsonl())],
  ["pi-condense's session (chains, diagnostics, a compaction)", () => written("condense.jsonl", condenseSession().builder.toJsonl())],
  ["a real Pi session", () => copied("pi/real-session.jsonl")],
  ["pi-condense's recorded session, compacted", () => copied("foreign/condense-compaction/session.jsonl")],
  ["pi-condense's recorded session, branched", () => copied("foreign/condense-branched/session.jsonl")],
  ["pi-mulligan's recorded session", () => copied("foreign/mulligan-pi-1-6/session.jsonl")],
];

function written(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text.endsWith("\n") ? text : `${text}\n`);
  return path;
}

function copied(name: string): string {
  const path = join(dir, name.replaceAll("/", "-"));
  copyFileSync(fixture(name), path);
  return path;
}

/** Every field read at once, as plain data. */
function readAtOnce(view: SessionView): unknown {
  return JSON.parse(JSON.stringify(view));
}

/**
 * Appends, after the file's last entry, what would change the deferred parts of a view of the grown
 * file (a prompt, a pruner summary, a Pi compaction) and reads it into `data`.
 */
async function grow(path: string, data: SessionData): Promise<void> {
  const last = data.entries[data.entries.length - 1]!;
  const timestamp = "2030-01-01T00:00:00.000Z";
  const lines = [
    { type: "message", id: "grown-1", parentId: last.id, timestamp, message: { role: "user", content: "one more prompt", timestamp: 1893456000000 } },
    { type: "custom_message", id: "grown-2", parentId: "grown-1", timestamp, customType: "context-prune-summary", content: "a summary written later", display: false, details: { toolCallRefs: [], turnIndex: 99 } },
    { type: "compaction", id: "grown-3", parentId: "grown-2", timestamp, summary: "compacted later", firstKeptEntryId: "grown-1", tokensBefore: 1000 },
  ];
  appendFileSync(path, lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
  const tail = await readSessionTail(path, data);
  expect(tail.entries.map((e) => e.id)).toEqual(["grown-1", "grown-2", "grown-3"]);
  // A view of the grown file does hold them: a late read that looked at `data` again would differ.
  const grown = buildSessionView(data, { config });
  expect(grown.compactions.map((c) => c.entryId)).toContain("grown-3");
  expect(grown.summaries.map((s) => s.entryId)).toContain("grown-2");
}

describe("the parts of a session view made when first read", () => {
  it.each(FILES)("%s: read after the file grew, they are what a view read at once holds", async (_name, make) => {
    const path = make();
    const data = await readSessionFile(path, { lazyBodies: true });
    const atOnce = readAtOnce(buildSessionView(data, { config }));
    const late = buildSessionView(data, { config });
    await grow(path, data);
    // The late view's deferred parts are read only now, from data that holds one more entry.
    expect(readAtOnce(late)).toEqual(atOnce);
    expect(JSON.stringify(late.summaries)).toBe(JSON.stringify((atOnce as SessionView).summaries));
  });

  it("they are own, enumerable fields: a copy of an unread view holds their values, in the order of the others", () => {
    const path = written("copy.jsonl", condenseSession().builder.toJsonl());
    return readSessionFile(path, { lazyBodies: true }).then((data) => {
      const read = buildSessionView(data, { config });
      const expected = { summaries: read.summaries, chains: read.chains, compactions: read.compactions };
      const unread = buildSessionView(data, { config });
      const copy = { ...unread };
      expect(Object.keys(copy)).toEqual(Object.keys(read));
      expect({ summaries: copy.summaries, chains: copy.chains, compactions: copy.compactions }).toEqual(expected);
      expect(expected.chains.length).toBeGreaterThan(0);
      expect(expected.summaries.length).toBeGreaterThan(0);
      expect(expected.compactions.length).toBeGreaterThan(0);
      expect(structuredClone(buildSessionView(data, { config })).chains).toEqual(expected.chains);
    });
  });

  it("a value written before the first read is the one read", async () => {
    const data = await readSessionFile(written("write.jsonl", prunedSessionBuilder().toJsonl()), { lazyBodies: true });
    const view = buildSessionView(data, { config });
    view.summaries = [];
    expect(view.summaries).toEqual([]);
    expect(buildSessionView(data, { config }).summaries.length).toBeGreaterThan(0);
  });
});
