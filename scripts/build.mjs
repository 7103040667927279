// Bundles what ships: the Pi package (its extension and the `pi-pruner` command line) and the VS Code extension.
import { build } from "esbuild";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const at = (p) => join(root, p);

const targets = [
  {
    // The command line ships inside the Pi package, so installing the package gives `pi-pruner`
    // (pi-extension/bin/pi-pruner.js runs it); the repository's `npx pi-pruner` is the same bin.
    entry: "core/src/cli/cli.ts",
    outfile: "pi-extension/dist/cli.js",
    format: "esm",
    platform: "node",
    target: "node20",
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  },
  {
    entry: "pi-extension/src/index.ts",
    outfile: "pi-extension/dist/index.js",
    format: "esm",
    platform: "node",
    target: "node22",
    // Pi imports an ES module extension natively, so its own copies of the host packages are not
    // what an import here gets: typebox (tool schemas are plain JSON Schema to Pi) is bundled rather
    // than loaded file by file on every start; Pi's packages stay external and are loaded only
    // when used (pi-extension/src/pi-package.ts).
    external: ["@earendil-works/*"],
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  },
  {
    entry: "vscode-extension/src/extension.ts",
    outfile: "vscode-extension/dist/extension.cjs",
    format: "cjs",
    platform: "node",
    target: "node20",
    external: ["vscode"],
  },
  {
    // The context timeline's page, run inside its webview: uPlot and the page's CSS bundled in.
    entry: "vscode-extension/src/timeline/webview/timeline-view.ts",
    outfile: "vscode-extension/dist/timeline/timeline-view.js",
    format: "iife",
    platform: "browser",
    target: "es2022",
  },
];

const quiet = process.argv.includes("--quiet");
for (const t of targets) {
  if (!existsSync(at(t.entry))) continue;
  await build({
    entryPoints: [at(t.entry)],
    outfile: at(t.outfile),
    bundle: true,
    format: t.format,
    platform: t.platform,
    target: t.target,
    external: t.external ?? [],
    banner: t.banner,
    // jsonc-parser's "main" is a UMD build whose lazy requires esbuild cannot follow; its ESM build bundles cleanly.
    mainFields: ["module", "main"],
    sourcemap: "linked",
    logLevel: "warning",
  });
  if (!quiet) console.log(`built ${t.outfile}`);
}
