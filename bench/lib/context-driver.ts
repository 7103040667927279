// A minimal stand-in for Pi around one extension, for timing its `context` handler alone: the
// factory registers on a fake `pi`, `session_start` and `session_tree` rebuild the extension's
// state from a branch of entries (the pruner's entries are the same format for pi-pruner and
// pi-condense), and `context` is called the way Pi calls it, awaited, with whatever messages the
// caller hands over. The agent dir holds the settings the extension reads at `session_start`.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AnyEntry } from "../../core/src/shapes/entries.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";

type Handler = (event: Record<string, unknown>, ctx: unknown) => unknown;

export interface DrivenExtension {
  /** Replaces the branch the extension sees (what `getBranch` returns from now on). */
  setBranch(entries: readonly AnyEntry[]): void;
  sessionStart(): Promise<void>;
  /** Pi's tree navigation: the extension rebuilds its state from the (new) branch. */
  sessionTree(): Promise<void>;
  /** One `context` call: the messages sent (the same array when the handler changed nothing). */
  context(messages: AgentMessage[]): Promise<AgentMessage[]>;
  /** Host APIs the extension asked for that this stand-in does not provide. */
  unsupported: Set<string>;
}

export interface DriveOptions {
  /** A fresh folder: the agent dir (settings.json), the workspace and the session folder go inside. */
  root: string;
  /** The `contextPrune` settings block written to the agent dir's settings.json. */
  contextPrune: Record<string, unknown>;
}

export async function driveExtension(factory: (pi: unknown) => void | Promise<void>, options: DriveOptions): Promise<DrivenExtension> {
  const agentDir = join(options.root, "agent");
  const cwd = join(options.root, "workspace");
  const sessionDir = join(options.root, "sessions");
  for (const dir of [agentDir, cwd, sessionDir]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ contextPrune: options.contextPrune }, null, 2));
  const handlers = new Map<string, Handler[]>();
  const unsupported = new Set<string>();
  let branch: readonly AnyEntry[] = [];
  const sessionId = "context-bench";

  const fallback = <T extends object>(known: T, prefix: string, missing: () => unknown): T =>
    new Proxy(known, {
      get(target, prop: string) {
        if (prop in target) return (target as Record<string, unknown>)[prop];
        unsupported.add(`${prefix}.${prop}`);
        return missing();
      },
    });
  const pi = fallback(
    {
      on(event: string, handler: Handler) {
        const list = handlers.get(event) ?? [];
        list.push(handler);
        handlers.set(event, list);
      },
      events: { emit() {}, on() {} },
    },
    "pi",
    () => () => undefined,
  );
  const model = { provider: "mock", id: "m", api: "anthropic-messages", contextWindow: 200_000, maxTokens: 8192 };
  const ctx = fallback(
    {
      cwd,
      hasUI: false,
      model,
      isProjectTrusted: () => true,
      isIdle: () => true,
      ui: new Proxy({}, { get: () => () => undefined }),
      sessionManager: {
        getBranch: () => branch,
        getEntries: () => branch,
        getLeafId: () => branch[branch.length - 1]?.id ?? null,
        getSessionDir: () => sessionDir,
        getSessionId: () => sessionId,
        getSessionFile: () => join(sessionDir, `${sessionId}.jsonl`),
      },
      getContextUsage: () => undefined,
    },
    "ctx",
    () => undefined,
  );

  const fire = async (event: string, payload: Record<string, unknown>): Promise<unknown> => {
    let result: unknown;
    for (const handler of handlers.get(event) ?? []) {
      const r = await handler(payload, ctx);
      if (r !== undefined) result = r;
    }
    return result;
  };
  // Both extensions read their settings from PI_CODING_AGENT_DIR at session_start, as in Pi.
  const withAgentDir = async (fn: () => Promise<unknown>) => {
    const previous = process.env.PI_CODING_AGENT_DIR;
    process.env.PI_CODING_AGENT_DIR = agentDir;
    try {
      await fn();
    } finally {
      if (previous === undefined) delete process.env.PI_CODING_AGENT_DIR;
      else process.env.PI_CODING_AGENT_DIR = previous;
    }
  };

  await factory(pi);
  return {
    unsupported,
    setBranch(entries) {
      branch = entries;
    },
    sessionStart: () => withAgentDir(() => fire("session_start", { type: "session_start", reason: "startup" })),
    sessionTree: () => withAgentDir(() => fire("session_tree", { type: "session_tree" })),
    async context(messages) {
      const handler = handlers.get("context")?.[0];
      if (!handler) throw new Error("the extension registered no context handler");
      const result = (await handler({ type: "context", messages }, ctx)) as { messages?: AgentMessage[] } | undefined;
      return result?.messages ?? messages;
    },
  };
}
