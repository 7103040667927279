// Every value of a session file that becomes part of a path, crafted as an attacker would: session
// ids, result timestamps, tool-call ids, recorded spill paths, and what sits where the blobs folder
// or a spill file should be (links, loops, FIFOs, folders, other files). Writes go through the
// spill storage the Pi extension uses; reads through the storage `context_tree_query` and the
// editor use, `locateSpillFile` (the CLI's and the editor's "can it be recovered"), and the CLI's
// inspect. For each case: nothing outside the session's folder is created or changed, the secret
// is never what a read returns, and nothing waits.
import { afterAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { blobsDirFor, fileSpillStorage, isSafeSessionId, locateSpillFile, readSpillFile, spillFileName } from "../../../core/src/session/blobs.ts";
import { main, type CliIO } from "../../../core/src/cli/cli.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { SECRET, fileTree as tree, untrustedScene as scene } from "../../helpers/untrusted-scene.ts";

const OUTPUT = "the tool's whole output\n".repeat(20);

/** Cases per family; the last test asserts these, so a family that stops producing cases fails. */
const cases: Record<string, number> = {};
const count = (family: string, n = 1) => (cases[family] = (cases[family] ?? 0) + n);
afterAll(() => console.log(`untrusted-path cases: ${JSON.stringify(cases)}`));

/** Outside the session folder: the same paths, the same bytes in the two files there. */
function expectNothingOutsideChanged(s: ReturnType<typeof scene>, before: string[], label: string) {
  const sessionFolder = relative(s.root, s.sessionDir);
  const outsideNow = tree(s.root).filter((p) => !p.startsWith(sessionFolder + "/"));
  expect(outsideNow, label).toEqual(before.filter((p) => !p.startsWith(sessionFolder + "/")));
  expect(readFileSync(join(s.outside, "secret.txt"), "utf8"), label).toBe(SECRET);
  expect(readFileSync(join(s.outside, "requirements.txt"), "utf8"), label).toBe("flask\n");
}

const HOSTILE_IDS: unknown[] = [
  "../../outside/x", "..", ".", "", "/abs/path", "a/b", "a\\b", "..\\..\\x", "x\0y", " leading-space", "-dash-first",
  ".hidden", "x".repeat(129), "ümlaut", "line\nbreak", "C:\\temp", "%2e%2e", 42, null, { id: "x" }, ["x"],
];
const SAFE_IDS = ["019a5f2e-8c1b-7d3e-9f00-123456789abc", "s1", "session_2.b-c", "x".repeat(128)];

describe("session ids", () => {
  it("only letters, digits, _ . - starting with a letter or digit, up to 128 characters, name a blobs folder", () => {
    for (const id of SAFE_IDS) {
      expect(isSafeSessionId(id), String(id)).toBe(true);
      count("session ids");
    }
    for (const id of HOSTILE_IDS) {
      expect(isSafeSessionId(id), JSON.stringify(id)).toBe(false);
      count("session ids");
    }
  });

  it("a hostile id: the spill is refused with one reason naming the id, and nothing is created anywhere", async () => {
    for (const id of HOSTILE_IDS) {
      const s = scene();
      const sessionFile = join(s.sessionDir, "2026_crafted.jsonl");
      const before = tree(s.root);
      const storage = fileSpillStorage(sessionFile, id as string);
      expect(() => storage.write({ toolCallId: "call_1", resultTimestamp: 1000, resultText: OUTPUT }), JSON.stringify(id)).toThrow(/is not a safe folder name, so it has no blobs folder$/);
      expect(tree(s.root), JSON.stringify(id)).toEqual(before);
      // Reading by a path the id would have led to is refused too.
      const aimed = join(s.outside, "secret.txt");
      const read = await storage.read(aimed);
      expect(read.ok, JSON.stringify(id)).toBe(false);
      expect((await locateSpillFile(sessionFile, id as string, aimed)).ok).toBe(false);
      count("hostile ids, write and read");
    }
  });
});

const HOSTILE_TIMESTAMPS: unknown[] = [
  "/../../../outside/requirements", "../../outside/x", "1000/../../x", "1000", "", "1e3", -1, 1.5, Number.NaN,
  Number.POSITIVE_INFINITY, 2 ** 60, null, undefined, { valueOf: 1 }, [1000], true,
];

describe("result timestamps", () => {
  it("anything but a whole, non-negative number of milliseconds gives no file name: the spill is refused, nothing written", () => {
    for (const timestamp of HOSTILE_TIMESTAMPS) {
      const s = scene();
      const before = tree(s.root);
      const storage = fileSpillStorage(join(s.sessionDir, "2026_s.jsonl"), "s");
      expect(() => storage.write({ toolCallId: "call_1", resultTimestamp: timestamp as number, resultText: OUTPUT }), String(timestamp)).toThrow(/the tool result's timestamp is not a whole number of milliseconds/);
      expectNothingOutsideChanged(s, before, String(timestamp));
      expect(existsSync(join(s.sessionDir, "s-blobs")) ? readdirSync(join(s.sessionDir, "s-blobs")) : [], String(timestamp)).toEqual([]);
      count("hostile timestamps");
    }
  });
});

const HOSTILE_CALL_IDS = ["../../outside/requirements", "/etc/passwd", "..", ".", "a/../../b", "C:\\x\\..\\y", "x\0y", "call\n1", "~", "$HOME", "x".repeat(5_000), "ü".repeat(300), "🙂", "   "];

describe("tool-call ids", () => {
  it("become one plain file name inside the blobs folder, never longer than 120 characters, two long ids never the same name", () => {
    const names = new Set<string>();
    for (const toolCallId of HOSTILE_CALL_IDS) {
      const s = scene();
      const before = tree(s.root);
      const sessionFile = join(s.sessionDir, "2026_s.jsonl");
      const path = fileSpillStorage(sessionFile, "s").write({ toolCallId, resultTimestamp: 1000, resultText: OUTPUT });
      const name = spillFileName({ toolCallId, resultTimestamp: 1000 });
      expect(path, toolCallId).toBe(join(blobsDirFor(sessionFile, "s"), name));
      expect(name).toMatch(/^[A-Za-z0-9_.~-]+-1000\.txt$/);
      expect(name.length).toBeLessThanOrEqual(120);
      expect(readdirSync(blobsDirFor(sessionFile, "s"))).toEqual([name]);
      expectNothingOutsideChanged(s, before, toolCallId);
      names.add(name);
      count("hostile tool-call ids");
    }
    expect(spillFileName({ toolCallId: "x".repeat(5_000), resultTimestamp: 1 })).not.toBe(spillFileName({ toolCallId: `${"x".repeat(4_999)}y`, resultTimestamp: 1 }));
    expect(names.size).toBe(HOSTILE_CALL_IDS.length);
  });
});

describe("what sits where the blobs folder should be", () => {
  const occupants: Record<string, (blobs: string, s: ReturnType<typeof scene>) => void> = {
    "a link to a folder outside": (blobs, s) => symlinkSync(s.outside, blobs),
    "a link to the session folder itself": (blobs, s) => symlinkSync(s.sessionDir, blobs),
    "a dangling link": (blobs, s) => symlinkSync(join(s.outside, "nothing-here"), blobs),
    "a link to itself (a loop)": (blobs) => symlinkSync(blobs, blobs),
    "a FIFO": (blobs) => execFileSync("mkfifo", [blobs]),
    "a plain file": (blobs) => writeFileSync(blobs, "not a folder"),
  };

  it("anything but a real folder is refused, for writing and for reading, and nothing waits", async () => {
    for (const [label, place] of Object.entries(occupants)) {
      const s = scene();
      const sessionFile = join(s.sessionDir, "2026_s.jsonl");
      const blobs = blobsDirFor(sessionFile, "s");
      place(blobs, s);
      const before = tree(s.root);
      const storage = fileSpillStorage(sessionFile, "s");
      expect(() => storage.write({ toolCallId: "call_1", resultTimestamp: 1000, resultText: OUTPUT }), label).toThrow();
      expect(tree(s.root), label).toEqual(before);
      expectNothingOutsideChanged(s, before, label);
      for (const spillPath of [join(blobs, "secret.txt"), "secret.txt", join(s.outside, "secret.txt")]) {
        const read = await readSpillFile(sessionFile, "s", spillPath);
        expect(read.ok, `${label}: ${spillPath}`).toBe(false);
        expect((await locateSpillFile(sessionFile, "s", spillPath)).ok, `${label}: ${spillPath}`).toBe(false);
      }
      count("blobs folder occupants");
    }
  });
});

describe("what sits at a spill file's predictable name", () => {
  const name = spillFileName({ toolCallId: "call_1", resultTimestamp: 1000 });
  const occupants: Record<string, { place: (path: string, s: ReturnType<typeof scene>) => void; reason: RegExp }> = {
    "a link to a file outside": { place: (p, s) => symlinkSync(join(s.outside, "requirements.txt"), p), reason: /already exists and is not this output; refused/ },
    "a dangling link": { place: (p, s) => symlinkSync(join(s.outside, "new-file.txt"), p), reason: /already exists and is not this output; refused/ },
    "a link loop": { place: (p) => symlinkSync(p, p), reason: /already exists and is not this output; refused/ },
    "a FIFO": { place: (p) => execFileSync("mkfifo", [p]), reason: /already exists and is not this output; refused/ },
    "a folder": { place: (p) => mkdirSync(p), reason: /already exists and is not this output; refused/ },
    "another output": { place: (p) => writeFileSync(p, "something else"), reason: /already exists and is not this output; refused/ },
    "a hard link to a file outside": { place: (p, s) => linkSync(join(s.outside, "requirements.txt"), p), reason: /already exists and is not this output; refused/ },
  };

  it("is never written through or over; the spill is refused and reported", () => {
    for (const [label, { place, reason }] of Object.entries(occupants)) {
      const s = scene();
      const sessionFile = join(s.sessionDir, "2026_s.jsonl");
      const blobs = blobsDirFor(sessionFile, "s");
      mkdirSync(blobs);
      place(join(blobs, name), s);
      const before = tree(s.root);
      expect(() => fileSpillStorage(sessionFile, "s").write({ toolCallId: "call_1", resultTimestamp: 1000, resultText: OUTPUT }), label).toThrow(reason);
      expect(tree(s.root), label).toEqual(before);
      expectNothingOutsideChanged(s, before, label);
      expect(existsSync(join(s.outside, "new-file.txt")), label).toBe(false);
      count("spill name occupants");
    }
  });

  it("the same output already there (a spill written just before a crash) is taken as it is", async () => {
    const s = scene();
    const sessionFile = join(s.sessionDir, "2026_s.jsonl");
    const blobs = blobsDirFor(sessionFile, "s");
    mkdirSync(blobs);
    writeFileSync(join(blobs, name), OUTPUT);
    const path = fileSpillStorage(sessionFile, "s").write({ toolCallId: "call_1", resultTimestamp: 1000, resultText: OUTPUT });
    expect(path).toBe(join(blobs, name));
    expect(await readSpillFile(sessionFile, "s", path)).toEqual({ ok: true, text: OUTPUT, path });
    expect(lstatSync(path).mode & 0o777).toBe(0o644 & ~process.umask() & 0o777);
    count("spill name occupants");
  });

  it("a new spill file is readable by its owner only", () => {
    const s = scene();
    const path = fileSpillStorage(join(s.sessionDir, "2026_s.jsonl"), "s").write({ toolCallId: "call_1", resultTimestamp: 1000, resultText: OUTPUT });
    expect(lstatSync(path).mode & 0o077).toBe(0);
    count("spill name occupants");
  });
});

describe("recorded spill paths", () => {
  function withBlobs() {
    const s = scene();
    const sessionFile = join(s.sessionDir, "2026_s.jsonl");
    const blobs = blobsDirFor(sessionFile, "s");
    mkdirSync(blobs);
    writeFileSync(join(blobs, "good.txt"), OUTPUT);
    symlinkSync(join(s.outside, "secret.txt"), join(blobs, "link-out.txt"));
    symlinkSync(join(blobs, "loop.txt"), join(blobs, "loop.txt"));
    linkSync(join(s.outside, "secret.txt"), join(blobs, "hard.txt"));
    mkdirSync(join(blobs, "sub"));
    symlinkSync(join(s.outside, "secret.txt"), join(blobs, "sub", "deep.txt"));
    execFileSync("mkfifo", [join(blobs, "pipe.txt")]);
    return { s, sessionFile, blobs };
  }
  const refused = (blobs: string, outside: string): string[] => [
    join(outside, "secret.txt"),
    join(blobs, "..", "..", "..", "..", "outside", "secret.txt"),
    "../../../../outside/secret.txt",
    join(blobs, "link-out.txt"),
    join(blobs, "loop.txt"),
    join(blobs, "hard.txt"),
    join(blobs, "sub", "deep.txt"),
    join(blobs, "pipe.txt"),
    join(blobs, "sub"),
    blobs,
    `${blobs}-sibling/secret.txt`,
    "",
    "x\0y",
    "..",
    "/",
    "C:\\Users\\u\\.ssh\\id_rsa",
  ];

  it("anything but a plain file inside the real blobs folder is refused, by every reader, without waiting", async () => {
    const { s, sessionFile, blobs } = withBlobs();
    for (const spillPath of refused(blobs, s.outside)) {
      const started = performance.now();
      const read = await fileSpillStorage(sessionFile, "s").read(spillPath);
      const located = await locateSpillFile(sessionFile, "s", spillPath);
      expect(read.ok, spillPath).toBe(false);
      expect(located.ok, spillPath).toBe(false);
      expect(JSON.stringify(read)).not.toContain(SECRET);
      expect(performance.now() - started, spillPath).toBeLessThan(2_000);
      count("recorded spill paths");
    }
    // The good file, by its recorded path and by its bare name, is read whole.
    for (const spillPath of [join(blobs, "good.txt"), "good.txt", "/elsewhere/old-agent/s-blobs/good.txt"]) {
      expect(await readSpillFile(sessionFile, "s", spillPath), spillPath).toEqual({ ok: true, text: OUTPUT, path: join(blobs, "good.txt") });
      count("recorded spill paths");
    }
  });

  it("a bounded read returns the head only and says how big the file is", async () => {
    const { sessionFile, blobs } = withBlobs();
    const read = await readSpillFile(sessionFile, "s", join(blobs, "good.txt"), { maxBytes: 30 });
    expect(read).toEqual({ ok: true, text: OUTPUT.slice(0, 30), path: join(blobs, "good.txt"), bytes: OUTPUT.length, truncated: true });
    count("recorded spill paths");
  });
});

describe("pi-pruner inspect of crafted sessions", () => {
  async function inspect(file: string): Promise<{ code: number; json: { calls: { toolCallId: string; unrecoverable: string | null }[] }; err: string }> {
    let out = "";
    let err = "";
    const io: CliIO = { out: (t) => (out += t), err: (t) => (err += t), env: { PI_CODING_AGENT_DIR: join(tmpdir(), "pp-no-agent") }, cwd: tmpdir() };
    const code = await main(["inspect", file, "--json"], io);
    return { code, json: JSON.parse(out), err };
  }

  function session(s: ReturnType<typeof scene>, id: string, spillPath: string): string {
    const b = new SessionBuilder({ sessionId: id, cwd: s.root });
    b.user("show the key");
    b.toolUse("read", { path: "notes.txt" }, "x".repeat(70_000), { id: "call_1" });
    const ts = (b.entries.at(-1) as unknown as { message: { timestamp: number } }).message.timestamp;
    b.custom("context-prune-index", { toolCalls: [{ toolCallId: "call_1", toolName: "read", args: { path: "notes.txt" }, resultText: "", isError: false, resultTimestamp: ts, spillPath, resultPreview: "x" }], refs: [{ shortId: "t1", toolCallId: "call_1", resultTimestamp: ts }] });
    b.assistant("done");
    return b.writeTo(join(s.sessionDir, `2026_${id.replace(/[^a-z]/g, "")}.jsonl`));
  }

  it("a linked blobs folder and an id with .. make the spill unrecoverable, with the reason, and nothing is read", async () => {
    const linked = scene();
    symlinkSync(linked.outside, join(linked.sessionDir, "s-blobs"));
    const a = await inspect(session(linked, "s", join(linked.sessionDir, "s-blobs", "secret.txt")));
    expect(a.code).toBe(0);
    expect(a.json.calls.find((c) => c.toolCallId === "call_1")!.unrecoverable).toMatch(/is a symbolic link; nothing is read through it/);
    count("CLI inspect runs");

    const dotted = scene();
    mkdirSync(join(dotted.root, "agent", "outside-blobs"));
    writeFileSync(join(dotted.root, "agent", "outside-blobs", "secret.txt"), SECRET);
    const b = await inspect(session(dotted, "../../outside", join(dotted.root, "agent", "outside-blobs", "secret.txt")));
    expect(b.code).toBe(0);
    expect(b.json.calls.find((c) => c.toolCallId === "call_1")!.unrecoverable).toMatch(/this session's id "\.\.\/\.\.\/outside" is not a safe folder name/);
    expect(b.err).not.toMatch(/\n\s+at /);
    count("CLI inspect runs");
  });
});

describe("the session header's cwd, which picks the project settings a view reads", () => {
  it("a relative, NUL-bearing or over-long cwd is not followed: the command's own folder is used", async () => {
    const s = scene();
    const here = join(s.root, "here");
    const aimed = join(s.root, "aimed");
    // A settings file the CLI would warn about, were it read: nested too deep.
    for (const dir of [here, aimed]) {
      mkdirSync(join(dir, ".pi"), { recursive: true });
      writeFileSync(join(dir, ".pi", "settings.json"), "[".repeat(100) + "]".repeat(100));
    }
    for (const cwd of ["../aimed", "aimed", `${aimed}\0`, `/${"a/".repeat(3_000)}`]) {
      const file = join(s.sessionDir, "2026_cwd.jsonl");
      writeFileSync(file, `${JSON.stringify({ type: "session", version: 3, id: "c", cwd })}\n`);
      let err = "";
      const io: CliIO = { out: () => undefined, err: (t) => void (err += t), env: { PI_CODING_AGENT_DIR: join(s.root, "agent") }, cwd: here };
      expect(await main(["view", file], io), JSON.stringify(cwd)).toBe(0);
      expect(err, JSON.stringify(cwd)).toContain(join(here, ".pi", "settings.json"));
      expect(err, JSON.stringify(cwd)).not.toContain(join(aimed, ".pi", "settings.json"));
      count("header cwd values");
    }
  });
});

describe("the families ran", () => {
  it("every family ran its fixed number of cases", () => {
    expect(cases).toEqual({
      "session ids": SAFE_IDS.length + HOSTILE_IDS.length,
      "hostile ids, write and read": HOSTILE_IDS.length,
      "hostile timestamps": HOSTILE_TIMESTAMPS.length,
      "hostile tool-call ids": HOSTILE_CALL_IDS.length,
      "blobs folder occupants": 6,
      "spill name occupants": 9,
      "recorded spill paths": 20,
      "CLI inspect runs": 2,
      "header cwd values": 4,
    });
  });
});
