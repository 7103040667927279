// esbuild bundles the stylesheets the page imports; they export nothing.
declare module "*.css";
