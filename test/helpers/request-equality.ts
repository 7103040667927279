// The proof that a session file tells the truth about what was sent: for every model request on
// the session's branch, the messages `pi-pruner view --json --request N` prints equal what the
// scripted model server logged for the agent's request N, after Pi's conversion (sentShape and
// viewShape of ./pruner-e2e.ts), and every request was rendered with the settings the session
// recorded. Runs the command line's own code (its `main`), with an empty agent dir, so no
// settings of the day can stand in for the recorded ones.
import { expect } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main } from "../../core/src/cli/cli.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";
import type { ModelRequest } from "./model-server.ts";
import { sentShape, viewShape } from "./pruner-e2e.ts";

/** Self-control settings for a scenario that is not about nudges: none rides a request. */
export const NO_NUDGES = { driftNudge: false, highWaterFraction: null } as const;

/** The nudges' own words (core/src/control/nudges.ts), for scenarios that send them by design. */
export const DRIFT_NOTE = /\[pi-pruner\] Your own messages and tool output grew the context by ~[\d,]+ tokens over [^\n]+/;
export const HIGH_WATER_NOTE = /\[pi-pruner\] The context is at ~\d+% of the model's window[^\n]+/;

/**
 * A request a nudge rode by design: nudges are never written to the session, so the request
 * differs from its view by exactly the note (appended to its last message, or as a message of its
 * own after it), and the note must match `note`.
 */
export interface NudgedRequest {
  n: number;
  note: RegExp;
}

/**
 * The requests the server received with `note` in them, for a scenario on the default settings
 * (which send nudges): each is then checked to differ from its view by exactly that note.
 */
export function requestsWithNote(agentRequests: readonly ModelRequest[], note: RegExp): NudgedRequest[] {
  return agentRequests.flatMap((r, i) => (note.test(sentShape(r).join("\n")) ? [{ n: i + 1, note }] : []));
}

export interface RequestEqualityOptions {
  nudged?: readonly NudgedRequest[];
  /** The branch to check, by its leaf entry id (default: the file's last entry, as Pi resumes). */
  leafId?: string;
}

interface MarkersJson {
  messages: AgentMessage[];
  request: { n: number; of: number; entryId: string };
  settings: { source: string; writer: string | null; entryId: string | null };
}

async function cli(args: string[], dir: string): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(args, { out: (t) => (out += t), err: (t) => (err += t), env: { PI_CODING_AGENT_DIR: join(dir, "agent") }, cwd: dir });
  return { code, out, err };
}

/** Checks every request of the session's branch against the agent's requests the server logged, in order. */
export async function expectRequestViewsMatch(sessionFile: string, agentRequests: readonly ModelRequest[], options: RequestEqualityOptions = {}): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "request-equality-"));
  try {
    const common = [sessionFile, "--cwd", dir, ...(options.leafId ? ["--leaf", options.leafId] : [])];
    const last = await cli(["view", ...common, "--json", "--markers", "--request", "last"], dir);
    expect(last.code, last.err).toBe(0);
    const count = (JSON.parse(last.out) as MarkersJson).request.of;
    expect(count, "one request on the branch per agent request the server logged").toBe(agentRequests.length);
    const nudged = new Map((options.nudged ?? []).map((r) => [r.n, r.note]));
    for (const n of nudged.keys()) expect(n >= 1 && n <= count, `nudged request ${n} is on the branch`).toBe(true);
    for (let n = 1; n <= count; n++) {
      const plain = await cli(["view", ...common, "--json", "--request", String(n)], dir);
      expect(plain.code, plain.err).toBe(0);
      const messages = JSON.parse(plain.out) as AgentMessage[];
      const marked = JSON.parse((await cli(["view", ...common, "--json", "--markers", "--request", String(n)], dir)).out) as MarkersJson;
      expect(marked.settings.source, `request ${n} is rendered with the settings the session recorded`).toBe("recorded");
      expect(marked.messages).toEqual(messages);
      const view = viewShape(messages);
      const sent = sentShape(agentRequests[n - 1]!);
      const note = nudged.get(n);
      if (note === undefined) expect(view, `request ${n} of ${count}`).toEqual(sent);
      else expectNudged(view, sent, note, n);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `sent` is `view` with one nudge matching `note` added, as the live pruner adds it. */
function expectNudged(view: string[], sent: string[], note: RegExp, n: number): void {
  const label = `request ${n}: the view plus the nudge that rode it`;
  if (sent.length === view.length + 1) {
    expect(sent.slice(0, -1), label).toEqual(view);
    expect(sent.at(-1), label).toMatch(new RegExp(`^user: ${note.source}`, note.flags));
    return;
  }
  expect(sent.length, label).toBe(view.length);
  expect(sent.slice(0, -1), label).toEqual(view.slice(0, -1));
  const shown = view.at(-1)!;
  const added = sent.at(-1)!;
  expect(added.startsWith(shown), label).toBe(true);
  // A tool result's blocks are joined by a newline; a user message's parts are sent as they are.
  expect(added.slice(shown.length), label).toMatch(new RegExp(`^\\n?${note.source}$`, note.flags));
}
