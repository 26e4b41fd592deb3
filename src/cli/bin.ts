#!/usr/bin/env node
// The `nnrag` executable: runs the CLI and sets the exit code.
import { setFlagsFromString } from 'node:v8';
import { safeText } from './terminal.js';

// A reader that stops early (`nnrag discover --json | head`) closes the pipe: the rest of
// the output has nowhere to go, which is not an error of nnrag (exit quietly, as `cat` does).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

/** `nnrag index …` loads only the modules indexing needs (about a third of the CLI's:
 *  a cold index is a short process, and its parse workers start only after they are
 *  loaded); any other command line, including options before `index`, goes through the
 *  whole command table (main.ts). */
async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'index') {
    // A cold index is a short process in which each parse worker warms up the binder's
    // code from scratch; TurboFan's inlining recompiles its recursive visitors several
    // times on the way and costs more compile time than it saves (bench/index-cli.ts).
    // V8 reads the flag whenever it optimises a function, in every thread.
    setFlagsFromString('--no-turbo-inlining');
    const [{ runCommand }, { indexCommand }] = await Promise.all([import('./run.js'), import('./index-command.js')]);
    return runCommand('index', indexCommand, argv.slice(1));
  }
  const { main } = await import('./main.js');
  return main(argv);
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`nnrag: ${safeText(String((e as Error).stack ?? e))}\n`);
    process.exitCode = 1;
  },
);
