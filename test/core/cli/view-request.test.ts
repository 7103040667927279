// `pi-pruner view --request N`: a request already sent, as the user runs the built command; the
// leaf's view beside it is the next request.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG, mergeConfigLayers } from "../../../core/src/settings/config.ts";
import { PRUNE_SETTINGS } from "../../../core/src/shapes/entries.ts";
import { recordedConfig } from "../../../core/src/view/recorded-settings.ts";
import { renderRequest } from "../../../core/src/view/request-views.ts";

const bin = fileURLToPath(new URL("../../../pi-extension/bin/pi-pruner.js", import.meta.url));

function run(args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "pp-view-request-"));
  const r = spawnSync(process.execPath, [bin, ...args, "--cwd", dir], { cwd: dir, env: { ...process.env, PI_CODING_AGENT_DIR: join(dir, "agent") }, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Three requests: the first two with the pruner off (as recorded), the third after it was turned on. */
function session(): { file: string; b: SessionBuilder } {
  const b = new SessionBuilder();
  b.custom(PRUNE_SETTINGS, { version: "0.1.0", config: recordedConfig(mergeConfigLayers(DEFAULT_CONFIG, { enabled: false })) });
  b.user("read the guide").toolUse("read", { path: "docs/guide.md" }, "guide text").assistant("read it");
  b.custom(PRUNE_SETTINGS, { version: "0.1.0", config: recordedConfig(DEFAULT_CONFIG) });
  b.user("and now?").assistant("now this");
  return { file: b.writeTo(join(mkdtempSync(join(tmpdir(), "pp-view-request-s-")), "s.jsonl")), b };
}

describe("pi-pruner view --request", () => {
  it("names the request, the settings it was rendered with and what no view can show; the leaf's view is named the next request", () => {
    const { file } = session();
    const second = run(["view", file, "--request", "2"]);
    expect(second.code, second.stderr).toBe(0);
    const header = second.stdout.split("\n").filter((l) => l.startsWith("#"));
    expect(header[0]).toMatch(/^# Model view of .*s\.jsonl: request 2 of 3, answered by entry \S+ \(branch of leaf \S+\) · prompt: read the guide$/);
    expect(header).toContain("# rendered with the settings the session recorded before this request (by pi-pruner 0.1.0)");
    expect(header).toContain("# nudges that rode the request (the drift and high-water notes) are never written to the session and are not shown");
    expect(second.stdout).toContain("── 3. tool result · read · call_1 ──\nguide text");
    expect(second.stdout).not.toContain("read it");
    const last = run(["view", file, "--request", "last"]);
    expect(last.stdout).toMatch(/: request 3 of 3 \(the last request sent\),/);
    const leaf = run(["view", file]);
    expect(leaf.code, leaf.stderr).toBe(0);
    expect(leaf.stdout).toMatch(/^# Model view of .* at leaf \S+: the next request: what the model is sent when the session goes on from this leaf, with today's settings \(not sent yet\)$/m);
    expect(leaf.stdout).toContain("# the 3 requests already sent: --request 1…3 (--request last: the last one)");
    expect(leaf.stdout).toContain("now this");
  });

  it("--json prints the messages request N sent; --json --markers adds which request it was and the settings", () => {
    const { file, b } = session();
    const plain = run(["view", file, "--json", "--request", "2"]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(JSON.parse(plain.stdout)).toEqual(JSON.parse(JSON.stringify(renderRequest(b.entries, 2, { config: DEFAULT_CONFIG }).messages)));
    const marked = JSON.parse(run(["view", file, "--json", "--markers", "--request", "last"]).stdout);
    expect(Object.keys(marked).sort()).toEqual(["checkpoints", "messages", "request", "rewinds", "rewoundSpans", "settings", "shrinks"]);
    expect(marked.request).toEqual({ n: 3, of: 3, entryId: expect.any(String) });
    expect(marked.settings).toEqual({ source: "recorded", writer: "pi-pruner 0.1.0", entryId: b.entries.filter((e) => e.type === "custom")[1]!.id });
  });

  it("a request the branch does not have, or a number that is none, is a usage error", () => {
    const { file } = session();
    for (const [value, message] of [
      ["4", 'the branch sent 3 requests: --request takes 1…3 or "last"'],
      ["0", '--request takes a request number (1, 2, …) or "last", not "0"'],
      ["first", '--request takes a request number (1, 2, …) or "last", not "first"'],
    ] as const) {
      const r = run(["view", file, "--request", value]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(message);
    }
    const unanswered = new SessionBuilder().user("hello?").writeTo(join(mkdtempSync(join(tmpdir(), "pp-view-request-u-")), "u.jsonl"));
    const none = run(["view", unanswered, "--request", "last"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no request was sent on this branch yet");
    expect(run(["view", unanswered]).stdout).toContain("# no request was sent on this branch yet");
  });
});
