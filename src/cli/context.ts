// Shared pieces of the CLI commands: the context a command runs with, common options,
// repositories as configured (ConfiguredRepo) from --repo/--config, block names from --block/--blocks/--names-json.
// Opening a command's Workspace is cli/workspace.ts: the Workspace loads the resolver and
// slim emission, which `nnrag index` (run through this module) never uses.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { ParseArgsConfig } from 'node:util';
import { loadRepoConfig, configuredRepoFromArg, type ConfiguredRepo } from '../config/repos.js';
import { UsageError } from '../util/errors.js';

export interface Ctx {
  json: boolean;
  store: string;
  values: Record<string, unknown>;
  positionals: string[];
  out(human: string, data: unknown): void;
}

export interface Command {
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(ctx: Ctx): Promise<number> | number;
  /** the command makes the Python parser ready in this thread itself (cli/run.ts otherwise
   *  does before it runs) */
  readiesParser?: boolean;
}

export const common: NonNullable<ParseArgsConfig['options']> = {
  json: { type: 'boolean' },
  store: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

export const repoOptions: NonNullable<ParseArgsConfig['options']> = {
  repo: { type: 'string', multiple: true },
  config: { type: 'string' },
};

export function configuredRepos(ctx: Ctx): ConfiguredRepo[] {
  const config = ctx.values.config ? loadRepoConfig(ctx.values.config as string) : [];
  const args = (ctx.values.repo as string[] | undefined) ?? [];
  if (!args.length) return config;
  return args.map((a) => configuredRepoFromArg(a, config));
}

/** Most workers --force-workers allows. */
export const MAX_WORKERS = 256;

/**
 * --workers N: a whole number from 1; more than the machine's cores is capped at the
 * core count (with a warning) unless --force-workers is given, and never above
 * MAX_WORKERS (each validation worker holds its own interpreter with torch).
 */
export function workersOpt(ctx: Ctx): number | undefined {
  const v = ctx.values.workers;
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--workers takes a whole number ≥ 1 (got ${String(v)})`);
  if (n > MAX_WORKERS) throw new UsageError(`--workers must be ≤ ${MAX_WORKERS} (got ${n})`);
  const cores = os.availableParallelism?.() ?? os.cpus().length;
  if (n > cores && !ctx.values['force-workers']) {
    process.stderr.write(
      `warning: --workers ${n} is more than the ${cores} cores here: using ${cores} (--force-workers keeps ${n})\n`,
    );
    return cores;
  }
  return n;
}

/** standard input, read once (a command may ask for the names more than once) */
let stdinText: string | undefined;

/** Block names from --block, --blocks, --names-json or positionals. */
export function requestedNames(ctx: Ctx): string[] {
  const names: string[] = [];
  if (ctx.values.block) names.push(...(ctx.values.block as string[]));
  if (ctx.values.blocks) names.push(...(ctx.values.blocks as string[]));
  names.push(...ctx.positionals);
  if (ctx.values['names-json']) {
    const file = ctx.values['names-json'] as string;
    let data: unknown;
    try {
      // `-` is standard input; /dev/stdin too (read through its descriptor: opening the
      // path fails when standard input is a socket)
      data = JSON.parse(
        file === '-' || file === '/dev/stdin' ? (stdinText ??= readFileSync(0, 'utf8')) : readFileSync(file, 'utf8'),
      );
    } catch (e) {
      throw new UsageError(`--names-json ${file}: ${(e as Error).message}`);
    }
    if (!Array.isArray(data) || data.some((x) => typeof x !== 'string'))
      throw new UsageError(`--names-json ${file}: expected a JSON array of names`);
    names.push(...(data as string[]));
  }
  return names;
}
