// Plain-text summaries of an indexing run and of the store, for `nnrag index` and
// `nnrag stats` without --json (with --json the CLI prints the objects themselves).
import type { IndexReport, StoreStats } from './indexer.js';

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
const sec = (msv: number) => (msv >= 1000 ? `${(msv / 1000).toFixed(2)} s` : `${Math.round(msv)} ms`);

export function formatIndexReport(r: IndexReport, maxProblems = 20): string {
  const out: string[] = [];
  for (const repo of r.repos) {
    out.push(
      `${repo.name}: ${repo.files} files, ${mb(repo.bytes)}, ${repo.parsed} parsed, ${repo.reused} reused` +
        (repo.problems ? `, ${repo.problems} problems` : ''),
    );
  }
  const t = r.timings;
  out.push(
    `indexed ${r.files} files (${mb(r.bytes)}) in ${sec(t.total)}: ${r.parsed} parsed on ${r.workers} workers, ` +
      `${r.reused} reused, ${r.hashed} read, ${r.parseErrors} with syntax errors`,
    `  list ${sec(t.list)}, hash ${sec(t.hash)}, parse ${sec(t.parse)} (binder ${sec(t.parseCpu)} cpu), store ${sec(t.store)}`,
  );
  if (r.problems.length) {
    out.push(`${r.problems.length} problems:`);
    for (const p of r.problems.slice(0, maxProblems)) out.push(`  ${p.repo}/${p.path}: ${p.kind}: ${p.message}`);
    if (r.problems.length > maxProblems) out.push(`  … ${r.problems.length - maxProblems} more (--json for all)`);
  }
  return out.join('\n');
}

export function formatStats(s: StoreStats): string {
  const out: string[] = [`index store schema v${s.schemaVersion}`];
  for (const r of s.repos) {
    out.push(`  ${r.name}: ${r.files} files, ${mb(r.bytes)}${r.revision ? ` @ ${r.revision.slice(0, 12)}` : ''}`);
  }
  out.push(
    `${s.files} files, ${mb(s.bytes)}, ${s.facts} distinct contents, ${s.parseErrors} files with syntax errors, ` +
      `${s.blocks} blocks, ${s.problems} problems`,
  );
  const kinds = Object.entries(s.problemsByKind);
  if (kinds.length) out.push(`  problems: ${kinds.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  if (s.lastRun) {
    const t = s.lastRun.timings ?? {};
    out.push(
      `last run #${s.lastRun.id} (${s.lastRun.mode}, ${s.lastRun.finished ?? 'unfinished'}): ` +
        Object.entries(t)
          .map(([k, v]) => `${k} ${sec(v)}`)
          .join(', '),
    );
  }
  return out.join('\n');
}
