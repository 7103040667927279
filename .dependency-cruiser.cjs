// The import rules of the repository, checked by `npm test` (dependency-cruiser).
// core is layered: a folder may import only the folders listed before it in docs/architecture.md.
const layer = (from, forbidden) => ({
  name: `core-${from}-layer`,
  comment: `core/src/${from}/ may not import ${forbidden.join(", ")} (see docs/architecture.md)`,
  severity: "error",
  from: { path: `^core/src/${from}/` },
  to: { path: `^core/src/(${forbidden.join("|")})/` },
});

// The editor (vscode-extension/src) is grouped by concern: settings/ and store/ at the bottom, the
// shared modules at the top level (text, command ids, the prompter, session names, view lookups,
// the selection), then watch/ and the views — documents/, trees/, search/, timeline/ — and the
// entry, extension.ts, which alone wires them together.
const EDITOR = "^vscode-extension/src/";
const editorRule = (name, comment, from, allowed) => ({
  name: `editor-${name}`,
  comment,
  severity: "error",
  from: { path: `${EDITOR}${from}` },
  to: { path: EDITOR, pathNot: allowed.map((a) => `${EDITOR}${a}`) },
});
const editorApart = (from, others, comment) => ({
  name: `editor-${from}-apart`,
  comment,
  severity: "error",
  from: { path: `${EDITOR}${from}/` },
  to: { path: `${EDITOR}(${others.join("|")})/` },
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import circle anywhere: a circle makes the load order decide what a module sees.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "core-is-pure",
      comment: "core runs in Pi, in VS Code and as the command line: it imports neither host nor either extension.",
      severity: "error",
      from: { path: "^core/src/" },
      to: { path: ["^pi-extension/", "^vscode-extension/", "^node_modules/@earendil-works/", "^node_modules/typebox/"], dependencyTypes: ["local", "npm", "npm-dev", "npm-peer", "npm-no-pkg", "aliased", "aliased-workspace", "undetermined", "unknown", "core"] },
    },
    {
      name: "core-no-vscode",
      severity: "error",
      from: { path: "^core/src/" },
      to: { path: "^vscode$", dependencyTypes: ["core", "unknown", "undetermined", "npm-no-pkg"] },
    },
    {
      name: "extensions-use-the-public-entry",
      comment: "The extensions reach core only through @pi-pruner/core (core/src/index.ts).",
      severity: "error",
      from: { path: "^(pi-extension|vscode-extension)/src/" },
      to: { path: "^core/src/", pathNot: "^core/src/index\\.ts$" },
    },
    {
      name: "extensions-are-separate",
      severity: "error",
      from: { path: "^pi-extension/src/" },
      to: { path: "^vscode-extension/" },
    },
    {
      name: "editor-is-separate",
      severity: "error",
      from: { path: "^vscode-extension/src/" },
      to: { path: "^pi-extension/" },
    },
    editorRule(
      "leaves",
      "text.ts, command-ids.ts, prompter.ts and view-lookup.ts are what every part of the editor may use: they import no other module of it.",
      "(text|command-ids|prompter|view-lookup)\\.ts$",
      [],
    ),
    editorRule("settings-below-store", "settings/ (the editor's and the pruner's settings, their edits) uses only itself and the shared leaves.", "settings/", ["settings/", "text\\.ts$", "prompter\\.ts$", "command-ids\\.ts$"]),
    editorRule("store-below-views", "store/ (the session store and what only it uses) knows no view, watch or command: it uses only itself, settings/ and text.ts.", "store/", ["store/", "settings/", "text\\.ts$"]),
    editorRule(
      "shared-below-views",
      "The shared modules at the top (session names, the selection) use only the store, the settings and the leaves, never a view.",
      "(session-names|selection)\\.ts$",
      ["store/", "settings/", "text\\.ts$", "prompter\\.ts$", "command-ids\\.ts$", "view-lookup\\.ts$", "session-names\\.ts$"],
    ),
    editorRule("watch-below-views", "watch/ (what is watched and the watches) feeds the store and the settings; it imports no view.", "watch/", ["watch/", "store/", "settings/", "text\\.ts$"]),
    editorApart("trees", ["documents", "search", "timeline"], "A tree builds its items from the view model: it opens documents by command id, never by importing documents/, search/ or timeline/."),
    editorApart("documents", ["trees", "search", "timeline"], "documents/ (documents and request stepping) finds what it shows through view-lookup.ts, never through a tree, the search or the timeline."),
    editorApart("search", ["trees", "timeline"], "search/ opens results through documents/ only."),
    editorApart("timeline", ["trees", "search"], "timeline/ opens requests through documents/ only."),
    editorRule("timeline-page", "The timeline's page runs in a webview: of the extension it may import only the protocol it speaks.", "timeline/webview/", ["timeline/webview/", "timeline/protocol\\.ts$"]),
    {
      name: "editor-entry-only-wires",
      comment: "Only extension.ts wires the editor: nothing imports it, and the modules that only register commands or providers are imported by it alone.",
      severity: "error",
      from: { path: EDITOR, pathNot: `${EDITOR}extension\\.ts$` },
      to: { path: `${EDITOR}(extension|commands|file-sessions|status-bar|decorations)\\.ts$` },
    },
    layer("shapes", ["cost", "settings", "session", "control", "prune", "render", "view", "cli"]),
    layer("cost", ["settings", "session", "control", "prune", "render", "view", "cli"]),
    layer("settings", ["cost", "session", "control", "prune", "render", "view", "cli"]),
    layer("session", ["cost", "control", "prune", "render", "view", "cli"]),
    layer("control", ["cost", "prune", "render", "view", "cli"]),
    layer("prune", ["session", "control", "render", "view", "cli"]),
    layer("render", ["session", "view", "cli"]),
    layer("view", ["cli"]),
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|node_modules|\\.vscode-test)/" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
      extensions: [".ts", ".mjs", ".js", ".cjs", ".json"],
    },
    reporterOptions: {
      mermaid: { minify: false },
    },
  },
};
