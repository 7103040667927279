// Generated sessions as the live pruner leaves them: a coding script played through the real
// extension in the replay host, without model requests, so the file holds Pi's messages and every
// entry the pruner wrote (index, summaries, dedup aliases, spills, frontier, stats, chains). The
// cache-aware policy counts the requests it sees, and no request is made here, so the sessions are
// made with `cacheAware: false` (a flush on every final reply) unless the caller says otherwise.
import { codingScript, type CodingScriptOptions } from "./gen.ts";
import { ReplayHost } from "./pi-host.ts";

export interface GenerateOptions extends Partial<CodingScriptOptions> {
  root: string;
  /** Stop once Pi's context holds this many messages. */
  messages?: number;
  /** Stop once the session file would be this many bytes. */
  bytes?: number;
  contextPrune?: Record<string, unknown>;
}

export async function generateSession(options: GenerateOptions): Promise<{ host: ReplayHost; messages: number; bytes: number }> {
  const host = await ReplayHost.create({ root: options.root, contextPrune: { cacheAware: false, ...options.contextPrune }, fireContext: false });
  let messages = 0;
  let bytes = JSON.stringify(host.header).length + 1;
  let seen = 0;
  const count = () => {
    for (; seen < host.entries.length; seen++) {
      const entry = host.entries[seen]!;
      bytes += JSON.stringify(entry).length + 1;
      if (entry.type === "custom_message" || (entry.type === "message" && (entry as { message: { role: string } }).message.role !== "system")) messages++;
    }
  };
  const done = () => (options.messages !== undefined && messages >= options.messages) || (options.bytes !== undefined && bytes >= options.bytes);
  for (const step of codingScript({ seed: options.seed ?? 1, ...options })) {
    if (step.kind === "user") await host.user(step.text);
    else await host.assistantTurn(step);
    count();
    if (done()) break;
  }
  return { host, messages, bytes };
}
