// The summarizer's model call, through Pi's model registry (the user's own providers and keys).
// Two limits: an idle timeout (the stream went silent) and an overall ceiling. Either rejects;
// the pipeline then leaves the raw outputs in place and retries on the next flush.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { PruneConfig } from "@pi-pruner/core";
import type { Summarizer, SummarizerAnswer } from "@pi-pruner/core";

type Model = NonNullable<ExtensionContext["model"]>;

function resolveSummarizerModel(ctx: ExtensionContext, config: Pick<PruneConfig, "summarizerModel">): Model | undefined {
  const wanted = config.summarizerModel.trim();
  if (!wanted || wanted === "default") return ctx.model;
  const slash = wanted.indexOf("/");
  if (slash <= 0) return undefined;
  return ctx.modelRegistry.find(wanted.slice(0, slash), wanted.slice(slash + 1)) ?? undefined;
}

class SummarizerError extends Error {}

export function createSummarizer(
  ctx: ExtensionContext,
  config: Pick<PruneConfig, "summarizerModel" | "summarizerThinking" | "summarizerIdleTimeoutMs" | "summarizerTimeoutMs">,
): Summarizer {
  return async (request): Promise<SummarizerAnswer> => {
    const model = resolveSummarizerModel(ctx, config);
    if (!model) throw new SummarizerError(`summarizer model "${config.summarizerModel}" is not available`);
    const controller = new AbortController();
    let reason = "";
    const abort = (why: string) => {
      if (!reason) reason = why;
      controller.abort();
    };
    const ceiling = setTimeout(() => abort(`no answer within ${config.summarizerTimeoutMs} ms`), config.summarizerTimeoutMs);
    let idle = setTimeout(() => abort(`silent for ${config.summarizerIdleTimeoutMs} ms`), config.summarizerIdleTimeoutMs);
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => abort(`silent for ${config.summarizerIdleTimeoutMs} ms`), config.summarizerIdleTimeoutMs);
    };
    try {
      const options: Record<string, unknown> = { maxTokens: 4096, signal: controller.signal };
      if (config.summarizerThinking !== "default") options.reasoning = config.summarizerThinking;
      const stream = ctx.modelRegistry.streamSimple(
        model,
        { systemPrompt: request.systemPrompt, messages: [{ role: "user", content: request.prompt, timestamp: Date.now() }] },
        options,
      );
      const aborted = new Promise<never>((_, reject) => {
        controller.signal.addEventListener("abort", () => reject(new SummarizerError(reason || "aborted")), { once: true });
      });
      const consume = (async () => {
        for await (const _event of stream) touch();
        return stream.result();
      })();
      const message = await Promise.race([consume, aborted]);
      if (message.stopReason === "error" || message.stopReason === "aborted") {
        throw new SummarizerError(message.errorMessage || reason || `the model stopped with "${message.stopReason}"`);
      }
      if (message.stopReason === "length") throw new SummarizerError("the summary was cut off (output token limit)");
      const text = message.content
        .filter((b): b is { type: "text"; text: string } => b.type === "text")
        .map((b) => b.text)
        .join("\n");
      const usage = message.usage;
      return {
        text,
        usage: usage ? { input: usage.input ?? 0, output: usage.output ?? 0, cost: usage.cost?.total ?? 0 } : undefined,
      };
    } finally {
      clearTimeout(ceiling);
      clearTimeout(idle);
    }
  };
}
