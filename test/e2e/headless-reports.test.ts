// Print and json modes have no UI (Pi's notify does nothing there), so the pruner's warnings go to
// stderr, once each, and stdout stays what the mode promises: the answer in print mode, JSON
// lines in json mode. The real `pi` against a scripted model.
import { afterEach, describe, expect, it } from "vitest";
import { runPi } from "../helpers/run-pi.ts";
import { EXTENSION, agentRequests, isSummarizerRequest, scriptedPi } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES } from "../helpers/request-equality.ts";

const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");
const WAIT_NOTICE = "pi-pruner: waiting for the summarizer's answer before the session closes";
const nonEmptyLines = (text: string) => text.split("\n").filter((line) => line.trim() !== "");

const pi = scriptedPi();
afterEach(pi.stop);

describe("the pruner's reports where Pi has no UI", () => {
  it("print mode: a summarizer answering 500 is one line on stderr, and stdout is the answer alone", async () => {
    const { server, ws } = await pi.start(
      [{ toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] }, { text: "Both read." }],
      {
        files: { "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60) },
        // The final reply flushes (not cache-aware), and the flush waits for its summary.
        settings: { contextPrune: { pruneOn: "agent-message", cacheAware: false, selfControl: NO_NUDGES } },
      },
      [{ status: 500, body: "summarizer is down" }],
    );
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read a and b"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(server.requests.filter(isSummarizerRequest)).toHaveLength(1);
    expect(agentRequests(server.requests)).toHaveLength(2);
    expect(run.stdout).toBe("Both read.\n");
    // The failure is said once. The only other line there may be is the notice that the session's
    // end waits for the summarizer, which a slow machine can make long enough to be told.
    const errorLines = nonEmptyLines(run.stderr).filter((line) => !line.startsWith(WAIT_NOTICE));
    expect(errorLines, run.stderr).toHaveLength(1);
    expect(errorLines[0]).toMatch(/^pi-pruner: summarizer failed \(.*500.*\); raw outputs stay in context/);
  });

  it("json mode: an invalid setting is one line on stderr, and every stdout line is JSON", async () => {
    const { server, ws } = await pi.start([{ text: "Hello." }, { text: "Hello again." }], {
      settings: { contextPrune: { minBatchChars: "lots", selfControl: NO_NUDGES } },
    });
    const run = await runPi({ workspace: ws, extension: EXTENSION, mode: "json", prompts: ["hi", "and again"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(agentRequests(server.requests)).toHaveLength(2);
    const errorLines = nonEmptyLines(run.stderr);
    expect(errorLines, run.stderr).toHaveLength(1);
    expect(errorLines[0]).toMatch(/^pi-pruner: .*minBatchChars/);
    const stdoutLines = nonEmptyLines(run.stdout);
    expect(stdoutLines.length).toBeGreaterThan(0);
    for (const line of stdoutLines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(run.stdout).not.toContain("pi-pruner:");
  });
});
