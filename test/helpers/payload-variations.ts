// Generated provider payloads in the shapes Pi 1.6 sends, derived from the recordings of
// test/fixtures/payloads/: a recording's envelope (model, tools, system prompt, parameters) and its
// blocks, over a generated conversation of tool turns, answers and mid-conversation system
// messages, marked where Pi marks it, with OAuth's second system block and effort messages on or
// off. A case is a pair of requests of one session, the later one after a possible flush, with
// the pending calls of each; what the pruner should do is judged by ./provider-cache-rules.ts.
import fc from "fast-check";
import { readPayloadFixture, type PayloadFixture } from "../fixtures/payloads/scenarios.ts";

type Json = Record<string, unknown>;
type Thinking = "signed" | "redacted" | "none";

/** One step of a generated conversation after the first prompt. */
type Turn =
  | { kind: "tools"; thinking: Thinking; text: boolean; calls: number; errorImage: boolean }
  | { kind: "answer"; thinking: Thinking; prompt: "blocks" | "string" }
  | { kind: "update"; block: "text" | "tool_removal" };

/** Where a tool result sits in a payload's messages. */
interface ResultPosition {
  message: number;
  block: number;
}

interface Request {
  payload: Json;
  /** The pending calls, oldest first, as the pruner's queue holds them (Pi's ids). */
  pending: string[];
  /** Where the oldest pending call's result is; undefined when nothing is pending. */
  oldestPending?: ResultPosition;
}

export interface PayloadCase {
  /** The recording the envelope is from, and the model it was recorded with. */
  fixture: string;
  model: PayloadFixture["model"];
  previous: Request;
  current: Request;
  /** What the pruner remembers of the previous request: its own placement, nothing, or a position from elsewhere. */
  memory: "previous" | "none" | { message: number; block: number };
}

/** The recordings whose requests Pi marks with `cache_control`. */
const MARKED_RECORDINGS = [
  "anthropic-key",
  "anthropic-key-effort",
  "anthropic-key-mid-conversation",
  "anthropic-oauth",
  "anthropic-oauth-effort",
  "anthropic-oauth-effort-thinking-off",
  "completions-anthropic-cache",
] as const;
/** The recordings whose requests carry no `cache_control` (automatic caching, cache points, none). */
const UNMARKED_RECORDINGS = ["completions-plain", "completions-grammar-tools", "openai-responses", "bedrock-claude"] as const;

const fixtures = new Map<string, PayloadFixture>();
function fixture(name: string): PayloadFixture {
  let found = fixtures.get(name);
  if (!found) fixtures.set(name, (found = readPayloadFixture(name)));
  return found;
}

const lastPayload = (name: string) => fixture(name).payloads.at(-1) as Json;
const messagesOf = (payload: Json) => payload.messages as Json[];
const blocksOf = (message: Json) => message.content as Json[];
const firstBlock = (name: string, type: string) => messagesOf(lastPayload(name)).flatMap(blocksOf).find((b) => Array.isArray(b) === false && b.type === type)!;
const strip = ({ cache_control: _marker, ...rest }: Json): Json => rest;

/** The blocks and messages of the recordings the conversation is made of. */
const TEMPLATES = {
  marker: (messagesOf(lastPayload("anthropic-key")).at(-1)!.content as Json[]).at(-1)!.cache_control,
  thinking: firstBlock("anthropic-key", "thinking"),
  text: firstBlock("anthropic-key", "text"),
  toolUse: firstBlock("anthropic-key", "tool_use"),
  toolResult: strip(firstBlock("anthropic-key", "tool_result")),
  /** Pi's effort message: an empty system message with the level. */
  effort: messagesOf(lastPayload("anthropic-oauth-effort")).find((m) => m.role === "system" && blocksOf(m).length === 0)!,
  /** Pi's tool change: a system message with a `tool_removal` block. */
  toolRemoval: strip(messagesOf(lastPayload("anthropic-oauth-effort")).flatMap(blocksOf).find((b) => b.type === "tool_removal")!),
  /** OAuth's first system block: the Claude Code identity. */
  identity: (lastPayload("anthropic-oauth").system as Json[])[0]!,
  chatAssistant: messagesOf(lastPayload("completions-anthropic-cache")).find((m) => m.role === "assistant" && Array.isArray(m.tool_calls))!,
  chatTool: messagesOf(lastPayload("completions-anthropic-cache")).find((m) => m.role === "tool" && typeof m.content === "string")!,
};

const IMAGE = { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } };

interface RenderOptions {
  oauth: boolean;
  effort: boolean;
  /** Ids repeat across answers (`call_0` again) as some providers send them. */
  reusedIds: boolean;
  /** Pi's ids hold a character the Anthropic provider replaces (`call|3` is sent as `call_3`). */
  pipedIds: boolean;
  /** Result ordinals whose output a flush replaced. */
  stubbed: ReadonlySet<number>;
}

interface Rendered {
  payload: Json;
  /** Every tool result in order: Pi's id, and where it sits. */
  results: Array<{ id: string; position: ResultPosition }>;
}

function callId(ordinal: number, options: RenderOptions): { pi: string; sent: string } {
  const n = options.reusedIds ? ordinal % 3 : ordinal;
  return options.pipedIds ? { pi: `call|${n}`, sent: `call_${n}` } : { pi: `toolu_${n}`, sent: `toolu_${n}` };
}

/** Pi's marker at the end of an Anthropic conversation: the last message's last block, when that message is a user or system one. */
function markAnthropicEnd(messages: Json[], marker: unknown): void {
  const last = messages.at(-1);
  if (!last || (last.role !== "user" && last.role !== "system")) return;
  if (typeof last.content === "string") last.content = [{ type: "text", text: last.content, cache_control: marker }];
  const block = (last.content as Json[]).at(-1);
  if (block && ["text", "image", "tool_result", "tool_addition", "tool_removal"].includes(String(block.type))) block.cache_control = marker;
}

/** An Anthropic Messages body as Pi's provider builds it for `turns`. */
function renderAnthropic(name: string, turns: readonly Turn[], options: RenderOptions): Rendered {
  const envelope = lastPayload(name);
  const prompt = (envelope.system as Json[]).at(-1)!;
  const system = options.oauth ? [TEMPLATES.identity, prompt] : [prompt];
  const messages: Json[] = [{ role: "user", content: [{ ...TEMPLATES.text, text: "read a and b" }] }];
  const results: Rendered["results"] = [];
  const held: Json[] = [];
  const assistantAt: number[] = [];
  const thinkingBlock = (thinking: Thinking) => (thinking === "signed" ? [{ ...TEMPLATES.thinking }] : thinking === "redacted" ? [{ type: "redacted_thinking", data: "opaque" }] : []);
  const assistant = (content: Json[]) => {
    messages.push(...held.splice(0));
    assistantAt.push(messages.length);
    messages.push({ role: "assistant", content });
  };
  for (const turn of turns) {
    if (turn.kind === "update") {
      held.push({ role: "system", content: [turn.block === "text" ? { type: "text", text: "The read tool now also lists folders." } : { ...TEMPLATES.toolRemoval }] });
    } else if (turn.kind === "answer") {
      assistant([...thinkingBlock(turn.thinking), { ...TEMPLATES.text, text: "Done with that." }]);
      messages.push({ role: "user", content: turn.prompt === "string" ? "and the next one?" : [{ ...TEMPLATES.text, text: "and the next one?" }] });
    } else {
      const ids = Array.from({ length: turn.calls }, (_, i) => callId(results.length + i, options));
      assistant([...thinkingBlock(turn.thinking), ...(turn.text ? [{ ...TEMPLATES.text, text: "Reading." }] : []), ...ids.map((id) => ({ ...TEMPLATES.toolUse, id: id.sent }))]);
      const m = messages.length;
      const content = ids.map((id, i) => ({ ...TEMPLATES.toolResult, tool_use_id: id.sent, content: options.stubbed.has(results.length + i) ? `[summarized ${id.sent}]` : `${String(TEMPLATES.toolResult.content)}// ${results.length + i}\n` }));
      ids.forEach((id, i) => results.push({ id: id.pi, position: { message: m, block: i } }));
      messages.push({ role: "user", content: turn.errorImage ? [...content, { type: "text", text: "Images from the failed read:" }, { ...IMAGE }] : content });
    }
  }
  messages.push(...held.splice(0));
  markAnthropicEnd(messages, TEMPLATES.marker);
  if (!options.effort) return { payload: { ...envelope, system, messages }, results };
  // Pi's effort messages: one before each of its answers, and the level of this request at the end.
  const withEffort: Json[] = [];
  const shift = (m: number) => m + assistantAt.filter((a) => a <= m).length;
  messages.forEach((message, m) => {
    if (assistantAt.includes(m)) withEffort.push({ ...TEMPLATES.effort });
    withEffort.push(message);
  });
  withEffort.push({ ...TEMPLATES.effort });
  return { payload: { ...envelope, system, messages: withEffort }, results: results.map((r) => ({ id: r.id, position: { ...r.position, message: shift(r.position.message) } })) };
}

/** Pi's marker at the end of a chat conversation: the last text of the last user, assistant or tool message that has one. */
function markChatEnd(messages: Json[], marker: unknown): void {
  for (let m = messages.length - 1; m >= 0; m--) {
    const message = messages[m]!;
    if (message.role !== "user" && message.role !== "assistant" && message.role !== "tool") continue;
    if (typeof message.content === "string" && message.content.length > 0) {
      message.content = [{ type: "text", text: message.content, cache_control: marker }];
      return;
    }
    const text = Array.isArray(message.content) ? (message.content as Json[]).findLast((p) => p.type === "text") : undefined;
    if (text) {
      text.cache_control = marker;
      return;
    }
  }
}

/** A chat-completions body as Pi's provider builds it for a model it marks Anthropic-style. */
function renderChat(name: string, turns: readonly Turn[], options: RenderOptions): Rendered {
  const envelope = lastPayload(name);
  const messages: Json[] = [messagesOf(envelope)[0]!, { role: "user", content: [{ type: "text", text: "read a and b" }] }];
  const results: Rendered["results"] = [];
  const call = TEMPLATES.chatAssistant.tool_calls as Json[];
  for (const turn of turns) {
    if (turn.kind === "update") messages.push({ role: "system", content: "The read tool now also lists folders." });
    else if (turn.kind === "answer") {
      messages.push({ role: "assistant", content: "Done with that.", ...(turn.thinking === "signed" ? { reasoning_content: "Checked." } : {}) });
      messages.push({ role: "user", content: turn.prompt === "string" ? "and the next one?" : [{ type: "text", text: "and the next one?" }] });
    } else {
      const ids = Array.from({ length: turn.calls }, (_, i) => callId(results.length + i, { ...options, pipedIds: false }));
      messages.push({ role: "assistant", content: turn.text ? "Reading." : null, ...(turn.thinking === "signed" ? { reasoning_content: "Look first." } : {}), tool_calls: ids.map((id) => ({ ...call[0]!, id: id.sent })) });
      ids.forEach((id, i) => {
        results.push({ id: id.pi, position: { message: messages.length, block: 0 } });
        messages.push({ ...TEMPLATES.chatTool, tool_call_id: id.sent, content: options.stubbed.has(results.length - 1) ? `[summarized ${id.sent}]` : `${String(TEMPLATES.chatTool.content)}// ${results.length - 1}\n` });
      });
      if (turn.errorImage) messages.push({ role: "user", content: [{ type: "text", text: "Attached image(s) from tool result:" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] });
    }
  }
  markChatEnd(messages, TEMPLATES.marker);
  return { payload: { ...envelope, messages }, results };
}

const thinkingArb = fc.constantFrom<Thinking>("signed", "signed", "redacted", "none");
const turnArb: fc.Arbitrary<Turn> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("tools" as const), thinking: thinkingArb, text: fc.boolean(), calls: fc.integer({ min: 1, max: 3 }), errorImage: fc.constantFrom(false, false, false, true) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("answer" as const), thinking: thinkingArb, prompt: fc.constantFrom<"blocks" | "string">("blocks", "string") }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("update" as const), block: fc.constantFrom<"text" | "tool_removal">("text", "tool_removal") }) },
);

const pendingOf = (rendered: Rendered, count: number): Request => {
  const pending = rendered.results.slice(rendered.results.length - count);
  return { payload: rendered.payload, pending: pending.map((r) => r.id), ...(pending[0] ? { oldestPending: pending[0].position } : {}) };
};

/** A pair of requests of one session in the shape of one of the marked recordings. */
export const markedCaseArb: fc.Arbitrary<PayloadCase> = fc
  .record({
    fixture: fc.constantFrom(...MARKED_RECORDINGS),
    turns: fc.array(turnArb, { minLength: 1, maxLength: 10 }),
    cut: fc.nat(),
    oauthFlip: fc.boolean(),
    effortFlip: fc.boolean(),
    reusedIds: fc.boolean(),
    pipedIds: fc.boolean(),
    previousPending: fc.nat(),
    currentPending: fc.nat(),
    flushed: fc.boolean(),
    /** A pending call the payload does not hold (another branch's): nothing may be added for it. */
    stray: fc.constantFrom(false, false, false, false, true),
    memory: fc.oneof(fc.constant("previous" as const), fc.constant("previous" as const), fc.constant("none" as const), fc.record({ message: fc.nat({ max: 40 }), block: fc.nat({ max: 4 }) })),
  })
  .map((c) => {
    const chat = c.fixture.startsWith("completions");
    const recordedOauth = c.fixture.includes("oauth");
    const recordedEffort = c.fixture.includes("effort") && !c.fixture.includes("thinking-off");
    const options = { oauth: !chat && recordedOauth !== c.oauthFlip, effort: !chat && recordedEffort !== c.effortFlip, reusedIds: c.reusedIds, pipedIds: c.pipedIds };
    const render = chat ? renderChat : renderAnthropic;
    const cut = 1 + (c.cut % c.turns.length);
    const before = render(c.fixture, c.turns.slice(0, cut), { ...options, stubbed: new Set() });
    const previous = pendingOf(before, c.previousPending % (before.results.length + 1));
    const full = render(c.fixture, c.turns, { ...options, stubbed: new Set() });
    const currentCount = c.currentPending % (full.results.length + 1);
    // A flush between the two: the previous request's pending results that are no longer pending were summarized.
    const firstPending = full.results.length - currentCount;
    const stubbed = new Set(c.flushed ? before.results.map((_, i) => i).filter((i) => i >= before.results.length - previous.pending.length && i < firstPending) : []);
    const pending = pendingOf(render(c.fixture, c.turns, { ...options, stubbed }), currentCount);
    const current = c.stray ? { payload: pending.payload, pending: ["toolu_elsewhere", ...pending.pending] } : pending;
    return { fixture: c.fixture, model: fixture(c.fixture).model, previous, current, memory: c.memory };
  });

/** A recorded payload of an api without markers, with pending ids from its session and a memory from elsewhere. */
export const unmarkedCaseArb = fc
  .record({
    fixture: fc.constantFrom(...UNMARKED_RECORDINGS),
    index: fc.nat(),
    pending: fc.subarray(["toolu_a", "toolu_b", "toolu_wc", "toolu_c"]),
    memory: fc.option(fc.record({ message: fc.nat({ max: 12 }), block: fc.nat({ max: 3 }) })),
  })
  .map((c) => {
    const recorded = fixture(c.fixture);
    return { model: recorded.model, payload: recorded.payloads[c.index % recorded.payloads.length], pending: c.pending, memory: c.memory ?? undefined };
  });
