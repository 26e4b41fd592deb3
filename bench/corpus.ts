// Multi-repository benchmark: index the repositories of a repo_config.json (nn-rag's
// format, local `path`s allowed), discover, extract and validate every block, and print
// one row per repository: discovered, emitted, import, instantiate, forward and
// equivalence (passed / ran), plus the most common import failures. This is the table the
// issues ask for "per repository, before and after".
//
// usage: node dist/bench/corpus.js CONFIG [--store DIR] [--repos a/b,c/d] [--no-validate]
//        [--workers N] [--env DIR | --python PY | --rootfs DIR] [--json FILE] [--validate-repos a/b,c/d] [--no-witnesses] [--profile slim|faithful]
// --env validates in a PyPI environment made by `nnrag env create DIR --store S` (each
// repository in its group's environment); --rootfs in a Debian root filesystem (`env create --debian`).
// With the slim profile (the default) a second table gives the emitted lines per
// repository: faithful and the module kept (slim where it validated), median / p90 / max,
// and how many blocks fell back to faithful.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as api from '../src/nnrag.js';
import { loadRepoConfig } from '../src/config/repos.js';
import { extractAndValidate } from '../src/pipeline/pipeline.js';
import { args, opt } from './args.js';

const config = args[0];
if (!config || config.startsWith('--')) {
  console.error(
    'usage: node dist/bench/corpus.js CONFIG [--store DIR] [--repos a/b,c/d] [--no-validate] [--workers N] [--rootfs DIR] [--json FILE]',
  );
  process.exit(2);
}
const only = opt('--repos')?.split(',');
const repos = loadRepoConfig(config).filter((r) => !only || only.includes(r.name));
const store = opt('--store') ?? mkdtempSync(path.join(tmpdir(), 'nnrag-corpus-'));
const ws = api.Workspace.open(store);
let t = performance.now();
await api.index(ws, { repos });
console.log(`index ${repos.length} repositories: ${((performance.now() - t) / 1000).toFixed(1)} s (store ${store})`);
// --validate-repos a,b: index every repository of the config (closures need them) but
// extract and validate only the blocks of these (Swin-Transformer indexed with timm)
const validateOnly = opt('--validate-repos')?.split(',');
const blocks = api.discover(ws).filter((b) => !validateOnly || validateOnly.includes(b.repo));
const repoOf = new Map(blocks.map((b) => [b.id, b.repo]));
t = performance.now();
const validate = !args.includes('--no-validate');
let last = 0;
// --repos: only the blocks of those repositories (the store may hold others)
const ids = [...repoOf.keys()].filter((id) => !only || only.includes(repoOf.get(id)!));
const records = await extractAndValidate(ws, ids, {
  validate,
  profile: (opt('--profile') as 'slim' | 'faithful' | undefined) ?? 'slim',
  pool: {
    workers: opt('--workers') ? Number(opt('--workers')) : undefined,
    rootfs: opt('--rootfs'),
    env: opt('--env'),
    python: opt('--python'),
  },
  onWarning: (m) => console.error(`warning: ${m}`),
  witnesses: !args.includes('--no-witnesses'),
  onHarvest: (repo, h, cached) => {
    const built = h.entries.filter((e) => e.built).length;
    const fwd = h.entries.filter((e) => e.forward).length;
    console.log(
      `witnesses ${repo}: ${cached ? 'stored' : `${(h.ms / 1000).toFixed(1)} s`}, ${h.entries.length} entry points run (${built} built, ${fwd} forward, ${h.skipped} skipped), ${Object.keys(h.witnesses).length}/${h.classes.length} classes with witnesses` +
        `${h.docsMs ? `, tests and documents ${(h.docsMs / 1000).toFixed(1)} s (${h.entries.filter((e) => e.tests).length} test files)` : ''}${h.notes ? `, ${Object.values(h.notes).join('; ')}` : ''}${h.error ? `, error: ${h.error}` : ''}`,
    );
  },
  onProgress: (done, total) => {
    if (done - last >= 200 || done === total) {
      last = done;
      console.error(`  ${done}/${total} (${((performance.now() - t) / 1000).toFixed(0)} s)`);
    }
  },
});
const secs = (performance.now() - t) / 1000;
console.log(`extract${validate ? ' + validate' : ''} ${records.length} blocks: ${secs.toFixed(1)} s`);

type Row = {
  discovered: number;
  emitted: number;
  unresolved: number;
  import: number;
  instantiate: number;
  forward: number;
  eqPass: number;
  eqRan: number;
  nsBlocks: number;
  nsNames: number;
  nsMismatch: number;
  importErrors: Map<string, number>;
  eqSkips: Map<string, number>;
  sources: Map<string, number>;
};
const rows = new Map<string, Row>();
const row = (repo: string): Row => {
  let r = rows.get(repo);
  if (!r)
    rows.set(
      repo,
      (r = {
        discovered: 0,
        emitted: 0,
        unresolved: 0,
        import: 0,
        instantiate: 0,
        forward: 0,
        eqPass: 0,
        eqRan: 0,
        nsBlocks: 0,
        nsNames: 0,
        nsMismatch: 0,
        importErrors: new Map(),
        eqSkips: new Map(),
        sources: new Map(),
      }),
    );
  return r;
};
for (const rec of records) {
  const r = row(repoOf.get(rec.id) ?? '?');
  r.discovered++;
  if (rec.lines > 0) r.emitted++;
  if (rec.diagnostics.some((d) => d.severity === 'error')) r.unresolved++;
  const v = rec.validation;
  if (!v) continue;
  if (v.stages.import === 'pass') r.import++;
  else if (v.stages.import === 'fail') {
    const m = /No module named '([^']+)'|(\w+Error: .{0,60})/.exec(v.error ?? '');
    const key = m ? (m[1] ? `missing ${m[1].split('.')[0]}` : m[2]) : (v.error ?? '?').slice(0, 60);
    r.importErrors.set(key, (r.importErrors.get(key) ?? 0) + 1);
  }
  if (v.stages.instantiate === 'pass') r.instantiate++;
  if (v.stages.forward === 'pass') {
    r.forward++;
    const src = v.argumentsSource ?? '?';
    r.sources.set(src, (r.sources.get(src) ?? 0) + 1);
  }
  if (v.stages.equivalence === 'pass') r.eqPass++;
  if (v.stages.equivalence === 'pass' || v.stages.equivalence === 'fail') r.eqRan++;
  else if (v.stages.forward === 'pass') {
    // why equivalence did not run for a block that ran forward
    const why = (v.equivalence?.reason ?? 'no reason given').replace(/\d+(\.\d+)?/g, 'N').slice(0, 70);
    r.eqSkips.set(why, (r.eqSkips.get(why) ?? 0) + 1);
  }
  if (v.namespace && v.namespace.checked > 0) {
    r.nsBlocks++;
    r.nsNames += v.namespace.checked;
    r.nsMismatch += v.namespace.mismatches?.length ?? 0;
  }
}
const total = row('total');
for (const [name, r] of rows) {
  if (name === 'total') continue;
  for (const k of [
    'discovered',
    'emitted',
    'unresolved',
    'import',
    'instantiate',
    'forward',
    'eqPass',
    'eqRan',
    'nsBlocks',
    'nsNames',
    'nsMismatch',
  ] as const)
    total[k] += r[k];
}
const pct = (a: number, b: number) => (b ? `${((100 * a) / b).toFixed(0)}%` : '-');
console.log(
  '| repository | discovered | emitted | with unresolved | import | instantiate | forward | equivalence pass/ran | namespace blocks / names / mismatches |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const [name, r] of [...rows].sort((a, b) =>
  a[0] === 'total' ? 1 : b[0] === 'total' ? -1 : a[0].localeCompare(b[0]),
)) {
  console.log(
    `| ${name} | ${r.discovered} | ${r.emitted} | ${r.unresolved} | ${r.import} (${pct(r.import, r.discovered)}) | ${r.instantiate} (${pct(r.instantiate, r.discovered)}) | ${r.forward} (${pct(r.forward, r.discovered)}) | ${r.eqPass}/${r.eqRan} | ${r.nsBlocks} / ${r.nsNames} / ${r.nsMismatch} |`,
  );
}
console.log('\nimport failures per repository (most common first):');
for (const [name, r] of rows) {
  if (!r.importErrors.size) continue;
  const top = [...r.importErrors].sort((a, b) => b[1] - a[1]).slice(0, 6);
  console.log(`  ${name}: ${top.map(([k, n]) => `${k} ×${n}`).join('; ')}`);
}
console.log('\nforward passes by argument source:');
for (const [name, r] of rows)
  if (r.sources.size)
    console.log(
      `  ${name}: ${[...r.sources]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}`,
    );
console.log('\nequivalence not run after a forward pass, by reason:');
for (const [name, r] of rows) {
  if (!r.eqSkips.size) continue;
  console.log(
    `  ${name}: ${[...r.eqSkips]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map(([k, n]) => `${k} ×${n}`)
      .join('; ')}`,
  );
}
// missing-extern failures as requirements (src/validate/missing.ts): what the
// environment lacks though Debian has it, and what has no Debian package
const lacks = new Map<string, { n: number; how: string }>();
for (const rec of records) {
  const m = rec.validation?.missing;
  if (!m) continue;
  const how =
    m.verdict === 'lacks'
      ? `Debian ${m.debian} ${m.candidate}, not installed`
      : m.verdict === 'no-package'
        ? `no Debian package (tried ${m.debian})`
        : m.verdict === 'version'
          ? `installed (${m.debian}), another version's API`
          : 'unknown';
  const k = `${m.module} (${m.distribution})`;
  lacks.set(k, { n: (lacks.get(k)?.n ?? 0) + 1, how });
}
console.log('\nmissing-extern failures by requirement:');
for (const [k, v] of [...lacks].sort((a, b) => b[1].n - a[1].n)) console.log(`  ${k} ×${v.n}: ${v.how}`);
const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] : 0;
};
const sizes = new Map<
  string,
  { faithful: number[]; kept: number[]; slim: number; fallback: number; reasons: Map<string, number> }
>();
for (const rec of records) {
  const em = rec.emission;
  if (!rec.lines) continue;
  for (const name of [repoOf.get(rec.id) ?? '?', 'total']) {
    let z = sizes.get(name);
    if (!z) sizes.set(name, (z = { faithful: [], kept: [], slim: 0, fallback: 0, reasons: new Map() }));
    z.faithful.push(em?.faithfulLines ?? rec.lines);
    z.kept.push(rec.lines);
    if (em?.profile === 'slim') z.slim++;
    if (em?.fallbackReason) {
      z.fallback++;
      const why = em.fallbackReason.replace(/\d+/g, 'N').slice(0, 60);
      z.reasons.set(why, (z.reasons.get(why) ?? 0) + 1);
    }
  }
}
console.log('\nemitted lines: faithful vs kept (slim where it validated) — median / p90 / max:');
console.log('| repository | blocks | faithful | kept | slim | fell back |');
console.log('|---|---|---|---|---|---|');
for (const [name, z] of [...sizes].sort((a, b) =>
  a[0] === 'total' ? 1 : b[0] === 'total' ? -1 : a[0].localeCompare(b[0]),
)) {
  const f = (xs: number[]) => `${q(xs, 0.5)} / ${q(xs, 0.9)} / ${Math.max(0, ...xs)}`;
  console.log(`| ${name} | ${z.kept.length} | ${f(z.faithful)} | ${f(z.kept)} | ${z.slim} | ${z.fallback} |`);
}
for (const [name, z] of sizes)
  if (z.reasons.size && name !== 'total')
    console.log(
      `  fell back in ${name}: ${[...z.reasons]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 4)
        .map(([k, n]) => `${k} ×${n}`)
        .join('; ')}`,
    );
const json = opt('--json');
if (json)
  writeFileSync(
    json,
    JSON.stringify(
      records.map((r) => ({ repo: repoOf.get(r.id), ...r })),
      null,
      1,
    ),
  );
