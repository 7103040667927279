// A session folder moved or copied elsewhere keeps its blobs folder beside it, while its records
// still name the spill files by their old absolute paths: such a path is looked up by its file
// name inside this session's blobs folder, and nothing outside that folder is ever read.
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blobsDirFor, fileSpillStorage, locateSpillFile, readSpillFile } from "../../../core/src/session/blobs.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import { spillRecovery } from "../../../core/src/view/spill-recovery.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { CONDENSE_SESSION_ID, condenseSession } from "../../helpers/condense-sessions.ts";

/** The old place the session was written at (still there, with other content), and the new one it was moved to. */
function movedSession(options: { spillBytes?: number } = {}) {
  const root = mkdtempSync(join(tmpdir(), "pp-moved-"));
  const oldDir = join(root, "old-agent", "sessions", "--proj--");
  const newDir = join(root, "new-agent", "sessions", "--proj--");
  const story = condenseSession({ oldSessionDir: oldDir, ...options });
  mkdirSync(join(oldDir, `${CONDENSE_SESSION_ID}-blobs`), { recursive: true });
  // Something else now lives at the old path: it must never be what is read.
  writeFileSync(story.spill.recordedPath, "NOT THIS SESSION'S OUTPUT");
  const sessionFile = join(newDir, `2025-03-03T09-00-00-000Z_${CONDENSE_SESSION_ID}.jsonl`);
  mkdirSync(newDir, { recursive: true });
  story.builder.writeTo(sessionFile);
  return { root, oldDir, newDir, story, sessionFile, blobs: blobsDirFor(sessionFile, CONDENSE_SESSION_ID) };
}

describe("a spill path recorded outside this session's blobs folder", () => {
  it("is read from the blobs folder under the same name, never from the recorded place", async () => {
    const { story, sessionFile, blobs } = movedSession();
    mkdirSync(blobs, { recursive: true });
    writeFileSync(join(blobs, story.spill.fileName), story.spill.text);
    const read = await readSpillFile(sessionFile, CONDENSE_SESSION_ID, story.spill.recordedPath);
    expect(read).toEqual({ ok: true, text: story.spill.text, path: join(blobs, story.spill.fileName) });
    // The same through the session's spill storage, which context_tree_query and the editor use.
    expect(await fileSpillStorage(sessionFile, CONDENSE_SESSION_ID).read(story.spill.recordedPath)).toMatchObject({ ok: true, text: story.spill.text });
    expect(await locateSpillFile(sessionFile, CONDENSE_SESSION_ID, story.spill.recordedPath)).toEqual({ ok: true, path: join(blobs, story.spill.fileName) });
  });

  it("with no file of that name in the folder, is refused, and says it looked there too", async () => {
    const { story, sessionFile, blobs } = movedSession();
    mkdirSync(blobs, { recursive: true });
    const read = await readSpillFile(sessionFile, CONDENSE_SESSION_ID, story.spill.recordedPath);
    expect(read).toEqual({ ok: false, reason: `${story.spill.recordedPath} is outside this session's blobs folder (${blobs}), which holds no file ${story.spill.fileName} either; refused` });
  });

  it("a file of that name which is a link out of the folder is refused", async () => {
    const { story, sessionFile, blobs, root } = movedSession();
    mkdirSync(blobs, { recursive: true });
    writeFileSync(join(root, "secret.txt"), "secret");
    symlinkSync(join(root, "secret.txt"), join(blobs, story.spill.fileName));
    const read = await readSpillFile(sessionFile, CONDENSE_SESSION_ID, story.spill.recordedPath);
    expect(read).toMatchObject({ ok: false, reason: expect.stringContaining("is outside this session's blobs folder") });
  });

  it("a recorded name that is no file name (.. or empty) is refused without a look", async () => {
    const { sessionFile, blobs } = movedSession();
    mkdirSync(blobs, { recursive: true });
    for (const path of ["/elsewhere/..", "/elsewhere/", "C:\\old\\.."]) {
      expect(await readSpillFile(sessionFile, CONDENSE_SESSION_ID, path)).toMatchObject({ ok: false, reason: expect.stringContaining("outside this session's blobs folder") });
    }
  });

  it("a Windows path recorded on another machine is looked up by its last part", async () => {
    const { sessionFile, blobs } = movedSession();
    mkdirSync(blobs, { recursive: true });
    writeFileSync(join(blobs, "call_1_5.txt"), "from windows");
    expect(await readSpillFile(sessionFile, CONDENSE_SESSION_ID, "C:\\Users\\a\\.pi\\agent\\sessions\\x\\condense-2-9-1-blobs\\call_1_5.txt")).toMatchObject({ ok: true, text: "from windows" });
  });
});

describe("whether a session's spilled calls can still be recovered", () => {
  it("a spill found by name can; one missing from the blobs folder can from the session file's copy of the same size", async () => {
    const { story, sessionFile, blobs } = movedSession();
    const data = parseSessionText(story.builder.toJsonl());
    const view = buildSessionView(data, { config: DEFAULT_CONFIG });
    mkdirSync(blobs, { recursive: true });
    expect(await spillRecovery(view.calls, sessionFile, CONDENSE_SESSION_ID, data)).toEqual(new Map());
    writeFileSync(join(blobs, story.spill.fileName), story.spill.text);
    expect(await spillRecovery(view.calls, sessionFile, CONDENSE_SESSION_ID, data)).toEqual(new Map());
  });

  it("one missing from the blobs folder, whose copy in the session file is not the spilled size, cannot, and says why", async () => {
    const { story, sessionFile, blobs } = movedSession({ spillBytes: Buffer.byteLength(condenseSession().spill.text, "utf8") + 1 });
    const data = parseSessionText(story.builder.toJsonl());
    const view = buildSessionView(data, { config: DEFAULT_CONFIG });
    const spilled = view.calls.find((c) => c.toolCallId === "call_npm_test")!;
    mkdirSync(blobs, { recursive: true });
    const lost = new Map([[spilled.occurrenceKey, `its spill file cannot be read back: ${story.spill.recordedPath} is outside this session's blobs folder (${blobs}), which holds no file ${story.spill.fileName} either; refused`]]);
    expect(await spillRecovery(view.calls, sessionFile, CONDENSE_SESSION_ID, data)).toEqual(lost);
    // Without the session's entries, only the blobs folder is looked at.
    expect(await spillRecovery(view.calls, sessionFile, CONDENSE_SESSION_ID, undefined)).toEqual(lost);
  });
});
