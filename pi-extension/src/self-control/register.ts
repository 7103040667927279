// Registers the agent's self-control tools, their nudges and the person's checkpoint and audit
// subcommands. Each part lives in its own file; this one only wires them.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { Subcommand } from "../commands.ts";
import type { SelfControlHost } from "./host.ts";
import { registerRewindTools, rewindSubcommands } from "./rewind-tools.ts";
import { registerShrinkTools, shrinkSubcommands } from "./shrink-tools.ts";
import { createSelfControlLive, type SelfControlLive } from "./live.ts";

/** Registers the tools and event handlers; returns the `/pruner` subcommands they add and the hook the `context` handler calls. */
export function registerSelfControl(pi: ExtensionAPI, host: SelfControlHost): { subcommands: Record<string, Subcommand>; live: SelfControlLive } {
  registerRewindTools(pi, host);
  registerShrinkTools(pi, host);
  return { subcommands: { ...rewindSubcommands(pi, host), ...shrinkSubcommands(host) }, live: createSelfControlLive(pi, host) };
}
