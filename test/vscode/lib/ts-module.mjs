// Loads a TypeScript module of the repository from a plain .mjs script on any Node (20 included):
// bundled by esbuild into .vscode-test/build/scripts/, then imported.
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { localDir, repoRoot } from "./provision.mjs";

export async function importTs(relativePath) {
  const outfile = join(localDir, "build", "scripts", `${basename(relativePath, ".ts")}.mjs`);
  await build({
    entryPoints: [join(repoRoot, relativePath)],
    outfile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // as scripts/build.mjs: jsonc-parser's UMD "main" has lazy requires esbuild cannot follow
    mainFields: ["module", "main"],
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    logLevel: "warning",
  });
  return import(`${pathToFileURL(outfile).href}?t=${Date.now()}`);
}
