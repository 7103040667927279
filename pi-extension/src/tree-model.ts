// A foldable tree for `/pruner tree`: which rows are visible, which one is selected, what a key
// does. Pure, so the terminal component only draws it.

export interface TreeNode {
  id: string;
  label: string;
  /** Longer text shown on request (a summary's markdown, a call's arguments). */
  detail?: string;
  children: TreeNode[];
}

export interface TreeRow {
  node: TreeNode;
  depth: number;
  expanded: boolean;
}

export type TreeKey = "up" | "down" | "left" | "right" | "toggle" | "home" | "end" | "pageUp" | "pageDown";

export class FoldableTree {
  private readonly roots: TreeNode[];
  private readonly expanded = new Set<string>();
  private selectedId: string | undefined;

  constructor(roots: TreeNode[]) {
    this.roots = roots;
    this.selectedId = roots[0]?.id;
  }

  rows(): TreeRow[] {
    const out: TreeRow[] = [];
    const walk = (nodes: TreeNode[], depth: number) => {
      for (const node of nodes) {
        const expanded = this.expanded.has(node.id);
        out.push({ node, depth, expanded });
        if (expanded) walk(node.children, depth + 1);
      }
    };
    walk(this.roots, 0);
    return out;
  }

  selectedIndex(rows: TreeRow[] = this.rows()): number {
    const i = rows.findIndex((r) => r.node.id === this.selectedId);
    return i < 0 ? 0 : i;
  }

  selected(): TreeNode | undefined {
    const rows = this.rows();
    return rows[this.selectedIndex(rows)]?.node;
  }

  isExpanded(id: string): boolean {
    return this.expanded.has(id);
  }

  expandAll(): void {
    const walk = (nodes: TreeNode[]) => {
      for (const n of nodes) {
        if (n.children.length) this.expanded.add(n.id);
        walk(n.children);
      }
    };
    walk(this.roots);
  }

  press(key: TreeKey, pageSize = 10): void {
    const rows = this.rows();
    if (!rows.length) return;
    let i = this.selectedIndex(rows);
    const row = rows[i]!;
    switch (key) {
      case "up":
        i = Math.max(0, i - 1);
        break;
      case "down":
        i = Math.min(rows.length - 1, i + 1);
        break;
      case "pageUp":
        i = Math.max(0, i - pageSize);
        break;
      case "pageDown":
        i = Math.min(rows.length - 1, i + pageSize);
        break;
      case "home":
        i = 0;
        break;
      case "end":
        i = rows.length - 1;
        break;
      case "toggle":
        if (row.node.children.length) {
          if (row.expanded) this.expanded.delete(row.node.id);
          else this.expanded.add(row.node.id);
        }
        return;
      case "right":
        if (row.node.children.length && !row.expanded) this.expanded.add(row.node.id);
        else if (row.expanded) i = Math.min(rows.length - 1, i + 1);
        break;
      case "left":
        if (row.expanded) {
          this.expanded.delete(row.node.id);
          return;
        }
        // Jump to the parent.
        for (let j = i - 1; j >= 0; j--) {
          if (rows[j]!.depth < row.depth) {
            i = j;
            break;
          }
        }
        break;
    }
    this.selectedId = rows[i]!.node.id;
  }

  /** Plain text lines: the whole tree as it is folded now (▾ open, ▸ closed). */
  toLines(): string[] {
    return this.rows().map(({ node, depth, expanded }) => {
      const marker = node.children.length ? (expanded ? "▾ " : "▸ ") : "  ";
      return `${"  ".repeat(depth)}${marker}${node.label}`;
    });
  }
}
