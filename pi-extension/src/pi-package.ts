// Pi's own exports (compact(), truncateHead()), taken from the Pi that runs the extension. Pi loads
// this bundle as a native ES module, so a plain import of `@earendil-works/pi-coding-agent` gets
// the package's unbundled index and its whole module graph a second time: seconds on a busy
// machine. Pi's command line runs from the package's bundle, whose own index shares the chunks that
// are already loaded. Loaded on first use, never at start-up.
import { existsSync, realpathSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

type PiPackage = typeof import("@earendil-works/pi-coding-agent");

let loading: Promise<PiPackage> | undefined;

/** Pi's package: the running Pi's bundled index where there is one, else the package as Node resolves it. */
export function piPackage(): Promise<PiPackage> {
  loading ??= load().catch((error: unknown) => {
    // A failed load is tried again on the next use.
    loading = undefined;
    throw error;
  });
  return loading;
}

async function load(): Promise<PiPackage> {
  const bundled = runningBundleIndex();
  if (bundled) {
    try {
      const pi = (await import(pathToFileURL(bundled).href)) as PiPackage;
      if (typeof pi.compact === "function" && typeof pi.truncateHead === "function") return pi;
    } catch {
      // Not the bundle we expected: the package as Node resolves it.
    }
  }
  return import("@earendil-works/pi-coding-agent");
}

/** The bundled index beside the running command line (`dist/bundle/cli.js`), if Pi runs from one. */
export function runningBundleIndex(script: string | undefined = process.argv[1]): string | undefined {
  if (!script) return undefined;
  try {
    const cli = realpathSync(script);
    const dir = dirname(cli);
    if (basename(dir) !== "bundle") return undefined;
    const index = join(dir, "index.js");
    return existsSync(index) ? index : undefined;
  } catch {
    return undefined;
  }
}
