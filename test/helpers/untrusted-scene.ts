// The ground of the untrusted-path tests: a temporary root holding a sessions folder and, beside
// it, a folder with the files an attacker would aim at; and every path under a root, to show that
// nothing appeared or changed there.
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

/** What `outside/secret.txt` holds: no reader may ever return it. */
export const SECRET = "SECRET-KEY-MATERIAL";

/** A root holding a session folder and, beside it, things an attacker would aim at (`secret.txt`, `requirements.txt`). */
export function untrustedScene(prefix = "pp-untrusted-") {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const sessionDir = join(root, "agent", "sessions", "--proj--");
  const outside = join(root, "outside");
  mkdirSync(sessionDir, { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), SECRET);
  writeFileSync(join(outside, "requirements.txt"), "flask\n");
  return { root, sessionDir, outside };
}

/** Every path under `root`, relative to it and sorted; a link is marked `@` and not followed. */
export function fileTree(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      out.push(`${relative(root, p)}${e.isSymbolicLink() ? "@" : ""}`);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(root);
  return out.sort();
}
