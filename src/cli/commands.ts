// CLI commands beyond indexing: extraction (and validation), the demo on the bundled
// example corpus.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../util/errors.js';
import * as api from '../api.js';
import { buildLibrary, runDedup } from '../library/library.js';
import { buildReport, reportText } from '../library/report.js';
import { extractAndValidate, type PipelineOptions } from '../pipeline.js';
import { createRootfs, doctor, STAGES, type Stage } from '../validate/index.js';
import { requestedNames, withWorkspaceAsync, type Command, type Ctx } from './context.js';
import { progress } from './progress.js';

const extractOptions = {
  block: { type: 'string', multiple: true },
  blocks: { type: 'string', multiple: true },
  'names-json': { type: 'string' },
  all: { type: 'boolean' },
  limit: { type: 'string' },
  'start-from': { type: 'string' },
  out: { type: 'string' },
  'no-validate': { type: 'boolean' },
  intern: { type: 'string', multiple: true },
  extern: { type: 'string', multiple: true },
} as const;

/** Options of the validation environment and sandbox. */
const validateOptions = {
  python: { type: 'string' },
  rootfs: { type: 'string' },
  'no-sandbox': { type: 'boolean' },
  workers: { type: 'string' },
  timeout: { type: 'string' },
  memory: { type: 'string' },
  require: { type: 'string', multiple: true },
  'no-equivalence': { type: 'boolean' },
} as const;

function pipelineOptions(ctx: Ctx): PipelineOptions {
  const num = (k: string) => {
    const v = ctx.values[k];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!(n > 0)) throw new UsageError(`--${k} takes a positive number`);
    return n;
  };
  const required = ctx.values.require as string[] | undefined;
  for (const r of required ?? []) if (!STAGES.includes(r as Stage)) throw new UsageError(`--require: unknown stage ${r} (stages: ${STAGES.join(', ')})`);
  return {
    out: ctx.values.out as string | undefined,
    intern: ctx.values.intern as string[] | undefined,
    extern: ctx.values.extern as string[] | undefined,
    validate: !ctx.values['no-validate'],
    required: required as Stage[] | undefined,
    equivalence: !ctx.values['no-equivalence'],
    pool: {
      python: (ctx.values.python as string | undefined) ?? process.env.NNRAG_PYTHON,
      rootfs: ctx.values.rootfs as string | undefined,
      sandbox: !ctx.values['no-sandbox'],
      workers: num('workers'),
      timeoutMs: num('timeout') !== undefined ? num('timeout')! * 1000 : undefined,
      memoryMb: num('memory'),
    },
    onWarning: (m) => process.stderr.write(`warning: ${m}\n`),
  };
}

/** The ids to work on: requested names (bare names resolved), else every block; then
 *  --start-from and --limit. */
function selectIds(ctx: Ctx, ws: api.Workspace): { ids: string[]; notes: string[] } {
  const names = requestedNames(ctx);
  const notes: string[] = [];
  let ids: string[];
  if (names.length) {
    ids = api.resolveBlockNames(ws, names).map((r) => r.id);
  } else ids = api.storedBlocks(ws).map((b) => b.id);
  const start = ctx.values['start-from'] as string | undefined;
  if (start) {
    const i = ids.findIndex((id) => id === start || id.endsWith(`.${start}`));
    if (i < 0) throw new UsageError(`--start-from ${start}: no such block in the selection`);
    ids = ids.slice(i);
  }
  if (ctx.values.limit !== undefined) {
    const n = Number(ctx.values.limit);
    if (!Number.isInteger(n) || n < 0) throw new UsageError('--limit takes a whole number');
    ids = ids.slice(0, n);
  }
  return { ids, notes };
}

function summarize(records: api.ExtractionRecord[]): string {
  const ok = records.filter((r) => r.ok).length;
  const validated = records.some((r) => r.validation);
  const lines = records.map((r) => {
    const errs = r.diagnostics.filter((d) => d.severity === 'error');
    const v = r.validation as { stages: Record<string, string>; category: string | null; error: string | null } | undefined;
    let status = r.error ? `ERROR ${r.error}` : r.ok ? 'ok' : `${errs.length} unresolved`;
    if (v) {
      const stages = Object.entries(v.stages).map(([k, s]) => `${k}:${s}`).join(' ');
      status = r.ok ? stages : `${v.category ?? 'failed'}: ${(v.error ?? '').split('\n')[0].slice(0, 120)} [${stages}]`;
    }
    return `${r.ok ? '✓' : '✗'} ${r.id}  ${r.lines} lines  ${r.ms.toFixed(1)} ms  ${status}${r.file ? `  → ${r.file}` : ''}`;
  });
  lines.push(validated ? `${ok}/${records.length} validated and promoted` : `${ok}/${records.length} extracted without unresolved names`);
  return lines.join('\n');
}

export const commands: Record<string, Command> = {
  extract: {
    summary: 'regenerate blocks as standalone modules (validated unless --no-validate)',
    usage:
      'nnrag extract (--block ID|NAME | --blocks A B … | --names-json FILE | --all) [--limit N] [--start-from NAME] [--out DIR] [--no-validate] [--intern P] [--extern P]',
    options: { ...extractOptions, ...validateOptions },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        const names = requestedNames(ctx);
        if (!names.length && !ctx.values.all) throw new UsageError('name blocks with --block, --blocks, --names-json, or use --all');
        const { ids, notes } = selectIds(ctx, ws);
        for (const n of notes) process.stderr.write(`note: ${n}\n`);
        const bar = progress('extract');
        const opts = pipelineOptions(ctx);
        const records = await extractAndValidate(ws, ids, { ...opts, onProgress: (d, t) => bar.update(opts.validate ? 'validate' : 'emit', d, t) });
        bar.done();
        ctx.out(summarize(records), records);
        return records.every((r) => r.ok) ? 0 : 1;
      });
    },
  },

  validate: {
    summary: 'extract and validate blocks in the sandbox (import, instantiate, forward, equivalence)',
    usage: 'nnrag validate [ID|NAME …] [--all] [--python PY] [--rootfs DIR] [--no-sandbox] [--workers N] [--timeout S] [--require STAGE …]',
    options: { ...extractOptions, ...validateOptions },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        const { ids, notes } = selectIds(ctx, ws);
        for (const n of notes) process.stderr.write(`note: ${n}\n`);
        const bar = progress('validate');
        const records = await extractAndValidate(ws, ids, { ...pipelineOptions(ctx), validate: true, onProgress: (d, t) => bar.update('validate', d, t) });
        bar.done();
        ctx.out(summarize(records), records);
        return records.every((r) => r.ok) ? 0 : 1;
      });
    },
  },

  doctor: {
    summary: 'report the validation environment: interpreter, torch, sandbox, limits',
    usage: 'nnrag doctor [--python PY] [--rootfs DIR] [--no-sandbox]',
    options: { python: { type: 'string' }, rootfs: { type: 'string' }, 'no-sandbox': { type: 'boolean' } },
    async run(ctx) {
      const rep = await doctor({
        python: (ctx.values.python as string | undefined) ?? process.env.NNRAG_PYTHON,
        rootfs: ctx.values.rootfs as string | undefined,
        sandbox: !ctx.values['no-sandbox'],
      });
      const lines = [
        `python   ${rep.python ?? 'not found'} ${rep.pythonVersion ?? ''} (${rep.pythonSource ?? '-'})`,
        `torch    ${rep.torch ?? `not importable${rep.torchError ? `: ${rep.torchError}` : ''}`}`,
        `sandbox  ${rep.sandbox.bwrap ?? 'bwrap not found'} ${rep.sandbox.version ?? ''} ${rep.sandbox.working ? 'working' : `NOT working${rep.sandbox.error ? `: ${rep.sandbox.error}` : ''}`}`,
        `limits   ${Object.entries(rep.limits).map(([k, v]) => `${k}=${v}`).join(' ')}`,
        `env id   ${rep.envId ?? '-'}`,
        ...rep.problems.map((p) => `problem: ${p}`),
      ];
      ctx.out(lines.join('\n'), rep);
      return rep.problems.length ? 1 : 0;
    },
  },

  env: {
    summary: 'env create DIR: build a Debian trixie root filesystem with python3-torch (torch 2.x) for --rootfs',
    usage: 'nnrag env create DIR',
    options: {},
    async run(ctx) {
      const [sub, dir] = ctx.positionals;
      if (sub !== 'create' || !dir) throw new UsageError('usage: nnrag env create DIR');
      await createRootfs(path.resolve(dir));
      ctx.out(`root filesystem ready in ${path.resolve(dir)}; use --rootfs ${path.resolve(dir)}`, { rootfs: path.resolve(dir) });
      return 0;
    },
  },

  demo: {
    summary: 'run the whole pipeline on the bundled example corpus (examples/): index, discover, extract, validate, library, report',
    usage: 'nnrag demo [--out DIR] [--no-validate] [validation options]',
    options: { out: { type: 'string' }, 'no-validate': { type: 'boolean' }, ...validateOptions },
    async run(ctx) {
      const examples = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'examples');
      return withWorkspaceAsync(ctx, async (ws) => {
        const report = await api.index(ws, {
          repos: [{ name: 'examples', url: null, path: examples, priority: 1, paths: [], description: 'bundled example corpus', packageRoots: null }],
        });
        const blocks = api.discover(ws);
        const bar = progress('demo');
        const records = await extractAndValidate(ws, blocks.map((b) => b.id), {
          ...pipelineOptions(ctx),
          onProgress: (d, t) => bar.update('validate', d, t),
        });
        bar.done();
        // the library: specs, manifests, requirements, duplicate clusters, the report
        const library = await buildLibrary(ws, { out: ctx.values.out as string | undefined });
        const dedup = await runDedup(ws);
        const rep = buildReport(ws.store, { storeDir: ws.storeDir });
        const human = [
          `indexed ${report.files} files of ${examples}`,
          `discovered ${blocks.length} blocks`,
          summarize(records),
          '',
          reportText(rep),
        ].join('\n');
        ctx.out(human, { index: report, blocks, records, library, dedup: { uniqueCount: dedup.uniqueCount, clusters: dedup.clusters }, report: rep });
        // blocks that fail validation are results (kept in failed/ with their category),
        // not a failure of the demo; an emission error is
        return records.every((r) => r.file) ? 0 : 1;
      });
    },
  },
};

