// Short refs (tN) and block ids (bN) carried from one branch into another. Both are numbered per
// branch, so a branch summary that kept a bare `t3` of the branch it summarized would mean another
// output on the branch it lands on. Text written for another branch names its refs by their
// branch instead, `<leafId>/t3`: context_tree_query resolves such a ref on the branch that ends
// at that entry.
import type { AgentMessage, AssistantBlock, TextContent } from "../shapes/messages.ts";
import { QUERY_TOOL } from "../shapes/entries.ts";
import type { PruneIndex } from "./prune-index.ts";

/** A ref named by its branch: the branch's leaf entry id and the ref there. */
export interface BranchRef {
  branchId: string;
  ref: string;
}

/** What an entry id must look like to name a branch in text: Pi writes 8 hex digits; other writers are held to a short plain word. */
const BRANCH_ID = /^[A-Za-z0-9_-]{1,64}$/;
const SHORT_REF = /^t\d{1,9}$/;
const BLOCK_ID = /^b\d{1,9}$/;
/** A ref or block id standing alone: not inside a word, a path or another branch's ref. */
const REF_TOKEN = /(?<![\w/.-])([tb]\d{1,9})(?![\w/-])/g;

/** Whether `id` can stand in a branch ref (a session from elsewhere may hold any id). */
export function canNameBranch(id: string): boolean {
  return BRANCH_ID.test(id);
}

export function branchRef(branchId: string, ref: string): string {
  return `${branchId}/${ref}`;
}

/** The branch and short ref of `text` when it is a branch ref (`<leafId>/tN`). */
export function parseBranchRef(text: string): BranchRef | undefined {
  const at = text.indexOf("/");
  if (at < 0) return undefined;
  const branchId = text.slice(0, at);
  const ref = text.slice(at + 1);
  return canNameBranch(branchId) && SHORT_REF.test(ref) ? { branchId, ref } : undefined;
}

/** The short refs and block ids in use on the branch of `index`. */
export function branchRefsOf(index: PruneIndex): Set<string> {
  const refs = new Set<string>();
  for (const ref of index.byShortRef.keys()) if (SHORT_REF.test(ref)) refs.add(ref);
  for (const chain of index.chains) if (BLOCK_ID.test(chain.blockId)) refs.add(chain.blockId);
  return refs;
}

/** Whether `text` names `ref` on its own (not as part of another branch's ref). */
export function mentionsRef(text: string, ref: string): boolean {
  for (const m of text.matchAll(REF_TOKEN)) if (m[1] === ref) return true;
  return false;
}

/** `text` with each of `refs` that stands alone replaced by `rename(ref)`. */
function renameIn(text: string, refs: ReadonlySet<string>, rename: (ref: string) => string): string {
  return text.replace(REF_TOKEN, (whole, ref: string) => (refs.has(ref) ? rename(ref) : whole));
}

function renameBlocks<Block extends { type: string }>(blocks: readonly Block[], refs: ReadonlySet<string>, rename: (ref: string) => string): Block[] | undefined {
  let changed = false;
  const out = blocks.map((block) => {
    const renamed = renameBlock(block, refs, rename);
    if (renamed !== block) changed = true;
    return renamed;
  });
  return changed ? out : undefined;
}

function renameBlock<Block extends { type: string }>(block: Block, refs: ReadonlySet<string>, rename: (ref: string) => string): Block {
  if (block.type === "text") {
    const text = (block as unknown as TextContent).text;
    if (typeof text !== "string") return block;
    const renamed = renameIn(text, refs, rename);
    return renamed === text ? block : { ...block, text: renamed };
  }
  if (block.type === "toolCall") {
    // The refs a query asked for: only that tool's arguments are refs; any other tool's are its own.
    const call = block as unknown as Extract<AssistantBlock, { type: "toolCall" }>;
    const ids = call.arguments?.toolCallIds;
    if (call.name !== QUERY_TOOL || !Array.isArray(ids)) return block;
    const renamed = ids.map((id) => (typeof id === "string" && refs.has(id.trim()) ? rename(id.trim()) : id));
    return renamed.every((id, i) => id === ids[i]) ? block : ({ ...call, arguments: { ...call.arguments, toolCallIds: renamed } } as unknown as Block);
  }
  return block;
}

function renameContent<Content extends string | { type: string }[]>(content: Content, refs: ReadonlySet<string>, rename: (ref: string) => string): Content | undefined {
  if (typeof content === "string") {
    const renamed = renameIn(content, refs, rename);
    return renamed === content ? undefined : (renamed as Content);
  }
  return Array.isArray(content) ? (renameBlocks(content, refs, rename) as Content | undefined) : undefined;
}

/**
 * `messages` as text for another branch: every ref and block id of `refs` standing alone in what a
 * reader of the text sees (message text, summaries, the refs a `context_tree_query` call asked
 * for) becomes `rename(ref)`. Messages without one are passed through as they are; nothing
 * changed → the same array.
 */
export function renameBranchRefs(messages: readonly AgentMessage[], refs: ReadonlySet<string>, rename: (ref: string) => string): readonly AgentMessage[] {
  if (refs.size === 0) return messages;
  let changed = false;
  const out = messages.map((message): AgentMessage => {
    const renamed = renameMessage(message, refs, rename);
    if (renamed !== message) changed = true;
    return renamed;
  });
  return changed ? out : messages;
}

function renameMessage(message: AgentMessage, refs: ReadonlySet<string>, rename: (ref: string) => string): AgentMessage {
  switch (message.role) {
    case "user":
    case "custom":
    case "assistant":
    case "toolResult": {
      const content = renameContent(message.content as string | { type: string }[], refs, rename);
      return content === undefined ? message : ({ ...message, content } as AgentMessage);
    }
    case "branchSummary":
    case "compactionSummary": {
      const summary = typeof message.summary === "string" ? renameIn(message.summary, refs, rename) : message.summary;
      return summary === message.summary ? message : { ...message, summary };
    }
    default:
      return message;
  }
}
