// Peers run beside pi-pruner in the benchmarks. pi-condense is loaded from a checkout the person
// running the bench gives (`--peer-pi-condense DIR`): never vendored, never patched. It is loaded
// the way Pi 1.6 loads an extension (jiti, with Pi's own packages aliased to the installed ones),
// so its factory sees the same modules it would inside Pi.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createJiti } from "jiti";

export type ExtensionFactory = (pi: unknown) => void | Promise<void>;

export interface PeerInfo {
  name: string;
  version: string;
  dir: string;
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The module aliases Pi's loader gives an extension (its own packages and typebox under their old names too). */
function piAliases(): Record<string, string> {
  const piDir = join(root, "node_modules", "@earendil-works", "pi-coding-agent");
  const piRequire = createRequire(join(piDir, "package.json"));
  // Pi's packages export ESM only (an "import" condition), which require.resolve cannot follow.
  const entry = (specifier: string) => {
    try {
      return piRequire.resolve(specifier);
    } catch {
      return fileURLToPath(import.meta.resolve(specifier));
    }
  };
  const codingAgent = join(piDir, "dist", "index.js");
  const aiView = join(piDir, "dist", "core", "extensions", "pi-ai-extension-view.js");
  const tui = entry("@earendil-works/pi-tui");
  const agentCore = entry("@earendil-works/pi-agent-core");
  const typebox = entry("typebox");
  const aliases: Record<string, string> = {};
  for (const scope of ["@earendil-works", "@mariozechner"]) {
    aliases[`${scope}/pi-coding-agent`] = codingAgent;
    aliases[`${scope}/pi-agent-core`] = agentCore;
    aliases[`${scope}/pi-tui`] = tui;
    aliases[`${scope}/pi-ai/compat`] = aiView;
    aliases[`${scope}/pi-ai`] = aiView;
  }
  for (const name of ["typebox", "@sinclair/typebox"]) {
    aliases[name] = typebox;
    aliases[`${name}/compile`] = entry("typebox/compile");
    aliases[`${name}/value`] = entry("typebox/value");
  }
  return aliases;
}

/**
 * pi-condense's extension factory from a checkout of its repository, and what it is;
 * `importModule` loads another of its modules (a path inside the checkout) through the same loader.
 */
export async function loadPiCondense(dir: string): Promise<{ factory: ExtensionFactory; info: PeerInfo; importModule: <T>(path: string) => Promise<T> }> {
  const at = resolve(dir);
  const manifest = join(at, "package.json");
  if (!existsSync(manifest)) throw new Error(`${at} has no package.json: give the folder of a pi-condense checkout`);
  const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string; version?: string };
  if (pkg.name !== "pi-condense") throw new Error(`${at} holds ${pkg.name ?? "an unnamed package"}, not pi-condense`);
  const jiti = createJiti(import.meta.url, { moduleCache: false, alias: piAliases() });
  const factory = await jiti.import<ExtensionFactory>(join(at, "index.ts"), { default: true });
  if (typeof factory !== "function") throw new Error(`${at}/index.ts has no default extension factory`);
  const importModule = <T>(path: string) => jiti.import<T>(join(at, path));
  return { factory, info: { name: "pi-condense", version: pkg.version ?? "?", dir: at }, importModule };
}
