// Epochs: the render's time-dependent steps (error purge cooldown, recovery grace, thinking strip)
// count turns only up to the newest flush, so history changes all at once at a flush and stays
// byte-stable between flushes (each change would otherwise rewrite the provider's cached prefix
// on a request of its own).
import type { AgentMessage } from "../shapes/messages.ts";

/**
 * How many leading messages lie inside the epoch: up to the last message no newer than the
 * epoch's timestamp. Searched from the end, since what came after the flush is the short part,
 * and so that a compaction summary (newer than the messages it precedes) does not cut it short.
 * No epoch (nothing flushed yet) → 0: no turn has passed for these steps.
 */
export function epochEnd(messages: readonly AgentMessage[], epoch: number | undefined): number {
  if (epoch === undefined) return 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const timestamp = messages[i]!.timestamp;
    if (typeof timestamp === "number" && timestamp <= epoch) return i + 1;
  }
  return 0;
}
