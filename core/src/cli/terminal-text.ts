// What the command line prints holds text from session and settings files, and a terminal acts on
// control characters in it: escape sequences recolour the screen, move the cursor, set the window
// title or write the clipboard (OSC 52). Every such character is printed as the JSON escape of its
// code (`\u001b`), the form JSON.stringify gives C0 controls: the `--json` output stays JSON with
// exactly the same strings (only DEL, C1 and the bidirectional controls are escaped there, JSON
// writing those raw), and the text output shows a control as the JSON does.

/** C0 but tab and newline, DEL, C1, and the bidirectional marks, embeddings, overrides and isolates that make text read otherwise than it is. */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
/** The same, with tab and newline: in a field of one line they would start another column or line. */
const UNSAFE_IN_A_LINE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/**
 * Text safe to write to a terminal, every control in it visible as `\u001b`. Newlines and tabs
 * stay, a CR LF line end becomes a newline; with `line`, the text is one line and shows even its
 * newlines and tabs so.
 */
export function terminalText(text: string, options: { line?: boolean } = {}): string {
  return options.line ? text.replace(UNSAFE_IN_A_LINE, escaped) : text.replace(/\r\n/g, "\n").replace(UNSAFE, escaped);
}

/** Lines joined by newlines, each shown as one line. */
export function terminalLines(lines: readonly string[]): string {
  return lines.map((line) => terminalText(line, { line: true })).join("\n");
}
