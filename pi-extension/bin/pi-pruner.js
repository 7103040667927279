#!/usr/bin/env node
// The command line ships as one bundled file (built by `npm run build`, which `npm install` runs).
import { main } from "../dist/cli.js";

process.exitCode = await main(process.argv.slice(2));
