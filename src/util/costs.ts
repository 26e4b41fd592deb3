// Where a run's time goes (issue 27, "Know where the time goes"): wall and CPU time per
// phase and per repository, accumulated as the pipeline runs and stored with the run
// (`nnrag report` prints the table). CPU time is this process's (process.cpuUsage); work
// done in the validation workers is wall time as the harness measured it, and CPU time
// where the harness measures it in the process that did the work: a block's stages and
// its usage line (the worker reads its child's CPU from /proc as the child's reports
// arrive), the parts of a request outside its stages (the worker's thread CPU and the
// child's: worker.py OutsideClock), the usage line's parts (its build, call and calls on
// other draws, timed in the child), the harvest's run steps (os.times in the step's own
// process), a worker's start (its interpreter's CPU until ready) and a zygote's import
// (the zygote's CPU from its fork); the original's build in equivalence has no CPU figure
// (`cpuMs` null).

export interface CostRow {
  phase: string;
  /** repository the work was for; '' for work of the whole run (worker starts, probe) */
  repo: string;
  /** how many times the phase ran */
  count: number;
  wallMs: number;
  /** this process's CPU time, null when the work ran in another process */
  cpuMs: number | null;
}

export interface CostTable {
  /** ISO time the run ended */
  at: string;
  /** what ran (`extract`, `validate`, `index`) */
  command: string;
  /** wall time of the whole run */
  wallMs: number;
  cpuMs: number;
  rows: CostRow[];
}

export class Costs {
  private readonly rows = new Map<string, CostRow>();
  private readonly t0 = performance.now();
  private readonly cpu0 = process.cpuUsage();

  /** Add `wallMs` (and `cpuMs`, when measured in this process) to a phase. */
  add(phase: string, repo: string, wallMs: number, cpuMs: number | null = null, count = 1): void {
    const key = `${phase}\0${repo}`;
    const row = this.rows.get(key);
    if (row) {
      row.count += count;
      row.wallMs += wallMs;
      if (cpuMs !== null) row.cpuMs = (row.cpuMs ?? 0) + cpuMs;
    } else this.rows.set(key, { phase, repo, count, wallMs, cpuMs });
  }

  /** Count an event without time (a worker restart, a block reused). */
  count(phase: string, repo = '', n = 1): void {
    this.add(phase, repo, 0, null, n);
  }

  /** Run synchronous work as a phase. CPU time of synchronous work is its own. */
  time<T>(phase: string, repo: string, fn: () => T): T {
    const t = performance.now();
    const c = process.cpuUsage();
    try {
      return fn();
    } finally {
      const d = process.cpuUsage(c);
      this.add(phase, repo, performance.now() - t, (d.user + d.system) / 1000);
    }
  }

  /** Run asynchronous work as a phase: wall time only (other work of this process
   *  interleaves with it, so its CPU time is not its own). */
  async timeAsync<T>(phase: string, repo: string, fn: () => Promise<T>): Promise<T> {
    const t = performance.now();
    try {
      return await fn();
    } finally {
      this.add(phase, repo, performance.now() - t);
    }
  }

  table(command: string): CostTable {
    const d = process.cpuUsage(this.cpu0);
    const rows = [...this.rows.values()].sort((a, b) => a.repo.localeCompare(b.repo) || a.phase.localeCompare(b.phase));
    return {
      at: new Date().toISOString(),
      command,
      wallMs: performance.now() - this.t0,
      cpuMs: (d.user + d.system) / 1000,
      rows,
    };
  }
}

/** The table as text: one line per phase and repository, then each phase summed. */
export function costText(t: CostTable): string[] {
  const s = (ms: number | null) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);
  const out = [`cost of the last ${t.command} (${t.at}): ${s(t.wallMs)} wall, ${s(t.cpuMs)} CPU of the nnrag process`];
  const width = Math.max(12, ...t.rows.map((r) => r.phase.length));
  const totals = new Map<string, CostRow>();
  for (const r of t.rows) {
    const a = totals.get(r.phase);
    if (a) {
      a.count += r.count;
      a.wallMs += r.wallMs;
      a.cpuMs = a.cpuMs === null && r.cpuMs === null ? null : (a.cpuMs ?? 0) + (r.cpuMs ?? 0);
    } else totals.set(r.phase, { ...r, repo: '' });
  }
  const line = (r: CostRow) =>
    `  ${r.phase.padEnd(width)} ${String(r.count).padStart(6)}× ${s(r.wallMs).padStart(9)} wall ${s(r.cpuMs).padStart(9)} CPU`;
  out.push('per phase (all repositories):');
  for (const r of [...totals.values()].sort((a, b) => b.wallMs - a.wallMs)) out.push(line(r));
  let repo: string | null = null;
  for (const r of t.rows) {
    if (!r.repo) continue;
    if (r.repo !== repo) out.push(`${(repo = r.repo)}:`);
    out.push(line(r));
  }
  return out;
}
