// Text from a session file is untrusted: it is shown, never interpreted. These helpers make it
// safe to put in a label, a description or a tooltip, and format sizes and ages the same way
// everywhere in the extension.
import * as vscode from "vscode";
import { estimateTokens, formatCount, formatNumber, oneLine as oneLineOf } from "@pi-pruner/core";

export { formatNumber };

// C0/C1 controls, and the bidirectional overrides and isolates that can make text read
// differently from what it is.
const UNSAFE_CHARACTERS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

// Terminal escape sequences as tools print them (colours, cursor moves, OSC 8 hyperlinks, window
// titles), taken out whole: removing only the ESC character would leave `[31m` or `]8;;https://…`
// in the text. String sequences (OSC, DCS, SOS, PM, APC) end at BEL or ST, or run to the end of the
// line when unterminated; CSI ends at its final byte; the rest are ESC and one or two bytes.
const ESCAPE_SEQUENCES =
  /(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u001b\u009c\n]*(?:\u0007|\u001b\\|\u009c)?|(?:\u001b\[|\u009b)[0-?]*[ -/]*[@-~]?|\u001b[ -/]*[0-~]?/g;

/** Text without terminal escape sequences and unsafe characters (tab and newline stay). */
function plainText(text: string): string {
  return text.replace(ESCAPE_SEQUENCES, "").replace(UNSAFE_CHARACTERS, "");
}

/** One line of plain text: escapes and controls removed, whitespace collapsed, at most `max` characters. */
export function oneLine(text: string | undefined, max = 80): string {
  return text ? oneLineOf(plainText(text), max) : "";
}

/** Text for a document body: escape sequences and controls other than tab and newline removed. */
export function documentText(text: string): string {
  return plainText(text);
}

/**
 * A tooltip that can hold untrusted text: not trusted (no command links), no HTML, no theme icons.
 * `parts` alternate: plain strings are untrusted text; `{ code }` is shown as code, `{ md }` is our own markdown.
 */
export function safeTooltip(...parts: (string | { md: string } | { code: string })[]): vscode.MarkdownString {
  const tooltip = new vscode.MarkdownString("", false);
  tooltip.isTrusted = false;
  tooltip.supportHtml = false;
  for (const part of parts) {
    if (typeof part === "string") tooltip.appendText(plainText(part));
    else if ("md" in part) tooltip.appendMarkdown(part.md);
    else tooltip.appendCodeblock(plainText(part.code), "text");
  }
  return tooltip;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/**
 * How long ago, short enough for a side bar row: "12s ago", "5min ago", "3h ago", "2d ago"; older
 * ones by their day ("Jan 5"), or their month in another year ("Jan 2024").
 */
export function formatAge(thenMs: number, nowMs = Date.now()): string {
  const seconds = Math.max(0, Math.round((nowMs - thenMs) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)}min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)}h ago`;
  if (seconds < 30 * 86_400) return `${Math.round(seconds / 86_400)}d ago`;
  const then = new Date(thenMs);
  return then.getFullYear() === new Date(nowMs).getFullYear() ? `${MONTHS[then.getMonth()]} ${then.getDate()}` : `${MONTHS[then.getMonth()]} ${then.getFullYear()}`;
}

/** `92k → 14k` in estimated tokens, from characters (`92k→14k` compact, for a side bar row). */
export function formatReclaim(rawChars: number, modelChars: number | undefined, options: { compact?: boolean } = {}): string {
  if (modelChars === undefined) return formatCount(estimateTokens(rawChars));
  return `${formatCount(estimateTokens(rawChars))}${options.compact ? "→" : " → "}${formatCount(estimateTokens(modelChars))}`;
}

/** A local date and time, "2025-01-06 09:00" ("09:00:12" with seconds), without Intl, whose first use is slow. */
export function formatDateTime(ms: number, options: { seconds?: boolean } = {}): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  const time = `${two(d.getHours())}:${two(d.getMinutes())}${options.seconds ? `:${two(d.getSeconds())}` : ""}`;
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${time}`;
}

/** A name usable as the last segment of a document URI (shown as the editor tab title). */
export function uriSafeName(text: string, max = 60): string {
  const name = oneLine(text, max).replace(/[\\/:*?"<>|#%]/g, "-");
  return name || "untitled";
}
