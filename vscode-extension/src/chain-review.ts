// The two sides of a compressed chain's review: the span of messages the chain replaced, as Pi
// would send it without the pruner, and the same span as the model is sent it (where the
// `<compressed-chain>` block stands in for the dropped turns). Spans are found by position — the
// start user message's and the final assistant message's timestamps — never by tool-call id.
import type { AgentMessage } from "@pi-pruner/core";
import { contentText } from "@pi-pruner/core";
import { messagesAsText, type ModelView } from "@pi-pruner/core";
import type { ChainView } from "@pi-pruner/core";
import { messagesChars } from "@pi-pruner/core";
import { formatNumber } from "./text.ts";

export interface ChainReview {
  original: string;
  compressed: string;
  /** A `<compressed-chain id="bN">` block is in what the model is sent. */
  blockFound: boolean;
}

/** Indexes [start, end] of the chain's span in `messages`, or undefined when it is not there. */
export function findChainSpan(messages: readonly AgentMessage[], chain: Pick<ChainView, "startUserTimestamp" | "finalAssistantTimestamp">): [number, number] | undefined {
  const start = messages.findIndex((m) => m.role === "user" && m.timestamp === chain.startUserTimestamp);
  if (start < 0) return undefined;
  if (chain.finalAssistantTimestamp === undefined) {
    // Without a recorded end, the chain runs to the next user message.
    let end = start;
    while (end + 1 < messages.length && messages[end + 1]!.role !== "user") end++;
    return [start, end];
  }
  for (let i = start; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "assistant" && m.timestamp === chain.finalAssistantTimestamp) return [start, i];
  }
  return undefined;
}

/** Output longer than this is shortened on the original side: a diff of a few thousand lines against one line takes VS Code seconds. */
const MAX_OUTPUT_LINES = 40;
const HEAD_LINES = 30;
const TAIL_LINES = 5;
const MAX_OUTPUT_CHARS = 6000;

function shorten(text: string): string {
  const lines = text.split("\n");
  if (lines.length > MAX_OUTPUT_LINES) {
    const hidden = lines.length - HEAD_LINES - TAIL_LINES;
    return [...lines.slice(0, HEAD_LINES), `[… ${formatNumber(hidden)} lines not shown here; the call's own document has the full output]`, ...lines.slice(-TAIL_LINES)].join("\n");
  }
  if (text.length > MAX_OUTPUT_CHARS) {
    return `${text.slice(0, MAX_OUTPUT_CHARS)}\n[… ${formatNumber(text.length - MAX_OUTPUT_CHARS)} characters not shown here; the call's own document has the full output]`;
  }
  return text;
}

/** Tool results with their long outputs shortened (see MAX_OUTPUT_LINES). */
function withShortOutputs(messages: readonly AgentMessage[]): AgentMessage[] {
  return messages.map((m) => {
    if (m.role !== "toolResult") return m;
    const text = contentText(m.content);
    const short = shorten(text);
    return short === text ? m : { ...m, content: [{ type: "text", text: short }] };
  });
}

function messageText(message: AgentMessage): string {
  if (message.role === "user" || message.role === "custom") return contentText(message.content);
  return "";
}

export function hasChainBlock(messages: readonly AgentMessage[], blockId: string): boolean {
  const marker = `<compressed-chain id="${blockId}"`;
  return messages.some((m) => messageText(m).includes(marker));
}

/** Both sides of a chain's review, from the model view (with its bodies) of the branch that holds it. */
export function buildChainReview(model: ModelView, chain: ChainView): ChainReview {
  const rawSpan = findChainSpan(model.rawMessages, chain);
  const sentSpan = findChainSpan(model.messages, chain);
  const blockFound = hasChainBlock(model.messages, chain.blockId);
  const tools = chain.toolRefs.length ? chain.toolRefs.join(", ") : "none recorded";

  let original: string;
  if (rawSpan) {
    const messages = model.rawMessages.slice(rawSpan[0], rawSpan[1] + 1);
    original =
      `# Chain ${chain.blockId}: the original span (${messages.length} messages, ${formatNumber(messagesChars(messages))} characters)\n` +
      `# Tools: ${tools}\n` +
      `# Long tool outputs are shortened here; each call's own document (in the Sessions view) has all of it.\n\n` +
      messagesAsText(withShortOutputs(messages));
  } else {
    original =
      `# Chain ${chain.blockId}: the original span is not in this branch's context\n` +
      `# (a Pi compaction may have cut it away, or its start and end messages are missing).\n`;
  }

  let compressed: string;
  if (sentSpan) {
    const messages = model.messages.slice(sentSpan[0], sentSpan[1] + 1);
    const head = blockFound
      ? `# Chain ${chain.blockId}: what the model is sent (${messages.length} messages, ${formatNumber(messagesChars(messages))} characters)\n`
      : `# Chain ${chain.blockId}: no <compressed-chain id="${chain.blockId}"> block is in what the model is sent at this leaf.\n` +
        `# Shown: the same span as the model is sent it (${formatNumber(messagesChars(messages))} characters).\n`;
    const stored = !blockFound && chain.rangeSummaryText ? `# The chain entry's range summary:\n${chain.rangeSummaryText}\n` : "";
    compressed = `${head}# Tools: ${tools}\n${stored}\n${messagesAsText(messages)}`;
  } else if (blockFound) {
    const block = model.messages.filter((m) => messageText(m).includes(`<compressed-chain id="${chain.blockId}"`));
    compressed = `# Chain ${chain.blockId}: the <compressed-chain> block the model is sent\n\n${messagesAsText(block)}`;
  } else {
    compressed = `# Chain ${chain.blockId}: the span is not in what the model is sent at this leaf.\n`;
  }
  return { original, compressed, blockFound };
}
