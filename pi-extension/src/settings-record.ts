// Records the effective pruning settings in the session, as one hidden entry whenever they differ
// from the newest recorded on the branch, so a request already sent can later be shown with the
// settings it was rendered with (a settings edit does not rewrite history).
import { readFileSync } from "node:fs";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { settingsToRecord, type AnyEntry, type PruneConfig } from "@pi-pruner/core";
import { persistEntries } from "./entry-drafts.ts";
import type { OnceReporter } from "./once-reporter.ts";

/** This package's version, named in the entry: what its defaults were follows from it. */
const PRUNER_VERSION = packageVersion();

function packageVersion(): string | undefined {
  try {
    // The same one level up from the sources and from the bundle in dist/.
    const pkg: unknown = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    const { name, version } = (pkg ?? {}) as { name?: unknown; version?: unknown };
    return name === "pi-pruner" && typeof version === "string" ? version : undefined;
  } catch {
    return undefined;
  }
}

/** Appends the settings entry when `config` or the model's `contextWindow` is not what the branch last recorded. A failure is reported once and changes nothing else. */
export function recordSettings(pi: Pick<ExtensionAPI, "appendEntry" | "sendMessage">, branch: () => readonly AnyEntry[], config: PruneConfig, reporter: OnceReporter, contextWindow?: number): void {
  try {
    const entry = settingsToRecord(branch(), PRUNER_VERSION, config, contextWindow);
    if (entry) persistEntries(pi, [entry]);
  } catch (error) {
    const message = (error as Error).message;
    reporter.report(`settings-record:${message}`, `pi-pruner: could not record the settings in the session (${message}); its requests will be shown with the settings of the day they are viewed`);
  }
}
