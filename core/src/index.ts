// The public surface of core, for the Pi extension and the VS Code extension.
export * from "./messages.ts";
export * from "./entries.ts";
export * from "./size.ts";
export * from "./records.ts";
export * from "./view.ts";
