// Sessions and search results a person can tell apart in a narrow side bar: rows whose names begin
// alike begin with what differs, equal names with when each began, search groups are titled as
// the rows are, and a search result shows the matched word, highlighted, near the start of its
// line, even deep in a long output.
import * as assert from "node:assert/strict";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { SearchNode } from "../../../vscode-extension/src/search/search-tree.ts";
import { SHOWN_LABEL_CHARS } from "../../../vscode-extension/src/session-names.ts";
import { writeSession } from "../fixtures/sessions.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { children, extensionApi, freshAgent, sessionDirName, tempDir, useAgentDir, workspaceDir } from "./helpers.ts";

const WORD = "quokkaberry";
const LONG = "[C1] Look at the session file of yesterday and tell me";
/** Two pairs of names that differ only past what a default-width row shows, and two equal names. */
const NAMES = [`${LONG} about the parser`, `${LONG} about the server`, "[M1] Why did the build fail on the release branch last night?", "[M1] Why did the build fail on the release branch this morning?", "fix the flaky test", "fix the flaky test"];

function writeSessions(sessionDir: string, cwd: string): string[] {
  const log = Array.from({ length: 400 }, (_, i) => `line ${i} of the test run`);
  log[300] = `FAIL ${WORD} did not resolve`;
  return NAMES.map((name, i) => {
    const id = `s-apart-${i}`;
    const start = Date.UTC(2025, 3, 1 + i, 9, 0);
    const b = new SessionBuilder({ sessionId: id, cwd, startTime: start }).user(name);
    b.toolUse("bash", { command: "npm test" }, log.join("\n")).assistant("one test fails");
    return writeSession(sessionDir, { file: `${new Date(start).toISOString().replace(/[:.]/g, "-")}_${id}.jsonl`, text: b.toJsonl() }, new Date(start));
  });
}

describe("sessions told apart", () => {
  let api: PiPrunerApi;
  let files: string[];

  before(async () => {
    api = await extensionApi();
    const agentDir = tempDir("pi-pruner-apart-");
    files = writeSessions(path.join(agentDir, "sessions", sessionDirName(workspaceDir())), workspaceDir());
    await useAgentDir(api, agentDir);
  });

  after(async () => {
    await vscode.commands.executeCommand("piPruner.clearSearch");
    await freshAgent(api);
  });

  it("every session row differs in the characters a default-width side bar shows", async () => {
    const rows = await children(api.sessionsTree);
    const labels = new Map(rows.map((r) => [r.node.path, r.label]));
    const shown = files.map((f) => labels.get(f)!.slice(0, SHOWN_LABEL_CHARS));
    assert.equal(new Set(shown).size, files.length, `rows alike: ${JSON.stringify(shown)}`);
    assert.equal(labels.get(files[0]!), "[C1] … the parser");
    assert.equal(labels.get(files[1]!), "[C1] … the server");
    assert.equal(labels.get(files[2]!), "[M1] … branch last night?");
    assert.match(labels.get(files[4]!)!, /^2025-04-05 \d\d:\d\d · fix the flaky test$/);
    // What tells them apart is in the label: the description is their age and reclaim alone.
    for (const r of rows) assert.match(r.description, /^(\d+(s|min|h|d) ago|[A-Z][a-z]{2} \d+) · \d+(\.\d)?[kM]?→\d+(\.\d)?[kM]?$/, r.description);
  });

  it("search groups are titled as their rows, so equal names are told apart there too", async () => {
    await vscode.commands.executeCommand("piPruner.searchSessions", WORD);
    const groups = (await children<SearchNode>(api.searchTree)).filter((r) => r.node.kind === "session");
    assert.equal(groups.length, files.length);
    assert.equal(new Set(groups.map((g) => g.label)).size, files.length, `group titles alike: ${groups.map((g) => g.label).join(" | ")}`);
  });

  it("a result deep in a long output shows the matched word near its start, highlighted", async () => {
    await vscode.commands.executeCommand("piPruner.searchSessions", WORD);
    const [group] = (await children<SearchNode>(api.searchTree)).filter((r) => r.node.kind === "session");
    const [hit] = await children<SearchNode>(api.searchTree, group!.node);
    assert.equal(hit!.description, "output bash");
    const label = hit!.item.label as vscode.TreeItemLabel;
    assert.equal(typeof label, "object", "a label with highlights");
    assert.match(label.label, new RegExp(`${WORD} did not resolve`));
    assert.deepEqual(
      (label.highlights ?? []).map(([a, b]) => label.label.slice(a, b)),
      [WORD],
    );
    assert.ok(label.highlights![0]![0] <= 14, `the word begins within a narrow row's first characters: ${label.label}`);
  });
});
