#!/usr/bin/env node
// The `nnrag` executable: runs the CLI and sets the exit code.
import { main } from './main.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`nnrag: ${(e as Error).stack ?? e}\n`);
    process.exitCode = 1;
  },
);
