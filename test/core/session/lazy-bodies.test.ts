// Sessions read with lazyBodies: long bodies stay on disk, views stay exact, text comes back on request.
import { appendFileSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { BodyCache, LAZY_BODY_MIN_CHARS, standIn, withBodies } from "../../../core/src/session/lazy-bodies.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";
import { contentText } from "../../../core/src/shapes/messages.ts";
import { buildModelView, buildModelViewWithBodies } from "../../../core/src/view/model-view.ts";
import { readSessionFile, readSessionTail } from "../../../core/src/session/session-reader.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { largeSession } from "../../vscode/fixtures/sessions.ts";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "pi-pruner-bodies-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
function write(text: string): string {
  const path = join(dir, `s${++counter}.jsonl`);
  writeFileSync(path, text);
  return path;
}

const config = { ...DEFAULT_CONFIG, protectedPaths: [...DEFAULT_CONFIG.protectedPaths] };
const long = (label: string, n = 3000) => `${label}\n${"line of output ".repeat(Math.ceil(n / 15)).slice(0, n)}`;

/** Every body kind, multibyte text, escapes, an image, and the pruner's own entries. */
function mixedSession(): SessionBuilder {
  const b = new SessionBuilder();
  // A long pasted prompt: the session's label comes from it, so it must stay text.
  b.user([{ type: "text", text: `look at this ${"pasted code; ".repeat(200)}` }, { type: "image", data: "iVBOR".repeat(600), mimeType: "image/png" }]);
  b.assistant({ thinking: `ünïcödé → thinking ${"∑".repeat(2000)}`, toolCalls: [{ name: "read", args: { path: "src/a.ts" } }, { name: "bash", args: { command: "ls" } }] });
  b.toolResult(b.lastToolCallIds[0]!, "read", `${long("a.ts")}\n"quoted" \\ back\tslash \u0001 ✓ 😀`);
  b.toolResult(b.lastToolCallIds[1]!, "bash", "short output");
  b.custom("context-prune-index", {
    toolCalls: [{ toolCallId: "call_1", toolName: "read", args: { path: "src/a.ts" }, resultText: long("a.ts raw"), contentHash: "h1" }],
    refs: [{ shortId: "t1", toolCallId: "call_1" }],
  });
  b.customMessage("context-prune-summary", "- `t1` read src/a.ts: what it holds", { toolCallRefs: [{ shortId: "t1", toolCallId: "call_1" }], toolNames: ["read"], turnIndex: 1 });
  b.raw({ type: "message", message: { role: "bashExecution", command: "make", output: long("make output", 5000), exitCode: 0, timestamp: 1 } });
  b.assistant("done");
  return b;
}

/** Messages with the text of every body, as the model would get them. */
function texts(messages: readonly AgentMessage[]): string[] {
  return messages.map((m) => JSON.stringify(m));
}

describe("lazy bodies", () => {
  const cases: [string, () => string][] = [
    ["a session with every kind of body", () => mixedSession().toJsonl()],
    ["a session Pi 1.6 wrote", () => readFileSync(join(here, "..", "..", "fixtures", "pi", "real-session.jsonl"), "utf8")],
    ["a pruned session of 300 KB", () => largeSession("/w", 300_000).text],
    ["a session starting with a byte-order mark and no header", () => "\ufeff" + mixedSession().toJsonl({ withHeader: false })],
  ];

  for (const [name, text] of cases) {
    it(`${name}: the view is the same as with the bodies in memory, and withBodies gives back every entry`, async () => {
      const path = write(text());
      const full = await readSessionFile(path);
      const lazy = await readSessionFile(path, { lazyBodies: true });
      expect(buildSessionView(lazy, { config })).toEqual(buildSessionView(full, { config }));
      expect(await withBodies(path, lazy.elided, lazy.entries)).toEqual(full.entries);
      expect(lazy.errors).toEqual(full.errors);
    });
  }

  it("holds no long body in memory, only a stand-in of the same length", async () => {
    const path = write(mixedSession().toJsonl());
    const full = await readSessionFile(path);
    const lazy = await readSessionFile(path, { lazyBodies: true });
    const result = (data: typeof full) => (data.entries.find((e) => e.type === "message" && (e as { message: AgentMessage }).message.role === "toolResult") as { message: AgentMessage }).message;
    const fullText = contentText((result(full) as { content: string }).content);
    const lazyText = contentText((result(lazy) as { content: string }).content);
    expect(fullText.length).toBeGreaterThan(LAZY_BODY_MIN_CHARS);
    expect(lazyText).toHaveLength(fullText.length);
    expect(lazyText).not.toContain("line of output");
    // Five lines had long bodies: the user's image, the thinking, the read's output, the index record, the shell output.
    expect([...(lazy.elided?.keys() ?? [])]).toHaveLength(5);
    // The short bash output stays as it was.
    expect(JSON.stringify(lazy.entries)).toContain("short output");
  });

  it("the model view needs the bodies: refused on lazy data, exact with them read back", async () => {
    const path = write(mixedSession().toJsonl());
    const full = await readSessionFile(path);
    const lazy = await readSessionFile(path, { lazyBodies: true });
    expect(() => buildModelView(lazy, { config })).toThrow(/lazyBodies/);
    const expected = buildModelView(full, { config });
    const got = await buildModelViewWithBodies(path, lazy, { config });
    expect(texts(got.messages)).toEqual(texts(expected.messages));
    expect([got.rawChars, got.modelChars]).toEqual([expected.rawChars, expected.modelChars]);
  });

  it("tail reads of lazy data stay lazy, with the offsets of the appended lines", async () => {
    const b = mixedSession();
    const path = write(b.toJsonl());
    const lazy = await readSessionFile(path, { lazyBodies: true });
    const before = b.entries.length;
    b.user("again").toolUse("read", { path: "src/b.ts" }, long("b.ts", 8000));
    appendFileSync(path, b.entries.slice(before).map((e) => JSON.stringify(e) + "\n").join(""));
    const tail = await readSessionTail(path, lazy);
    expect(tail.entries.map((e) => e.id)).toEqual(b.entries.slice(before).map((e) => e.id));
    expect(lazy.elided?.has(tail.entries[tail.entries.length - 1]!.id)).toBe(true);
    const full = await readSessionFile(path);
    expect(await withBodies(path, lazy.elided, lazy.entries)).toEqual(full.entries);
    expect(buildSessionView(lazy, { config })).toEqual(buildSessionView(full, { config }));
  });

  it("a file replaced since it was read is refused with a clear error, not read as the wrong entry", async () => {
    const path = write(mixedSession().toJsonl());
    const lazy = await readSessionFile(path, { lazyBodies: true });
    const other = new SessionBuilder({ sessionId: "other" }).user("x".repeat(5000)).assistant("y".repeat(5000)).user("z");
    writeFileSync(path, other.toJsonl());
    await expect(withBodies(path, lazy.elided, lazy.entries)).rejects.toThrow(/changed since it was read/);
  });

  it("a file that was replaced is read again lazily by the tail reader", async () => {
    const path = write(mixedSession().toJsonl());
    const lazy = await readSessionFile(path, { lazyBodies: true });
    const copy = join(dir, "replacement.jsonl");
    writeFileSync(copy, largeSession("/w", 50_000).text);
    copyFileSync(copy, path);
    const tail = await readSessionTail(path, lazy);
    expect(tail.reset).toBe(true);
    expect(lazy.elided?.size).toBeGreaterThan(0);
    expect(await withBodies(path, lazy.elided, lazy.entries)).toEqual((await readSessionFile(path)).entries);
  });

  it("a body cache reads each line once: shown again after an append, only the new line is read", async () => {
    const b = mixedSession();
    const path = write(b.toJsonl());
    const lazy = await readSessionFile(path, { lazyBodies: true });
    const cache = new BodyCache();
    const first = await cache.withBodies(path, lazy.elided, lazy.entries);
    expect(first).toEqual((await readSessionFile(path)).entries);
    // Same-length bytes written over an output already read: a cached body is not read again.
    const text = readFileSync(path, "utf8");
    writeFileSync(path, text.replace("line of output line of output", "LINE OF OUTPUT LINE OF OUTPUT"));
    const before = b.entries.length;
    b.toolUse("read", { path: "src/c.ts" }, long("c.ts", 4000));
    appendFileSync(path, b.entries.slice(before).map((e) => JSON.stringify(e) + "\n").join(""));
    await readSessionTail(path, lazy);
    const again = await cache.withBodies(path, lazy.elided, lazy.entries);
    expect(JSON.stringify(again)).not.toContain("LINE OF OUTPUT");
    expect(JSON.stringify(again)).toContain(String.raw`c.ts\nline of output`);
    cache.clear();
    expect(JSON.stringify(await cache.withBodies(path, lazy.elided, lazy.entries))).toContain("LINE OF OUTPUT");
  });

  it("stand-ins have the exact length, however long", () => {
    for (const n of [0, 1, 13, LAZY_BODY_MIN_CHARS, 65_536, 65_537, 1_000_003]) expect(standIn(n)).toHaveLength(n);
  });
});
