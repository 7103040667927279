// Another pruner loaded beside pi-pruner (a user switching from pi-condense who kept it in
// `packages`): both register `context_tree_query`, and Pi 1.6 refuses to start when two extensions
// register one tool name at load. In either load order the real `pi` now starts, the other pruner
// keeps its tool and its `/pruner`, pi-pruner stays out of the way for the session, and one line
// on stderr (print mode has no UI) says what conflicts and how to choose.
import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { ModelServer } from "../helpers/model-server.ts";
import { runPi, type RunPiResult } from "../helpers/run-pi.ts";
import { REPO_ROOT } from "../helpers/pi-process.ts";
import { EXTENSION, agentRequests, scriptedPi } from "../helpers/pruner-e2e.ts";
import { OTHER_PRUNER_TOOL_DESCRIPTION } from "../fixtures/pi/other-pruner/index.ts";

const OTHER_PRUNER = join(REPO_ROOT, "test", "fixtures", "pi", "other-pruner");
const PI_PRUNER = join(REPO_ROOT, EXTENSION);
const OUR_TOOLS = ["context_rewind", "context_cancel", "context_shrink", "context_audit"];
const CONFLICT = /^pi-pruner is off in this session: context_tree_query is already registered by .*other-pruner[/\\]index\.ts \(pi-condense or another pruner\)/;

const pi = scriptedPi();
afterEach(pi.stop);

/** The run's stderr as its non-empty lines. */
const stderrLines = (run: RunPiResult) => run.stderr.split("\n").filter((line) => line.trim() !== "");

/** Pi ran the prompt with the other pruner alone: its tool offered once, none of pi-pruner's, and no pi-pruner entry in the session. */
function expectOtherPrunerAlone(run: RunPiResult, server: ModelServer) {
  expect(run.stdout).toBe("The answer.\n");
  const [request] = agentRequests(server.requests);
  expect(request!.toolNames.filter((name) => name === "context_tree_query")).toHaveLength(1);
  const offered = (request!.body.tools ?? []).find((tool) => tool.function?.name === "context_tree_query");
  expect(offered?.function?.description).toBe(OTHER_PRUNER_TOOL_DESCRIPTION);
  expect(request!.toolNames.filter((name) => OUR_TOOLS.includes(name))).toEqual([]);
  // The other pruner read the shared settings block; pi-pruner wrote nothing to the session.
  expect(run.entries.filter((e) => e.type === "custom" && e.customType === "other-pruner-start").map((e) => e.data)).toEqual([{ enabled: true }]);
  expect(run.entries.filter((e) => typeof e.customType === "string" && e.customType.startsWith("context-prune-"))).toEqual([]);
}

describe("another pruner loaded beside pi-pruner in the real pi", () => {
  for (const order of [
    { label: "the other pruner first", packages: [OTHER_PRUNER, PI_PRUNER] },
    { label: "pi-pruner first", packages: [PI_PRUNER, OTHER_PRUNER] },
  ]) {
    it(`both in "packages", ${order.label}: Pi starts, the other pruner runs alone, and one stderr line names the conflict and the way to choose`, async () => {
      const { server, ws } = await pi.start([{ text: "The answer." }], { settings: { packages: order.packages, contextPrune: { enabled: true } } });
      const run = await runPi({ workspace: ws, prompts: ["hello"], timeoutMs: 30_000 });
      expect(run.code, run.stderr).toBe(0);
      const lines = stderrLines(run);
      expect(lines, run.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(CONFLICT);
      expect(lines[0]).toContain(`take ${JSON.stringify(OTHER_PRUNER)} out of "packages" in settings.json`);
      expect(lines[0]).toContain(`{"source": ${JSON.stringify(OTHER_PRUNER)}, "extensions": []}`);
      expectOtherPrunerAlone(run, server);
    });
  }

  it("the other pruner given with -e: the line says to leave its -e out", async () => {
    const { server, ws } = await pi.start([{ text: "The answer." }], { settings: { contextPrune: { enabled: true } } });
    const run = await runPi({ workspace: ws, extension: [EXTENSION, OTHER_PRUNER], prompts: ["hello"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const lines = stderrLines(run);
    expect(lines, run.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(CONFLICT);
    expect(lines[0]).toContain("leave out the other's -e");
    expectOtherPrunerAlone(run, server);
  });
});
