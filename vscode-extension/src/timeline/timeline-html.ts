// The timeline webview's page: a strict content security policy in which only scripts carrying
// this page's nonce run, and nothing is loaded from anywhere. The page's script and styles (the
// extension's own bundle) are written into it: each file the page fetched took a round trip
// through the workbench to the extension's files, and the page could not run before the last came.
import { randomBytes } from "node:crypto";

export interface TimelinePage {
  /** The webview's `cspSource`: the origin its local resources are served from. */
  cspSource: string;
  /** The page's bundle (dist/timeline/timeline-view.js) and its CSS. */
  script: string;
  style: string;
  title: string;
  nonce?: string;
}

/** A fresh nonce for one page: 128 random bits. */
function makeNonce(): string {
  return randomBytes(16).toString("base64");
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A file's text written inside `<tag>`: nothing in it can close the element, and its source map
 * comment goes (the map's path means nothing in a page without a file).
 */
function inlineBody(text: string, tag: "script" | "style"): string {
  return text.replace(/\n\/[/*][#@] sourceMappingURL=[^\n]*\s*$/, "\n").replace(new RegExp(`</(${tag})`, "gi"), "<\\/$1");
}

export function timelineHtml(page: TimelinePage): string {
  const nonce = page.nonce ?? makeNonce();
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    // The page's own styles, and uPlot positions its cursor and legend through style attributes.
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
<style>${inlineBody(page.style, "style")}</style>
<title>${escapeHtml(page.title)}</title>
</head>
<body>
<header id="totals" aria-live="polite">Reading the session…</header>
<div id="chart" role="img" aria-label="Context per request: raw and sent tokens, and cost"></div>
<div id="marks"></div>
<div id="details" aria-live="polite"></div>
<script nonce="${nonce}">${inlineBody(page.script, "script")}</script>
</body>
</html>`;
}
