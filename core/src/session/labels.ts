// What a person reads a session by: its name and its first prompt.
import type { AnyEntry } from "../shapes/entries.ts";
import type { AgentMessage } from "../shapes/messages.ts";
import { contentText } from "../shapes/messages.ts";

/** A session's first prompt as a one-line label. */
export function promptLabel(content: Parameters<typeof contentText>[0]): string {
  return contentText(content).replace(/\s+/g, " ").trim().slice(0, 200);
}

/** The session's name (the last `session_info`) and its first user prompt, from entries in order. */
export function sessionLabels(entries: readonly AnyEntry[]): { name?: string; firstPrompt?: string } {
  let name: string | undefined;
  let firstPrompt: string | undefined;
  for (const entry of entries) {
    if (entry.type === "session_info" && typeof (entry as { name?: unknown }).name === "string") name = (entry as { name: string }).name;
    if (firstPrompt === undefined && entry.type === "message") {
      const message = (entry as { message: AgentMessage }).message;
      if (message.role === "user") firstPrompt = promptLabel(message.content);
    }
  }
  return { name, firstPrompt };
}
