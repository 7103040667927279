// `pi-pruner`: a thin command line over core. Exit codes: 0 done, 1 a user error, 2 an unreadable input.
import { parseArgs } from "node:util";
import { existsSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { readSessionFile, type SessionData } from "../session/session-reader.ts";
import { buildSessionView, type SessionView } from "../view/session-view.ts";
import { agentDirFrom, loadConfig, settingsPaths } from "../settings/settings-reader.ts";
import { resolveConfig, type ConfigWarning } from "../settings/config.ts";
import { globPatternProblem, protectingPattern } from "../settings/protection.ts";
import { addProtectedPath, SettingsFileError } from "../settings/settings-writer.ts";
import { estimateTokens, formatNumber } from "../shapes/size.ts";
import { isRecord } from "../shapes/json.ts";
import { buildModelView, modelViewText, NEXT_REQUEST_TITLE, sizesLine, type ModelView } from "../view/model-view.ts";
import { NUDGES_NOT_SHOWN, RequestRenderer, requestTitle, settingsSourceText, type RequestView } from "../view/request-views.ts";
import { getBranch } from "../session/session-reader.ts";
import { markerEffectText, markerStateText, noteOneLine, type ControlsView, type MarkerView } from "../view/control-view.ts";
import { detectSessionWriter, renderedCounts, renderFidelity, writerHeaderLines } from "../view/session-writer.ts";
import { spillRecovery } from "../view/spill-recovery.ts";
import type { AnyEntry } from "../shapes/entries.ts";
import { oneLine } from "../shapes/text.ts";
import { terminalLines, terminalText } from "./terminal-text.ts";
import { nestsDeeperThan, shownValue, SHOWN_DEPTH, TOO_DEEP_TO_SHOW } from "../shapes/deep-json.ts";
import { sessionLeaves } from "../session/leaves.ts";
import { lastPromptOf } from "../session/labels.ts";
import type { RenderConfig } from "../render/render.ts";
import { branchCost, causeText, requestCostLine, type BranchCost } from "../view/request-cost.ts";

export interface CliIO {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

class UsageError extends Error {}
class InputError extends Error {}

const HELP = `pi-pruner — see what the Pi pruner did, and decide what it must never touch

Usage:
  pi-pruner inspect <session.jsonl> [--leaf ID] [--json] [--cwd DIR]
      Summaries, pruned calls and their states, chains, protected calls, the agent's
      rewinds, shrinks and checkpoints with their states, the next request's sizes.
      A file of several branches: its leaves with their last prompt (--leaf picks one;
      default: the last entry, where Pi resumes).
  pi-pruner view <session.jsonl> [--leaf ID] [--request N|last] [--json [--markers]] [--cwd DIR]
      The next request: the messages the model is sent when the session goes on from
      that leaf, with today's settings. With --request, request N already sent along the
      branch (1-based; last: the last one sent), with the settings in force then.
      Rewound spans and shrinks are marked (--json: the Pi messages after rendering;
      with --markers: {messages, rewinds, shrinks, checkpoints, rewoundSpans}).
  pi-pruner cost <session.jsonl> [--leaf ID] [--json] [--cwd DIR]
      Each request's tokens read from the cache, written to it and sent uncached (the
      provider's usage, else our estimate) and what made a request rewrite the cache; each
      flush's rewrite and summarizer calls, and the characters its stubs saved.
  pi-pruner check <path>... [--cwd DIR] [--json]
      Is each path protected from pruning under the effective settings, and by which pattern.
  pi-pruner protect <glob> [--global] [--cwd DIR]
      Add a pattern to contextPrune.protectedPaths in the project (.pi/settings.json) or global settings.
  pi-pruner help

Exit codes: 0 done, 1 a usage error, 2 an unreadable input.
`;

export async function main(argv: string[], terminal: CliIO = defaultIO()): Promise<number> {
  const [command, ...rest] = argv;
  // The one place output leaves: whatever a session or settings file put in it, no control reaches the terminal.
  const io: CliIO = { ...terminal, out: (text) => terminal.out(terminalText(text)), err: (text) => terminal.err(terminalText(text)) };
  try {
    switch (command) {
      case "inspect":
        return await inspect(rest, io);
      case "view":
        return await view(rest, io);
      case "cost":
        return await cost(rest, io);
      case "check":
        return check(rest, io);
      case "protect":
        return protect(rest, io);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        io.out(HELP);
        return command === undefined ? 1 : 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`pi-pruner: ${error.message}\nRun "pi-pruner help" for usage.\n`);
      return 1;
    }
    if (error instanceof InputError || error instanceof SettingsFileError) {
      io.err(`pi-pruner: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

function defaultIO(): CliIO {
  // A reader that stops early (`pi-pruner view … | head`) closes the pipe: the rest of the output
  // has nowhere to go, which is no error of ours.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    process.exit(process.exitCode ?? 0);
  });
  return {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    env: process.env,
    cwd: process.cwd(),
  };
}

function parse<const O extends Record<string, { type: "string" | "boolean" }>>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true } as { args: string[]; options: O; allowPositionals: true; strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * The settings that apply in `cwd`, the project's file included: the person runs this command on a
 * folder they chose (--cwd, the current folder, or the folder their own session ran in), where Pi
 * and the editor would ask about trust first. Reading never throws; a file that cannot be used
 * (unreadable, not JSON, nested too deep, too large) comes back as one warning.
 */
function loadSettings(io: CliIO, cwd: string) {
  return loadConfig({ agentDir: agentDirFrom(io.env), cwd, projectTrusted: true });
}

function reportWarnings(warnings: readonly ConfigWarning[], io: CliIO): void {
  for (const w of warnings) io.err(`${terminalText(`warning: ${w.source ? `${w.source} settings: ` : ""}${w.message}`, { line: true })}\n`);
}

async function loadSession(file: string, lazyBodies: boolean): Promise<SessionData> {
  try {
    return await readSessionFile(file, { lazyBodies });
  } catch (error) {
    throw new InputError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** The session's cwd from its header, when the header has a usable one (the file is input). */
/**
 * The folder whose project settings a session's view reads: the header's cwd when it is a usable
 * absolute path (Pi always writes one), else the command's own folder. The header is untrusted, so
 * a relative, over-long or NUL-bearing value is not followed.
 */
function headerCwd(data: SessionData, io: CliIO): string {
  const cwd: unknown = data.header?.cwd;
  return typeof cwd === "string" && isAbsolute(cwd) && cwd.length <= 4096 && !cwd.includes("\0") ? resolve(cwd) : io.cwd;
}

/** JSON text of anything read from a session, with values nested deeper than a person reads cut (JSON.stringify itself would throw on them). */
function sessionJson(value: unknown): string {
  return JSON.stringify(shownValue(value), null, 2);
}

/** What `inspect` and `view` share: one session file, an optional leaf, the settings that apply to it. */
async function openSession(command: string, args: string[], io: CliIO) {
  const options = { leaf: { type: "string" }, json: { type: "boolean" }, cwd: { type: "string" } } as const;
  const { values, positionals } = parse(args, command === "view" ? { ...options, markers: { type: "boolean" }, request: { type: "string" } } : options);
  if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one session file`);
  const markers = (values as { markers?: boolean }).markers === true;
  const request = requestChoice((values as { request?: string }).request);
  if (markers && values.json !== true) throw new UsageError("--markers goes with --json (the text output always marks them)");
  const file = resolve(io.cwd, positionals[0]!);
  // `inspect` shows sizes, not output: the long bodies can stay on disk.
  const data = await loadSession(file, command === "inspect");
  // Text with no header and no entry in it at all is some other file (a README, a log), not a torn session.
  if (!data.header && data.entries.length === 0 && data.errors.length > 0) {
    throw new InputError(`${file} is not a Pi session file: no session header and no entry in its ${data.errors.length} non-blank line(s)`);
  }
  if (values.leaf && !data.byId.has(values.leaf)) throw new UsageError(`no entry with id "${values.leaf}" in ${file}`);
  reportDeepEntries(data, io);
  const cwd = values.cwd ? resolve(io.cwd, values.cwd) : headerCwd(data, io);
  const loaded = loadSettings(io, cwd);
  reportWarnings(loaded.warnings, io);
  return { file, data, leaf: values.leaf, json: values.json === true, markers, request, config: loaded.config };
}

/** One note for the entries that nest deeper than is shown: what they do to the output, said once. */
function reportDeepEntries(data: SessionData, io: CliIO): void {
  const deep = data.entries.filter((e) => nestsDeeperThan(e, SHOWN_DEPTH)).map((e) => e.id);
  if (deep.length === 0) return;
  const named = deep.length > 5 ? `${deep.slice(0, 5).join(", ")} and ${deep.length - 5} more` : deep.join(", ");
  io.err(
    `note: ${deep.length === 1 ? "entry" : `${deep.length} entries`} ${named} ${deep.length === 1 ? "holds a value" : "hold values"} nested deeper than ${SHOWN_DEPTH} levels: ${deep.length === 1 ? "it is" : "they are"} shown cut at that depth ("${TOO_DEEP_TO_SHOW}"), and measured and costed so where too deep to be written whole\n`,
  );
}

/** `--request N` (1-based) or `--request last`. */
function requestChoice(value: string | undefined): number | "last" | undefined {
  if (value === undefined) return undefined;
  if (value === "last") return "last";
  if (!/^[1-9][0-9]*$/.test(value)) throw new UsageError(`--request takes a request number (1, 2, …) or "last", not "${value}"`);
  return Number(value);
}

async function inspect(args: string[], io: CliIO): Promise<number> {
  const { file, data, leaf, json, config } = await openSession("inspect", args, io);
  const view = buildSessionView(data, { leafId: leaf, config });
  // Whether each spill can still be given back needs the disk: its file in the blobs folder, else the session file's own copy.
  const spills = await spillRecovery(view.calls, file, view.session.id, data);
  if (json) io.out(JSON.stringify(inspectJson(view, spills), null, 2) + "\n");
  else io.out(inspectText(view, file, spills, branchesOf(data)));
  return 0;
}

async function view(args: string[], io: CliIO): Promise<number> {
  const { file, data, leaf, json, markers, request, config } = await openSession("view", args, io);
  for (const e of data.errors) io.err(`${terminalText(`warning: line ${e.line}: ${e.message}`, { line: true })}\n`);
  const branch = getBranch(data, leaf);
  const renderer = new RequestRenderer(branch.entries, { config });
  if (request !== undefined) return viewRequest(renderer, request, { file, leafId: branch.leafId, json, markers, entries: branch.entries, branches: branchesOf(data), config }, io);
  const model = buildModelView(data, { leafId: leaf, config });
  if (model.renderError) io.err(`warning: the pruner's render failed on this session (${model.renderError}); shown unchanged, as the pruner would send it\n`);
  if (json) {
    // The bare array stays what `--json` prints, so scripts that read it keep working.
    io.out(sessionJson(markers ? viewJson(model) : model.messages) + "\n");
    return 0;
  }
  const sent = renderer.count === 0 ? "no request was sent on this branch yet" : `the ${renderer.count} requests already sent: --request 1…${renderer.count} (--request last: the last one)`;
  io.out(
    terminalLines([
      `# Model view of ${file} at leaf ${model.leafId ?? "(empty)"}: ${NEXT_REQUEST_TITLE}`,
      ...branchHeader(branchesOf(data), model.leafId),
      ...writerHeader(branch.entries, model),
      `# ${sent}`,
      sizesLine(model).trimEnd(),
      ...controlsHeader(model.controls),
      "",
      "",
    ]),
  );
  io.out(modelViewText(model));
  return 0;
}

/** `view --request N`: what request N along the branch sent, with the settings in force then. */
function viewRequest(
  renderer: RequestRenderer,
  choice: number | "last",
  shown: { file: string; leafId: string | null; json: boolean; markers: boolean; entries: readonly AnyEntry[]; branches: readonly BranchChoice[]; config: RenderConfig },
  io: CliIO,
): number {
  if (renderer.count === 0) throw new UsageError("no request was sent on this branch yet (without --request: the next request)");
  const n = choice === "last" ? renderer.count : choice;
  if (n > renderer.count) throw new UsageError(`the branch sent ${renderer.count} request${renderer.count === 1 ? "" : "s"}: --request takes 1…${renderer.count} or "last"`);
  const model = renderer.render(n);
  for (const p of model.settings.problems) io.err(`${terminalText(`warning: the recorded settings: ${p}`, { line: true })}\n`);
  if (model.renderError) io.err(`warning: the pruner's render failed on this request (${model.renderError}); shown unchanged, as the pruner would have sent it\n`);
  if (shown.json) {
    io.out(sessionJson(shown.markers ? { ...viewJson(model), ...requestJson(model) } : model.messages) + "\n");
    return 0;
  }
  const prompt = model.request.prompt ? ` · prompt: ${oneLine(model.request.prompt, 80)}` : "";
  io.out(
    terminalLines([
      `# Model view of ${shown.file}: ${requestTitle(model)}, answered by entry ${model.request.entryId} (branch of leaf ${shown.leafId ?? "(empty)"})${prompt}`,
      ...branchHeader(shown.branches, shown.leafId),
      ...writerHeader(shown.entries, model, "sent"),
      `# ${settingsSourceText(model.settings)}`,
      `# cost: ${requestCostLine(branchCost(shown.entries.slice(0, model.request.position + 1), { config: shown.config }).requests[n - 1]!, formatNumber)}`,
      `# ${NUDGES_NOT_SHOWN}`,
      sizesLine(model).trimEnd(),
      ...controlsHeader(model.controls),
      "",
      "",
    ]),
  );
  io.out(modelViewText(model));
  return 0;
}

/** `cost`: what each request along the branch cost and why, and what each flush cost and saved. */
async function cost(args: string[], io: CliIO): Promise<number> {
  const { file, data, leaf, json, config } = await openSession("cost", args, io);
  for (const e of data.errors) io.err(`${terminalText(`warning: line ${e.line}: ${e.message}`, { line: true })}\n`);
  const branch = getBranch(data, leaf);
  const costs = branchCost(branch.entries, { config });
  if (json) {
    io.out(JSON.stringify({ file, leafId: branch.leafId, ...costs }, null, 2) + "\n");
    return 0;
  }
  io.out(costText(costs, file, branch.leafId));
  return 0;
}

/** The `cost` tables: one row per request, then one per flush. */
function costText(costs: BranchCost, file: string, leafId: string | null): string {
  const lines = [`# Cost of ${file} (branch of leaf ${leafId ?? "(empty)"}): tokens of each request; est: our estimate, the answer carries no usage`];
  if (costs.requests.length === 0) return terminalLines(lines.concat("no request was sent on this branch yet", ""));
  const rows = costs.requests.map((c) => [String(c.n), formatNumber(c.read), formatNumber(c.written), formatNumber(c.uncached), c.estimated ? "est" : "", c.rewritten > 0 ? `rewrote ${formatNumber(c.rewritten)}: ${causeText(c)}` : ""]);
  lines.push(...table(["n", "read", "written", "uncached", "est", "cause"], rows));
  lines.push("", "# Flushes: the rewrite of the request after each and its summarizer calls; saved: raw − sent characters of what it flushed × the requests after it (≈ tokens at 4 characters each), a measure, not a bill");
  if (costs.flushes.length === 0) lines.push("no flush on this branch");
  else {
    const flushRows = costs.flushes.map((f) => [
      f.entryId,
      f.beforeRequest > costs.requests.length ? "(none yet)" : String(f.beforeRequest),
      oneLine(f.refs.join(", ") || "-", 40),
      formatNumber(f.rewriteTokens),
      `${f.summarizer.calls} (${formatNumber(f.summarizer.inputTokens)} in, ${formatNumber(f.summarizer.outputTokens)} out, $${f.summarizer.cost.toFixed(4)})`,
      `${formatNumber(f.savedCharsPerRequest)} × ${f.laterRequests} ≈ ${formatNumber(f.savedTokens)}`,
    ]);
    lines.push(...table(["flush", "next request", "refs", "rewrite", "summarizer calls", "saved chars × requests ≈ tokens"], flushRows));
  }
  return terminalLines(lines) + "\n";
}

/** Rows under their headings, each column as wide as its widest cell; numbers right-aligned. */
function table(headings: readonly string[], rows: readonly string[][]): string[] {
  const widths = headings.map((h, i) => columnWidth(h, rows.map((r) => r[i]!), 200));
  const numeric = (cell: string) => /^[0-9,]+$/.test(cell);
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : numeric(c) ? c.padStart(widths[i]!) : pad(c, widths[i]!))).join("  ").trimEnd();
  return [line(headings), ...rows.map(line)];
}

/** One branch of the file: the leaf it ends at and its last prompt. */
interface BranchChoice {
  leafId: string;
  prompt: string | undefined;
}

/** How many branches a text names: a file of thousands of leaves (a broken one) names its newest. */
const BRANCHES_LISTED = 20;

/** The file's branches, oldest leaf first: Pi resumes from the last (the last entry in the file). Prompts are looked up for the newest only. */
function branchesOf(data: SessionData): BranchChoice[] {
  const leaves = sessionLeaves(data);
  return leaves.map((leafId, i) => ({ leafId, prompt: i >= leaves.length - BRANCHES_LISTED ? lastPromptOf(data, leafId) : undefined }));
}

/** Where the shown leaf sits among the file's branches, in words: `branch 2 of 3 (…)`, or that it ends none. */
function branchPlace(branches: readonly BranchChoice[], leafId: string | null): string {
  const at = branches.findIndex((b) => b.leafId === leafId);
  if (at < 0) return `an entry inside a branch, not the end of one (the file has ${branches.length} branch${branches.length === 1 ? "" : "es"})`;
  return `branch ${at + 1} of ${branches.length}${at === branches.length - 1 ? " (the one Pi resumes from)" : ""}`;
}

function promptLabel(prompt: string | undefined, max: number): string {
  return prompt === undefined ? "(no prompt on this branch)" : `"${oneLine(prompt, max)}"`;
}

/** For a file of more than one branch, which one the view shows and how to show the others. */
function branchHeader(branches: readonly BranchChoice[], leafId: string | null): string[] {
  if (branches.length < 2) return [];
  const others = branches.filter((b) => b.leafId !== leafId);
  const named = others.slice(-3).map((b) => `${b.leafId} ${promptLabel(b.prompt, 40)}`);
  const more = others.length > named.length ? `${others.length - named.length} more, and ` : "";
  return [`# ${branchPlace(branches, leafId)}; the other leaves: ${more}${named.join(", ")}; another branch: --leaf ID (pi-pruner inspect lists them)`];
}

/** Who wrote the session and, for another writer, that the text is in pi-pruner's wording, with the counts that must match. */
function writerHeader(entries: readonly AnyEntry[], model: Parameters<typeof renderedCounts>[0], shown: "sent" | "next" = "next"): string[] {
  const writer = detectSessionWriter(entries);
  return writerHeaderLines(writer, renderFidelity(writer, renderedCounts(model), shown)).map((line) => `# ${line}`);
}

/** What `view --json --markers --request N` adds: which request, and the settings it was rendered with. */
function requestJson(model: RequestView) {
  return {
    request: { n: model.request.n, of: model.requestCount, entryId: model.request.entryId },
    settings: { source: model.settings.source, writer: model.settings.writer ?? null, entryId: model.settings.entryId ?? null },
  };
}

/** `view --json --markers`: the sent messages and the agent's markers at that leaf. */
function viewJson(model: Pick<ModelView, "messages" | "controls">) {
  const { rewinds, shrinks, checkpoints, rewoundSpans } = model.controls;
  return {
    messages: model.messages,
    rewinds: rewinds.map((r) => ({
      markerId: r.markerId,
      entryId: r.entryId,
      granularity: r.granularity,
      checkpoint: r.checkpoint ?? null,
      state: r.state,
      cancelReason: r.cancelReason ?? null,
      hiddenMessages: r.hiddenMessages,
      keptProtected: r.keptProtected,
      notApplied: r.notApplied ?? null,
      note: r.note ?? null,
    })),
    shrinks: shrinks.map((s) => ({
      markerId: s.markerId,
      entryId: s.entryId,
      target: s.target,
      state: s.state,
      cancelReason: s.cancelReason ?? null,
      replacement: s.replacement,
      applied: s.applied,
      notApplied: s.notApplied ?? null,
    })),
    checkpoints: checkpoints.map((c) => ({ name: c.markerId, entryId: c.entryId, targetEntryId: c.targetEntryId })),
    rewoundSpans: rewoundSpans.map((s) => ({ markerId: s.markerId, after: s.after, messages: s.messages })),
  };
}

/** One `#` line per rewind and shrink on the branch, for the top of the text model view. */
function controlsHeader(controls: ControlsView): string[] {
  const lines = controls.markers.map((m) => `# ${m.kind} ${m.markerId} · ${markerStateText(m)} · ${markerEffectText(m)}`);
  if (!controls.enabled && controls.markers.length > 0) lines.unshift("# self-control is off (contextPrune.selfControl.enabled): the markers below change nothing");
  for (const c of controls.checkpoints) lines.push(`# checkpoint ${c.markerId} · at entry ${c.targetEntryId}`);
  return lines;
}

/** The documented JSON shape of `inspect --json`. */
export function inspectJson(view: SessionView, spills: ReadonlyMap<string, string> = new Map()) {
  return {
    session: { id: view.session.id ?? null, cwd: view.session.cwd ?? null },
    writer: {
      label: view.writer.label,
      writers: view.writer.writers.map((w) => ({ name: w.name, label: w.label, signs: w.signs })),
      unattributed: view.writer.unattributed,
      foreign: view.writer.foreign,
      rendering: { exact: view.fidelity.exact, statement: view.fidelity.lines, counts: view.fidelity.counts },
    },
    leafId: view.leafId,
    errors: view.errors.map((e) => ({ line: e.line, message: e.message })),
    summaries: view.summaries.map((s) => ({ entryId: s.entryId, refs: s.refs, toolCallIds: s.toolCallIds })),
    calls: view.calls.map((c) => ({
      toolCallId: c.toolCallId,
      occurrenceKey: c.occurrenceKey,
      toolName: c.toolName,
      shortRef: c.shortRef ?? null,
      state: c.state,
      rawChars: c.rawChars,
      path: c.path ?? null,
      sent: c.sent ?? null,
      unrecoverable: c.unrecoverable ?? spills.get(c.occurrenceKey) ?? null,
      diagnostics: c.diagnostics ?? [],
    })),
    chains: view.chains.map((c) => ({
      blockId: c.blockId,
      toolRefs: c.toolRefs,
      protectedToolCallIds: c.protectedToolCallIds,
      state: c.state,
      stateText: c.stateText,
      bodySource: c.bodySource ?? null,
      withoutSummarizer: c.withoutSummarizer,
      writerText: c.writerText ?? null,
      diagnostics: c.diagnostics,
    })),
    diagnostics: view.diagnostics.map((d) => ({ entryId: d.entryId, kind: d.kind, severity: d.severity, text: d.text, detail: d.detail, blockIds: d.blockIds, callKeys: d.callKeys })),
    protected: view.protected.map((p) => ({ toolCallId: p.toolCallId, toolName: p.toolName, path: p.path ?? null })),
    markers: view.markers.filter((m) => m.kind !== "checkpoint").map(markerJson),
    checkpoints: view.markers.filter((m) => m.kind === "checkpoint").map((c) => ({ name: c.markerId, entryId: c.entryId, targetEntryId: c.targetEntryId })),
    totals: view.totals.modelChars === undefined ? { rawChars: view.totals.rawChars } : { rawChars: view.totals.rawChars, modelChars: view.totals.modelChars },
  };
}

function markerJson(m: Exclude<MarkerView, { kind: "checkpoint" }>) {
  const common = { entryId: m.entryId, kind: m.kind, markerId: m.markerId, state: m.state, cancelReason: m.cancelReason ?? null, notApplied: m.notApplied ?? null };
  if (m.kind === "rewind") return { ...common, granularity: m.granularity, hiddenMessages: m.hiddenMessages, note: m.note ?? null };
  return { ...common, target: m.target, replacement: m.replacement, applied: m.applied };
}

function pad(text: string | undefined, width: number): string {
  const s = text ?? "";
  return s.length >= width ? s : s + " ".repeat(width - s.length);
}

/** Columns as wide as their longest cell (at least the heading, at most `max`, longer cells cut): a long tool name no longer shifts the rest. */
function columnWidth(heading: string, cells: readonly string[], max: number): number {
  return Math.min(max, cells.reduce((w, c) => Math.max(w, c.length), heading.length));
}

/** A field of one line (an id, a name, a path), its newlines and tabs shown as the rest of its controls are. */
function oneLineField(text: string): string {
  return terminalText(text, { line: true });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Markers' ids in text, as git shortens hashes: a UUID by its first 8 characters (the length of an
 * entry id), or more where two would read alike; other ids as written, cut to one line. The JSON
 * keeps whole ids.
 */
function shortMarkerIds(ids: readonly string[]): Map<string, string> {
  const short = new Map<string, string>();
  for (const id of ids) {
    if (!UUID.test(id)) {
      short.set(id, oneLine(oneLineField(id), 20));
      continue;
    }
    let length = 8;
    while (length < id.length && ids.some((other) => other !== id && other.slice(0, length) === id.slice(0, length))) length++;
    short.set(id, id.slice(0, length));
  }
  return short;
}

export function inspectText(view: SessionView, file: string, spills: ReadonlyMap<string, string> = new Map(), branches: readonly BranchChoice[] = []): string {
  const lines: string[] = [];
  lines.push(`Session ${view.session.id ?? "(no header)"}${view.session.name ? ` "${view.session.name}"` : ""}`);
  lines.push(`  file: ${file}`);
  if (view.session.cwd) lines.push(`  cwd:  ${view.session.cwd}`);
  lines.push(`  leaf: ${view.leafId ?? "(empty)"}${branches.length > 1 ? ` · ${branchPlace(branches, view.leafId)}` : ""}`);
  for (const line of writerHeaderLines(view.writer, view.fidelity)) lines.push(`  ${line.replace(/^Written by:/, "written by:")}`);
  if (view.errors.length) {
    lines.push(`  bad lines: ${view.errors.length} (${view.errors.map((e) => e.line).join(", ")})`);
    for (const e of view.errors.slice(0, 20)) lines.push(`    line ${e.line}: ${e.message}`);
    if (view.errors.length > 20) lines.push(`    … ${view.errors.length - 20} more`);
  }
  for (const p of view.problems) lines.push(`  problem: ${p}`);
  if (branches.length > 1) {
    lines.push("");
    lines.push(`Branches: ${branches.length} (this report shows ${view.leafId ?? "(empty)"}; another: --leaf ID)`);
    if (branches.length > BRANCHES_LISTED) lines.push(`  … ${branches.length - BRANCHES_LISTED} older leaves not listed`);
    for (const b of branches.slice(-BRANCHES_LISTED)) lines.push(`  ${b.leafId === view.leafId ? "*" : " "} ${b.leafId}  last prompt: ${promptLabel(b.prompt, 70)}`);
  }

  const counts = new Map<string, number>();
  for (const c of view.calls) counts.set(c.state, (counts.get(c.state) ?? 0) + 1);
  lines.push("");
  lines.push(`Tool calls: ${view.calls.length}${counts.size ? ` (${[...counts].map(([k, v]) => `${v} ${k}`).join(", ")})` : ""}`);
  const diagnosticText = new Map(view.diagnostics.map((d) => [d.entryId, d.text]));
  // A pruned call no entry gave a short ref is named by its tool-call id, as its writer named it; a
  // repeated output has no ref of its own (its line says whose output it repeats).
  // Ids, tool names and paths are one line by nature: a newline or tab in one is shown, not flattened as a preview's is.
  const refs = view.calls.map((c) => oneLineField(c.aliasOf ? "-" : (c.shortRef ?? (c.state === "raw" || c.state === "protected" ? "-" : c.toolCallId))));
  const tools = view.calls.map((c) => oneLineField(c.toolName));
  const refWidth = columnWidth("ref", refs, 24);
  const toolWidth = columnWidth("tool", tools, 24);
  const stateWidth = columnWidth("state", view.calls.map((c) => c.state), 16);
  const charsWidth = columnWidth("chars", view.calls.map((c) => formatNumber(c.rawChars)), 12);
  const failures = view.calls.some((c) => c.isError);
  const row = (ref: string, tool: string, state: string, chars: string, result: string, target: string) =>
    `  ${pad(oneLine(ref, refWidth), refWidth)} ${pad(oneLine(tool, toolWidth), toolWidth)} ${pad(state, stateWidth)} ${chars.padStart(charsWidth)} ${failures ? `${pad(result, 6)} ` : ""}${target}`.trimEnd();
  if (view.calls.length) lines.push(row("ref", "tool", "state", "chars", "result", "target"));
  view.calls.forEach((c, i) => {
    lines.push(row(refs[i]!, tools[i]!, c.state, formatNumber(c.rawChars), c.isError ? "error" : "ok", c.path !== undefined ? oneLine(oneLineField(c.path), 60) : oneLine(c.command ?? "", 60)));
    if (c.aliasOf) lines.push(`          same output as ${c.aliasOf}`);
    if (c.sent) lines.push(`          sent: ${c.sent.text}`);
    const lost = c.unrecoverable ?? spills.get(c.occurrenceKey);
    if (lost) lines.push(`          cannot be recovered: ${lost}`);
    for (const id of c.diagnostics ?? []) lines.push(`          writer's diagnostic ${id}: ${diagnosticText.get(id) ?? "?"}`);
  });
  lines.push("");
  lines.push(`Summaries: ${view.summaries.length}`);
  for (const s of view.summaries) {
    lines.push(`  ${s.entryId}${s.turnIndex !== undefined ? ` turn ${s.turnIndex}` : ""} · ${s.refs.join(", ")} · ${oneLine(s.text, 70)}`);
  }
  if (view.chains.length) {
    lines.push("");
    // Entries that were never sent as a block are counted apart: a chain entry is a decision, not what was sent.
    const byState = new Map<string, number>();
    for (const c of view.chains) byState.set(c.state, (byState.get(c.state) ?? 0) + 1);
    const stateNames: Record<string, string> = { compressed: "sent as a block", "removed-by-compaction": "removed by compaction", "not-applied": "not applied" };
    lines.push(`Compressed chains: ${view.chains.length} (${[...byState].map(([k, v]) => `${v} ${stateNames[k] ?? k}`).join(", ")})`);
    for (const c of view.chains) {
      lines.push(`  ${c.blockId} · tools ${c.toolRefs.join(",") || "-"}${c.protectedToolCallIds.length ? ` · ${c.protectedToolCallIds.length} protected output(s) kept` : ""} · ${c.stateText}`);
      lines.push(`          body: ${c.bodyText}`);
      if (c.writerText !== undefined) lines.push(`          the writer's own block text: ${oneLine(c.writerText, 140)}`);
      for (const id of c.diagnostics) lines.push(`          writer's diagnostic ${id}: ${diagnosticText.get(id) ?? "?"}`);
    }
  }
  if (view.diagnostics.length) {
    lines.push("");
    lines.push(`Writer's diagnostics: ${view.diagnostics.length}`);
    for (const d of view.diagnostics) {
      lines.push(`  ${pad(d.entryId, 6)} ${pad(d.severity, 7)} ${d.text}`);
      if (d.note) lines.push(`                 ${d.note}`);
    }
  }
  if (view.protected.length) {
    lines.push("");
    lines.push(`Protected calls: ${view.protected.length}`);
    for (const p of view.protected) lines.push(`  ${pad(p.toolName, 10)} ${p.path ?? ""} (${p.reason})`);
  }
  const written = view.markers.filter((m) => m.kind !== "checkpoint");
  if (written.length) {
    lines.push("");
    lines.push(`Self-control markers: ${written.length}`);
    const ids = shortMarkerIds(written.map((m) => m.markerId));
    const idWidth = columnWidth("", [...ids.values()], 36);
    for (const m of written) {
      lines.push(`  ${pad(m.kind, 7)} ${pad(ids.get(m.markerId), idWidth)} ${pad(markerStateText(m), 18)} ${markerEffectText(m)}`);
      if (m.kind === "rewind" && m.note) lines.push(`          note: ${oneLine(noteOneLine(m.note), 160)}`);
      if (m.kind === "shrink") lines.push(`          replacement: ${oneLine(m.replacement, 140)}`);
    }
  }
  const checkpoints = view.markers.filter((m) => m.kind === "checkpoint");
  if (checkpoints.length) {
    lines.push("");
    lines.push(`Checkpoints: ${checkpoints.length}`);
    for (const c of checkpoints) lines.push(`  ${pad(c.markerId, 20)} at entry ${c.targetEntryId}`);
  }
  if (view.compactions.length) {
    lines.push("");
    lines.push(`Pi compactions: ${view.compactions.length}`);
    for (const c of view.compactions) lines.push(`  ${c.entryId} · ${oneLine(c.summary, 70)}`);
  }
  lines.push("");
  const raw = view.totals.rawChars;
  // The sizes are those of the next request, not of the last one sent (`view --request last` shows that).
  let size = `Next request (not sent yet; view --request last shows the last one sent): ${formatNumber(raw)} chars raw (≈${formatNumber(estimateTokens(raw))} tokens, estimate)`;
  if (view.totals.modelChars !== undefined) {
    size += ` → ${formatNumber(view.totals.modelChars)} chars sent (≈${formatNumber(estimateTokens(view.totals.modelChars))} tokens, estimate)`;
  }
  lines.push(size);
  return terminalLines(lines) + "\n";
}

function check(args: string[], io: CliIO): number {
  const { values, positionals } = parse(args, { cwd: { type: "string" }, json: { type: "boolean" } });
  if (positionals.length === 0) throw new UsageError("check needs at least one path");
  const cwd = folderOption(values.cwd, io);
  const loaded = loadSettings(io, cwd);
  reportWarnings(loaded.warnings, io);
  const results = positionals.map((path) => {
    const pattern = protectingPattern(path, loaded.config.protectedPaths);
    return { path, protected: pattern !== undefined, pattern: pattern ?? null };
  });
  if (values.json) io.out(JSON.stringify(results, null, 2) + "\n");
  else for (const r of results) io.out(`${terminalText(r.protected ? `protected  ${r.path}  (by \`${r.pattern}\`)` : `prunable   ${r.path}`, { line: true })}\n`);
  // A settings file that could not be read leaves the answers above without its patterns.
  const refused = [loaded.global, loaded.project].filter((f) => f.error !== undefined);
  if (refused.length === 0) return 0;
  io.err(`pi-pruner: answered without ${refused.length === 1 ? "a settings file" : "settings files"} that could not be read; fix ${refused.length === 1 ? "it" : "them"} and check again\n`);
  return 2;
}

/** A `--cwd` folder, resolved against the working directory; one that does not exist is a usage error. */
function folderOption(value: string | undefined, io: CliIO): string {
  if (!value) return io.cwd;
  const folder = resolve(io.cwd, value);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new UsageError(`--cwd ${value}: no such folder`);
  return folder;
}

function protect(args: string[], io: CliIO): number {
  const { values, positionals } = parse(args, { global: { type: "boolean" }, cwd: { type: "string" } });
  if (positionals.length !== 1) throw new UsageError("protect takes exactly one glob");
  const pattern = positionals[0]!.trim();
  if (!pattern) throw new UsageError("the glob is empty");
  const unusable = globPatternProblem(pattern);
  if (unusable !== undefined) throw new UsageError(`the glob is not added: ${unusable}`);
  const cwd = folderOption(values.cwd, io);
  const agentDir = agentDirFrom(io.env);
  const loaded = loadSettings(io, cwd);
  const paths = settingsPaths({ agentDir, cwd });
  const file = values.global ? paths.global : paths.project;
  // A file the reader refused is not edited: the refusal is the error, not a warning before it.
  const refused = (values.global ? loaded.global : loaded.project).error;
  reportWarnings(loaded.warnings.filter((w) => refused === undefined || w.key !== file), io);
  if (refused !== undefined) throw new InputError(`${file}: ${refused}; it was left unchanged`);
  // The global file starts from the global list (or the default); the project file from the merged list.
  const effective = values.global ? resolveConfig(loaded.globalBlock, undefined).config.protectedPaths : loaded.config.protectedPaths;
  const result = addProtectedPath({ file, pattern, effective });
  if (result.added) io.out(`added \`${pattern}\` to contextPrune.protectedPaths in ${file}\n`);
  else io.out(`\`${pattern}\` is already protected; ${file} unchanged\n`);
  io.out(`protectedPaths: ${JSON.stringify(result.list)}\n`);
  // The project's own list replaces the global one: a global pattern does not reach this folder.
  const projectBlock = loaded.projectBlock;
  if (values.global && isRecord(projectBlock) && Array.isArray(projectBlock.protectedPaths)) {
    io.err(
      `note: ${paths.project} sets its own contextPrune.protectedPaths, which replaces the global list in ${cwd}: there \`${pattern}\` does not apply (add it there with: pi-pruner protect '${pattern}')\n`,
    );
  }
  return 0;
}
