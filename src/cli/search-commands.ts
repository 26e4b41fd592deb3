// CLI commands of the search stage: search, similar, export and serve (the local web
// catalog). Argument parsing and output only; the work is in src/commands/search.ts.
import { safeText, showId } from './terminal.js';
import { UsageError } from '../util/errors.js';
import { exportLibraryBlock, search, serve, similar } from '../commands/search.js';
import { profileOpt } from './commands.js';
import { CATEGORIES, type Category } from '../library/category.js';
import { type Command, type Ctx } from './context.js';
import { openWorkspace, withWorkspace, withWorkspaceAsync } from './workspace.js';

function numberOpt(ctx: Ctx, key: string, opts: { min?: number; integer?: boolean } = {}): number | undefined {
  const v = ctx.values[key];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || (opts.integer && !Number.isInteger(n)) || (opts.min !== undefined && n < opts.min)) {
    throw new UsageError(
      `--${key} takes a ${opts.integer ? 'whole ' : ''}number${opts.min !== undefined ? ` ≥ ${opts.min}` : ''} (got ${String(v)})`,
    );
  }
  return n;
}

function fmtParams(n: number | null): string {
  if (n === null) return '?';
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(n);
}

export const commands: Record<string, Command> = {
  search: {
    summary: 'full-text search of the library blocks (names, docstrings, identifiers, layers, categories)',
    usage:
      'nnrag search QUERY [--repo R ...] [--category C ...] [--validated | --all] [--env ID|LABEL] [--min-params N] [--max-params N] [--limit N]',
    options: {
      env: { type: 'string' },
      repo: { type: 'string', multiple: true },
      category: { type: 'string', multiple: true },
      validated: { type: 'boolean' },
      all: { type: 'boolean' },
      'min-params': { type: 'string' },
      'max-params': { type: 'string' },
      limit: { type: 'string' },
    },
    run(ctx) {
      const query = ctx.positionals.join(' ');
      const minParams = numberOpt(ctx, 'min-params', { min: 0 });
      const maxParams = numberOpt(ctx, 'max-params', { min: 0 });
      const limit = numberOpt(ctx, 'limit', { min: 1, integer: true }) ?? 20;
      for (const c of (ctx.values.category as string[] | undefined) ?? []) {
        if (!CATEGORIES.includes(c.toLowerCase() as Category))
          throw new UsageError(`--category ${c}: categories are ${CATEGORIES.join(', ')}`);
      }
      const filtered = ['repo', 'category', 'validated', 'min-params', 'max-params', 'env'].some(
        (k) => ctx.values[k] !== undefined,
      );
      if (!query.trim() && !filtered)
        throw new UsageError(
          'give a query (nnrag search "window attention") or a filter (--repo, --category, --validated, --min-params, --max-params)',
        );
      const res = withWorkspace(ctx, (ws) =>
        search(ws, query, {
          repo: ctx.values.repo as string[] | undefined,
          category: ctx.values.category as string[] | undefined,
          validated: !!ctx.values.validated,
          all: !!ctx.values.all,
          minParams,
          maxParams,
          limit,
          env: ctx.values.env as string | undefined,
          group: true,
        }),
      );
      // blocks that share a class name (the same PatchEmbed in six repositories) are one
      // entry, in the text and the JSON alike: the best-ranked block, then the others;
      // --limit counts entries
      const byId = new Map(res.hits.map((h) => [h.id, h]));
      const groups = res.groups.map((g) => ({ name: g.name, ids: g.ids, hits: g.ids.map((i) => byId.get(i)!) }));
      const lines: string[] = [];
      if (res.failedOnly)
        lines.push('only blocks that failed validation match (shown, marked failed; they may not run as extracted):');
      let n = 0;
      for (const {
        name,
        hits: [h, ...more],
      } of groups) {
        lines.push(
          `${String(++n).padStart(2)}. ${showId(h.id)}  score ${h.score.toFixed(2)}  ${h.status}  ${h.category}  ${fmtParams(h.params)} params\n` +
            `    ${h.origin.repo}:${h.origin.path}:${h.origin.line}${h.summary ? `  — ${h.summary}` : ''}`,
        );
        if (more.length)
          lines.push(
            `    also ${name} in: ${more.map((m) => `${showId(m.id)}${m.status === 'validated' ? '' : ` (${m.status})`}`).join(', ')}`,
          );
      }
      const hidden = res.hiddenFailed
        ? ` (${res.capped ? 'at least ' : ''}${res.hiddenFailed} that failed validation left out: --all shows them)`
        : '';
      const names =
        res.totalGroups !== undefined && res.totalGroups !== res.total && !res.capped
          ? ` under ${res.totalGroups} name${res.totalGroups === 1 ? '' : 's'}`
          : '';
      lines.push(
        `${res.capped ? 'more than ' : ''}${res.total} match${res.total === 1 && !res.capped ? '' : 'es'}${names}${res.mode === 'any' ? ' (some words only)' : ''}${hidden} in ${res.ms.toFixed(1)} ms`,
      );
      ctx.out(lines.join('\n'), { ...res, groups });
      return 0;
    },
  },

  similar: {
    summary: 'blocks nearest to a block by lexical and structural similarity',
    usage: 'nnrag similar ID|NAME [--limit N]',
    options: { limit: { type: 'string' } },
    run(ctx) {
      if (ctx.positionals.length !== 1) throw new UsageError('name one block: nnrag similar ID');
      const k = numberOpt(ctx, 'limit', { min: 1, integer: true }) ?? 10;
      const { id, similar: hits } = withWorkspace(ctx, (ws) => similar(ws, ctx.positionals[0], k));
      const lines = hits.map(
        (h) =>
          `${h.score.toFixed(3)}  ${showId(h.id)}  lexical ${h.lexical.toFixed(3)} structural ${h.structural.toFixed(3)}${h.duplicate ? `  [${h.duplicate} duplicate]` : ''}`,
      );
      lines.unshift(`blocks similar to ${id}:`);
      if (!hits.length) lines.push('  (none)');
      ctx.out(lines.join('\n'), { id, similar: hits });
      return 0;
    },
  },

  export: {
    summary: 'write a library block as a module of another project, merging its requirements',
    usage:
      'nnrag export ID|NAME --into DIR [--module NAME] [--profile slim|faithful] [--force] [--allow-failed] [--python PY]',
    options: {
      into: { type: 'string' },
      module: { type: 'string' },
      profile: { type: 'string' },
      force: { type: 'boolean' },
      'allow-failed': { type: 'boolean' },
      python: { type: 'string' },
    },
    async run(ctx) {
      if (ctx.positionals.length !== 1) throw new UsageError('name one block: nnrag export ID --into DIR');
      if (!ctx.values.into) throw new UsageError('--into DIR is required');
      const rep = await withWorkspaceAsync(ctx, (ws) =>
        exportLibraryBlock(ws, ctx.positionals[0], {
          profile: profileOpt(ctx),
          into: ctx.values.into as string,
          module: ctx.values.module as string | undefined,
          force: !!ctx.values.force,
          allowFailed: !!ctx.values['allow-failed'],
          python: (ctx.values.python as string | undefined) ?? process.env.NNRAG_PYTHON,
        }),
      );
      const lines = [`${rep.action} ${rep.file} (${rep.id})`, `import with: ${rep.importLine}`];
      if (rep.usage) lines.push(`use as validated: ${rep.usage}`);
      else if (rep.usageSkipped) lines.push(`no usage line: ${safeText(rep.usageSkipped)}`);
      for (const p of rep.packages) lines.push(`created package ${p}`);
      if (rep.added.length) lines.push(`added to ${rep.requirementsFile}: ${rep.added.join(', ')}`);
      if (rep.kept.length) lines.push(`already required (kept as written): ${rep.kept.join(', ')}`);
      ctx.out(lines.join('\n'), rep);
      return 0;
    },
  },

  serve: {
    summary: 'local web catalog of the library (search, block pages, provenance, similar blocks)',
    usage: 'nnrag serve [--port P] [--host 127.0.0.1]',
    options: { port: { type: 'string' }, host: { type: 'string' } },
    async run(ctx) {
      const port = numberOpt(ctx, 'port', { min: 0, integer: true }) ?? 8765;
      if (port > 65535) throw new UsageError('--port must be ≤ 65535');
      const host = (ctx.values.host as string | undefined) ?? '127.0.0.1';
      if (!['127.0.0.1', 'localhost', '::1'].includes(host))
        throw new UsageError('--host must be a loopback address (127.0.0.1, ::1 or localhost)');
      const ws = openWorkspace(ctx);
      try {
        const server = await serve(ws, { port, host });
        process.stderr.write(`nnrag catalog at ${server.url} (Ctrl-C to stop)\n`);
        if (ctx.json) process.stdout.write(JSON.stringify({ url: server.url }) + '\n');
        await new Promise<void>((resolve) => {
          const stop = () => resolve();
          process.once('SIGINT', stop);
          process.once('SIGTERM', stop);
        });
        await server.close();
      } finally {
        ws.close();
      }
      return 0;
    },
  },
};
