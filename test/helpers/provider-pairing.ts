// What a provider accepts of the calls and results it is sent, stated without core's code: every
// tool call has exactly one result, in the tool results right after its assistant turn, and no
// tool result comes without its call there. (Provider ids repeat across responses, so the rule is
// positional.)
import type { AgentMessage } from "../../core/src/shapes/messages.ts";

/** The first way `messages` break the rule, or undefined when they keep it. */
export function pairingProblem(messages: readonly AgentMessage[]): string | undefined {
  let i = 0;
  while (i < messages.length) {
    const m = messages[i]!;
    if (m.role === "toolResult") return `message ${i}: a result for ${m.toolCallId} with no call in the assistant turn right before it`;
    if (m.role !== "assistant" || !Array.isArray(m.content)) {
      i++;
      continue;
    }
    const calls = m.content.flatMap((block) => (block.type === "toolCall" ? [block.id] : []));
    const answered: string[] = [];
    let j = i + 1;
    while (j < messages.length && messages[j]!.role === "toolResult") {
      const result = messages[j] as { toolCallId: string };
      if (!calls.includes(result.toolCallId)) return `message ${j}: a result for ${result.toolCallId}, which the assistant turn at ${i} did not call`;
      if (answered.includes(result.toolCallId)) return `message ${j}: a second result for ${result.toolCallId}`;
      answered.push(result.toolCallId);
      j++;
    }
    const unanswered = calls.filter((id) => !answered.includes(id));
    if (unanswered.length) return `message ${i}: ${unanswered.join(", ")} called but not answered right after`;
    i = j;
  }
  return undefined;
}
