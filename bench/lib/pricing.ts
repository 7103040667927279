// The prefix-cache price model of the cost replay.
//
// A request is the system prompt and tool declarations (the "head", the same on every request of
// one policy) followed by the messages, each serialised the way the Anthropic Messages API carries
// it. Tokens ≈ characters / 4. The part of a request identical to the start of the previous request
// (exact common prefix, character by character) is a cache read at 0.1×; the rest is written to
// the cache at 1.25× (the request's last message carries the cache breakpoint, as Pi sets it), so
// the next request can read it. Output tokens are not priced. The summarizer's own requests are
// one-off prompts: their input is priced uncached at 1×, their output is counted separately.
import type { AgentMessage } from "../../core/src/shapes/messages.ts";

export const PRICE = { cacheRead: 0.1, cacheWrite: 1.25, uncached: 1 } as const;
export const CHARS_PER_TOKEN = 4;

function textBlocks(content: unknown): { type: "text"; text: string }[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return [];
  return content.filter((b) => b && b.type === "text").map((b) => ({ type: "text" as const, text: String(b.text) }));
}

/** One message as the provider receives it. */
export function serializeMessage(message: AgentMessage): string {
  switch (message.role) {
    case "assistant":
      return JSON.stringify({
        role: "assistant",
        content: (message.content ?? []).map((b) =>
          b.type === "thinking"
            ? { type: "thinking", thinking: b.thinking, signature: b.thinkingSignature ?? "" }
            : b.type === "toolCall"
              ? { type: "tool_use", id: b.id, name: b.name, input: b.arguments }
              : { type: "text", text: b.text },
        ),
      });
    case "toolResult":
      return JSON.stringify({
        role: "user",
        content: [{ type: "tool_result", tool_use_id: message.toolCallId, content: textBlocks(message.content), is_error: message.isError === true }],
      });
    case "bashExecution":
      return JSON.stringify({ role: "user", content: [{ type: "text", text: `$ ${message.command}\n${message.output}` }] });
    case "branchSummary":
    case "compactionSummary":
      return JSON.stringify({ role: "user", content: [{ type: "text", text: message.summary }] });
    default:
      return JSON.stringify({ role: "user", content: textBlocks((message as { content?: unknown }).content) });
  }
}

export interface RequestPrice {
  /** Input tokens of the request (head included). */
  tokens: number;
  /** Of which read from the cache. */
  cachedTokens: number;
  /** Billed input-token equivalents. */
  billed: number;
}

/** Prices a sequence of requests of one conversation under the prefix-cache model. */
export class PrefixCacheMeter {
  private previous: string[] | undefined;
  private previousHead = -1;

  price(headChars: number, messages: readonly AgentMessage[]): RequestPrice {
    const parts = messages.map(serializeMessage);
    let total = headChars;
    for (const p of parts) total += p.length;
    let cached = 0;
    if (this.previous && this.previousHead === headChars) {
      cached = headChars;
      const prev = this.previous;
      for (let i = 0; i < parts.length && i < prev.length; i++) {
        if (parts[i] === prev[i]) {
          cached += parts[i]!.length;
          continue;
        }
        cached += commonPrefixLength(parts[i]!, prev[i]!);
        break;
      }
    }
    this.previous = parts;
    this.previousHead = headChars;
    const tokens = total / CHARS_PER_TOKEN;
    const cachedTokens = cached / CHARS_PER_TOKEN;
    return { tokens, cachedTokens, billed: cachedTokens * PRICE.cacheRead + (tokens - cachedTokens) * PRICE.cacheWrite };
  }
}

export function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}
