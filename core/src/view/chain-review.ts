// The two sides of a compressed chain's review: the span of messages the chain replaced, as Pi
// would send it without the pruner, and the same span as the model is sent it (where the
// `<compressed-chain>` block stands in for the dropped turns). Both spans are found with the
// render's own resolver, so the review shows the range the render compressed, or says why there
// is none, instead of guessing one.
import type { AgentMessage } from "../shapes/messages.ts";
import { contentText } from "../shapes/messages.ts";
import type { ChainData } from "../shapes/entries.ts";
import { formatNumber, messagesChars } from "../shapes/size.ts";
import { indexTimestamps, resolveChain, type ChainRange, type ChainResolution } from "../prune/chains.ts";
import { chainBlockMarker, findChainBlock } from "../render/chain-blocks.ts";
import { messagesAsText, type ModelView } from "./model-view.ts";
import type { ChainView } from "./session-view.ts";

export type ChainReviewSpans =
  /** The render replaced the middle of `raw` by the block at `block`: `sent` runs from the same start message to the same final reply. */
  | { kind: "compressed"; raw: ChainRange; sent: ChainRange; block: number }
  /** The chain is in the context but the render sent it without its block (compression off, or another entry for the same start came first). */
  | { kind: "uncompressed"; raw: ChainRange; sent: ChainResolution }
  /** The resolver cannot find the chain, so the render left it alone; `absent`: Pi's compaction removed it. */
  | { kind: "unresolved"; reason: string; absent: boolean };

type ChainBoundaries = Pick<ChainData, "blockId" | "startUserTimestamp" | "finalAssistantTimestamp">;

function resolveIn(messages: readonly AgentMessage[], chain: ChainBoundaries): ChainResolution {
  return resolveChain(messages, indexTimestamps(messages), chain);
}

/**
 * Where the chain is on both sides of a model view. The block is a custom message, invisible to the
 * resolver, so in what the model is sent the chain resolves to its start message, the block right
 * after it, and its final reply: the render compressed it exactly when the block stands there.
 */
function chainReviewSpans(model: Pick<ModelView, "rawMessages" | "messages">, chain: ChainBoundaries): ChainReviewSpans {
  const raw = resolveIn(model.rawMessages, chain);
  if (!raw.ok) return { kind: "unresolved", reason: raw.reason, absent: raw.absent };
  const sent = resolveIn(model.messages, chain);
  const block = findChainBlock(model.messages, chain.blockId);
  if (sent.ok && block >= 0 && block === sent.range.start + 1) return { kind: "compressed", raw: raw.range, sent: sent.range, block };
  return { kind: "uncompressed", raw: raw.range, sent };
}

export interface ChainReview {
  original: string;
  compressed: string;
  spans: ChainReviewSpans;
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

function slice(messages: readonly AgentMessage[], range: ChainRange): AgentMessage[] {
  return messages.slice(range.start, range.end + 1);
}

/** Both sides of a chain's review, from the model view (with its bodies) of the branch that holds it. */
export function buildChainReview(model: ModelView, chain: ChainView): ChainReview {
  const spans = chainReviewSpans(model, chain);
  const id = chain.blockId;
  const tools = chain.toolRefs.length ? chain.toolRefs.join(", ") : "none recorded";

  if (spans.kind === "unresolved") {
    const original = spans.absent
      ? `# Chain ${id}: a Pi compaction removed this chain: its messages are not in this branch's context (${spans.reason}).\n`
      : `# Chain ${id}: the chain cannot be found in this branch's context: ${spans.reason}.\n`;
    const compressed = spans.absent
      ? `# Chain ${id}: not compressed: its messages are gone from the context, so no <compressed-chain id="${id}"> block is sent.\n`
      : `# Chain ${id}: not compressed: ${spans.reason}, so the render sends its messages as they are, with no <compressed-chain id="${id}"> block.\n`;
    return { original, compressed, spans };
  }

  const rawMessages = slice(model.rawMessages, spans.raw);
  const original =
    `# Chain ${id}: the original span (${rawMessages.length} messages, ${formatNumber(messagesChars(rawMessages))} characters)\n` +
    `# Tools: ${tools}\n` +
    `# Long tool outputs are shortened here; each call's own document (in the Sessions view) has all of it.\n\n` +
    messagesAsText(withShortOutputs(rawMessages));

  let compressed: string;
  if (spans.kind === "compressed") {
    const sent = slice(model.messages, spans.sent);
    compressed = `# Chain ${id}: what the model is sent (${sent.length} messages, ${formatNumber(messagesChars(sent))} characters)\n# Tools: ${tools}\n\n${messagesAsText(sent)}`;
  } else if (spans.sent.ok) {
    const sent = slice(model.messages, spans.sent.range);
    const stored = chain.rangeSummaryText ? `# The chain entry's range summary:\n${chain.rangeSummaryText}\n` : "";
    compressed =
      `# Chain ${id}: no ${chainBlockMarker(id)}> block is in what the model is sent at this leaf.\n` +
      `# Shown: the same span as the model is sent it (${formatNumber(messagesChars(sent))} characters).\n` +
      `# Tools: ${tools}\n${stored}\n${messagesAsText(sent)}`;
  } else {
    compressed = `# Chain ${id}: no ${chainBlockMarker(id)}> block is in what the model is sent at this leaf, and the span cannot be found there: ${spans.sent.reason}.\n`;
  }
  return { original, compressed, spans };
}
