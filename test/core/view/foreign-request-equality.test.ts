// Sessions other extensions wrote in the real `pi` (recorded by test/fixtures/foreign/record.ts,
// their code run unpatched): pi-condense 2.9.1 on Pi 1.6, pi-mulligan 0.1.4 on Pi 1.6 and on Pi
// 0.84.1, each beside the agent's requests the scripted model server received. The view of every
// request on every branch is what was sent:
// - pi-condense flushes at the end of an answer, so its entries land in the file after that
//   request went out and before its answer: they belong to the next request;
// - pi-mulligan's markers did nothing on Pi 1.6 (its filter gives up there) and worked on 0.84.
//
// The words of a stub and of a chain block are pi-pruner's in the view (the header says so):
// both sides name a stub by its ref and a block by its id, and everything else must be equal.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { main } from "../../../core/src/cli/cli.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";
import { viewShape } from "../../helpers/pruner-e2e.ts";
import { REPO_ROOT } from "../../helpers/pi-process.ts";
import type { Recorded } from "../../fixtures/foreign/record.ts";
import { readSessionFile } from "../../../core/src/session/session-reader.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import { buildRequestView } from "../../../core/src/view/request-views.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";

const FIXTURES = join(REPO_ROOT, "test", "fixtures", "foreign");

/** A stub by its ref, a chain block by its id: the only words the two writers put differently. */
function sameWords(line: string): string {
  return line
    .replace(/^(tool \S+: )\[(?:Summarized in pruner summary, ref `(t\d+)`|\S+ output pruned: see ref `(t\d+)`)[^\n]*\]$/, (_m, head: string, a?: string, b?: string) => `${head}<stub ${a ?? b}>`)
    .replace(/^(user: <compressed-chain id="[^"]*")[\s\S]*$/, "$1>");
}

async function view(file: string, leafId: string, n: number): Promise<{ messages: AgentMessage[]; settings: { source: string; writer: string | null } }> {
  let out = "";
  let err = "";
  const code = await main(["view", file, "--leaf", leafId, "--json", "--markers", "--request", String(n)], { out: (t) => (out += t), err: (t) => (err += t), env: { PI_CODING_AGENT_DIR: join(FIXTURES, "no-agent-dir") }, cwd: FIXTURES });
  expect(code, err).toBe(0);
  return JSON.parse(out) as { messages: AgentMessage[]; settings: { source: string; writer: string | null } };
}

const CONDENSE = { source: "writer-defaults", writer: "pi-condense 2.x" };
// pi-mulligan records no settings and has none of pi-condense's defaults: today's (none here) stand in.
const TODAY = { source: "current", writer: null };

describe.each([
  ["condense-main", CONDENSE],
  ["condense-compaction", CONDENSE],
  ["condense-branched", CONDENSE],
  ["condense-budget", CONDENSE],
  ["mulligan-pi-1-6", TODAY],
  ["mulligan-pi-0-84", TODAY],
] as const)("%s: every request as its writer sent it", (name, settings) => {
  const file = join(FIXTURES, name, "session.jsonl");
  const recorded = JSON.parse(readFileSync(join(FIXTURES, name, "requests.json"), "utf8")) as Recorded;

  it.each(recorded.branches.map((b, i) => [i + 1, b] as const))("branch %i", async (_i, branch) => {
    for (let n = 1; n <= branch.requests.length; n++) {
      const shown = await view(file, branch.leafId, n);
      expect(shown.settings, `request ${n}'s settings`).toEqual(expect.objectContaining(settings));
      expect(viewShape(shown.messages).map(sameWords), `request ${n} of ${branch.requests.length}`).toEqual(branch.requests[n - 1]!.map(sameWords));
    }
  });
});

describe("a setting changed today", () => {
  const data = () => readSessionFile(join(FIXTURES, "condense-main", "session.jsonl"));
  const protectingPricing: PruneConfig = { ...DEFAULT_CONFIG, protectedPaths: [...DEFAULT_CONFIG.protectedPaths, "src/pricing.ts"] };

  it("changes no request pi-condense sent, and the session's calls keep the state its writer gave them", async () => {
    const session = await data();
    const pricing = buildSessionView(session, { config: DEFAULT_CONFIG }).calls.find((c) => c.path === "src/pricing.ts")!;
    expect(pricing.state).toBe("summarized");
    const today = buildSessionView(session, { config: protectingPricing });
    expect(today.calls.find((c) => c.path === "src/pricing.ts")!.state).toBe("summarized");
    expect(today.protected.map((p) => p.path)).toEqual(["skills/review/SKILL.md"]);
    const count = buildRequestView(session, { config: DEFAULT_CONFIG, request: "last" })!.requestCount;
    for (let n = 1; n <= count; n++) {
      const before = buildRequestView(session, { config: DEFAULT_CONFIG, request: n })!;
      expect(buildRequestView(session, { config: protectingPricing, request: n })!.messages, `request ${n}`).toEqual(before.messages);
    }
  });
});
