// Prompt building and output checking for the summarizer. The model call itself is injected:
// core never talks to a network.
import { summarizerInput } from "./summarizer-input.ts";
import { jsonText } from "../shapes/deep-json.ts";

export interface SummarizerUsage {
  input: number;
  output: number;
  cost: number;
}

export interface SummarizerRequest {
  systemPrompt: string;
  prompt: string;
}

export interface SummarizerAnswer {
  text: string;
  usage?: SummarizerUsage;
}

/** Calls a model. Must reject on failure or timeout; the pipeline turns that into "leave raw output in place". */
export type Summarizer = (request: SummarizerRequest) => Promise<SummarizerAnswer>;

export interface CallForSummary {
  shortRef: string;
  toolName: string;
  args: Record<string, unknown>;
  resultText: string;
  isError: boolean;
}

// Short: every summarizer call sends it again, uncached.
const BATCH_SYSTEM = [
  "You compress the tool outputs of a coding agent so it can keep working with a smaller context.",
  "One markdown bullet per call, in order, starting with its ref in backticks (`t3`): a sentence or two keeping paths, symbols, line numbers, exact errors, versions, decisions and changes.",
  "Never invent refs, files or results. [… 40 lines …] marks lines left out of an excerpt. Output only the bullets.",
].join("\n");

const FUSION_SYSTEM = [
  "You merge several summaries of one finished piece of a coding agent's work into a single cohesive summary.",
  "Keep every ref in backticks (e.g. `t3`) next to the fact it supports, and keep paths, names, errors and decisions.",
  "Never invent refs or facts. Output only the merged markdown bullets.",
].join("\n");

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.7);
  const tail = max - head;
  return `${text.slice(0, head)}\n[… ${text.length - max} characters elided …]\n${text.slice(text.length - tail)}`;
}

function describeArgs(args: Record<string, unknown>): string {
  let json: string;
  try {
    json = jsonText(args) ?? "{}";
  } catch {
    json = "{}";
  }
  return clip(json, 1_000);
}

/**
 * Each output's summarizer input, remembered by its call's arguments object (a call's arguments are
 * not edited in place). The flush choice weighs a pending batch at every turn's end, alone and with
 * others, and the flush then sends it: each time for the same calls, and picking an output's most
 * telling lines reads all of it.
 */
const inputs = new WeakMap<object, { toolName: string; text: string; inputChars: number; input: string }>();

function inputOf(call: CallForSummary, inputChars: number): string {
  const known = inputs.get(call.args);
  if (known && known.toolName === call.toolName && known.text === call.resultText && known.inputChars === inputChars) return known.input;
  const input = summarizerInput(call.toolName, call.args, call.resultText, inputChars);
  // Arguments read from a damaged session may be no object at all: nothing to remember them by.
  if (typeof call.args === "object" && call.args !== null) inputs.set(call.args, { toolName: call.toolName, text: call.resultText, inputChars, input });
  return input;
}

/** `inputChars`: what each call's output may take of the prompt (the `summarizerInputChars` setting). */
export function buildBatchRequest(calls: readonly CallForSummary[], inputChars: number): SummarizerRequest {
  const parts = calls.map(
    (c) => `### ${c.shortRef} — ${c.toolName}${c.isError ? " (failed)" : ""}\nArguments: ${describeArgs(c.args)}\nOutput:\n${inputOf(c, inputChars)}`,
  );
  return {
    systemPrompt: BATCH_SYSTEM,
    prompt: `Summarize these ${calls.length} tool call(s):\n\n${parts.join("\n\n")}`,
  };
}

export function buildFusionRequest(summaries: readonly string[], refs: readonly string[]): SummarizerRequest {
  return {
    systemPrompt: FUSION_SYSTEM,
    prompt: `Refs covered: ${refs.map((r) => `\`${r}\``).join(", ")}\n\n${summaries.map((s, i) => `## Summary ${i + 1}\n${stripFooter(s)}`).join("\n\n")}`,
  };
}

const FOOTER_MARK = "\n\nPruned refs: ";

function refFooter(refs: readonly string[]): string {
  return `${FOOTER_MARK}${refs.map((r) => `\`${r}\``).join(", ")}.`;
}

export function stripFooter(summary: string): string {
  const at = summary.lastIndexOf(FOOTER_MARK);
  return at >= 0 ? summary.slice(0, at) : summary;
}

class SummaryRejected extends Error {}

/**
 * Turns the model's answer into the persisted summary: refs the batch does not contain are
 * removed (a summary must not point at outputs that do not exist), a call the answer left out
 * gets a plain bullet, and the footer lists every ref. An empty answer is rejected.
 */
export function finishSummary(answer: string, calls: readonly Pick<CallForSummary, "shortRef" | "toolName" | "args">[]): string {
  const text = answer.replace(/\r\n/g, "\n").trim();
  if (!text) throw new SummaryRejected("the summarizer returned an empty answer");
  const known = new Set(calls.map((c) => c.shortRef));
  const cleaned = text.replace(/`(t\d+)`/g, (whole, ref: string) => (known.has(ref) ? whole : ref.replace(/^t/, "call ")));
  const mentioned = new Set<string>();
  for (const m of cleaned.matchAll(/`(t\d+)`/g)) mentioned.add(m[1]!);
  const missing = calls.filter((c) => !mentioned.has(c.shortRef));
  const extra = missing.map((c) => `- \`${c.shortRef}\` ${c.toolName} ${describeTarget(c.args)}(not described by the summarizer)`);
  const body = extra.length ? `${cleaned}\n${extra.join("\n")}` : cleaned;
  return body + refFooter(calls.map((c) => c.shortRef));
}

/** The arguments that name what a call worked on, in the order a one-line description prefers them. */
export const TARGET_ARG_KEYS = ["path", "command", "pattern", "url", "query"] as const;

export function describeTarget(args: Record<string, unknown>): string {
  for (const key of TARGET_ARG_KEYS) {
    const v = args[key];
    if (typeof v === "string" && v) return `${v.length > 80 ? v.slice(0, 79) + "…" : v} `;
  }
  return "";
}
