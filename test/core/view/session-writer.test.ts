// Which extension wrote a session, told from its entries, and what a view rendered from another
// writer's entries says about itself: on sessions built in each writer's own entry formats.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import { buildModelView } from "../../../core/src/view/model-view.ts";
import { renderedCounts, renderFidelity } from "../../../core/src/view/session-writer.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { prunedSessionBuilder } from "../../helpers/fixtures.ts";
import { condenseSession } from "../../helpers/condense-sessions.ts";
import { mulliganSessionOnPi084, mulliganSessionOnPi16 } from "../../helpers/mulligan-sessions.ts";

const viewOf = (b: SessionBuilder | string) => buildSessionView(parseSessionText(typeof b === "string" ? b : b.toJsonl()), { config: DEFAULT_CONFIG });

describe("the writer of a session, from its entries", () => {
  it("pi-condense 2.x: its flush records, its summary footer, chains without a body source; a foreign session", () => {
    const view = viewOf(condenseSession().builder);
    expect(view.writer.label).toBe("pi-condense 2.x");
    expect(view.writer.writers.map((w) => w.name)).toEqual(["pi-condense"]);
    expect(view.writer.writers[0]!.signs).toEqual(expect.arrayContaining(["its summary footer", "its flush-metrics entries", "a deterministic chain body", "its diagnostic entries"]));
    expect(view.writer.foreign).toBe(true);
  });

  it("pi-mulligan: markers its mulligan_* tools wrote and notes naming their rewind's entry", () => {
    const view = viewOf(mulliganSessionOnPi084().builder);
    expect(view.writer.label).toBe("pi-mulligan");
    expect(view.writer.writers[0]!.signs).toEqual(["markers written by its mulligan_* tools", "a note naming its rewind's entry"]);
    expect(view.writer.foreign).toBe(true);
    expect(view.writer.piSystemEntry).toBe(false);
  });

  it("pi-pruner: a settings entry names its version; cancels that give a reason vouch for its pruner entries", () => {
    const b = new SessionBuilder();
    b.custom("context-prune-settings", { version: "0.1.0", config: { enabled: true } });
    b.user("hi").assistant("hello");
    const recorded = viewOf(b);
    expect(recorded.writer.label).toBe("pi-pruner 0.1.0");
    expect(recorded.writer.foreign).toBe(false);
    expect(recorded.fidelity).toEqual({ exact: true, lines: [], counts: { resultsStubbed: 0, chainsCompressed: 0, spansHidden: 0, messagesShrunk: 0 } });

    // The shared fixture's summary has no footer and its chain entries are absent: only the person's cancel says whose it is.
    const shared = viewOf(prunedSessionBuilder());
    expect(shared.writer.label).toBe("pi-pruner");
    expect(shared.writer.unattributed).toEqual([]);
    expect(shared.fidelity.exact).toBe(true);
  });

  it("Pi alone: a session the real Pi 1.6 wrote without any extension", () => {
    const real = readFileSync(fileURLToPath(new URL("../../fixtures/pi/real-session.jsonl", import.meta.url)), "utf8");
    const view = viewOf(real);
    expect(view.writer.label).toBe("Pi alone (no pruner or self-control entries)");
    expect(view.writer.writers).toEqual([]);
    expect(view.writer.foreign).toBe(false);
    expect(view.writer.piSystemEntry).toBe(true);
  });

  it("pruner entries nothing ties to either writer are said to be either's, and the view does not claim to be exact", () => {
    const b = new SessionBuilder();
    b.user("read it");
    b.toolUse("read", { path: "a.ts" }, "A".repeat(2000), { id: "c1" });
    const ts = (b.entry(b.lastId) as unknown as { message: { timestamp: number } }).message.timestamp;
    b.custom("context-prune-index", { toolCalls: [{ toolCallId: "c1", toolName: "read", args: { path: "a.ts" }, resultText: "A".repeat(2000), resultTimestamp: ts }] });
    b.customMessage("context-prune-summary", "- `t1` read a.ts: all A's", { toolCallRefs: [{ shortId: "t1", toolCallId: "c1", resultTimestamp: ts }] });
    b.assistant("done");
    const view = viewOf(b);
    expect(view.writer.label).toBe("pi-pruner or pi-condense 2.x (their shared context-prune entries; nothing on the branch tells which)");
    expect(view.writer.foreign).toBe(true);
    expect(view.fidelity.lines[1]).toBe("These counts must match what was sent: 1 result stubbed, 0 chains compressed.");
  });

  it("a plain message appended to a session never changes its writer", () => {
    const story = mulliganSessionOnPi084();
    const before = viewOf(story.builder).writer;
    story.builder.assistant({ toolCalls: [{ name: "context_rewind", args: {} }] });
    expect(viewOf(story.builder).writer).toEqual(before);
  });
});

describe("what a view rendered from another writer's entries says", () => {
  it("pi-condense: rendered in pi-pruner's wording, with the results stubbed and chains compressed that must match", () => {
    const view = viewOf(condenseSession().builder);
    expect(view.fidelity.exact).toBe(false);
    expect(view.fidelity.lines).toEqual([
      "Rendered with pi-pruner's own stub and chain wording, not the writer's: the words of stubs and chain blocks differ from what was sent.",
      // The suite's log is stubbed; the recovered output is in its grace window; both chains were removed by compaction.
      "These counts must match what was sent: 1 result stubbed, 0 chains compressed.",
    ]);
  });

  it("pi-mulligan on Pi 0.84: its markers applied as pi-pruner applies them, with the spans hidden and messages shrunk that must match", () => {
    const view = viewOf(mulliganSessionOnPi084().builder);
    expect(view.fidelity.counts).toMatchObject({ spansHidden: 1, messagesShrunk: 1 });
    expect(view.fidelity.lines).toEqual([
      "Rewinds and shrinks are applied as pi-pruner applies them; notes and replacements are the writer's own text.",
      "These counts must match what was sent: 1 span hidden, 1 message shrunk.",
    ]);
  });

  it("pi-mulligan on Pi 1.6: says its filter changed nothing there; the session is shown as sent, the next request as pi-pruner would send it", () => {
    const session = mulliganSessionOnPi16();
    const view = viewOf(session.builder);
    expect(view.writer.piSystemEntry).toBe(true);
    const inert = "pi-mulligan's context filter changed nothing on Pi 1.6 (it maps entries to messages by position, and the system-prompt entry shifts them): what was sent hid no span and shrank no message.";
    expect(view.fidelity.lines).toEqual([inert, "Shown as it was sent, the markers not applied: 0 spans hidden, 0 messages shrunk."]);
    // The leaf's view applies them: the stale guard retired the test-log shrink, the grep shrink was cancelled, so only the rewind.
    const next = buildModelView(parseSessionText(session.builder.toJsonl()), { config: DEFAULT_CONFIG });
    expect(renderFidelity(view.writer, renderedCounts(next)).lines).toEqual([inert, "The next request is shown as pi-pruner would send it, applying the markers: 1 span hidden, 0 messages shrunk."]);
  });
});
