// pi-condense 2.9.1 driven unpatched through the bench's replay host, as the cost replay runs it.
// It needs a checkout of pi-condense (never vendored): set PI_CONDENSE_DIR to its folder, e.g. a
// clone of github.com/jjuraszek/pi-condense at its 2.9.1 tag.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ReplayHost } from "../../bench/lib/pi-host.ts";
import { loadPiCondense } from "../../bench/lib/peers.ts";
import { PI_CONDENSE_SETTINGS } from "../../bench/lib/replay.ts";
import { codingScript, takeTurns } from "../../bench/lib/gen.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";

const checkout = process.env.PI_CONDENSE_DIR;
const STUB = /^\[Summarized in pruner summary, ref `t\d+`\. Use context_tree_query to retrieve full output\.\]$/;

const toolResultTexts = (messages: readonly AgentMessage[]) =>
  messages.flatMap((m) => (m.role === "toolResult" ? [m.content.map((b) => (b.type === "text" ? b.text : "")).join("")] : []));

describe.skipIf(!checkout)("pi-condense through the replay host (needs PI_CONDENSE_DIR)", () => {
  let root: string | undefined;
  afterEach(() => {
    if (root) rmSync(root, { recursive: true, force: true });
    root = undefined;
  });

  it("on a 20-request script it calls its summarizer and sends its stubs instead of the summarized outputs", async () => {
    const { factory, info } = await loadPiCondense(checkout!);
    expect(info.version).toBe("2.9.1");
    root = mkdtempSync(join(tmpdir(), "pprb-condense-"));
    const agentDirBefore = process.env.PI_CODING_AGENT_DIR;
    const host = await ReplayHost.create({ root, extension: { factory, settings: PI_CONDENSE_SETTINGS } });
    // Short tasks, so several end with a final reply (where pi-condense summarizes) within 20 requests.
    const script = takeTurns(codingScript({ seed: 3, turnsPerTask: [3, 5] }), 20);
    let requests = 0;
    let last: AgentMessage[] = [];
    let lastRaw: AgentMessage[] = [];
    for (const step of script) {
      if (step.kind === "user") {
        await host.user(step.text);
        continue;
      }
      lastRaw = host.contextMessages();
      last = await host.request();
      requests++;
      await host.assistantTurn(step);
    }
    expect(requests).toBe(20);
    expect(host.summarizerCalls.length).toBeGreaterThan(0);
    // What the model is sent holds pi-condense's stubs, and the session keeps every raw output.
    const sent = toolResultTexts(last);
    const stubs = sent.filter((t) => STUB.test(t));
    expect(stubs.length).toBeGreaterThan(0);
    const raw = toolResultTexts(lastRaw);
    expect(raw.filter((t) => STUB.test(t))).toEqual([]);
    expect(raw.length).toBe(sent.length);
    // Its summaries are in the session as the hidden custom messages it writes.
    expect(host.entries.filter((e) => e.type === "custom_message").length).toBeGreaterThan(0);
    // It read the settings written to the host's agent dir (it is off by default), and the
    // process's own PI_CODING_AGENT_DIR is back as it was.
    expect(process.env.PI_CODING_AGENT_DIR).toBe(agentDirBefore);
    expect(host.unsupported).toEqual(new Set());
  });
});
