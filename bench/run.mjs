// Entry of `npm run bench`: runs bench/main.ts on Node 22 (type stripping) with --expose-gc, so the
// suites can collect garbage between timed rounds. Arguments after `--` are passed on.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(`npm run bench needs Node >= 22.18 (TypeScript type stripping; Pi needs >= 22.19); this is ${process.version}. Run it through npm in this repository, which uses the Node 22 from node_modules/.bin.`);
  process.exit(1);
}
const main = join(dirname(fileURLToPath(import.meta.url)), "main.ts");
const result = spawnSync(process.execPath, ["--expose-gc", "--max-old-space-size=8192", "--disable-warning=ExperimentalWarning", main, ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(result.status ?? 1);
