// The person's own shell commands in the real `pi` (RPC's `bash` command records them as a `!cmd`
// or, with excludeFromContext, a `!!cmd` would): what the model is sent of them request after
// request, what the pruner's sizes say of them, and the output read back by context_tree_query.
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequest, Reply } from "../helpers/model-server.ts";
import { messageText } from "../helpers/model-server.ts";
import { startPiRpc, type PiRpc } from "../helpers/pi-rpc.ts";
import { EXTENSION, agentRequests, requestChars, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { expectRequestViewsMatch } from "../helpers/request-equality.ts";

const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: compiled module ${i + 1} without warnings`).join("\n");
const LOG = lines("build", 500);
const NOTES = lines("notes", 120);

const pi = scriptedPi();
afterEach(pi.stop);

/** The user messages of a request that carry the shell command `command`, as Pi wrote them. */
function shellMessages(req: ModelRequest, command: string): string[] {
  return (req.body.messages ?? []).filter((m) => m.role === "user" && messageText(m).startsWith(`Ran \`${command}\``)).map(messageText);
}

/** The agent: reads notes.txt when asked to, recovers the shell output its stub names when asked to, else answers. */
function agent(req: ModelRequest): Reply {
  const last = req.body.messages?.at(-1);
  if (last?.role === "tool") return { text: "done" };
  if (req.lastUserText.startsWith("read")) return { toolCalls: [{ name: "read", arguments: { path: "notes.txt" } }] };
  if (req.lastUserText.startsWith("recover")) {
    const id = /context_tree_query with \["(shell@\d+)"\]/.exec(req.allText)?.[1];
    if (id) return { toolCalls: [{ name: "context_tree_query", arguments: { toolCallIds: [id] } }] };
  }
  return { text: `answer to ${req.lastUserText}` };
}

async function shell(rpc: PiRpc, command: string, excludeFromContext = false): Promise<void> {
  const r = await rpc.send({ type: "bash", command, ...(excludeFromContext ? { excludeFromContext: true } : {}) });
  expect(r.success, JSON.stringify(r)).toBe(true);
}

/** `/pruner status`'s figures of the last request: characters raw and sent. */
async function statusSizes(rpc: PiRpc): Promise<{ raw: number; sent: number }> {
  await rpc.prompt("/pruner status");
  const text = rpc.notifications().at(-1)!.message;
  const m = /last request: ([\d,]+) chars raw → ([\d,]+) sent/.exec(text);
  expect(m, text).not.toBeNull();
  return { raw: Number(m![1]!.replace(/,/g, "")), sent: Number(m![2]!.replace(/,/g, "")) };
}

describe("the person's shell output in real Pi", () => {
  it("a large `!cat` output rides two prompts raw, then from the third on goes as a stub with its first lines; context_tree_query returns it whole", async () => {
    const { server, ws } = await pi.start(agent, { files: { "build.log": LOG }, settings: { contextPrune: { cacheAware: false } } });
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await shell(rpc, "cat build.log");
      for (const p of ["first", "second", "third", "fourth", "recover the log"]) await rpc.prompt(p);
      const requests = agentRequests(server.requests);
      const raw = `Ran \`cat build.log\`\n\`\`\`\n${LOG}\n\`\`\``;
      // Prompts 1 and 2: fewer than three prompts follow it; as Pi sends it.
      for (const req of requests.slice(0, 2)) expect(shellMessages(req, "cat build.log")).toEqual([raw]);
      // From the third prompt on: the stub, the same bytes on every request.
      const stubs = requests.slice(2).map((req) => shellMessages(req, "cat build.log"));
      const stub = stubs[0]![0]!;
      for (const s of stubs) expect(s).toEqual([stub]);
      expect(stub).toMatch(/^Ran `cat build\.log`\n```\n\[Output pruned: [\d,]+ characters, 500 lines; context_tree_query with \["shell@\d+"\] returns it\. Its first lines:\nbuild line 1: /);
      expect(stub).not.toContain("build line 500");
      expect(stub.length).toBeLessThan(600);
      // The agent asked for it by the id the stub names and got the whole output back.
      const recovered = toolMessages(requests.at(-1)!.body).at(-1)!;
      expect(recovered.text).toContain("Tool call id: shell@");
      expect(recovered.text).toContain(`Output:\n${LOG}`);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), requests);
    } finally {
      await rpc.close();
    }
  });

  it("/pruner status counts the shell output as Pi sends it: raw in full, sent as its stub", async () => {
    const { server, ws } = await pi.start(agent, { files: { "build.log": LOG }, settings: { contextPrune: { cacheAware: false } } });
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await shell(rpc, "cat build.log");
      for (const p of ["first", "second", "third", "fourth"]) await rpc.prompt(p);
      const last = agentRequests(server.requests).at(-1)!;
      const sizes = await statusSizes(rpc);
      // Every message of these requests is text only: the pruner's count and the request's agree to the character.
      expect(sizes.sent).toBe(requestChars(last.body));
      const rawShell = `Ran \`cat build.log\`\n\`\`\`\n${LOG}\n\`\`\``.length;
      expect(sizes.raw).toBe(requestChars(last.body) - shellMessages(last, "cat build.log")[0]!.length + rawShell);
    } finally {
      await rpc.close();
    }
  });

  it("a `!!` output is never sent, and the sizes count none of it", async () => {
    const { server, ws } = await pi.start(agent, { files: { "build.log": LOG, "notes.txt": NOTES }, settings: { contextPrune: { cacheAware: false } } });
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await shell(rpc, "cat build.log", true);
      // A read whose output the final reply's flush stubs: the render changes the request, so the status line measures it.
      await rpc.prompt("read the notes");
      await rpc.prompt("next");
      const requests = agentRequests(server.requests);
      for (const req of requests) expect(req.allText).not.toContain("build line 1");
      const sizes = await statusSizes(rpc);
      // The request's characters, and the read call's tool name, which the pruner counts with its arguments.
      expect(sizes.sent).toBe(requestChars(requests.at(-1)!.body) + "read".length);
      expect(sizes.raw).toBeLessThan(LOG.length);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), requests);
    } finally {
      await rpc.close();
    }
  });

  it("under cacheAware the stub waits for a flush: three prompts later the output is still raw, after `/pruner now` it is a stub", async () => {
    const { server, ws } = await pi.start(agent, { files: { "build.log": LOG, "notes.txt": NOTES } });
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION });
    try {
      await shell(rpc, "cat build.log");
      for (const p of ["first", "second", "third", "read the notes"]) await rpc.prompt(p);
      const before = agentRequests(server.requests).at(-1)!;
      expect(shellMessages(before, "cat build.log")[0]).toContain("build line 500");
      await rpc.prompt("/pruner now");
      await rpc.prompt("after the flush");
      const after = agentRequests(server.requests).at(-1)!;
      expect(shellMessages(after, "cat build.log")[0]).toMatch(/^Ran `cat build\.log`\n```\n\[Output pruned: /);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });
});
