// The floor of a webview: a panel whose page has nothing to draw. Once loaded it sets the body's
// `data-drawn` (as our timeline's page does when its chart is drawn, so the bench's observer in the
// frame times both alike) and posts `loaded`.
const vscode = require("vscode");

const PAGE = `<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-floor';">
</head><body><div id="chart"></div>
<script nonce="floor">
  const vscode = acquireVsCodeApi();
  window.addEventListener("load", () => {
    document.body.dataset.drawn = "0";
    vscode.postMessage({ type: "loaded" });
  });
</script></body></html>`;

exports.activate = function activate(context) {
  const activatedAt = performance.timeOrigin + performance.now();
  context.subscriptions.push(
    vscode.commands.registerCommand("floorEmptyWebview.open", () => {
      const panel = vscode.window.createWebviewPanel("floorEmptyWebview", "Floor: Empty Webview", vscode.ViewColumn.One, { enableScripts: true });
      panel.webview.html = PAGE;
      return panel;
    }),
  );
  return { activatedAt };
};

exports.deactivate = function deactivate() {};
