import { describe, expect, it } from "vitest";
import { FoldableTree, type TreeNode } from "../../pi-extension/src/tree-model.ts";

const leaf = (id: string): TreeNode => ({ id, label: id, children: [] });
const roots: TreeNode[] = [
  { id: "s1", label: "summary 1", children: [leaf("t1"), leaf("t2")] },
  { id: "s2", label: "summary 2", children: [leaf("t3")] },
];

describe("the /pruner tree", () => {
  it("starts folded with the first summary selected", () => {
    const tree = new FoldableTree(roots);
    expect(tree.toLines()).toEqual(["▸ summary 1", "▸ summary 2"]);
    expect(tree.selected()?.id).toBe("s1");
  });

  it("Enter unfolds a summary to show its calls, and folds it again", () => {
    const tree = new FoldableTree(roots);
    tree.press("toggle");
    expect(tree.toLines()).toEqual(["▾ summary 1", "    t1", "    t2", "▸ summary 2"]);
    tree.press("toggle");
    expect(tree.toLines()).toEqual(["▸ summary 1", "▸ summary 2"]);
  });

  it("arrows move through visible rows; left on a call jumps to its summary", () => {
    const tree = new FoldableTree(roots);
    tree.press("right");
    tree.press("down");
    tree.press("down");
    expect(tree.selected()?.id).toBe("t2");
    tree.press("left");
    expect(tree.selected()?.id).toBe("s1");
    tree.press("left");
    expect(tree.toLines()).toEqual(["▸ summary 1", "▸ summary 2"]);
    tree.press("end");
    expect(tree.selected()?.id).toBe("s2");
    tree.press("down");
    expect(tree.selected()?.id).toBe("s2");
  });

  it("the selection survives folding the summary above it", () => {
    const tree = new FoldableTree(roots);
    tree.expandAll();
    tree.press("end");
    expect(tree.selected()?.id).toBe("t3");
    tree.press("home");
    tree.press("toggle");
    expect(tree.selected()?.id).toBe("s1");
  });
});
