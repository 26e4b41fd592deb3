// The library report (`nnrag report [--json] [--html FILE]`): what happened to the corpus,
// per repository — blocks discovered, extracted, validated per stage with pass rates and
// Wilson 95% intervals, failure categories, per-phase timings (indexing run, extraction,
// validation stages, de-duplication), the size distribution of the emitted modules, and
// uniqueness from the stored de-duplication. Everything is computed from the store; the
// HTML page inlines two SVG charts (blocks per repository, pass rate per stage).
import type { IndexStore } from '../store/store.js';
import { KV_KEYS } from '../store/kv.js';
import { blocksPerRepoChart, escapeXml, passRateChart } from './charts.js';
import { getDedup, listSpecs, storedValidationResults } from './library.js';
import { detectLicense } from './provenance.js';
import { environmentSummaries, listExtractions, type StoredExtraction } from '../store/records.js';
import { environmentLack, environmentLacks, equivalenceSkips, type EnvironmentLack } from './report-environment.js';
import { histogram, summarize, wilson, type Bin, type Interval } from './stats.js';
import { environmentQuery } from '../environment/pypi.js';
import { matchesEnvironment, validationsOf, type BlockRecord } from '../records/block.js';
import { STAGES } from '../records/validation.js';
import { costText, type CostTable } from '../util/costs.js';

/** The cost table of the last extract / validate run, if one was stored. */
function lastCosts(store: IndexStore): CostTable | null {
  const got = store.getKV(KV_KEYS.costsLast);
  return got ? (JSON.parse(got) as CostTable) : null;
}

export interface StageFigures {
  stage: string;
  passed: number;
  failed: number;
  skipped: number;
  /** blocks that ran the stage: passed + failed */
  attempted: number;
  /** passed / attempted, Wilson 95% */
  rate: Interval;
  /** passed / every validated block (the funnel), Wilson 95% */
  cumulative: Interval;
}

export type Summary = ReturnType<typeof summarize>;

export interface EmissionFigures {
  /** lines of every block's faithful module */
  faithful: Summary;
  /** lines of the modules kept (slim where it validated) */
  kept: Summary;
  slim: number;
  faithfulProfile: number;
  /** fell back to faithful because the slim module did not validate as it did */
  fallbacks: number;
  fallbackReasons: Record<string, number>;
}

/** Faithful vs kept lines and fallbacks, from the records' `emission`. */
export function emissionFigures(
  records: readonly { lines: number; record: Pick<BlockRecord, 'emission'> }[],
): EmissionFigures {
  const faithful: number[] = [];
  const kept: number[] = [];
  let slim = 0;
  let faithfulProfile = 0;
  let fallbacks = 0;
  const fallbackReasons: Record<string, number> = {};
  for (const r of records) {
    if (!r.lines) continue;
    const em = r.record.emission;
    faithful.push(em?.faithfulLines ?? r.lines);
    kept.push(r.lines);
    if (em?.profile === 'slim') slim++;
    else faithfulProfile++;
    if (em?.fallbackReason) {
      fallbacks++;
      const why = /^slim module failed ([\w, ]+)/.exec(em.fallbackReason)?.[0] ?? em.fallbackReason.slice(0, 40);
      fallbackReasons[why] = (fallbackReasons[why] ?? 0) + 1;
    }
  }
  return {
    faithful: roundSummary(summarize(faithful)),
    kept: roundSummary(summarize(kept)),
    slim,
    faithfulProfile,
    fallbacks,
    fallbackReasons,
  };
}

export interface RepoFigures {
  name: string;
  url: string | null;
  revision: string | null;
  license: string;
  discovered: number;
  /** blocks with an emitted module */
  extracted: number;
  /** emitted with unresolved names (error diagnostics) */
  unresolved: number;
  /** ran through the validator */
  validationRun: number;
  /** passed the required stages and promoted to blocks/ */
  validated: number;
  failed: number;
  /** validated / validationRun, Wilson 95% */
  passRate: Interval;
  stages: StageFigures[];
  /** categories of failures of the block itself (not what the environment lacks) */
  failureCategories: Record<string, number>;
  /** failed because the environment lacks a requirement (report-environment.ts) */
  environmentFailed: number;
  /** why equivalence did not run after a forward pass, by reason */
  equivalenceSkips: Record<string, number>;
  /** from the stored de-duplication, when it ran */
  unique: number | null;
  share: number | null;
}

export interface LibraryReport {
  generated: string;
  store: string;
  totals: Omit<RepoFigures, 'name' | 'url' | 'revision' | 'license' | 'stages' | 'failureCategories'>;
  repos: RepoFigures[];
  stages: StageFigures[];
  failureCategories: Record<string, number>;
  /** blocks that ran forward, by the source of their constructor arguments (witness,
   *  call-site, config-table, guess) */
  argumentSources: Record<string, number>;
  /** requirements the validation environment lacks, with the blocks each failed */
  environment: EnvironmentLack[];
  /** the environments blocks were validated in: id, label, blocks passed and failed there */
  environments: { env: string; label: string; passed: number; failed: number }[];
  /** the `--env` the figures are restricted to, if any */
  envFilter: string | null;
  categories: Record<string, number> | null;
  timings: {
    /** the last finished indexing run, ms per phase */
    index: Record<string, number> | null;
    /** emission per block, ms */
    extraction: Summary & { total: number };
    /** per validation stage, ms (from the stored validation results) */
    validation: Record<string, Summary>;
    /** wall-clock of the whole validation per block, ms */
    validationTotal: Summary | null;
    dedup: Record<string, number> | null;
    library: number | null;
    /** where the time of the last extract / validate run went, per phase and repository
     *  (util/costs.ts): index, harvest, emission, each validation stage per profile,
     *  worker starts, waiting, reuse */
    pipeline: CostTable | null;
  };
  sizes: { lines: Summary; histogram: Bin[] };
  /** emission profiles (docs/ARCHITECTURE.md "Slim emission"): lines of the faithful
   *  modules and of the slim ones kept, blocks that fell back to faithful and why */
  emission: EmissionFigures;
  uniqueness: {
    uniqueCount: number;
    total: number;
    kinds: Record<string, number>;
    perRepo: Record<string, { total: number; unique: number; share: number; uniqueRate: number }>;
    /** false when extractions changed since `nnrag dedup` ran */
    fresh: boolean;
  } | null;
}

const round = (x: number, d = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x);
const roundSummary = (s: Summary): Summary =>
  Object.fromEntries(Object.entries(s).map(([k, v]) => [k, k === 'n' ? v : round(v)])) as Summary;
const roundInterval = (i: Interval): Interval => ({ p: round(i.p, 4), low: round(i.low, 4), high: round(i.high, 4) });

/** Size histogram edges (lines of the emitted module). */
const SIZE_EDGES = [0, 25, 50, 100, 200, 400, 800, 1600, 3200];

function stageFigures(records: readonly StoredExtraction[]): StageFigures[] {
  const validated = records.filter((r) => r.record.validation);
  return STAGES.map((stage) => {
    let passed = 0,
      failed = 0,
      skipped = 0;
    for (const r of validated) {
      const s = r.record.validation!.stages[stage];
      if (s === 'pass') passed++;
      else if (s === 'fail') failed++;
      else skipped++;
    }
    return {
      stage,
      passed,
      failed,
      skipped,
      attempted: passed + failed,
      rate: roundInterval(wilson(passed, passed + failed)),
      cumulative: roundInterval(wilson(passed, validated.length)),
    };
  });
}

function failureCategories(records: readonly StoredExtraction[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of records) {
    if (r.status !== 'failed' || environmentLack(r.record.validation)) continue;
    const c = r.record.validation?.category ?? 'unknown';
    out[c] = (out[c] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
}

function argumentSources(records: readonly StoredExtraction[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of records) {
    const v = r.record.validation;
    if (v?.stages.forward !== 'pass') continue;
    const k = v.argumentsSource ?? 'unknown';
    out[k] = (out[k] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
}

function figures(
  records: readonly StoredExtraction[],
  discovered: number,
): Omit<RepoFigures, 'name' | 'url' | 'revision' | 'license' | 'unique' | 'share'> {
  const envFailed = records.filter((r) => r.status === 'failed' && environmentLack(r.record.validation)).length;
  const run = records.filter((r) => r.record.validation);
  const validated = records.filter((r) => r.status === 'validated').length;
  return {
    discovered,
    extracted: records.length,
    unresolved: records.filter((r) => r.record.diagnostics.some((d) => d.severity === 'error')).length,
    validationRun: run.length,
    validated,
    failed: records.filter((r) => r.status === 'failed').length,
    passRate: roundInterval(wilson(validated, run.length)),
    stages: stageFigures(records),
    failureCategories: failureCategories(records),
    environmentFailed: envFailed,
    equivalenceSkips: equivalenceSkips(records),
  };
}

/** Per-stage timings of the stored validation results of these blocks. */
function validationTimings(
  store: IndexStore,
  records: readonly StoredExtraction[],
): { perStage: Record<string, number[]>; total: number[] } {
  const perStage: Record<string, number[]> = {};
  const total: number[] = [];
  for (const res of storedValidationResults(store, records).values()) {
    for (const [s, ms] of Object.entries(res.timings ?? {})) (perStage[s] ??= []).push(ms);
    if (typeof res.ms === 'number') total.push(res.ms);
  }
  return { perStage, total };
}

/** Compute the report from the store. */
export function buildReport(store: IndexStore, opts: { storeDir?: string; env?: string } = {}): LibraryReport {
  const stored = listExtractions(store).filter((e) => e.text);
  const records = opts.env ? inEnvironment(stored, opts.env) : stored;
  const blocks = store.listBlocks();
  const blockRepo = new Map(blocks.map((b) => [b.id, b.repo]));
  const repoOf = (e: StoredExtraction) => blockRepo.get(e.id) ?? e.record.provenance[0]?.repo ?? 'unknown';
  const dd = getDedup(store);
  const repoRows = store.listRepos();
  const names = [...new Set([...repoRows.map((r) => r.name), ...records.map(repoOf)])].sort();
  const repos: RepoFigures[] = names.map((name) => {
    const row = repoRows.find((r) => r.name === name);
    const recs = records.filter((e) => repoOf(e) === name);
    const pr = dd?.perRepo[name];
    return {
      name,
      url: row?.url ?? null,
      revision: row?.revision ?? null,
      license: row ? detectLicense(row.root).spdx : 'unknown',
      ...figures(recs, blocks.filter((b) => b.repo === name).length),
      unique: pr ? pr.unique : null,
      share: pr ? round(pr.share, 4) : null,
    };
  });
  const all = figures(records, blocks.length);
  const specs = listSpecs(store);
  const categories: Record<string, number> | null = specs.length ? {} : null;
  for (const s of specs) categories![s.category] = (categories![s.category] ?? 0) + 1;

  const vt = validationTimings(store, records);
  const ms = records.map((r) => Number(r.record.ms) || 0);
  const lines = records.map((r) => r.lines);
  const top = SIZE_EDGES[SIZE_EDGES.length - 1];
  const edges = Math.max(0, ...lines) > top ? [...SIZE_EDGES, Math.max(...lines)] : SIZE_EDGES;
  const lib = store.getKV(KV_KEYS.libraryLast);
  const { stages, failureCategories: fc, ...totals } = all;
  return {
    generated: new Date().toISOString(),
    store: opts.storeDir ?? store.dir,
    totals: { ...totals, unique: dd ? dd.uniqueCount : null, share: dd ? 1 : null },
    repos,
    stages,
    failureCategories: fc,
    argumentSources: argumentSources(records),
    environment: environmentLacks(records),
    environments: environmentSummaries(store),
    envFilter: opts.env ?? null,
    categories,
    timings: {
      index: store.lastRun()?.timings ?? null,
      extraction: { ...roundSummary(summarize(ms)), total: round(ms.reduce((a, b) => a + b, 0)) },
      validation: Object.fromEntries(
        STAGES.filter((s) => vt.perStage[s]).map((s) => [s, roundSummary(summarize(vt.perStage[s]))]),
      ),
      validationTotal: vt.total.length ? roundSummary(summarize(vt.total)) : null,
      dedup: dd?.timings ?? null,
      library: lib ? (JSON.parse(lib) as { ms: number }).ms : null,
      pipeline: lastCosts(store),
    },
    sizes: { lines: roundSummary(summarize(lines)), histogram: lines.length ? histogram(lines, edges) : [] },
    emission: emissionFigures(records),
    uniqueness: dd
      ? { uniqueCount: dd.uniqueCount, total: dd.total, kinds: dd.kinds, perRepo: dd.perRepo, fresh: dd.fresh }
      : null,
  };
}

/** The records as validated in the environments `query` names (record.ts
 *  matchesEnvironment): a block with a verdict there takes that verdict (passed in any of
 *  them: validated), a block without one counts as not validated. */
export function inEnvironment(records: readonly StoredExtraction[], query: string): StoredExtraction[] {
  const q = environmentQuery(query);
  return records.map((e) => {
    const vs = Object.values(validationsOf(e.record)).filter((v) =>
      matchesEnvironment({ id: v.envId, label: v.label }, q),
    );
    if (!vs.length) {
      const { validation: _v, ...rest } = e.record;
      return { ...e, ok: false, status: 'extracted', record: { ...rest, ok: false } };
    }
    const { ok, label: _label, ...validation } = vs.find((v) => v.ok) ?? vs[vs.length - 1];
    return { ...e, ok, status: ok ? 'validated' : 'failed', record: { ...e.record, validation, ok } };
  });
}

// ---------------------------------------------------------------- rendering

const pct = (i: Interval) => `${(i.p * 100).toFixed(1)}% [${(i.low * 100).toFixed(1)}, ${(i.high * 100).toFixed(1)}]`;

/** Plain-text summary for the terminal. */
export function reportText(r: LibraryReport): string {
  const t = r.totals;
  const out: string[] = [];
  out.push(
    `discovered ${t.discovered}, extracted ${t.extracted} (${t.unresolved} with unresolved names), validated ${t.validated}/${t.validationRun} ` +
      `= ${pct(t.passRate)} (Wilson 95%), failed ${t.failed}` +
      (t.unique !== null ? `, unique ${t.unique}` : ''),
  );
  if (r.envFilter) out.push(`(validation figures of the environments matching --env ${JSON.stringify(r.envFilter)})`);
  if (r.environments.length) {
    out.push('', 'validated in environments (blocks passed/failed):');
    for (const e of r.environments) out.push(`  ${e.env}  ${e.label}: ${e.passed} passed, ${e.failed} failed`);
  }
  out.push('', 'per repository:');
  for (const p of r.repos) {
    out.push(
      `  ${p.name} (${p.license}): discovered ${p.discovered}, extracted ${p.extracted}, validated ${p.validated}/${p.validationRun} ${pct(p.passRate)}` +
        (p.unique !== null ? `, unique ${p.unique} (share ${((p.share ?? 0) * 100).toFixed(1)}%)` : ''),
    );
  }
  out.push('', 'stages (passed/attempted, Wilson 95%; cumulative = of all validated):');
  for (const s of r.stages)
    out.push(
      `  ${s.stage.padEnd(12)} ${s.passed}/${s.attempted} ${pct(s.rate)}  cumulative ${pct(s.cumulative)}  skipped ${s.skipped}`,
    );
  if (Object.keys(r.failureCategories).length) {
    out.push(
      '',
      'failures of the blocks: ' +
        Object.entries(r.failureCategories)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
    );
  }
  if (r.environment.length) {
    out.push(`the environment lacks (${t.environmentFailed} blocks failed for it):`);
    for (const e of r.environment) {
      const how =
        e.verdict === 'lacks'
          ? `Debian ${e.debian} ${e.candidate}, not installed`
          : e.verdict === 'no-package'
            ? `no Debian package (tried ${e.debian})`
            : 'unknown';
      out.push(`  ${e.module} (${e.distribution}): ${e.blocks} blocks — ${how}`);
    }
  }
  if (Object.keys(t.equivalenceSkips).length) {
    out.push(
      'equivalence not run after a forward pass: ' +
        Object.entries(t.equivalenceSkips)
          .map(([k, v]) => `${k} ×${v}`)
          .join('; '),
    );
  }
  if (Object.keys(r.argumentSources).length)
    out.push(
      'forward passes by argument source: ' +
        Object.entries(r.argumentSources)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
    );
  if (r.categories)
    out.push(
      'block categories: ' +
        Object.entries(r.categories)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
    );
  const tm = r.timings;
  out.push('', 'timings (ms):');
  if (tm.index)
    out.push(
      '  index ' +
        Object.entries(tm.index)
          .map(([k, v]) => `${k} ${Math.round(v)}`)
          .join(', '),
    );
  out.push(
    `  extraction per block p50 ${tm.extraction.p50}, p90 ${tm.extraction.p90}, max ${tm.extraction.max}, total ${tm.extraction.total}`,
  );
  for (const [s, v] of Object.entries(tm.validation))
    out.push(`  validation ${s.padEnd(12)} p50 ${v.p50}, p90 ${v.p90}, max ${v.max}`);
  if (tm.dedup)
    out.push(
      '  dedup ' +
        Object.entries(tm.dedup)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
    );
  if (tm.pipeline) out.push('', ...costText(tm.pipeline));
  const l = r.sizes.lines;
  out.push('', `module size (lines): min ${l.min}, p50 ${l.p50}, p90 ${l.p90}, max ${l.max}, mean ${l.mean}`);
  out.push('  ' + r.sizes.histogram.map((b) => `[${b.lo},${b.hi}) ${b.count}`).join('  '));
  const em = r.emission;
  if (em.kept.n) {
    out.push(
      `emission: faithful lines p50 ${em.faithful.p50}, p90 ${em.faithful.p90}, max ${em.faithful.max}; kept p50 ${em.kept.p50}, p90 ${em.kept.p90}, max ${em.kept.max}; ` +
        `slim ${em.slim}, faithful ${em.faithfulProfile} (fell back ${em.fallbacks}${
          em.fallbacks
            ? ': ' +
              Object.entries(em.fallbackReasons)
                .map(([k, v]) => `${k} ${v}`)
                .join(', ')
            : ''
        })`,
    );
  }
  if (r.uniqueness) {
    const u = r.uniqueness;
    out.push(
      '',
      `uniqueness: ${u.uniqueCount} unique of ${u.total} (${
        Object.entries(u.kinds)
          .map(([k, v]) => `${v} ${k} clusters`)
          .join(', ') || 'no clusters'
      })${u.fresh ? '' : ' — stale: run `nnrag dedup` again'}`,
    );
  } else out.push('', 'uniqueness: not computed (run `nnrag dedup`)');
  return out.join('\n');
}

/** The two report charts as SVG strings. */
export function reportCharts(r: LibraryReport): { blocksPerRepo: string; passRate: string } {
  const perRepo: Record<string, { total: number; unique: number }> = {};
  for (const p of r.repos) perRepo[p.name] = { total: p.extracted, unique: p.unique ?? p.validated };
  return {
    blocksPerRepo: blocksPerRepoChart(
      perRepo,
      r.uniqueness ? 'Blocks per repository (unique / extracted)' : 'Blocks per repository (validated / extracted)',
    ),
    passRate: passRateChart(
      r.stages.map((s) => ({
        stage: s.stage,
        passed: s.passed,
        total: s.attempted,
        low: s.rate.low,
        high: s.rate.high,
      })),
    ),
  };
}

/** A self-contained HTML page with tables and the two inline SVG charts. */
export function reportHtml(r: LibraryReport): string {
  const e = (s: unknown) => escapeXml(String(s ?? ''));
  const charts = reportCharts(r);
  const table = (head: string[], rows: unknown[][]) =>
    `<table><thead><tr>${head.map((h) => `<th>${e(h)}</th>`).join('')}</tr></thead><tbody>` +
    rows.map((row) => `<tr>${row.map((c) => `<td>${e(c)}</td>`).join('')}</tr>`).join('') +
    '</tbody></table>';
  const svg = (s: string) => s.replace(/^<\?xml[^>]*>\s*/, '');
  const t = r.totals;
  const parts = [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8"><title>nnrag library report</title>',
    '<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.charts svg{margin:0.5em 1em 0.5em 0;vertical-align:top}</style>',
    '</head><body>',
    `<h1>nnrag library report</h1><p>store ${e(r.store)}, generated ${e(r.generated)}</p>`,
    `<p>discovered ${t.discovered}, extracted ${t.extracted}, validated ${t.validated} of ${t.validationRun} (${e(pct(t.passRate))}, Wilson 95%), failed ${t.failed}${t.unique !== null ? `, unique ${t.unique}` : ''}</p>`,
    `<div class="charts">${svg(charts.blocksPerRepo)}${svg(charts.passRate)}</div>`,
    '<h2>Repositories</h2>',
    table(
      [
        'repository',
        'license',
        'discovered',
        'extracted',
        'unresolved',
        'validated',
        'failed',
        'pass rate (95% CI)',
        'unique',
        'share',
      ],
      r.repos.map((p) => [
        p.name,
        p.license,
        p.discovered,
        p.extracted,
        p.unresolved,
        `${p.validated}/${p.validationRun}`,
        p.failed,
        pct(p.passRate),
        p.unique ?? '–',
        p.share === null ? '–' : `${(p.share * 100).toFixed(1)}%`,
      ]),
    ),
    '<h2>Stages</h2>',
    table(
      ['stage', 'passed', 'failed', 'skipped', 'pass rate of attempted (95% CI)', 'cumulative (95% CI)'],
      r.stages.map((s) => [s.stage, s.passed, s.failed, s.skipped, pct(s.rate), pct(s.cumulative)]),
    ),
    '<h2>Failure categories</h2>',
    table(['category', 'blocks'], Object.entries(r.failureCategories)),
  ];
  if (r.categories)
    parts.push('<h2>Block categories</h2>', table(['category', 'blocks'], Object.entries(r.categories)));
  const tm = r.timings;
  const timingRows: unknown[][] = [];
  if (tm.index)
    for (const [k, v] of Object.entries(tm.index)) timingRows.push([`index: ${k}`, Math.round(v), '', '', '']);
  timingRows.push([
    'extraction per block',
    tm.extraction.total,
    tm.extraction.p50,
    tm.extraction.p90,
    tm.extraction.max,
  ]);
  for (const [s, v] of Object.entries(tm.validation))
    timingRows.push([`validation: ${s}`, round(v.mean * v.n), v.p50, v.p90, v.max]);
  if (tm.dedup) for (const [k, v] of Object.entries(tm.dedup)) timingRows.push([`dedup: ${k}`, v, '', '', '']);
  if (tm.library !== null) timingRows.push(['library (specs, manifests)', tm.library, '', '', '']);
  parts.push('<h2>Timings (ms)</h2>', table(['phase', 'total', 'p50', 'p90', 'max'], timingRows));
  const l = r.sizes.lines;
  parts.push(
    '<h2>Module size (lines)</h2>',
    `<p>min ${l.min}, median ${l.p50}, p90 ${l.p90}, max ${l.max}, mean ${l.mean}</p>`,
    table(
      ['lines', 'modules'],
      r.sizes.histogram.map((b) => [`${b.lo}–${b.hi}`, b.count]),
    ),
  );
  if (r.emission.kept.n) {
    const em = r.emission;
    parts.push(
      '<h2>Emission profiles</h2>',
      table(
        ['', 'median', 'p90', 'max'],
        [
          ['faithful', em.faithful.p50, em.faithful.p90, em.faithful.max],
          ['kept (slim where it validated)', em.kept.p50, em.kept.p90, em.kept.max],
        ],
      ),
      `<p>slim ${em.slim}, faithful ${em.faithfulProfile}, fell back to faithful ${em.fallbacks}</p>`,
    );
  }
  if (r.uniqueness) {
    const u = r.uniqueness;
    parts.push(
      '<h2>Uniqueness</h2>',
      `<p>${u.uniqueCount} unique of ${u.total}; clusters: ${e(
        Object.entries(u.kinds)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'none',
      )}${u.fresh ? '' : ' (stale)'}</p>`,
    );
  }
  parts.push('</body></html>');
  return parts.join('\n') + '\n';
}
