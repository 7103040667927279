// A session exported to markdown: session text stays inert however it is rendered.
import { describe, expect, it } from "vitest";
import { prunedSessionBuilder } from "../../helpers/fixtures.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import { buildModelView } from "../../../core/src/view/model-view.ts";
import { fenced, fenceFor, modelViewMarkdown, summariesMarkdown } from "../../../core/src/view/export-markdown.ts";

const HOSTILE = "````\n[run](command:workbench.action.terminal.sendSequence?%7B%7D) <script>alert(1)</script> <img src=x onerror=alert(1)>\n``` ```````";

/** Restates the invariant independently: outside fenced blocks, the lines are only our fixed words. */
function outsideFences(markdown: string): string[] {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const opener = /^(`{3,})/.exec(line)?.[1];
    if (fence === undefined) {
      if (opener) fence = opener;
      else out.push(line);
    } else if (line.trimEnd() === fence) fence = undefined;
    else if (opener && opener.length >= fence.length && line.trim() === opener) fence = undefined;
  }
  expect(fence, "every fence is closed").toBeUndefined();
  return out;
}

function hostileView() {
  const b = prunedSessionBuilder();
  b.user(HOSTILE);
  b.toolUse("read", { path: HOSTILE }, HOSTILE, { id: "h1" });
  const data = parseSessionText(b.toJsonl());
  return { data, view: buildSessionView(data, { config: DEFAULT_CONFIG }) };
}

describe("markdown export", () => {
  it("a fence is longer than any backtick run in its text", () => {
    expect(fenceFor("plain")).toBe("```");
    expect(fenceFor("a ```` b `` c")).toBe("`````");
    expect(fenced("x ``````\n")).toBe("```````\nx ``````\n```````\n");
  });

  it("the model view's every message is inside a fence; no link, command URI or HTML stands outside", () => {
    const { data } = hostileView();
    const model = buildModelView(data, { config: DEFAULT_CONFIG });
    const markdown = modelViewMarkdown(model, { sessionFile: `/tmp/${HOSTILE}.jsonl`, sessionName: HOSTILE });
    expect(markdown).toContain("alert(1)");
    expect(markdown).toContain("fix the build");
    const outside = outsideFences(markdown).join("\n");
    expect(outside).not.toMatch(/command:|<|\]\(|alert|fix the build/);
    expect(outside).toContain("# Pi Pruner model view");
  });

  it("summaries come with their text and the calls they stand for, all fenced", () => {
    const { view } = hostileView();
    const withHostileSummary = { ...view, summaries: view.summaries.map((s) => ({ ...s, text: `${s.text}\n${HOSTILE}` })) };
    const markdown = summariesMarkdown(withHostileSummary, { sessionFile: "/tmp/s.jsonl" });
    expect(markdown).toContain("## Summary 1 of 1");
    expect(markdown).toContain("read src/a.ts: all A's");
    expect(markdown).toContain("Tool-call id: c2");
    expect(markdown).toContain("State: summarized (ref t2)");
    expect(markdown).toContain('"path": "src/a.ts"');
    const outside = outsideFences(markdown).join("\n");
    expect(outside).not.toMatch(/command:|<|\]\(|alert|all A's|src\/a\.ts/);
    expect(outside).toContain("### Its calls (1)");
  });

  it("a branch with no summaries says so", () => {
    const markdown = summariesMarkdown({ summaries: [], calls: [] }, { sessionFile: "/tmp/s.jsonl" });
    expect(markdown).toContain("This branch has no summaries.");
  });
});
