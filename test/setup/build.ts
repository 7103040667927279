// Tests run against the built artefacts as well as the sources: build once before any test file.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export default function setup(): void {
  const script = fileURLToPath(new URL("../../scripts/build.mjs", import.meta.url));
  execFileSync(process.execPath, [script, "--quiet"], { stdio: "inherit" });
}
