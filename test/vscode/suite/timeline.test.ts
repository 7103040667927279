// The context timeline of a session: its numbers are the provider's usage where the file has it
// and an estimate where it does not, each request's bar of tokens read / written / uncached is
// core's request cost, a request that rewrote the cache carries a mark and says why, its page runs
// only the extension's own script under a nonce, clicking a point opens the model view of that
// request, and it grows while Pi writes.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { PRUNE_STATS } from "../../../core/src/shapes/entries.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { getBranch, readSessionFile } from "../../../core/src/session/session-reader.ts";
import { branchCost } from "../../../core/src/view/request-cost.ts";
import { requestDetails } from "../../../vscode-extension/src/timeline/webview/request-details.ts";
import { columnsOf, requestRow, rowAt } from "../../../vscode-extension/src/timeline/protocol.ts";
import { REWRITES, rewriteSession } from "../fixtures/rewrite-session.ts";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import { parseDocumentUri } from "../../../vscode-extension/src/documents/document-uri.ts";
import { SHOW_TIMELINE_COMMAND } from "../../../vscode-extension/src/command-ids.ts";
import { closeAllEditors, EXTENSION_ID, extensionApi, sessionDirName, tempDir, useAgentDir, waitFor, workspaceDir } from "./helpers.ts";

/** Three requests: two answered by Anthropic with usage and cost, the third by a provider that wrote none. */
function knownUsageSession(): { text: string; more: string } {
  const b = new SessionBuilder({ sessionId: "s-timeline", cwd: workspaceDir(), startTime: Date.UTC(2025, 2, 1, 9, 0, 0) });
  const usage = (input: number, output: number, cacheRead: number, cacheWrite: number, total: number) => {
    const message = (b.entry(b.lastId) as { message: Record<string, unknown> }).message;
    message.api = "anthropic-messages";
    message.usage = { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost: { input: input * 3e-6, output: output * 15e-6, cacheRead: 0, cacheWrite: 0, total } };
  };
  b.user("what is in src/a.ts?").assistant({ toolCalls: [{ name: "read", args: { path: "src/a.ts" } }] });
  usage(1200, 40, 0, 1100, 0.0085);
  b.toolResult(b.lastToolCallIds[0]!, "read", "export const a = 1;\n".repeat(200));
  b.assistant("It exports a.");
  usage(300, 20, 2200, 0, 0.0019);
  b.custom(PRUNE_STATS, { callCount: 2, totalInputTokens: 1500, totalOutputTokens: 90, totalCost: 0.0006 });
  b.user("and b?").assistant("No b yet.");
  const text = b.toJsonl();
  b.user("write b").assistant("Done.");
  usage(500, 10, 2500, 0, 0.0022);
  return { text, more: b.toJsonl().slice(text.length) };
}

describe("context timeline", () => {
  let api: PiPrunerApi;
  let file: string;
  let more: string;
  /** The session whose requests rewrote the cache for known reasons. */
  let causes: string;

  before(async () => {
    api = await extensionApi();
    const agentDir = tempDir("pi-pruner-timeline-");
    const sessionDir = path.join(agentDir, "sessions", sessionDirName(workspaceDir()));
    fs.mkdirSync(sessionDir, { recursive: true });
    const session = knownUsageSession();
    more = session.more;
    file = path.join(sessionDir, "2025-03-01T09-00-00-000Z_s-timeline.jsonl");
    fs.writeFileSync(file, session.text);
    const rewrites = await rewriteSession(workspaceDir());
    causes = path.join(sessionDir, rewrites.file);
    fs.writeFileSync(causes, rewrites.text);
    await useAgentDir(api, agentDir);
  });

  after(closeAllEditors);

  it("shows the provider's usage per request, an estimate where the file has none, and the totals", async () => {
    await vscode.commands.executeCommand(SHOW_TIMELINE_COMMAND, file);
    const shown = await waitFor(() => {
      const message = api.timelines.panelOf(file)?.message;
      return message && message.timeline.points.length === message.total ? message : undefined;
    }, "the timeline panel with its data");
    assert.equal(shown.total, 3);
    const { points, totals, marks } = shown.timeline;
    assert.deepEqual(
      points.map((p) => [p.n, p.usage?.input, p.usage?.cacheRead, p.usage?.cacheWrite, p.usage?.output, p.cost, p.costEstimated]),
      [
        [1, 1200, 0, 1100, 40, 0.0085, false],
        [2, 300, 2200, 0, 20, 0.0019, false],
        [3, undefined, undefined, undefined, undefined, points[2]!.cost, true],
      ],
    );
    assert.ok(points[2]!.cost > 0, "the third request's estimate is a cost");
    assert.equal(points[1]!.rawChars, points[1]!.sentChars, "nothing was pruned before request 2");
    assert.equal(totals.requests, 3);
    assert.equal(totals.estimatedRequests, 1);
    assert.ok(Math.abs(totals.cost - (0.0085 + 0.0019 + points[2]!.cost)) < 1e-12, `cost ${totals.cost}`);
    assert.deepEqual(totals.summarizer, { calls: 2, inputTokens: 1500, outputTokens: 90, cost: 0.0006 });
    assert.ok(Math.abs(totals.saving - (totals.costWithoutPruning - totals.cost - 0.0006)) < 1e-12);
    assert.deepEqual(marks, [], "no flush, chain, compaction, branch or marker on this branch");
    assert.match(shown.title, /Context timeline/);
  });

  it("runs only its own script, under the page's nonce, and loads nothing", async () => {
    const panel = await waitFor(() => api.timelines.panelOf(file)?.panel, "the timeline panel");
    const html = panel.webview.html;
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
    assert.ok(csp, "the page has a content security policy");
    assert.match(csp, /default-src 'none'/);
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'(;|$)/.exec(csp)?.[1];
    assert.ok(nonce && nonce.length >= 16, `script-src allows only a nonce: ${csp}`);
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.equal(scripts.length, 1);
    const [script] = scripts;
    assert.equal(script![1], ` nonce="${nonce}"`, "the one script carries the nonce and nothing else");
    // The script is the extension's own bundle, written into the page whole.
    const bundle = fs.readFileSync(path.join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, "dist", "timeline", "timeline-view.js"), "utf8");
    assert.equal(script![2]!.trimEnd(), bundle.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "").trimEnd(), "the page's script is dist/timeline/timeline-view.js");
    assert.doesNotMatch(html, /\b(?:src|href)=/, "the page fetches nothing, not even the extension's own files");
    const allowed = new Set(panel.webview.cspSource.split(/\s+/));
    const origins = csp.split(";").flatMap((d) => d.trim().split(/\s+/).slice(1)).filter((s) => !s.startsWith("'"));
    assert.ok(origins.length > 0);
    for (const origin of origins) assert.ok(allowed.has(origin), `${origin} is the webview's own resource origin (${panel.webview.cspSource})`);
  });

  it("opens the model view of the request a point stands for", async () => {
    const editor = await api.timelines.handle(file, { type: "open", request: 2 });
    assert.ok(editor, "an editor opened");
    const request = parseDocumentUri(editor.document.uri);
    assert.equal(request?.kind, "model");
    assert.equal(request?.kind === "model" ? request.request : undefined, 2);
    assert.match(editor.document.getText(), /request 2 of 3/);
  });

  it("grows while Pi writes", async () => {
    fs.appendFileSync(file, more);
    const grown = await waitFor(() => {
      const message = api.timelines.panelOf(file)?.message;
      return message && message.timeline.points.length === 4 ? message : undefined;
    }, "the timeline to take the request Pi just wrote", 10_000);
    assert.equal(grown.timeline.points[3]!.usage?.cacheRead, 2500);
    assert.equal(grown.timeline.points[3]!.cost, 0.0022);
  });

  describe("why a request cost what it did", () => {
    before(async () => {
      const panel = await vscode.commands.executeCommand(SHOW_TIMELINE_COMMAND, causes);
      assert.ok(panel, "the timeline panel opened");
      await api.timelines.built(causes);
    });

    const posted = () => {
      const message = api.timelines.panelOf(causes)?.message;
      assert.ok(message && message.timeline.points.length === message.total, "the panel posted the whole timeline");
      return message;
    };

    it("stacks each request's tokens read from the cache, written and sent uncached as core's request cost has them", async () => {
      const { bars, timeline } = posted();
      const data = await readSessionFile(causes);
      const cost = branchCost(getBranch(data).entries, { config: DEFAULT_CONFIG });
      assert.equal(bars.length, 9);
      assert.deepEqual(
        bars.map((b) => [b.n, b.read, b.written, b.uncached, b.estimated, b.rewritten]),
        cost.requests.map((r) => [r.n, r.read, r.written, r.uncached, r.estimated, r.rewritten]),
      );
      assert.deepEqual(bars.map((b) => b.n), timeline.points.map((p) => p.n), "one bar per point");
      // The provider's figures, as the file records them.
      assert.deepEqual([bars[2]!.read, bars[2]!.written, bars[2]!.uncached], [200, 1500, 10]);
    });

    it("marks the requests that rewrote the cache (a flush, an idle gap, a model change), and no other", () => {
      const { bars } = posted();
      assert.deepEqual(bars.filter((b) => b.rewritten > 0).map((b) => [b.n, b.causeKind]), REWRITES);
      assert.equal(bars[2]!.rewritten, 1510, "request 3 wrote back what request 2 had cached after the stubbed read");
    });

    it("names the cause on hover: the flush with the refs it stubbed and the first changed message, the idle gap, the model change", () => {
      const { bars, timeline } = posted();
      // The page has each request as a column entry: its hover reads the row back out of the columns.
      const rows = timeline.points.map((p, i) => requestRow(p, bars[i]!));
      const columns = columnsOf(rows);
      assert.deepEqual(rows.map((_, i) => rowAt(columns, i)), rows, "each row comes back out of the columns whole");
      const hover = (n: number) => requestDetails(rowAt(columns, n - 1), timeline.marks).join("\n");
      assert.match(hover(3), /Rewrote 1,510 tokens beyond the 0 added: a flush \(\w+\) stubbed t1 \(first changed message: \d+\)/);
      assert.match(hover(5), /Rewrote [\d,]+ tokens beyond the [\d,]+ added: an idle gap of 10 min, past the cache's 5 min lifetime/);
      assert.match(hover(8), /Rewrote 3,830 tokens beyond the 480 added: the model changed/);
      assert.doesNotMatch(hover(4), /Rewrote/);
      assert.match(hover(3), /Tokens read 200 · written 1,500 · uncached 10 · output 20 tokens \(the provider's usage\)/);
    });

    it("marks a request whose answer carries no usage as estimated, bar and hover", () => {
      const { bars, timeline } = posted();
      assert.deepEqual(bars.map((b) => b.estimated), [false, false, false, false, false, false, false, false, true]);
      const hover = requestDetails(requestRow(timeline.points[8]!, bars[8]!), timeline.marks).join("\n");
      assert.match(hover, /Tokens read [\d,]+ · written [\d,]+ · uncached [\d,]+ · output [\d,]+ tokens \(estimate, anthropic pricing: the answer carries no usage\)/);
    });
  });
});
