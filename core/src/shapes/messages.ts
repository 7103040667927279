// Pi's message shapes, modelled once. Core never imports Pi at run time, so these
// mirror the documented shapes in Pi's `message-types.md`; unknown fields pass through.

export interface TextContent {
  type: "text";
  text: string;
  textSignature?: string;
}

export interface ImageContent {
  type: "image";
  data: string;
  mimeType: string;
}

interface ThinkingContent {
  type: "thinking";
  thinking: string;
  thinkingSignature?: string;
  redacted?: boolean;
}

export interface ToolCallBlock {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  thoughtSignature?: string;
}

export type AssistantBlock = TextContent | ThinkingContent | ToolCallBlock;

export interface SystemMessage {
  role: "system";
  content: string | TextContent[];
  timestamp: number;
  [key: string]: unknown;
}

export interface UserMessage {
  role: "user";
  content: string | (TextContent | ImageContent)[];
  timestamp: number;
}

export interface AssistantMessage {
  role: "assistant";
  content: AssistantBlock[];
  timestamp: number;
  stopReason?: string;
  usage?: unknown;
  model?: string;
  provider?: string;
  api?: string;
  [key: string]: unknown;
}

export interface ToolResultMessage {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (TextContent | ImageContent)[];
  isError: boolean;
  timestamp: number;
  details?: unknown;
  [key: string]: unknown;
}

export interface CustomMessage {
  role: "custom";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  display: boolean;
  details?: unknown;
  timestamp: number;
}

export interface BashExecutionMessage {
  role: "bashExecution";
  command: string;
  output: string;
  exitCode?: number;
  cancelled?: boolean;
  truncated?: boolean;
  fullOutputPath?: string;
  excludeFromContext?: boolean;
  timestamp: number;
}

interface BranchSummaryMessage {
  role: "branchSummary";
  summary: string;
  fromId: string | null;
  timestamp: number;
}

interface CompactionSummaryMessage {
  role: "compactionSummary";
  summary: string;
  tokensBefore: number;
  timestamp: number;
}

export type AgentMessage =
  | SystemMessage
  | UserMessage
  | AssistantMessage
  | ToolResultMessage
  | CustomMessage
  | BashExecutionMessage
  | BranchSummaryMessage
  | CompactionSummaryMessage;

/** The text of a tool result or user content, images left out. */
export function contentText(content: string | readonly { type: string; text?: string }[] | undefined): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let out = "";
  for (const block of content) {
    if (block && block.type === "text" && typeof block.text === "string") out += (out ? "\n" : "") + block.text;
  }
  return out;
}

export function toolCallsOf(message: AgentMessage): ToolCallBlock[] {
  if (message.role !== "assistant" || !Array.isArray(message.content)) return [];
  return message.content.filter((b): b is ToolCallBlock => !!b && b.type === "toolCall");
}

/** An assistant reply the provider layer never replays (Pi drops errored and aborted turns). */
export function isFailedTurn(message: AssistantMessage): boolean {
  return message.stopReason === "error" || message.stopReason === "aborted";
}

export function hasToolCalls(message: AssistantMessage): boolean {
  if (!Array.isArray(message.content)) return false;
  for (const block of message.content) if (block && block.type === "toolCall") return true;
  return false;
}

export function findCallBlock(message: AssistantMessage, toolCallId: string): ToolCallBlock | undefined {
  if (!Array.isArray(message.content)) return undefined;
  for (const block of message.content) if (block && block.type === "toolCall" && block.id === toolCallId) return block;
  return undefined;
}

/**
 * For each position, how many messages of `role` come after it (user turns for a recovery's grace
 * window, assistant turns for an error purge's cool-down), counting only those before `end` (the
 * epoch's end); positions at or after `end` count 0.
 */
export function countAfter(messages: readonly AgentMessage[], role: AgentMessage["role"], end = messages.length): Int32Array {
  const after = new Int32Array(messages.length);
  let count = 0;
  for (let i = Math.min(end, messages.length) - 1; i >= 0; i--) {
    after[i] = count;
    if (messages[i]!.role === role) count++;
  }
  return after;
}

/**
 * A user shell command (`!cmd`) as Pi sends it to the model: a user message with this text
 * (coding-agent's bashExecutionToText), or nothing at all for `!!cmd` (`excludeFromContext`).
 * Session files are input: a field of the wrong type counts as absent.
 */
export function userShellText(message: BashExecutionMessage): string | undefined {
  if (message.excludeFromContext) return undefined;
  const output = typeof message.output === "string" ? message.output : "";
  let text = `Ran \`${typeof message.command === "string" ? message.command : ""}\`\n`;
  text += output ? `\`\`\`\n${output}\n\`\`\`` : "(no output)";
  if (message.cancelled) text += "\n\n(command cancelled)";
  else if (message.exitCode !== null && message.exitCode !== undefined && message.exitCode !== 0) text += `\n\nCommand exited with code ${message.exitCode}`;
  if (message.truncated && typeof message.fullOutputPath === "string" && message.fullOutputPath) text += `\n\n[Output truncated. Full output: ${message.fullOutputPath}]`;
  return text;
}

/** Identity of one tool result: provider ids repeat across responses, so the result's timestamp joins the id. */
export function occurrenceKey(toolCallId: string, resultTimestamp?: number): string {
  return resultTimestamp === undefined ? toolCallId : `${toolCallId}@${resultTimestamp}`;
}
