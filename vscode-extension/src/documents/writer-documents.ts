// Documents about another writer's session: the text it persisted for a chain block, and the lines
// a model view's header gives about who wrote the session and what its rendering means.
import type { ChainView, SessionView } from "@pi-pruner/core";
import { renderedCounts, renderFidelity, writerHeaderLines } from "@pi-pruner/core";
import { writerName } from "../session-names.ts";
import type { SessionState } from "../store/session-store.ts";
import { documentText } from "../text.ts";

/** A chain's body as its writer persisted it, beside which the model view shows pi-pruner's block. */
export function writerTextDocument(state: SessionState, view: SessionView, chain: ChainView): string {
  const header = [
    `# ${chain.blockId} as ${writerName(view)} persisted it (chain entry ${chain.entryId})`,
    `# Session: ${state.file.path}`,
    "# The text the writer kept for this block's body: what it sent between the block's tags, protected outputs aside.",
    "# The model view and the chain review show the block in pi-pruner's own wording.",
    `# This chain: ${chain.stateText}; body: ${chain.bodyText}.`,
  ];
  return documentText(`${header.join("\n")}\n\n${chain.writerText ?? ""}\n`);
}

/** `#` lines for a model view document of this session: its writer, and for another writer what the text is and the counts that must match. */
export function writerLines(view: SessionView, model: Parameters<typeof renderedCounts>[0], shown: "sent" | "next" = "next"): string {
  return writerHeaderLines(view.writer, renderFidelity(view.writer, renderedCounts(model), shown))
    .map((line) => `# ${line}\n`)
    .join("");
}
