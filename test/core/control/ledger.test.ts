import { describe, expect, it } from "vitest";
import { extractLedger, hasMutations, isReadOnlyCommand } from "../../../core/src/control/ledger.ts";
import type { AgentMessage, AssistantMessage, BashExecutionMessage } from "../../../core/src/shapes/messages.ts";

let clock = 1000;
function calls(...list: { name: string; args: Record<string, unknown> }[]): AssistantMessage {
  return {
    role: "assistant",
    timestamp: clock++,
    content: list.map((c, i) => ({ type: "toolCall" as const, id: `c${clock}_${i}`, name: c.name, arguments: c.args })),
  };
}
const bash = (command: string) => calls({ name: "bash", args: { command } });
const result = (toolCallId: string, text: string): AgentMessage => ({ role: "toolResult", toolCallId, toolName: "read", content: [{ type: "text", text }], isError: false, timestamp: clock++ });

describe("extractLedger", () => {
  it("sorts read and modified paths from the tools' path arguments, without duplicates", () => {
    const ledger = extractLedger([
      calls({ name: "read", args: { path: "src/b.ts" } }, { name: "read", args: { path: "src/a.ts" } }),
      result("x", "body"),
      calls({ name: "grep", args: { pattern: "auth", path: "src" } }, { name: "find", args: { pattern: "*.md" } }, { name: "ls", args: { path: "docs" } }),
      calls({ name: "edit", args: { path: "src/a.ts", edits: [] } }, { name: "write", args: { path: "notes.md", content: "x" } }, { name: "read", args: { path: "src/a.ts" } }),
    ]);
    expect(ledger).toEqual({ readFiles: ["docs", "src", "src/a.ts", "src/b.ts"], modifiedFiles: ["notes.md", "src/a.ts"], bashSideEffects: [] });
    expect(hasMutations(ledger)).toBe(true);
  });

  it("shows an absolute path inside the working folder relative to it", () => {
    const ledger = extractLedger([calls({ name: "read", args: { path: "/repo/src/a.ts" } }, { name: "read", args: { path: "src/a.ts" } }, { name: "read", args: { path: "/etc/hosts" } })], "/repo/");
    expect(ledger.readFiles).toEqual(["/etc/hosts", "src/a.ts"]);
  });

  it("a read-only shell command leaves no trace; a side-effecting one is listed, its redirect target modified", () => {
    const ledger = extractLedger([
      bash("grep -rn auth src | head -50 2>/dev/null"),
      bash("npm test > out/test.log 2>&1"),
      bash("rm -rf dist && mkdir dist"),
      bash("rm -rf dist && mkdir dist"),
    ]);
    expect(ledger.readFiles).toEqual([]);
    expect(ledger.modifiedFiles).toEqual(["out/test.log"]);
    expect(ledger.bashSideEffects).toEqual(["npm test > out/test.log 2>&1", "rm -rf dist && mkdir dist"]);
  });

  it("a command the person ran with ! counts like the agent's own", () => {
    const person: BashExecutionMessage = { role: "bashExecution", command: "git commit -am wip", output: "", timestamp: clock++ };
    expect(extractLedger([person]).bashSideEffects).toEqual(["git commit -am wip"]);
  });

  it("a long or multi-line command is listed by its first line", () => {
    const heredoc = `cat > config.json <<'EOF'\n{"a": 1}\nEOF`;
    const ledger = extractLedger([bash(heredoc), bash(`echo ${"x".repeat(300)} | tee -a big.txt`)]);
    expect(ledger.bashSideEffects).toEqual(["cat > config.json <<'EOF' …", `echo ${"x".repeat(195)}…`]);
    expect(ledger.modifiedFiles).toEqual(["big.txt", "config.json"]);
  });

  it("nothing in the span, or only text, is an empty ledger without mutations", () => {
    const text: AgentMessage = { role: "assistant", timestamp: clock++, content: [{ type: "text", text: "thinking aloud" }] };
    const ledger = extractLedger([text, { role: "user", content: "hi", timestamp: clock++ }]);
    expect(ledger).toEqual({ readFiles: [], modifiedFiles: [], bashSideEffects: [] });
    expect(hasMutations(ledger)).toBe(false);
  });

  it("tools it does not know and calls without a path are left out", () => {
    const ledger = extractLedger([calls({ name: "context_tree_query", args: { toolCallIds: ["t1"] } }, { name: "read", args: {} }, { name: "write", args: { path: 42 } })]);
    expect(ledger).toEqual({ readFiles: [], modifiedFiles: [], bashSideEffects: [] });
  });
});

describe("isReadOnlyCommand", () => {
  it.each([
    "ls -la",
    "cat src/a.ts | grep -n export | wc -l",
    "grep -rn 'a > b' src",
    'rg "x|y" --type ts',
    "cd src && git status && git log --oneline -5",
    "git diff HEAD~1 -- src",
    "git branch",
    "find . -name '*.ts' -not -path './node_modules/*'",
    "sed -n '1,20p' src/a.ts",
    "head -c 100 file 2>&1",
    "echo $(git rev-parse HEAD)",
    "for f in src/*.ts; do wc -l $f; done",
    "FOO=1 env | sort",
    "timeout 5 cat log.txt",
  ])("read-only: %s", (command) => {
    expect(isReadOnlyCommand(command)).toBe(true);
  });

  it.each([
    "rm build.log",
    "mv a b",
    "cp a b",
    "mkdir -p out",
    "touch x",
    "git commit -m 'x'",
    "git push origin main",
    "git checkout -- src",
    "git reset --hard",
    "git branch feature",
    "git stash",
    "npm install",
    "npm test",
    "echo hi > out.txt",
    "echo hi >> out.txt",
    "ls &> listing.txt",
    "cat a | tee b",
    "sed -i 's/a/b/' src/a.ts",
    "sed -ni 's/a/b/p' f",
    "curl -o page.html https://example.com",
    "find . -name '*.tmp' -delete",
    "find . -exec rm {} \\;",
    "echo $(rm -rf x)",
    "echo `touch y`",
    "sort -o sorted.txt data.txt",
    "env rm x",
    "python script.py",
    "./build.sh",
    "diff <(ls a) <(ls b)",
    "sudo apt-get install jq",
  ])("side effect: %s", (command) => {
    expect(isReadOnlyCommand(command)).toBe(false);
  });
});
