#!/usr/bin/env node
// nnrag command line: argument parsing and output only; the work is in the commands'
// functions (src/commands/, the package API). Every command takes --json (machine-readable stdout), --store DIR
// (default ./.nnrag) and exits 0 on success, 1 on failures in the work, 2 on bad usage.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { NnragError, UsageError } from '../util/errors.js';
import { blockNames, discover } from '../commands/discover.js';
import { index, ready, stats } from '../commands/index-repos.js';
import { commands as extraCommands } from './commands.js';
import { commands as libraryCommands } from './library-commands.js';
import { commands as searchCommands } from './search-commands.js';
import { commands as witnessCommands } from './witness-commands.js';
import { commands as queueCommands } from './queue-commands.js';
import {
  common,
  repoOptions,
  configuredRepos,
  withWorkspace,
  withWorkspaceAsync,
  workersOpt,
  type Command,
  type Ctx,
} from './context.js';
import { commandHelp } from './help.js';
import { progress } from './progress.js';
import { safeJson, safeText, showId } from './terminal.js';

export const commands: Record<string, Command> = {
  index: {
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
      const bar = progress('index');
      const report = await withWorkspaceAsync(
        ctx,
        (ws) =>
          index(ws, {
            repos,
            mode: mode as 'missing',
            update: !!ctx.values.update,
            workers,
            onProgress: (p) => bar.update(p.phase, p.done, p.total),
          }),
        true,
      );
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
  },

  discover: {
    summary: 'list the nn.Module blocks of the indexed corpus',
    usage: 'nnrag discover [--symbols PATTERN ...] [--repos NAME ...] [--names-json FILE]',
    options: {
      symbols: { type: 'string', multiple: true },
      repos: { type: 'string', multiple: true },
      'names-json': { type: 'string' },
    },
    run(ctx) {
      const { blocks, names } = withWorkspace(ctx, (ws) => {
        const blocks = discover(ws, {
          symbols: ctx.values.symbols as string[] | undefined,
          repos: ctx.values.repos as string[] | undefined,
        });
        return { blocks, names: ctx.values['names-json'] ? blockNames(ws, blocks) : [] };
      });
      if (ctx.values['names-json'])
        writeFileSync(ctx.values['names-json'] as string, JSON.stringify(names, null, 2) + '\n');
      ctx.out(
        blocks.map((b) => `${showId(b.id)}  (${b.repo}:${b.path}:${b.line})`).join('\n') + `\n${blocks.length} blocks`,
        blocks,
      );
      return 0;
    },
  },

  stats: {
    summary: 'what the store holds: files, bytes, parse errors, blocks, timings',
    usage: 'nnrag stats',
    options: {},
    run(ctx) {
      const s = withWorkspace(ctx, (ws) => stats(ws));
      const lines = [
        `files ${s.files}, ${(s.bytes / 1e6).toFixed(1)} MB, ${s.facts} distinct contents`,
        `syntax errors in ${s.parseErrors} files, ${s.problems} problems`,
        `blocks ${s.blocks}`,
        ...s.repos.map((r) => `  ${r.name}: ${r.files} files @ ${r.revision ?? 'working tree'}`),
      ];
      if (s.lastRun?.timings)
        lines.push(
          `last run: ${Object.entries(s.lastRun.timings)
            .map(([k, v]) => `${k} ${Math.round(v)} ms`)
            .join(', ')}`,
        );
      ctx.out(lines.join('\n'), s);
      return 0;
    },
  },

  ...extraCommands,
  ...libraryCommands,
  ...searchCommands,
  ...witnessCommands,
  ...queueCommands,
};

function usage(): string {
  const lines = ['nnrag: a searchable library of standalone, validated PyTorch blocks', '', 'commands:'];
  for (const [name, c] of Object.entries(commands)) lines.push(`  ${name.padEnd(13)} ${c.summary}`);
  lines.push('', 'every command takes --json, --store DIR (default ./.nnrag), --help (its flags and an example)');
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<number> {
  // common options may come before the command (`nnrag --store S index`): the first
  // word that names a command is the command
  if (argv[0]?.startsWith('-') && !['--help', '-h', '--version'].includes(argv[0])) {
    const i = argv.findIndex((a) => Object.hasOwn(commands, a));
    if (i > 0) argv = [argv[i], ...argv.slice(0, i), ...argv.slice(i + 1)];
  }
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name ? 0 : 2;
  }
  if (name === '--version') {
    process.stdout.write('nnrag 0.1.0\n');
    return 0;
  }
  const cmd = commands[name];
  if (!cmd) {
    process.stderr.write(`nnrag: unknown command ${safeJson(JSON.stringify(name))}\n\n${usage()}\n`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...common, ...cmd.options }, allowPositionals: true, strict: true });
  } catch (e) {
    process.stderr.write(`nnrag ${name}: ${safeText((e as Error).message)}\nusage: ${cmd.usage}\n`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(commandHelp(name, cmd, common) + '\n');
    return 0;
  }
  const json = !!parsed.values.json;
  const ctx: Ctx = {
    json,
    store: (parsed.values.store as string | undefined) ?? process.env.NNRAG_STORE ?? '.nnrag',
    values: parsed.values as Record<string, unknown>,
    positionals: parsed.positionals,
    out(human, data) {
      process.stdout.write(json ? safeJson(JSON.stringify(data, null, 2)) + '\n' : safeText(human) + '\n');
    },
  };
  try {
    // the resolver parses modules it reads on demand synchronously (src/resolve/ondemand.ts)
    await ready();
    return await cmd.run(ctx);
  } catch (e) {
    // a block name that names no block is bad usage too (README: exit 2), like an
    // ambiguous one; --json still gets the error object
    if (e instanceof UsageError || (e instanceof NnragError && e.code === 'unknown-block')) {
      process.stderr.write(`nnrag ${name}: ${safeText(e.message)}\n`);
      if (json && !(e instanceof UsageError))
        process.stdout.write(safeJson(JSON.stringify({ error: e.message, code: e.code })) + '\n');
      return 2;
    }
    if (e instanceof NnragError) {
      process.stderr.write(`nnrag ${name}: ${safeText(e.message)}\n`);
      if (json) process.stdout.write(safeJson(JSON.stringify({ error: e.message, code: e.code })) + '\n');
      return 1;
    }
    process.stderr.write(`nnrag ${name}: ${safeText(String((e as Error).stack ?? e))}\n`);
    return 1;
  }
}
