// CLI commands beyond indexing: extraction (and validation), the demo on the bundled
// example corpus.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../util/errors.js';
import * as api from '../api.js';
import { requestedNames, withWorkspace, withWorkspaceAsync, type Command, type Ctx } from './context.js';
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

/** The ids to work on: requested names (bare names resolved), else every block; then
 *  --start-from and --limit. */
function selectIds(ctx: Ctx, ws: api.Workspace): { ids: string[]; notes: string[] } {
  const names = requestedNames(ctx);
  const notes: string[] = [];
  let ids: string[];
  if (names.length) {
    const res = api.resolveBlockNames(ws, names);
    for (const r of res) if (r.alternatives.length) notes.push(`${r.requested} → ${r.id} (also: ${r.alternatives.join(', ')})`);
    ids = res.map((r) => r.id);
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
  const lines = records.map((r) => {
    const errs = r.diagnostics.filter((d) => d.severity === 'error');
    const status = r.error ? `ERROR ${r.error}` : r.ok ? 'ok' : `${errs.length} unresolved`;
    return `${r.ok ? '✓' : '✗'} ${r.id}  ${r.lines} lines  ${r.ms.toFixed(1)} ms  ${status}${r.file ? `  → ${r.file}` : ''}`;
  });
  lines.push(`${ok}/${records.length} extracted without unresolved names`);
  return lines.join('\n');
}

export const commands: Record<string, Command> = {
  extract: {
    summary: 'regenerate blocks as standalone modules (validated unless --no-validate)',
    usage:
      'nnrag extract (--block ID|NAME | --blocks A B … | --names-json FILE | --all) [--limit N] [--start-from NAME] [--out DIR] [--no-validate] [--intern P] [--extern P]',
    options: extractOptions,
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        const names = requestedNames(ctx);
        if (!names.length && !ctx.values.all) throw new UsageError('name blocks with --block, --blocks, --names-json, or use --all');
        const { ids, notes } = selectIds(ctx, ws);
        for (const n of notes) process.stderr.write(`note: ${n}\n`);
        const bar = progress('extract');
        const records: api.ExtractionRecord[] = [];
        const opts = { out: ctx.values.out as string | undefined, intern: ctx.values.intern as string[] | undefined, extern: ctx.values.extern as string[] | undefined };
        ids.forEach((id, i) => {
          records.push(api.extractBlock(ws, id, opts));
          bar.update('emit', i + 1, ids.length);
        });
        bar.done();
        ctx.out(summarize(records), records);
        return records.every((r) => r.ok) ? 0 : 1;
      });
    },
  },

  demo: {
    summary: 'run the whole pipeline on the bundled example corpus (examples/)',
    usage: 'nnrag demo [--out DIR]',
    options: { out: { type: 'string' } },
    async run(ctx) {
      const examples = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'examples');
      return withWorkspaceAsync(ctx, async (ws) => {
        const report = await api.index(ws, {
          repos: [{ name: 'examples', url: null, path: examples, priority: 1, paths: [], description: 'bundled example corpus', packageRoots: null }],
        });
        const blocks = api.discover(ws);
        const records = api.extractBlocks(ws, blocks.map((b) => b.id), { out: ctx.values.out as string | undefined });
        const human = [
          `indexed ${report.files} files of ${examples}`,
          `discovered ${blocks.length} blocks`,
          summarize(records),
        ].join('\n');
        ctx.out(human, { index: report, blocks, records });
        return records.every((r) => r.ok) ? 0 : 1;
      });
    },
  },
};

void withWorkspace;
