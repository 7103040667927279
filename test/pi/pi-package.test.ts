// Pi's own exports are taken from the Pi that runs the extension: the bundled index beside its
// command line, which shares the modules Pi already loaded, not the package's unbundled index.
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PI_BIN, PI_PACKAGE_DIR } from "../helpers/pi-process.ts";
import { runningBundleIndex } from "../../pi-extension/src/pi-package.ts";

describe("the running Pi's package", () => {
  it("is found beside Pi's command line, through the bin link npm makes", () => {
    expect(runningBundleIndex(PI_BIN)).toBe(join(PI_PACKAGE_DIR, "dist", "bundle", "index.js"));
  });

  it("only a command line in a folder named bundle, with an index.js beside it, counts", () => {
    const dir = mkdtempSync(join(tmpdir(), "pprt-pkg-"));
    writeFileSync(join(dir, "cli.js"), "");
    writeFileSync(join(dir, "index.js"), "");
    expect(runningBundleIndex(join(dir, "cli.js"))).toBeUndefined();
    const bundle = join(dir, "bundle");
    mkdirSync(bundle);
    writeFileSync(join(bundle, "cli.js"), "");
    symlinkSync(join(bundle, "cli.js"), join(dir, "pi"));
    expect(runningBundleIndex(join(dir, "pi"))).toBeUndefined();
    writeFileSync(join(bundle, "index.js"), "");
    expect(runningBundleIndex(join(dir, "pi"))).toBe(join(bundle, "index.js"));
  });

  it("no script, or one that does not exist: none", () => {
    expect(runningBundleIndex(undefined)).toBeUndefined();
    expect(runningBundleIndex(join(tmpdir(), "no-such-dir", "bundle", "cli.js"))).toBeUndefined();
  });
});
