#!/usr/bin/env node
// nnrag command line: argument parsing and output only; the work is in the commands'
// functions (src/commands/, the package API). Every command takes --json (machine-readable stdout), --store DIR
// (default ./.nnrag) and exits 0 on success, 1 on failures in the work, 2 on bad usage.
import { writeFileSync } from 'node:fs';
import { blockNames, discover } from '../commands/discover.js';
import { stats } from '../commands/index-repos.js';
import { commands as extraCommands } from './commands.js';
import { commands as libraryCommands } from './library-commands.js';
import { commands as searchCommands } from './search-commands.js';
import { commands as witnessCommands } from './witness-commands.js';
import { commands as queueCommands } from './queue-commands.js';
import { type Command } from './context.js';
import { withWorkspace } from './workspace.js';
import { indexCommand } from './index-command.js';
import { runCommand } from './run.js';
import { safeJson, showId } from './terminal.js';

export const commands: Record<string, Command> = {
  index: indexCommand,

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
  return runCommand(name, cmd, rest);
}
