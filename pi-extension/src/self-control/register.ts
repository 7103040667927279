// Registers the agent's self-control tools, the reminder on bloated tool results and the person's
// checkpoint and audit subcommands. Each part lives in its own file; this one only wires them. The
// hooks on the request path (`live.ts`) are the runtime's: it calls them on Pi's events.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { Subcommand } from "../commands.ts";
import type { SelfControlHost } from "./host.ts";
import { registerRewindTools, rewindSubcommands } from "./rewind-tools.ts";
import { registerShrinkTools, shrinkSubcommands } from "./shrink-tools.ts";
import { registerBloatReminder } from "./live.ts";

/** Registers the tools and the reminder; returns the `/pruner` subcommands they add. */
export function registerSelfControl(pi: ExtensionAPI, host: SelfControlHost): Record<string, Subcommand> {
  registerRewindTools(pi, host);
  registerShrinkTools(pi, host);
  registerBloatReminder(pi, host);
  return { ...rewindSubcommands(pi, host), ...shrinkSubcommands(host) };
}
