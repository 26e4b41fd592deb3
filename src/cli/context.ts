// Shared pieces of the CLI commands: the context a command runs with, common options,
// repository specs from --repo/--config, block names from --block/--blocks/--names-json.
import { readFileSync } from 'node:fs';
import type { ParseArgsConfig } from 'node:util';
import { loadRepoConfig, repoSpecFromArg, type RepoSpec } from '../config/repos.js';
import { UsageError } from '../util/errors.js';
import * as api from '../api.js';

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

export function repoSpecs(ctx: Ctx): RepoSpec[] {
  const config = ctx.values.config ? loadRepoConfig(ctx.values.config as string) : [];
  const args = (ctx.values.repo as string[] | undefined) ?? [];
  if (!args.length) return config;
  return args.map((a) => repoSpecFromArg(a, config));
}

export function withWorkspace<T>(ctx: Ctx, f: (ws: api.Workspace) => T): T {
  const ws = api.Workspace.open(ctx.store);
  try {
    return f(ws);
  } finally {
    ws.close();
  }
}

export async function withWorkspaceAsync<T>(ctx: Ctx, f: (ws: api.Workspace) => Promise<T>): Promise<T> {
  const ws = api.Workspace.open(ctx.store);
  try {
    return await f(ws);
  } finally {
    ws.close();
  }
}

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
      data = JSON.parse(readFileSync(file, 'utf8'));
    } catch (e) {
      throw new UsageError(`--names-json ${file}: ${(e as Error).message}`);
    }
    if (!Array.isArray(data) || data.some((x) => typeof x !== 'string')) throw new UsageError(`--names-json ${file}: expected a JSON array of names`);
    names.push(...(data as string[]));
  }
  return names;
}

