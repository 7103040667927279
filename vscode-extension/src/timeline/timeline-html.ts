// The timeline webview's page: a strict content security policy in which only scripts carrying
// this page's nonce run, styles come from the extension's own files (and the inline `style`
// attributes uPlot sets), and nothing is loaded from anywhere else.
import { randomBytes } from "node:crypto";

export interface TimelinePage {
  /** The webview's `cspSource`: the origin its local resources are served from. */
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  title: string;
  nonce?: string;
}

/** A fresh nonce for one page: 128 random bits. */
function makeNonce(): string {
  return randomBytes(16).toString("base64");
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function timelineHtml(page: TimelinePage): string {
  const nonce = page.nonce ?? makeNonce();
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    // uPlot positions its cursor and legend through style attributes.
    `style-src ${page.cspSource} 'unsafe-inline'`,
    `img-src ${page.cspSource}`,
    `font-src ${page.cspSource}`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(page.styleUri)}">
<title>${escapeHtml(page.title)}</title>
</head>
<body>
<header id="totals" aria-live="polite">Reading the session…</header>
<div id="chart" role="img" aria-label="Context per request: raw and sent tokens, and cost"></div>
<div id="marks"></div>
<div id="details" aria-live="polite"></div>
<script nonce="${nonce}" src="${escapeHtml(page.scriptUri)}"></script>
</body>
</html>`;
}
