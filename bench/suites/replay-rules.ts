// The price models as the cost replay lists them in its tables, charts and report section: core's
// named price models (core/src/cost/price-rules.ts: Anthropic's emulates claude-sonnet-4-6, OpenAI's
// gpt-5, from Pi's model registry), in the order and under the names the page uses.
import { CACHE_RULES, type PriceModelName } from "../../core/src/cost/price-rules.ts";

/** The rules the targets are stated under (the simple model is shown for comparison). */
export const TARGET_RULES: readonly PriceModelName[] = CACHE_RULES.filter((rules) => rules !== "simple");

/** The order of the price models in tables: the earlier simple model first. */
export const TABLE_RULES: readonly PriceModelName[] = ["simple", ...TARGET_RULES];

export const RULES_NAME: Readonly<Record<PriceModelName, string>> = { simple: "simple model", anthropic: "Anthropic rules", openai: "OpenAI rules" };
