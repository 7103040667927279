// pi-pruner for Pi: registers the pruner's event handlers, tools and commands. Each handler is one
// call into the runtime (runtime.ts), which holds the session's state; nothing else lives here.
// Everything is registered through `registerAsSolePruner` (sole-pruner.ts): where another pruner
// is loaded, pi-pruner stays out of the way instead of stopping Pi.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { createPrunerRuntime } from "./runtime.ts";
import { registerQueryTool } from "./query-tool.ts";
import { registerSelfControl } from "./self-control/register.ts";
import { registerCommands } from "./commands.ts";
import { registerAsSolePruner } from "./sole-pruner.ts";

export default function piPruner(host: ExtensionAPI): void {
  const pi = registerAsSolePruner(host);
  const runtime = createPrunerRuntime(pi);

  pi.on("session_start", (_event, ctx) => runtime.onSessionStart(ctx));
  pi.on("session_tree", (_event, ctx) => runtime.onSessionTree(ctx));
  pi.on("input", (event, ctx) => runtime.onInput(event, ctx));
  pi.on("before_agent_start", (_event, ctx) => runtime.onBeforeAgentStart(ctx));
  pi.on("turn_end", (event, ctx) => runtime.onTurnEnd(event, ctx));
  pi.on("context", (event, ctx) => runtime.onContext(event, ctx));
  pi.on("message_end", (event, ctx) => runtime.onMessageEnd(event, ctx));
  pi.on("before_provider_request", (event, ctx) => runtime.onProviderRequest(event, ctx));
  pi.on("session_before_compact", (event, ctx) => runtime.onBeforeCompact(event, ctx));
  pi.on("session_before_tree", (event, ctx) => runtime.onBeforeTree(event, ctx));
  pi.on("session_shutdown", (_event, ctx) => runtime.onSessionShutdown(ctx));

  registerQueryTool(pi, runtime.queryTool);
  const selfControlSubcommands = registerSelfControl(pi, runtime.selfControl);
  registerCommands(pi, runtime.commands, selfControlSubcommands);
}
