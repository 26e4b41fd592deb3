#!/usr/bin/env node
// The `nnrag` executable: runs the CLI and sets the exit code.
import { main } from './main.js';
import { safeText } from './terminal.js';

// A reader that stops early (`nnrag discover --json | head`) closes the pipe: the rest of
// the output has nowhere to go, which is not an error of nnrag (exit quietly, as `cat` does).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`nnrag: ${safeText(String((e as Error).stack ?? e))}\n`);
    process.exitCode = 1;
  },
);
