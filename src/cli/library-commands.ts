// CLI commands of the library stage: `library` (specs, manifests, requirements), `dedup`,
// `report` (text, --json, --html FILE) and `export-pairs` (training pairs as JSON Lines).
// Argument parsing and output only; the work is in src/library/.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../util/errors.js';
import { buildLibrary, diversityTopUp, getDedup, listSpecs, runDedup, type StoredDedup, type TopUp } from '../library/library.js';
import { trainingPairs, writePairs } from '../library/pairs.js';
import { listExtractions } from '../store/records.js';
import { KV_KEYS } from '../store/kv.js';
import { buildReport, reportHtml, reportText } from '../library/report.js';
import { repositoryRequirements, type RepoRequirements } from '../library/repo-requirements.js';
import { KNOWN_DISTRIBUTIONS, probeEnvironment } from '../library/requirements.js';
import * as api from '../api.js';
import { withWorkspaceAsync, type Command } from './context.js';

function dedupText(d: StoredDedup): string {
  const lines = [
    `${d.uniqueCount} unique of ${d.total} blocks; clusters: ${Object.entries(d.kinds).map(([k, v]) => `${v} ${k}`).join(', ') || 'none'}` +
      (d.excluded.length ? `; ${d.excluded.length} not compared (empty or unparseable)` : ''),
  ];
  for (const [repo, r] of Object.entries(d.perRepo).sort((a, b) => b[1].unique - a[1].unique)) {
    lines.push(`  ${repo}: ${r.unique} unique of ${r.total} (${(r.uniqueRate * 100).toFixed(1)}%), share of the library ${(r.share * 100).toFixed(1)}%`);
  }
  for (const c of d.clusters.slice(0, 20)) lines.push(`  ${c.kind}: ${c.representative} ← ${c.members.filter((m) => m !== c.representative).join(', ')}`);
  if (d.clusters.length > 20) lines.push(`  … ${d.clusters.length - 20} more clusters (--json for all)`);
  return lines.join('\n');
}

const NO_BLOCKS = 'no extracted blocks in the store: run `nnrag extract` (or `nnrag demo`) first';

function threshold(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!(n > 0 && n <= 1)) throw new UsageError(`--${name} takes a number in (0, 1]`);
  return n;
}

/** Declared requirements and block imports of the store's repositories (`nnrag
 *  requirements`, `nnrag doctor`); the validation interpreter says which distribution
 *  provides an import. */
export async function storeRequirements(ws: api.Workspace, opts: { repos?: string[]; python?: string }): Promise<RepoRequirements[]> {
  await api.ready(); // setup.py is read from its syntax tree
  const repos = ws.store.listRepos().filter((r) => !opts.repos?.length || opts.repos.includes(r.name));
  if (opts.repos?.length && !repos.length) throw new UsageError(`--repos: none of ${opts.repos.join(', ')} is indexed`);
  const repoOf = new Map(api.storedBlocks(ws).map((b) => [b.id, b.repo]));
  const blocks = listExtractions(ws.store).map((e) => ({ repo: repoOf.get(e.id) ?? '', externs: (e.record.externs as string[] | undefined) ?? [] }));
  const names = [...new Set(blocks.flatMap((b) => b.externs.map((x) => x.split('.')[0])))].filter(Boolean);
  let probe: Awaited<ReturnType<typeof probeEnvironment>> | null = null;
  try {
    probe = names.length ? await probeEnvironment(names, { python: opts.python }) : null;
  } catch (e) {
    process.stderr.write(`warning: ${(e as Error).message}; import names are mapped by a table only\n`);
  }
  return repositoryRequirements(
    repos.map((r) => ({ name: r.name, root: r.root })),
    blocks,
    (m) => probe?.names[m]?.dists[0]?.[0] ?? KNOWN_DISTRIBUTIONS[m] ?? m,
    (m) => !!probe?.names[m]?.stdlib,
    probe ? (m) => !!probe!.names[m]?.found : undefined,
  );
}

export const commands: Record<string, Command> = {
  library: {
    summary: 'write block specs, required_repos.json manifests and requirements.txt for the stored blocks',
    usage: 'nnrag library [--out DIR] [--python PY]',
    options: { out: { type: 'string' }, python: { type: 'string' } },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        if (!listExtractions(ws.store).length) throw new UsageError(NO_BLOCKS);
        const r = await buildLibrary(ws, { out: ctx.values.out as string | undefined, python: ctx.values.python as string | undefined });
        const human = [
          `${r.specs} specs in ${r.out} (${Object.entries(r.byStatus).map(([k, v]) => `${k} ${v}`).join(', ')})`,
          `categories: ${Object.entries(r.byCategory).map(([k, v]) => `${k} ${v}`).join(', ')}`,
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
    options: { near: { type: 'string' }, structural: { type: 'string' }, threads: { type: 'string' }, 'top-up': { type: 'string' } },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        if (!listExtractions(ws.store).length) throw new UsageError(NO_BLOCKS);
        const threads = ctx.values.threads === undefined ? undefined : Number(ctx.values.threads);
        if (threads !== undefined && !(Number.isInteger(threads) && threads >= 0)) throw new UsageError('--threads takes a whole number');
        const d = await runDedup(ws, {
          nearThreshold: threshold(ctx.values.near, 'near'),
          structuralThreshold: threshold(ctx.values.structural, 'structural'),
          threads,
        });
        let topUp: TopUp[] | undefined;
        if (ctx.values['top-up'] !== undefined) {
          const min = Number(ctx.values['top-up']);
          if (!(Number.isInteger(min) && min >= 1)) throw new UsageError('--top-up takes a whole number ≥ 1');
          if (!listSpecs(ws.store).length) await buildLibrary(ws);
          topUp = diversityTopUp(listSpecs(ws.store), d.clusters, min);
          ws.store.setKV(KV_KEYS.dedupTopUp, JSON.stringify({ min, categories: topUp }));
        }
        const human = dedupText(d) + (topUp ? '\ndiversity top-up (validated blocks per category):\n' + topUp.map((t) => `  ${t.category}: ${t.unique} unique${t.added.length ? ` + ${t.added.length}: ${t.added.join(', ')}` : ''}`).join('\n') : '');
        ctx.out(human, topUp ? { ...d, topUp } : d);
        return 0;
      });
    },
  },

  report: {
    summary: 'per-repository figures: discovered, extracted, validated per stage (Wilson 95%), failures, timings, sizes, uniqueness',
    usage: 'nnrag report [--html FILE] [--no-dedup]',
    options: { html: { type: 'string' }, 'no-dedup': { type: 'boolean' } },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        // uniqueness needs current clusters: refresh them when the extractions changed
        if (!ctx.values['no-dedup']) {
          const d = getDedup(ws.store);
          if (!d || !d.fresh) await runDedup(ws);
        }
        const r = buildReport(ws.store, { storeDir: ws.storeDir });
        if (ctx.values.html) {
          const file = path.resolve(ctx.values.html as string);
          writeFileSync(file, reportHtml(r));
          if (!ctx.json) process.stderr.write(`wrote ${file}\n`);
        }
        ctx.out(reportText(r), r);
        return 0;
      });
    },
  },

  requirements: {
    summary: 'what each repository needs: requirements its packaging files declare, imports of its emitted blocks, Debian packages',
    usage: 'nnrag requirements [--repos NAME …] [--python PY]',
    options: { repos: { type: 'string', multiple: true }, python: { type: 'string' } },
    async run(ctx) {
      const only = ctx.values.repos as string[] | undefined;
      const rows = await withWorkspaceAsync(ctx, (ws) => storeRequirements(ws, { repos: only, python: (ctx.values.python as string | undefined) ?? process.env.NNRAG_PYTHON }));
      const lines: string[] = [];
      for (const r of rows) {
        lines.push(`${r.repo}:`);
        const groups = new Map<string, string[]>();
        for (const d of r.declared) groups.set(d.group, [...(groups.get(d.group) ?? []), `${d.spec} (${d.file}:${d.line})`]);
        if (!groups.size) lines.push('  declares no requirements');
        for (const [g, l] of groups) lines.push(`  ${g}: ${l.join(', ')}`);
        if (r.imports.length) lines.push(`  emitted blocks import: ${r.imports.map((i) => `${i.module} → ${i.distribution} (${i.blocks} blocks${i.declared ? '' : ', not declared'})`).join(', ')}`);
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
        // pairs come from specs: build them when the store has none yet
        if (!listSpecs(ws.store).length) await buildLibrary(ws, { python: ctx.values.python as string | undefined });
        const pairs = trainingPairs(ws.store, { all: !!ctx.values.all });
        const n = writePairs(path.resolve(out), pairs);
        const licenses: Record<string, number> = {};
        for (const p of pairs) licenses[p.license] = (licenses[p.license] ?? 0) + 1;
        ctx.out(
          `${n} pairs → ${path.resolve(out)} (licenses: ${Object.entries(licenses).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'})`,
          { file: path.resolve(out), pairs: n, licenses },
        );
        return 0;
      });
    },
  },
};
