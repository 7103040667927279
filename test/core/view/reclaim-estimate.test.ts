// The Sessions row's first figure: a session's reclaim estimated in one quick pass over its file,
// long tool outputs sized from their line. Hand-computed: what Pi would send, and that less each
// stubbed output plus the summaries the model is sent instead.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { memorySessionStorage } from "../../../core/src/session/session-file-storage.ts";
import { estimateReclaim, type ReclaimEstimate } from "../../../core/src/view/reclaim-estimate.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";

/** 5,400 characters with quotes, a backslash and newlines, which the file holds escaped. */
const OUTPUT = 'say "x" \\ ok\n'.repeat(450).slice(0, 5400);
const SUMMARY = "- `t1` read a.ts: two lines";

/**
 * The estimate for a file holding `text`, read whole and read 1,000 bytes at a time (long lines
 * then cross the reads' edges): the two must agree.
 */
async function estimate(text: string): Promise<ReclaimEstimate | undefined> {
  const files = new Map([["s.jsonl", text]]);
  const whole = await estimateReclaim("s.jsonl", memorySessionStorage(files));
  expect(await estimateReclaim("s.jsonl", memorySessionStorage(files, { maxReadBytes: 1000 }))).toEqual(whole);
  return whole;
}

function summarizedSession(): SessionBuilder {
  const b = new SessionBuilder();
  b.user("fix it");
  b.toolUse("read", { path: "a.ts" }, OUTPUT, { id: "c1" });
  b.customMessage("context-prune-summary", SUMMARY, { toolCallRefs: [{ shortId: "t1", toolCallId: "c1" }], toolNames: ["read"] });
  b.assistant("done.");
  return b;
}

describe("estimateReclaim", async () => {
  it("counts what Pi would send, and sends a stub and the summary for a summarized output", async () => {
    const text = summarizedSession().toJsonl();
    // user 6 + the call ("read" 4 + {"path":"a.ts"} 15) + the output 5,400 + "done." 5
    const raw = 6 + 19 + 5400 + 5;
    expect(OUTPUT.length).toBe(5400);
    expect(text.length).toBeGreaterThan(5400 + 400); // the output's line is sized, not parsed
    expect(await estimate(text)).toEqual({ rawChars: raw, modelChars: raw - 5400 + 90 + SUMMARY.length });
    // The raw side is the view's own figure here (no branch, compaction or protection to leave out).
    const view = buildSessionView(parseSessionText(text), { config: DEFAULT_CONFIG });
    expect(view.totals.rawChars).toBe(raw);
  });

  it("counts from Pi's newest compaction on: its summary, then the entries it kept", async () => {
    const b = new SessionBuilder();
    b.user("first prompt"); // 12, before the kept entry: not sent
    b.assistant("first answer"); // 12, before the kept entry: not sent
    b.user("second prompt"); // 13, kept
    const kept = b.lastId;
    b.assistant("second answer"); // 13, kept
    b.compaction({ firstKeptEntryId: kept, summary: "what came before" }); // 16
    b.user("third"); // 5
    const raw = 16 + 13 + 13 + 5;
    expect(await estimate(b.toJsonl())).toEqual({ rawChars: raw, modelChars: raw });
  });

  it("counts a last line that has no newline yet", async () => {
    const text = summarizedSession().toJsonl();
    expect(text.endsWith("}\n")).toBe(true);
    expect(await estimate(text.slice(0, -1))).toEqual(await estimate(text));
  });

  it("gives nothing for a file with no message", async () => {
    expect(await estimate("")).toBeUndefined();
    expect(await estimate('{"type":"session","version":3,"id":"s"}\nnot json\n')).toBeUndefined();
  });
});
