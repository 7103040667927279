// The context exactly as the model sees it at a leaf: Pi's context for the branch, then the same
// render the live pruner applies. Used by `pi-pruner view` and the editor's "Show Model View".
import type { AgentMessage } from "./messages.ts";
import { contentText } from "./messages.ts";
import type { SessionData } from "./session.ts";
import { getBranch } from "./session.ts";
import { buildContext } from "./context.ts";
import { rebuildIndex } from "./records.ts";
import { renderModelView, type RenderConfig } from "./render.ts";
import { messagesChars } from "./size.ts";
import { PRUNE_SUMMARY } from "./entries.ts";

export interface ModelView {
  leafId: string | null;
  /** What Pi would send without the pruner (its own summaries left out). */
  rawMessages: AgentMessage[];
  /** What the model is sent. */
  messages: AgentMessage[];
  rawChars: number;
  modelChars: number;
}

export function buildModelView(data: SessionData, options: { leafId?: string; config: RenderConfig }): ModelView {
  const branch = getBranch(data, options.leafId);
  const context = buildContext(branch.entries).map((c) => c.message);
  const { index } = rebuildIndex(branch.entries);
  const messages = renderModelView(context, index, options.config).messages;
  const rawMessages = context.filter((m) => !(m.role === "custom" && m.customType === PRUNE_SUMMARY));
  return { leafId: branch.leafId, rawMessages, messages, rawChars: messagesChars(rawMessages), modelChars: messagesChars(messages) };
}

function roleLabel(message: AgentMessage): string {
  switch (message.role) {
    case "toolResult":
      return `tool result · ${message.toolName} · ${message.toolCallId}${message.isError ? " · error" : ""}`;
    case "custom":
      return `custom (sent as user) · ${message.customType}`;
    case "bashExecution":
      return "user shell command";
    default:
      return message.role;
  }
}

function bodyOf(message: AgentMessage): string {
  switch (message.role) {
    case "assistant": {
      const parts: string[] = [];
      for (const block of message.content ?? []) {
        if (block.type === "text") parts.push(block.text);
        else if (block.type === "thinking") parts.push(`<thinking>\n${block.thinking}\n</thinking>`);
        else if (block.type === "toolCall") parts.push(`→ ${block.name} ${JSON.stringify(block.arguments)}  [${block.id}]`);
      }
      return parts.join("\n");
    }
    case "bashExecution":
      return `$ ${message.command}\n${message.output}`;
    case "branchSummary":
    case "compactionSummary":
      return message.summary;
    default:
      return contentText((message as { content?: string }).content);
  }
}

/** Messages as plain readable text, one section per message. Nothing in it is interpreted. */
export function messagesAsText(messages: readonly AgentMessage[]): string {
  return messages.map((m, i) => `── ${i + 1}. ${roleLabel(m)} ──\n${bodyOf(m)}`).join("\n\n") + "\n";
}
