// Observation masking, the simple baseline of Lindenbauer et al., "The Complexity Trap" (2025):
// every tool result older than the last M turns is replaced by a short placeholder, nothing is
// summarized. It runs as a tiny extension with one `context` handler, so the replay drives it
// through the same host, on the same requests, as the pruners it is compared with.
import type { AgentMessage, ToolResultMessage } from "../../core/src/shapes/messages.ts";
import type { ExtensionFactory } from "./peers.ts";

/** The window of the paper's baseline: observations of the last ten turns stay. */
export const MASKING_WINDOW = 10;

export function maskedPlaceholder(toolName: string): string {
  return `[${toolName} output omitted: older than the last ${MASKING_WINDOW} turns]`;
}

/**
 * The messages with every tool result whose assistant turn lies more than `window` turns back
 * replaced by its placeholder; the same array when nothing is old enough.
 */
export function maskObservations(messages: readonly AgentMessage[], window = MASKING_WINDOW): readonly AgentMessage[] {
  let turnsAfter = 0;
  let out: AgentMessage[] | undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant") {
      turnsAfter++;
      continue;
    }
    if (m.role !== "toolResult" || turnsAfter < window) continue;
    const placeholder = maskedPlaceholder(m.toolName);
    if (m.content.length === 1 && m.content[0]!.type === "text" && m.content[0]!.text === placeholder) continue;
    out ??= messages.slice();
    const masked: ToolResultMessage = { ...m, content: [{ type: "text", text: placeholder }] };
    out[i] = masked;
  }
  return out ?? messages;
}

/** The extension: a `context` handler that masks, nothing else. */
export const observationMasking: ExtensionFactory = (pi) => {
  const api = pi as { on(event: "context", handler: (event: { messages: AgentMessage[] }) => { messages: readonly AgentMessage[] } | undefined): void };
  api.on("context", (event) => {
    const messages = maskObservations(event.messages);
    return messages === event.messages ? undefined : { messages };
  });
};
