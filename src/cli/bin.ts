#!/usr/bin/env node
// The `nnrag` executable: runs the CLI and sets the exit code.
import { safeText } from './terminal.js';

// A reader that stops early (`nnrag discover --json | head`) closes the pipe: the rest of
// the output has nowhere to go, which is not an error of nnrag (exit quietly, as `cat` does).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

/** `nnrag index …` loads only the modules indexing needs (about a fifth of the CLI's: a
 *  cold index is a short process), and a cold one starts its parse workers before loading
 *  them (index-early.ts); any other command line, including options before `index`, goes
 *  through the whole command table (main.ts). */
async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'index') {
    const { earlyIndexPool } = await import('./index-early.js');
    const early = earlyIndexPool(argv.slice(1));
    try {
      const [{ runCommand }, { makeIndexCommand }] = await Promise.all([
        import('./run.js'),
        import('./index-command.js'),
      ]);
      return await runCommand('index', makeIndexCommand(early), argv.slice(1));
    } finally {
      // the command closes the workers it used; these, when it did not (a usage error)
      await early?.close();
    }
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
