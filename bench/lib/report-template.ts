// The prose of docs/benchmarks.md lives in markdown templates beside the code that measures it
// (bench/suites/*-report.md, bench/lib/report.md). A template is a list of named blocks:
//
//   <!-- block: intro -->
//   Text with {{placeholders}}, one paragraph per line, as it appears in the page.
//
// A block runs from its marker to the next one, without the blank lines around it; anything before
// the first marker is a comment for the reader. Filling a block replaces each `{{name}}` with the
// value given for it, and fails on a placeholder without a value or a value without a placeholder,
// so a template and its code cannot drift apart unnoticed.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const MARKER = /^<!-- block: ([\w-]+) -->$/;
const PLACEHOLDER = /\{\{(\w+)\}\}/g;

export interface ReportTemplate {
  /** The block's text with its placeholders filled. */
  block(name: string, values?: Readonly<Record<string, string>>): string;
}

export function parseTemplate(text: string, source = "template"): ReportTemplate {
  const blocks = new Map<string, string>();
  let name: string | undefined;
  let lines: string[] = [];
  const close = () => {
    if (name === undefined) return;
    while (lines.length && lines[0] === "") lines.shift();
    while (lines.length && lines[lines.length - 1] === "") lines.pop();
    if (blocks.has(name)) throw new Error(`${source}: block "${name}" appears twice`);
    blocks.set(name, lines.join("\n"));
  };
  for (const line of text.replace(/\r\n/g, "\n").split("\n")) {
    const marker = MARKER.exec(line);
    if (!marker) {
      lines.push(line);
      continue;
    }
    close();
    name = marker[1]!;
    lines = [];
  }
  close();
  return {
    block(blockName, values = {}) {
      const text = blocks.get(blockName);
      if (text === undefined) throw new Error(`${source}: no block "${blockName}"`);
      const used = new Set<string>();
      const filled = text.replace(PLACEHOLDER, (_, key: string) => {
        const value = values[key];
        if (value === undefined) throw new Error(`${source}: block "${blockName}" needs a value for {{${key}}}`);
        used.add(key);
        return value;
      });
      const unused = Object.keys(values).filter((key) => !used.has(key));
      if (unused.length) throw new Error(`${source}: block "${blockName}" has no {{${unused.join("}}, {{")}}}`);
      return filled;
    },
  };
}

/** The template at `url` (a sibling of the module: `new URL("./x-report.md", import.meta.url)`). */
export function readTemplate(url: URL): ReportTemplate {
  const path = fileURLToPath(url);
  return parseTemplate(readFileSync(path, "utf8"), path);
}

/** `text` as the next sentence of a paragraph (a space before it), or nothing when it is empty. */
export function sentence(text: string): string {
  return text ? ` ${text}` : "";
}
