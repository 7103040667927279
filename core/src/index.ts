// The public surface of core, for the Pi extension and the VS Code extension.
export * from "./messages.ts";
export * from "./entries.ts";
export * from "./size.ts";
export * from "./records.ts";
export * from "./view.ts";
export * from "./config.ts";
export * from "./protected.ts";
export * from "./session.ts";
export * from "./context.ts";
export * from "./settings-file.ts";
export * from "./render.ts";
export * from "./pipeline.ts";
export * from "./summarize.ts";
