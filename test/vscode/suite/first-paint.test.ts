// The Sessions view's first paint of a large session in a real extension host: the row shows a
// reclaim, marked as an estimate, before the session is parsed in full, then the view's own figure.
import * as assert from "node:assert/strict";
import * as path from "node:path";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import { reclaimText } from "../../../vscode-extension/src/trees/session-labels.ts";
import { largeSession, writeSession } from "../fixtures/sessions.ts";
import { extensionApi, sessionDirName, tempDir, useAgentDir, workspaceDir } from "./helpers.ts";

describe("Sessions view: first paint", () => {
  let api: PiPrunerApi;

  before(async () => {
    api = await extensionApi();
  });

  it("a large session's row shows an estimated reclaim before its full parse, then the view's own figure", async function () {
    this.timeout(120_000);
    const agentDir = tempDir("pi-pruner-first-paint-");
    const file = writeSession(path.join(agentDir, "sessions", sessionDirName(workspaceDir())), largeSession(workspaceDir(), 5_000_000));
    // What the row says each time its session changes, and whether its view was built by then.
    const seen: { description: string; viewBuilt: boolean }[] = [];
    const sub = api.store.onDidChangeSession((changed) => {
      if (changed !== file) return;
      const item = api.sessionsTree.getTreeItem(api.sessionsTree.sessionNode(file));
      seen.push({ description: String(item.description), viewBuilt: api.store.get(file)?.view !== undefined });
    });
    try {
      await useAgentDir(api, agentDir);
    } finally {
      sub.dispose();
    }
    assert.ok(seen.length >= 2, `the row changed twice at least (seen: ${JSON.stringify(seen)})`);
    const [first] = seen;
    assert.equal(first!.viewBuilt, false, "the first figure comes before the view is built");
    assert.match(first!.description, /· ≈[\d.]+[kM]?→[\d.]+[kM]?$/, "the row shows a reclaim marked as an estimate");
    const view = api.store.get(file)!.view!;
    const exact = reclaimText(view.totals.rawChars, view.totals.modelChars);
    const shown = String(api.sessionsTree.getTreeItem(api.sessionsTree.sessionNode(file)).description);
    assert.ok(shown.endsWith(` · ${exact}`), `once built, the row shows the view's figure ${exact}: ${shown}`);
    assert.ok(!shown.includes("≈"), "and no longer marks it as an estimate");
    assert.ok(api.store.marks.firstEstimateAt! < api.store.marks.firstViewAt!, "the estimate was ready before the view");
  });
});
