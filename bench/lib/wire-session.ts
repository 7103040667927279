// One play of the long session (bench/lib/long-session.ts, the script bench/record-session.ts
// --long records) by the real `pi` binary against the scripted model server, through one of Pi's
// providers, with no pruning, pi-pruner (the built bundle) or pi-condense (a checkout, unpatched).
// The model is configured as a user's would be, with the registry's prices, so a pruner learns its
// provider and prices from Pi's model. The server's log of request bodies is what gets billed.
// With latency on, every answer (the agent's and every summarizer's) comes after 0.5 s plus 5 ms
// per output token, as a real model's would.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startModelServer, type ModelRequest, type Reply } from "../../test/helpers/model-server.ts";
import { createPiWorkspace } from "../../test/helpers/pi-workspace.ts";
import { REPO_ROOT } from "../../test/helpers/pi-process.ts";
import { isSummarizerRequest } from "../../test/helpers/pruner-e2e.ts";
import { scriptedAgent } from "../../test/helpers/real-session.ts";
import { assertRunOk, runPi } from "../../test/helpers/run-pi.ts";
import { estimateTokens } from "../../core/src/shapes/size.ts";
import { LONG_FILES, LONG_PROMPTS, LONG_SCRIPT } from "./long-session.ts";
import { scriptedSummary } from "./pi-host.ts";
import type { ModelPrices, WireApi, WireRequest } from "./wire-bill.ts";

export type WirePruner = "none" | "pi-pruner" | "pi-condense";

/** The model each provider's runs are configured as, and where its prices come from. */
export interface WireModel {
  api: WireApi;
  id: string;
  prices: ModelPrices;
}

/** A model's entry in Pi's registry (pi-ai's providers/data/<provider>.json). */
export function registryModel(provider: string, id: string, api: WireApi): WireModel {
  const file = join(REPO_ROOT, "node_modules", "@earendil-works", "pi-ai", "dist", "providers", "data", `${provider}.json`);
  const data = JSON.parse(readFileSync(file, "utf8")) as Record<string, Record<string, { id?: string; cost?: ModelPrices }>>;
  for (const models of Object.values(data)) {
    for (const entry of Object.values(models)) if (entry.id === id && entry.cost) return { api, id, prices: entry.cost };
  }
  throw new Error(`${provider}/${id} is not in Pi's model registry`);
}

/** The answer's latency: 0.5 s plus 5 ms per output token. */
export const LATENCY = { baseMs: 500, perOutputTokenMs: 5 } as const;

export interface WireRunOptions {
  model: WireModel;
  pruner: WirePruner;
  /** The pi-condense checkout (for `pi-condense`). */
  piCondenseDir?: string;
  latency: boolean;
  /** pi-pruner's settings.json for the run (its defaults when absent). */
  settings?: Record<string, unknown>;
}

export interface WireRun {
  requests: WireRequest[];
  wallMs: number;
  /** Bodies that carried `cache_control`. */
  bodiesWithBreakpoints: number;
}

/** The characters of a scripted answer: its thinking, text and tool calls as streamed. */
function outputChars(reply: Reply): number {
  const r = reply as { thinking?: string; text?: string; toolCalls?: { name: string; arguments: unknown }[] };
  let chars = (r.thinking?.length ?? 0) + (r.text?.length ?? 0);
  for (const call of r.toolCalls ?? []) chars += call.name.length + (typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments)).length;
  return chars;
}

const outputTokens = (reply: Reply | undefined) => (reply ? estimateTokens(outputChars(reply)) : 0);

/** The agent's requests offer Pi's tools; a summarizer's offer none (pi-condense's) or carry pi-pruner's instructions. */
const isAgentRequest = (req: ModelRequest) => req.toolNames.includes("read") && !isSummarizerRequest(req);

export async function playLongSession(options: WireRunOptions): Promise<WireRun> {
  const { model } = options;
  if (options.pruner === "pi-condense" && !options.piCondenseDir) throw new Error("pi-condense needs its checkout");
  const server = await startModelServer();
  const agent = scriptedAgent(LONG_PROMPTS, LONG_SCRIPT, { isMain: isAgentRequest, other: (req) => ({ text: scriptedSummary(req.allText) }) });
  server.respond = (req) => {
    const reply = agent(req);
    return options.latency ? { ...reply, delayMs: LATENCY.baseMs + LATENCY.perOutputTokenMs * outputTokens(reply) } : reply;
  };
  const ws = createPiWorkspace({
    baseUrl: server.baseUrl,
    files: LONG_FILES,
    model: { api: model.api, id: model.id, cost: model.prices, contextWindow: 200_000, maxTokens: 8192, reasoning: true },
    settings: options.pruner === "pi-condense" ? { contextPrune: { enabled: true } } : options.settings,
    prefix: "pprb-wire-",
  });
  const extension = options.pruner === "pi-pruner" ? join(REPO_ROOT, "pi-extension") : options.pruner === "pi-condense" ? options.piCondenseDir : undefined;
  try {
    const t0 = performance.now();
    const run = await runPi({ workspace: ws, prompts: LONG_PROMPTS, extension, model: ws.modelRef, timeoutMs: 1_500_000 });
    const wallMs = performance.now() - t0;
    assertRunOk(run);
    if (server.warnings.length) throw new Error(`the script did not fit the run:\n${server.warnings.slice(0, 5).join("\n")}`);
    const logged = server.chatRequests;
    return {
      // An Anthropic body is billed as sent, not in the server's chat-completions view of it.
      requests: logged.map((r) => ({ body: r.anthropic ?? r.body, outputTokens: outputTokens(r.reply), summarizer: !isAgentRequest(r) })),
      wallMs,
      bodiesWithBreakpoints: logged.filter((r) => r.rawBody.includes('"cache_control"')).length,
    };
  } finally {
    await server.close();
    ws.cleanup();
  }
}
