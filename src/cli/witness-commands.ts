// `nnrag witnesses`: run (or show) the witness harvest of the store's repositories —
// per entry point whether it built and ran, why not, its time and the classes it
// covered (src/validate/witness/). Argument parsing and output only; the work is in
// src/commands/witnesses.ts.
import { witnesses } from '../commands/witnesses.js';
import type { HarvestResult } from '../validate/witness/index.js';
import { workersOpt, type Command } from './context.js';
import { withWorkspaceAsync } from './workspace.js';
import { safeText } from './terminal.js';

function summary(h: HarvestResult, cached: boolean | null): string[] {
  const lines = [
    `${h.repo}: ${cached === null ? 'stored harvest' : cached ? 'unchanged, stored harvest' : `harvested in ${(h.ms / 1000).toFixed(1)} s`}; ` +
      `${Object.keys(h.witnesses).length}/${h.classes.length} classes with witnesses; ${h.entries.length} entry points run, ${h.skipped} skipped${h.stopped ? ` (stopped: ${h.stopped})` : ''}${h.error ? `; error: ${h.error}` : ''}`,
  ];
  // a phase a backstop ended ran what this machine's speed and load allowed
  for (const [phase, by] of Object.entries(h.backstops ?? {}))
    lines.push(
      `  not reproducible: the ${phase} phase was ended by its ${by === 'cpu' ? 'CPU' : 'wall-clock'} backstop`,
    );
  for (const e of h.entries) {
    const t = e.tests;
    // a test file: its tests' outcomes and those stopped by their budget
    const what = t
      ? `tests: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped${t.unneeded ? `, ${t.unneeded} unneeded` : ''} of ${t.collected}${t.stopped.length ? `; stopped: ${t.stopped.join(', ')}` : ''}${e.error ? `; ${e.error}` : ''}`
      : e.forward
        ? 'built, ran'
        : e.built
          ? `built, forward failed: ${e.forwardError ?? '?'}`
          : `not built: ${e.error ?? '?'}`;
    lines.push(`  ${e.entry}  ${(e.ms / 1000).toFixed(1)} s  ${e.covered.length} classes  ${what.slice(0, 160)}`);
  }
  if (h.docsMs) lines.push(`  tests and documented examples: ${(h.docsMs / 1000).toFixed(1)} s of entry-point time`);
  for (const [k, v] of Object.entries(h.notes ?? {})) lines.push(`  ${k}: ${v}`);
  const failed = Object.entries(h.importFailures);
  if (failed.length)
    lines.push(
      `  modules that did not import: ${failed
        .slice(0, 5)
        .map(([m, e]) => `${m} (${e.slice(0, 60)})`)
        .join('; ')}${failed.length > 5 ? ' …' : ''}`,
    );
  return lines;
}

export const commands: Record<string, Command> = {
  witnesses: {
    summary:
      "harvest (or show) witnesses: what each class got when the repository's own entry points built and ran its models",
    usage: 'nnrag witnesses [--repo R …] [--show] [--force] [--workers N] [--python PY] [--no-sandbox] [--json]',
    options: {
      repo: { type: 'string', multiple: true },
      show: { type: 'boolean' },
      force: { type: 'boolean' },
      python: { type: 'string' },
      'no-sandbox': { type: 'boolean' },
      workers: { type: 'string' },
      'force-workers': { type: 'boolean' },
    },
    async run(ctx) {
      return withWorkspaceAsync(ctx, async (ws) => {
        const results = await witnesses(ws, {
          repos: ctx.values.repo as string[] | undefined,
          show: !!ctx.values.show,
          force: !!ctx.values.force,
          pool: {
            python: (ctx.values.python as string | undefined) ?? process.env.NNRAG_PYTHON,
            sandbox: !ctx.values['no-sandbox'],
            workers: workersOpt(ctx),
            onWarning: (m) => process.stderr.write(`warning: ${safeText(m)}\n`),
          },
          onEntry: ctx.json
            ? undefined
            : (r, e) =>
                process.stderr.write(
                  `  ${safeText(`${r}: ${e.entry}`)} ${e.forward ? 'ran' : e.built ? 'built' : 'failed'} (${(e.ms / 1000).toFixed(1)} s)\n`,
                ),
        });
        const text = results
          .flatMap((x) => (x.harvest ? summary(x.harvest, x.cached) : [`${x.repo}: no harvest stored`]))
          .join('\n');
        ctx.out(
          text,
          results.map((x) => ({
            repo: x.repo,
            cached: x.cached,
            classes: x.harvest?.classes.length ?? 0,
            withWitnesses: x.harvest ? Object.keys(x.harvest.witnesses).length : 0,
            ms: x.harvest?.ms ?? null,
            error: x.harvest?.error ?? null,
            entries: x.harvest?.entries ?? [],
            skipped: x.harvest?.skipped ?? 0,
            stopped: x.harvest?.stopped ?? null,
            cpuMs: x.harvest?.cpuMs ?? null,
            reproducible: x.harvest?.reproducible ?? null,
            backstops: x.harvest?.backstops ?? {},
            importFailures: x.harvest?.importFailures ?? {},
          })),
        );
        return results.every((x) => x.harvest && !x.harvest.error) ? 0 : 1;
      });
    },
  },
};
