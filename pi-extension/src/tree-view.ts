// The terminal overlay of `/pruner tree`: draws a FoldableTree and maps keys onto it.
// Enter/Space folds, arrows move, Ctrl-O shows the selected node's full text, Esc closes.
import type { ExtensionCommandContext, Theme } from "@earendil-works/pi-coding-agent";
import type { Component } from "@earendil-works/pi-tui";
import { FoldableTree, type TreeKey, type TreeNode } from "./tree-model.ts";

const VISIBLE_ROWS = 20;

// pi-tui is loaded when the overlay first opens, not when Pi starts.
type Tui = typeof import("@earendil-works/pi-tui");

class PrunerTreeComponent implements Component {
  private readonly tree: FoldableTree;
  private readonly theme: Theme;
  private readonly close: () => void;
  private detail: string[] | undefined;
  private detailOffset = 0;
  private readonly tui: Tui;

  constructor(tui: Tui, roots: TreeNode[], theme: Theme, close: () => void) {
    this.tui = tui;
    this.tree = new FoldableTree(roots);
    this.theme = theme;
    this.close = close;
  }

  handleInput(data: string): void {
    const { matchesKey } = this.tui;
    if (this.detail) {
      if (matchesKey(data, "escape") || matchesKey(data, "ctrl+o") || matchesKey(data, "return")) this.detail = undefined;
      else if (matchesKey(data, "down")) this.detailOffset = Math.min(Math.max(0, this.detail.length - VISIBLE_ROWS), this.detailOffset + 1);
      else if (matchesKey(data, "up")) this.detailOffset = Math.max(0, this.detailOffset - 1);
      return;
    }
    if (matchesKey(data, "escape") || data === "q") {
      this.close();
      return;
    }
    if (matchesKey(data, "ctrl+o")) {
      const node = this.tree.selected();
      if (node?.detail) {
        this.detail = node.detail.split("\n");
        this.detailOffset = 0;
      }
      return;
    }
    const keys: [string, TreeKey][] = [
      ["up", "up"],
      ["down", "down"],
      ["left", "left"],
      ["right", "right"],
      ["return", "toggle"],
      ["space", "toggle"],
      ["home", "home"],
      ["end", "end"],
      ["pageUp", "pageUp"],
      ["pageDown", "pageDown"],
    ];
    for (const [id, key] of keys) {
      if (matchesKey(data, id as Parameters<typeof matchesKey>[1])) {
        this.tree.press(key, VISIBLE_ROWS);
        return;
      }
    }
  }

  render(width: number): string[] {
    const { truncateToWidth } = this.tui;
    const th = this.theme;
    const inner = Math.max(20, width - 2);
    const frame = (text: string) => th.fg("border", "│") + truncateToWidth(text, inner, "…", true) + th.fg("border", "│");
    const lines = [th.fg("border", `╭${"─".repeat(inner)}╮`)];
    if (this.detail) {
      lines.push(frame(` ${th.fg("accent", "pi-pruner · detail")}  ${th.fg("dim", "↑↓ scroll · Esc back")}`));
      for (const line of this.detail.slice(this.detailOffset, this.detailOffset + VISIBLE_ROWS)) lines.push(frame(` ${line}`));
    } else {
      lines.push(frame(` ${th.fg("accent", "pi-pruner · pruned calls")}  ${th.fg("dim", "↑↓ move · Enter fold · Ctrl-O detail · Esc close")}`));
      const rows = this.tree.rows();
      const selected = this.tree.selectedIndex(rows);
      const start = Math.max(0, Math.min(selected - Math.floor(VISIBLE_ROWS / 2), rows.length - VISIBLE_ROWS));
      rows.slice(start, start + VISIBLE_ROWS).forEach((row, i) => {
        const marker = row.node.children.length ? (row.expanded ? "▾ " : "▸ ") : "  ";
        const text = ` ${"  ".repeat(row.depth)}${marker}${row.node.label}`;
        lines.push(frame(start + i === selected ? th.fg("accent", text) : text));
      });
      if (!rows.length) lines.push(frame(" nothing pruned on this branch yet"));
    }
    lines.push(th.fg("border", `╰${"─".repeat(inner)}╯`));
    return lines;
  }

  invalidate(): void {}
}

/** Shows the tree as an overlay in the terminal UI; elsewhere (RPC, print) as text. */
export async function showTree(ctx: ExtensionCommandContext, roots: TreeNode[], asText: () => string): Promise<void> {
  if (ctx.mode !== "tui" || !ctx.hasUI) {
    ctx.ui.notify(asText(), "info");
    return;
  }
  const tui = await import("@earendil-works/pi-tui");
  await ctx.ui.custom<void>((_tui, theme, _keys, done) => new PrunerTreeComponent(tui, roots, theme, () => done()), { overlay: true });
}
