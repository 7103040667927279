// What the wire suite plays and against what it is measured: the providers with the model each is
// configured as, the ways the session is played, and the figures measured before its targets were
// set. Apart from the suite, so the report reads them without loading what runs Pi.
import type { WirePruner } from "./wire-session.ts";

/** The providers, each with the model its runs are configured as; the Anthropic runs are the timed ones. */
export const WIRE_PROVIDERS = [
  { name: "openai", label: "OpenAI chat completions", provider: "openai", model: "gpt-5", api: "openai-completions", latency: false },
  { name: "anthropic", label: "Anthropic Messages", provider: "anthropic", model: "claude-sonnet-4-6", api: "anthropic-messages", latency: true },
] as const;

/** The figures' names for each way the session is played. */
export const WIRE_RUNS: readonly { id: string; pruner: WirePruner; label: string; settings?: Record<string, unknown> }[] = [
  { id: "none", pruner: "none", label: "no pruning" },
  { id: "defaults", pruner: "pi-pruner", label: "pi-pruner defaults" },
  { id: "background", pruner: "pi-pruner", label: "pi-pruner, backgroundSummaries on", settings: { contextPrune: { backgroundSummaries: true } } },
  { id: "picondense", pruner: "pi-condense", label: "pi-condense" },
];

/** Measured on the same session before this suite existed (outside the repository, 2026-12): the summarizer calls and wall times its targets halve and cut. */
export const WIRE_BASELINE = { summarizerCalls: 72, wallVsNone: 1.14, piCondenseWallVsNone: 1.08 } as const;
