// The rewind and cancel tools, checkpoints (the person's subcommands and the line above the editor).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { Subcommand } from "../commands.ts";
import type { SelfControlHost } from "./host.ts";

export function registerRewindTools(_pi: ExtensionAPI, _host: SelfControlHost): void {}

export function rewindSubcommands(_host: SelfControlHost): Record<string, Subcommand> {
  return {};
}
