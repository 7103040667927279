// What self-control does on Pi's live events besides its tools: the nudges that ride requests
// already being made (never persisted), the per-turn growth metric, and retiring stale shrinks.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { AgentMessage } from "@pi-pruner/core";
import type { SelfControlHost } from "./host.ts";

export interface SelfControlLive {
  /** After the render, before the request leaves: may add a nudge to what is sent. */
  onContext(ctx: ExtensionContext, raw: readonly AgentMessage[], rendered: AgentMessage[]): AgentMessage[];
}

export function createSelfControlLive(_pi: ExtensionAPI, _host: SelfControlHost): SelfControlLive {
  return { onContext: (_ctx, _raw, rendered) => rendered };
}
