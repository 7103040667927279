// The hand-written files of a generated project (its scripts), kept as real files under
// bench/fixtures/<project>/ so that an editor and a linter read them as code. The recorder copies
// them into the project byte for byte, at the same paths relative to the project's root.
import { readFileSync, readdirSync } from "node:fs";
import { join, sep } from "node:path";
import { fileURLToPath } from "node:url";

export const FIXTURES_DIR = fileURLToPath(new URL("../fixtures/", import.meta.url));

/** Every file under bench/fixtures/<project>/, by its path in the project ("scripts/test.mjs"), in path order. */
export function readFixtureProject(project: string): Record<string, string> {
  const root = join(FIXTURES_DIR, project);
  const paths = readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(root.length + 1).split(sep).join("/"))
    .sort();
  if (!paths.length) throw new Error(`no files in ${root}`);
  return Object.fromEntries(paths.map((path) => [path, readFileSync(join(root, path), "utf8")]));
}
