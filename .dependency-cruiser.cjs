// The import rules of the repository, checked by `npm test` (dependency-cruiser).
// core is layered: a folder may import only the folders listed before it in docs/architecture.md.
const layer = (from, forbidden) => ({
  name: `core-${from}-layer`,
  comment: `core/src/${from}/ may not import ${forbidden.join(", ")} (see docs/architecture.md)`,
  severity: "error",
  from: { path: `^core/src/${from}/` },
  to: { path: `^core/src/(${forbidden.join("|")})/` },
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
