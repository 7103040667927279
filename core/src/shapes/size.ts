// One measure of size for every surface: characters of what a message carries to the model,
// and a token figure derived from it. The token figure is an estimate (chars / 4), always labelled so.
import { userShellText, type AgentMessage } from "./messages.ts";
import { jsonText } from "./deep-json.ts";

export function messageChars(message: AgentMessage): number {
  switch (message.role) {
    case "user":
    case "custom":
    case "system":
      return contentChars(message.content);
    case "toolResult":
      return contentChars(message.content);
    case "assistant": {
      let n = 0;
      if (!Array.isArray(message.content)) return 0;
      for (const block of message.content) {
        if (!block) continue;
        if (block.type === "text") n += block.text?.length ?? 0;
        else if (block.type === "thinking") n += (block.thinking?.length ?? 0) + (block.thinkingSignature?.length ?? 0);
        else if (block.type === "toolCall") n += (typeof block.name === "string" ? block.name.length : 0) + argsChars(block.arguments);
      }
      return n;
    }
    case "bashExecution":
      // What Pi sends of it: its command and output in Pi's wording, or nothing for `!!`.
      return userShellText(message)?.length ?? 0;
    case "branchSummary":
    case "compactionSummary":
      return message.summary?.length ?? 0;
    default:
      return 0;
  }
}

export function messagesChars(messages: readonly AgentMessage[]): number {
  let n = 0;
  for (const m of messages) n += messageChars(m);
  return n;
}

export function contentChars(content: unknown): number {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const block of content) {
    if (block && typeof block === "object") {
      const b = block as { type?: string; text?: unknown; data?: unknown };
      if (b.type === "text" && typeof b.text === "string") n += b.text.length;
      else if (b.type === "image" && typeof b.data === "string") n += b.data.length;
    }
  }
  return n;
}

/** A tool call's arguments as JSON characters, at any depth (0 when there are none or they cannot be written). */
export function argsChars(args: unknown): number {
  if (args === undefined || args === null) return 0;
  try {
    return jsonText(args)?.length ?? 0;
  } catch {
    return 0;
  }
}

/** The one characters-per-token ratio of every estimate. */
export const CHARS_PER_TOKEN = 4;

/** A rough token figure: characters / 4. Callers label it as an estimate. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** How much smaller `modelChars` is than `rawChars`, as "-67%"; empty when it is not smaller. */
export function formatSaving(rawChars: number, modelChars: number | undefined): string {
  if (modelChars === undefined || rawChars <= 0 || modelChars >= rawChars) return "";
  return `-${Math.round(((rawChars - modelChars) / rawChars) * 100)}%`;
}

/**
 * 1234567 → "1,234,567", as `toLocaleString("en-US")` writes it, but without Intl for integers: the
 * first Intl call in a process costs milliseconds (an editor's first paint makes it).
 */
export function formatNumber(n: number): string {
  if (!Number.isSafeInteger(n)) return n.toLocaleString("en-US");
  const digits = String(Math.abs(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return n < 0 ? `-${digits}` : digits;
}

/** 92345 → "92k", 950 → "950", 1_250_000 → "1.3M". */
export function formatCount(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}
