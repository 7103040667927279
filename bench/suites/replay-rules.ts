// The price models as the cost replay lists them in its tables, charts and report section: core's
// rules (core/src/cost/cache-rules.ts), in the order and under the names the page uses.
import { CACHE_RULES, type CacheRules } from "../../core/src/cost/cache-rules.ts";

/** The rules the targets are stated under (the simple model is shown for comparison). */
export const TARGET_RULES: readonly CacheRules[] = CACHE_RULES.filter((rules) => rules !== "simple");

/** The order of the price models in tables: the earlier simple model first. */
export const TABLE_RULES: readonly CacheRules[] = ["simple", ...TARGET_RULES];

export const RULES_NAME: Readonly<Record<CacheRules, string>> = { simple: "simple model", anthropic: "Anthropic rules", openai: "OpenAI rules" };
