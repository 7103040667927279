// The thinking strip (off by default): thinking blocks leave assistant turns older than the newest
// few. A message's thinking is kept or dropped whole.
import type { AgentMessage, AssistantMessage } from "../shapes/messages.ts";
import type { PruneConfig } from "../settings/config.ts";

export interface ThinkingStripStats {
  thinkingStripped: number;
}

function hasThinking(message: AssistantMessage): boolean {
  if (!Array.isArray(message.content)) return false;
  for (const block of message.content) if (block && block.type === "thinking") return true;
  return false;
}

/**
 * The message without any of its thinking blocks (signatures go with them), or the message itself
 * when it has none or when nothing but thinking would remain: providers reject an empty turn, and
 * a message's thinking is kept or dropped as a whole, never in part.
 */
export function withoutThinking(message: AssistantMessage): AssistantMessage {
  if (!hasThinking(message)) return message;
  const rest = message.content.filter((b) => !b || b.type !== "thinking");
  if (rest.length === 0) return message;
  return { ...message, content: rest };
}

/**
 * Keeps thinking on the newest `keepLastTurns` (at least 1) assistant messages before `epochEnd`
 * (the newest flush's end) and on every one after it, and strips it from older ones.
 */
export function stripThinking(messages: AgentMessage[], config: Pick<PruneConfig, "thinkingStrip">, stats: ThinkingStripStats, epochEnd = messages.length): AgentMessage[] {
  if (!config.thinkingStrip.enabled) return messages;
  const keep = Math.max(1, Math.floor(config.thinkingStrip.keepLastTurns) || 1);
  let out: AgentMessage[] | undefined;
  let seen = 0;
  for (let i = Math.min(epochEnd, messages.length) - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "assistant") continue;
    seen++;
    if (seen <= keep) continue;
    const stripped = withoutThinking(m);
    if (stripped === m) continue;
    out ??= messages.slice();
    out[i] = stripped;
    stats.thinkingStripped++;
  }
  return out ?? messages;
}
