// The shrink and audit tools, the nudges that ride requests, and the stale and cap retirement of shrinks.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { Subcommand } from "../commands.ts";
import type { SelfControlHost } from "./host.ts";

export function registerShrinkTools(_pi: ExtensionAPI, _host: SelfControlHost): void {}

export function shrinkSubcommands(_host: SelfControlHost): Record<string, Subcommand> {
  return {};
}
