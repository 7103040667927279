#!/usr/bin/env node
// The command line is one bundled file that ships in dist/ (in the repository `npm install` builds it).
import { main } from "../dist/cli.js";

process.exitCode = await main(process.argv.slice(2));
