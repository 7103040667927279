// The built command line on a project whose `.pi/settings.json` is not a settings file at all: a
// link to /dev/zero (never ends), to /proc/self/pagemap (stat says 0 bytes, reads on for hundreds
// of gigabytes) or a FIFO (an open for reading waits for a writer). `check --cwd` and `view` answer
// at once with one warning naming the file; the time limit only ends a run that would never end.
import { afterAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SessionBuilder } from "../helpers/session-builder.ts";

const bin = fileURLToPath(new URL("../../pi-extension/bin/pi-pruner.js", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "pp-cli-settings-links-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A run of the command line, SIGKILLed after `timeoutMs` (a run that reads on forever). */
function cli(args: string[], agentDir: string, timeoutMs = 10_000) {
  const started = Date.now();
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: agentDir }, timeout: timeoutMs, killSignal: "SIGKILL" });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - started };
}

const kinds = [
  { name: "a link to /dev/zero", make: (file: string) => symlinkSync("/dev/zero", file), available: existsSync("/dev/zero") },
  { name: "a link to /proc/self/pagemap", make: (file: string) => symlinkSync("/proc/self/pagemap", file), available: existsSync("/proc/self/pagemap") },
  { name: "a FIFO", make: (file: string) => void spawnSync("mkfifo", [file]), available: process.platform !== "win32" },
];

describe("pi-pruner on a project whose .pi/settings.json is not a file", () => {
  for (const kind of kinds) {
    it.skipIf(!kind.available)(`${kind.name}: check --cwd and view answer without it, with one warning naming it`, () => {
      const dir = mkdtempSync(join(root, "case-"));
      const agentDir = join(dir, "agent");
      const project = join(dir, "project");
      mkdirSync(agentDir);
      mkdirSync(join(project, ".pi"), { recursive: true });
      writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ contextPrune: { protectedPaths: ["docs/**"] } }));
      const projectFile = join(project, ".pi", "settings.json");
      kind.make(projectFile);
      const warning = `warning: project settings: ${projectFile}: cannot read: not a regular file; its contextPrune settings are ignored\n`;

      const check = cli(["check", "--cwd", project, "docs/guide.md", "src/a.ts"], agentDir);
      expect(check.signal, `check was still running after ${check.ms} ms`).toBeNull();
      expect(check.stdout).toBe("protected  docs/guide.md  (by `docs/**`)\nprunable   src/a.ts\n");
      expect(check.stderr).toBe(`${warning}pi-pruner: answered without a settings file that could not be read; fix it and check again\n`);
      expect(check.code).toBe(2);

      const session = join(dir, "session.jsonl");
      new SessionBuilder({ cwd: project }).user("read the guide").toolUse("read", { path: "docs/guide.md" }, "the guide").assistant({ text: "Done." }).writeTo(session);
      const view = cli(["view", session], agentDir);
      expect(view.signal, `view was still running after ${view.ms} ms`).toBeNull();
      expect(view.stderr).toBe(warning);
      expect(view.stdout).toContain("the guide");
      expect(view.code).toBe(0);
    });
  }
});
