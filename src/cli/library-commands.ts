// CLI commands of the library stage: `library` (specs, manifests, requirements), `dedup`,
// `report` (text, --json, --html FILE) and `export-pairs` (training pairs as JSON Lines).
// Argument parsing and output only; the work is in src/library/.
import path from 'node:path';
import { UsageError } from '../util/errors.js';
import type { StoredDedup } from '../library/library.js';
import { reportText } from '../library/report.js';
import { dedupBlocks, exportPairs, library, report } from '../commands/library.js';
import { requirements } from '../commands/requirements.js';
import { type Command } from './context.js';
import { withWorkspaceAsync } from './workspace.js';
import { safeText } from './terminal.js';

function dedupText(d: StoredDedup): string {
  const lines = [
    `${d.uniqueCount} unique of ${d.total} blocks; clusters: ${
      Object.entries(d.kinds)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ') || 'none'
    }` + (d.excluded.length ? `; ${d.excluded.length} not compared (empty or unparseable)` : ''),
  ];
  for (const [repo, r] of Object.entries(d.perRepo).sort((a, b) => b[1].unique - a[1].unique)) {
    lines.push(
      `  ${repo}: ${r.unique} unique of ${r.total} (${(r.uniqueRate * 100).toFixed(1)}%), share of the library ${(r.share * 100).toFixed(1)}%`,
    );
  }
  for (const c of d.clusters.slice(0, 20))
    lines.push(`  ${c.kind}: ${c.representative} ← ${c.members.filter((m) => m !== c.representative).join(', ')}`);
  if (d.clusters.length > 20) lines.push(`  … ${d.clusters.length - 20} more clusters (--json for all)`);
  return lines.join('\n');
}

function threshold(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!(n > 0 && n <= 1)) throw new UsageError(`--${name} takes a number in (0, 1]`);
  return n;
}

export const commands: Record<string, Command> = {
  library: {
    summary: 'write block specs, required_repos.json manifests and requirements.txt for the stored blocks',
    usage: 'nnrag library [--out DIR] [--python PY]',
    options: { out: { type: 'string' }, python: { type: 'string' } },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        const r = await library(ws, {
          out: ctx.values.out as string | undefined,
          python: ctx.values.python as string | undefined,
        });
        const human = [
          `${r.specs} specs in ${r.out} (${Object.entries(r.byStatus)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')})`,
          `categories: ${Object.entries(r.byCategory)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}`,
          `repositories: ${r.manifest.repos.map((x) => `${x.name} (${x.license}, ${x.files.length} files${x.revision_swhid ? `, ${x.revision_swhid}` : ''})`).join(', ')}`,
          `requirements.txt: ${r.requirements.join(' ') || '(none)'}`,
          ...r.warnings.map((w) => `warning: ${w}`),
          `${r.ms} ms`,
        ];
        ctx.out(human.join('\n'), r);
        return 0;
      });
    },
  },

  dedup: {
    summary: 'de-duplicate the stored blocks (exact, near, structural) and store the clusters',
    usage: 'nnrag dedup [--near T] [--structural T] [--threads N] [--top-up N]',
    options: {
      near: { type: 'string' },
      structural: { type: 'string' },
      threads: { type: 'string' },
      'top-up': { type: 'string' },
    },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        const threads = ctx.values.threads === undefined ? undefined : Number(ctx.values.threads);
        if (threads !== undefined && !(Number.isInteger(threads) && threads >= 0))
          throw new UsageError('--threads takes a whole number');
        let min: number | undefined;
        if (ctx.values['top-up'] !== undefined) {
          min = Number(ctx.values['top-up']);
          if (!(Number.isInteger(min) && min >= 1)) throw new UsageError('--top-up takes a whole number ≥ 1');
        }
        const d = await dedupBlocks(ws, {
          nearThreshold: threshold(ctx.values.near, 'near'),
          structuralThreshold: threshold(ctx.values.structural, 'structural'),
          threads,
          topUp: min,
        });
        const topUp = d.topUp;
        const human =
          dedupText(d) +
          (topUp
            ? '\ndiversity top-up (validated blocks per category):\n' +
              topUp
                .map(
                  (t) =>
                    `  ${t.category}: ${t.unique} unique${t.added.length ? ` + ${t.added.length}: ${t.added.join(', ')}` : ''}`,
                )
                .join('\n')
            : '');
        ctx.out(human, d);
        return 0;
      });
    },
  },

  report: {
    summary:
      'per-repository figures: discovered, extracted, validated per stage (Wilson 95%), failures, timings, sizes, uniqueness',
    usage: 'nnrag report [--html FILE] [--no-dedup] [--env ID|LABEL]',
    options: { html: { type: 'string' }, 'no-dedup': { type: 'boolean' }, env: { type: 'string' } },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        // uniqueness needs current clusters: refreshed when the extractions changed
        const html = ctx.values.html as string | undefined;
        const r = await report(ws, { dedup: !ctx.values['no-dedup'], html, env: ctx.values.env as string | undefined });
        if (html && !ctx.json) process.stderr.write(`wrote ${path.resolve(html)}\n`);
        ctx.out(reportText(r), r);
        return 0;
      });
    },
  },

  requirements: {
    summary:
      'what each repository needs: requirements its packaging files declare, imports of its emitted blocks, Debian packages',
    usage: 'nnrag requirements [--repos NAME …] [--python PY]',
    options: { repos: { type: 'string', multiple: true }, python: { type: 'string' } },
    async run(ctx) {
      const only = ctx.values.repos as string[] | undefined;
      const rows = await withWorkspaceAsync(ctx, (ws) =>
        requirements(ws, {
          repos: only,
          python: (ctx.values.python as string | undefined) ?? process.env.NNRAG_PYTHON,
          onWarning: (m) => process.stderr.write(`warning: ${safeText(m)}\n`),
        }),
      );
      const lines: string[] = [];
      for (const r of rows) {
        lines.push(`${r.repo}:`);
        const groups = new Map<string, string[]>();
        for (const d of r.declared)
          groups.set(d.group, [...(groups.get(d.group) ?? []), `${d.spec} (${d.file}:${d.line})`]);
        if (!groups.size) lines.push('  declares no requirements');
        for (const [g, l] of groups) lines.push(`  ${g}: ${l.join(', ')}`);
        if (r.imports.length)
          lines.push(
            `  emitted blocks import: ${r.imports.map((i) => `${i.module} → ${i.distribution} (${i.blocks} blocks${i.declared ? '' : ', not declared'})`).join(', ')}`,
          );
      }
      ctx.out(lines.join('\n'), rows);
      return 0;
    },
  },

  'export-pairs': {
    summary: 'write instruction/target training pairs (JSON Lines) from the block specs, with licenses',
    usage: 'nnrag export-pairs --out pairs.jsonl [--all] [--python PY]',
    options: { out: { type: 'string' }, all: { type: 'boolean' }, python: { type: 'string' } },
    async run(ctx) {
      const out = ctx.values.out as string | undefined;
      if (!out) throw new UsageError('--out FILE is required');
      return withWorkspaceAsync(ctx, async (ws) => {
        // pairs come from specs: built when the store has none yet
        const r = await exportPairs(ws, out, {
          all: !!ctx.values.all,
          python: ctx.values.python as string | undefined,
        });
        ctx.out(
          `${r.pairs} pairs → ${r.file} (licenses: ${
            Object.entries(r.licenses)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ') || 'none'
          })`,
          r,
        );
        return 0;
      });
    },
  },
};
