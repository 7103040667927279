// How the real-Pi tests tell Pi's own compaction requests from the agent's, on the scripted server.
import { expect } from "vitest";
import { messageText, type ModelRequest } from "./model-server.ts";
import type { PiRpc } from "./pi-rpc.ts";
import { agentRequests } from "./pruner-e2e.ts";

/** Pi's compaction requests carry Pi's summarization system prompt. */
export const isCompactionRequest = (req: ModelRequest): boolean => req.systemText.includes("You are a context summarization assistant");

/** Of those, the history's (a split turn's prefix is summarized in a request of its own, after it). */
export const historyRequests = (requests: readonly ModelRequest[]): ModelRequest[] => requests.filter((r) => isCompactionRequest(r) && r.allText.includes("<conversation>"));

/** The agent's own requests: neither the pruner's summarizer nor Pi's compaction. */
export const agentOnly = (requests: readonly ModelRequest[]): ModelRequest[] => agentRequests(requests).filter((r) => !isCompactionRequest(r));

/** How Pi's compaction summary begins when it is sent to the model (Pi's COMPACTION_SUMMARY_PREFIX). */
export const COMPACTION_SUMMARY_START = "The conversation history before this point was compacted into the following summary:";

/**
 * An answer longer than a workspace's `compaction.keepRecentTokens: 110`: Pi's compaction then
 * keeps only the turn it ends and summarizes the rest.
 */
export const LONG_ANSWER = `Next answer. ${"The plan holds and nothing else is needed here. ".repeat(12)}`;

/** The user messages of a request that carry the protected outputs the pruner re-sent after Pi's compaction. */
export const resentBlocks = (req: ModelRequest): string[] =>
  (req.body.messages ?? []).filter((m) => m.role === "user" && messageText(m).startsWith('<protected-outputs after="compaction">')).map(messageText);

/** Pi's RPC `compact` command, which must succeed. */
export async function compactByRpc(rpc: PiRpc): Promise<void> {
  const done = await rpc.send({ type: "compact" }, 30_000);
  expect(done.success, JSON.stringify(done)).toBe(true);
}
