// The picture of docs/architecture.md, made from the real imports by dependency-cruiser:
// which folder of core (and which package) imports which. `npm run graph` prints it;
// `npm run graph -- --write` puts it into docs/architecture.md between its graph markers.
// test/architecture.test.ts fails when the doc's picture no longer matches the code.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const DOC = join(root, "docs", "architecture.md");
export const START = "<!-- import graph: made by `npm run graph -- --write`; checked by test/architecture.test.ts -->";
export const END = "<!-- end of import graph -->";

/** The mermaid flowchart of folder-level imports, as dependency-cruiser draws it. */
export function importGraph() {
  const scope = "^(core/src|pi-extension/src|vscode-extension/src)";
  const out = execFileSync(
    process.execPath,
    [
      join(root, "node_modules/dependency-cruiser/bin/dependency-cruiser.mjs"),
      "core/src", "pi-extension/src", "vscode-extension/src",
      "--config", ".dependency-cruiser.cjs",
      "--include-only", scope,
      "--collapse", "^(core/src/[^/]+|pi-extension/src|vscode-extension/src)",
      "--output-type", "mermaid",
    ],
    { cwd: root, encoding: "utf8" },
  );
  return out.trim();
}

/** The graph block as it stands in the doc. */
export function documentedGraph(text = readFileSync(DOC, "utf8")) {
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < a) return undefined;
  return text.slice(a + START.length, b).replace(/^\s*```mermaid\s*/, "").replace(/\s*```\s*$/, "").trim();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const graph = importGraph();
  if (!process.argv.includes("--write")) {
    console.log(graph);
  } else {
    const text = readFileSync(DOC, "utf8");
    const a = text.indexOf(START);
    const b = text.indexOf(END);
    if (a < 0 || b < a) throw new Error(`${DOC} has no graph markers`);
    writeFileSync(DOC, `${text.slice(0, a + START.length)}\n\`\`\`mermaid\n${graph}\n\`\`\`\n${text.slice(b)}`);
    console.log(`wrote the import graph into ${DOC}`);
  }
}
