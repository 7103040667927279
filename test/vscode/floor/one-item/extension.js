// The floor of a first paint: one tree item, known at activation, in a view of its own container.
const vscode = require("vscode");

exports.activate = function activate(context) {
  const activatedAt = performance.timeOrigin + performance.now();
  const item = new vscode.TreeItem("floor item", vscode.TreeItemCollapsibleState.Collapsed);
  // The bench's observer finds the row by this mark in its description, as it finds our reclaim's arrow.
  item.description = "floor ▪ drawn";
  const provider = { getChildren: (node) => (node ? [] : ["floor"]), getTreeItem: () => item };
  context.subscriptions.push(vscode.window.createTreeView("floorOneItem.items", { treeDataProvider: provider }));
  return { activatedAt };
};

exports.deactivate = function deactivate() {};
