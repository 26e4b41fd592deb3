// The `nnrag index` command (argument parsing and output; the work is commands/index-repos.ts).
// A file of its own so that the executable can run it without loading the rest of the CLI
// (bin.ts): a cold index is a short process, and the modules it loads before its parse
// workers start are part of its time.
import path from 'node:path';
import { index } from '../commands/index-repos.js';
import { ParsePool } from '../indexer/pool.js';
import { IndexStore } from '../store/store.js';
import { UsageError } from '../util/errors.js';
import { repoOptions, configuredRepos, workersOpt, type Command } from './context.js';
import { progress } from './progress.js';
import { safeText } from './terminal.js';

/** The `nnrag index` command; `early`: parse workers the executable started before loading
 *  this module (index-early.ts), used when this run would start the same pool, else closed. */
export function makeIndexCommand(early?: ParsePool): Command {
  return {
    // index() makes the parser ready in this thread while its parse workers start
    readiesParser: true,
    summary: 'clone or locate repositories and index their Python files',
    usage:
      'nnrag index [--repo PATH_OR_URL ...] [--config repo_config.json] [--mode missing|force|skip] [--update] [--workers N [--force-workers]]',
    options: {
      ...repoOptions,
      mode: { type: 'string' },
      update: { type: 'boolean' },
      workers: { type: 'string' },
      'force-workers': { type: 'boolean' },
    },
    async run(ctx) {
      const mode = (ctx.values.mode as string | undefined) ?? 'missing';
      if (!['missing', 'force', 'skip'].includes(mode))
        throw new UsageError(`--mode must be missing, force or skip (got ${mode})`);
      const workers = workersOpt(ctx);
      const repos = configuredRepos(ctx);
      // A store that does not exist yet is indexed cold: its parse workers start now, while
      // the store is created (a journal switch and migrations that wait on the disk) and the
      // repositories are prepared. For an existing store index() decides, once it knows
      // whether the repositories are new to it.
      const cold = mode !== 'skip' && !IndexStore.exists(ctx.store);
      const pool = cold ? (workers === undefined && early ? early : new ParsePool(workers)) : undefined;
      if (early && pool !== early) void early.close();
      pool?.warm();
      const bar = progress('index');
      // the store alone, not a Workspace (cli/workspace.ts): indexing needs no resolver, and
      // this process ends after it; `index` is the one command that creates a store
      const storeDir = path.resolve(ctx.store);
      let store: IndexStore | undefined;
      const report = await (async () => {
        store = IndexStore.open(storeDir, { create: true });
        return index(
          { store, storeDir },
          {
            pool,
            repos,
            mode: mode as 'missing',
            update: !!ctx.values.update,
            workers,
            // the process ends after indexing: its own thread never parses
            parser: false,
            onProgress: (p) => bar.update(p.phase, p.done, p.total),
          },
        );
      })().finally(() => {
        store?.close();
        return pool?.close();
      });
      bar.done();
      // a repository without a single Python file is most likely a wrong path or --paths
      for (const r of report.repos)
        if (r.files === 0)
          process.stderr.write(
            `warning: repository ${safeText(r.name)} has no Python files to index${r.problems ? ` (${r.problems} problems)` : ''}\n`,
          );
      const t = report.timings;
      ctx.out(
        `indexed ${report.files} files (${(report.bytes / 1e6).toFixed(1)} MB) in ${report.repos.length} repositories: ` +
          `${report.parsed} parsed, ${report.reused} reused, ${report.parseErrors} with syntax errors, ${report.problems.length} problems ` +
          `in ${(t.total / 1000).toFixed(2)} s`,
        report,
      );
      return 0;
    },
  };
}

export const indexCommand: Command = makeIndexCommand();
