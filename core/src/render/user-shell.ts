// The person's own shell commands (`!cmd`, Pi's bashExecution messages): Pi sends each output as a
// user message on every later request. A large one becomes a deterministic stub once enough
// prompts have followed it; the stub names the id context_tree_query reads it back by. Small
// output, and `!!` output (which Pi never sends), stay as they are.
import type { AgentMessage, BashExecutionMessage } from "../shapes/messages.ts";
import { countAfter, occurrenceKey } from "../shapes/messages.ts";
import type { AnyEntry, ToolCallRecord } from "../shapes/entries.ts";
import { editedMessages } from "../shapes/entry-messages.ts";
import { QUERY_TOOL } from "../shapes/entries.ts";
import { escapePrunerTags } from "../shapes/text.ts";
import { formatNumber } from "../shapes/size.ts";
import type { IndexedCall } from "../prune/prune-index.ts";
import type { PruneConfig } from "../settings/config.ts";

export interface UserShellStats {
  shellOutputsStubbed: number;
}

const ID_PREFIX = "shell@";

/** How a stub names a shell command's output, for context_tree_query: its message's timestamp. */
function userShellId(message: BashExecutionMessage): string {
  return `${ID_PREFIX}${message.timestamp}`;
}

/** Whether a context_tree_query id names a shell command's output (`shell@<timestamp>`). */
export function isUserShellId(id: string): boolean {
  return /^shell@\d{1,16}$/.test(id);
}

/** Characters of the output's start a stub shows at most, cut at a line's end where one lies in them. */
const PREVIEW_CHARS = 300;

function preview(output: string): string {
  if (output.length <= PREVIEW_CHARS) return output;
  let head = output.slice(0, PREVIEW_CHARS);
  const lineEnd = head.lastIndexOf("\n");
  if (lineEnd > 0) head = head.slice(0, lineEnd);
  else if (/[\ud800-\udbff]$/.test(head)) head = head.slice(0, -1);
  return `${head}\n…`;
}

function lineCount(text: string): number {
  let n = 1;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/** The stub that stands for `output`: its size, its first lines and the id that brings it back. The same output always gives the same bytes. */
function shellStub(message: BashExecutionMessage, output: string): string {
  return escapePrunerTags(
    `[Output pruned: ${formatNumber(output.length)} characters, ${formatNumber(lineCount(output))} lines; ` +
      `${QUERY_TOOL} with ["${userShellId(message)}"] returns it. Its first lines:\n${preview(output)}]`,
  );
}

// The same message stubbed again (a view's pass over a branch's requests) gets the same object.
const stubCache = new WeakMap<AgentMessage, BashExecutionMessage>();

function stubOf(message: BashExecutionMessage, output: string): BashExecutionMessage {
  const cached = stubCache.get(message);
  if (cached) return cached;
  const stub: BashExecutionMessage = { ...message, output: shellStub(message, output) };
  stubCache.set(message, stub);
  return stub;
}

/** The output of a sent shell command large enough to be stubbed, else undefined. */
function stubbable(message: AgentMessage, minChars: number): string | undefined {
  if (message.role !== "bashExecution" || message.excludeFromContext) return undefined;
  // Session files are input: only a real output of a message with a real timestamp has a stub and an id.
  const output: unknown = message.output;
  if (typeof output !== "string" || output.length < minChars || !Number.isSafeInteger(message.timestamp) || message.timestamp < 0) return undefined;
  return output;
}

/**
 * The render's step after the stubs: a sent shell command's output of `userShell.minChars` or more
 * becomes a stub once `userShell.afterPrompts` user prompts follow it before `epochEnd` (the newest
 * flush's end), so it changes at a flush, never between two. `keep`: messages the agent shrank.
 */
export function stubUserShell(
  messages: AgentMessage[],
  config: Pick<PruneConfig, "userShell">,
  stats: UserShellStats,
  epochEnd = messages.length,
  keep?: ReadonlySet<AgentMessage>,
): AgentMessage[] {
  const { enabled, minChars, afterPrompts } = config.userShell;
  if (!enabled) return messages;
  let out: AgentMessage[] | undefined;
  let promptsAfter: Int32Array | undefined;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const output = stubbable(message, minChars);
    if (output === undefined || keep?.has(message)) continue;
    promptsAfter ??= countAfter(messages, "user", epochEnd);
    if (i >= epochEnd || promptsAfter[i]! < afterPrompts) continue;
    out ??= messages.slice();
    out[i] = stubOf(message as BashExecutionMessage, output);
    stats.shellOutputsStubbed++;
  }
  return out ?? messages;
}

/**
 * How many more user prompts may be appended to `messages` before one of their shell outputs
 * would become a stub (Infinity when none would): past that, the earlier part renders differently.
 */
export function promptsToShellStub(messages: readonly AgentMessage[], config: Pick<PruneConfig, "userShell">): number {
  const { enabled, minChars, afterPrompts } = config.userShell;
  if (!enabled) return Infinity;
  let prompts = Infinity;
  let usersAfter = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "user") usersAfter++;
    else if (usersAfter < afterPrompts && stubbable(m, minChars) !== undefined) prompts = Math.min(prompts, afterPrompts - usersAfter);
  }
  return prompts;
}

/**
 * The sent shell commands on `branch` whose id is `id` (normally one), with their output as Pi
 * showed it (the latest context_edit applied): what a shell stub sends the model to
 * context_tree_query for. `!!` output was never sent and is never returned.
 */
export function userShellOutputsById(branch: readonly AnyEntry[], id: string): IndexedCall[] {
  if (!isUserShellId(id)) return [];
  const found: IndexedCall[] = [];
  for (const { message } of editedMessages(branch, branch)) {
    if (message.role !== "bashExecution" || message.excludeFromContext || userShellId(message) !== id) continue;
    const record: ToolCallRecord = {
      toolCallId: id,
      toolName: "user shell command",
      args: { command: typeof message.command === "string" ? message.command : "" },
      resultText: typeof message.output === "string" ? message.output : "",
      isError: typeof message.exitCode === "number" && message.exitCode !== 0,
      resultTimestamp: message.timestamp,
    };
    found.push({ record, key: occurrenceKey(id, message.timestamp), shortRef: id });
  }
  return found;
}
