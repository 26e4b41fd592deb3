// Witness harvesting, TypeScript side (src/validate/README.md "Witnesses"): asks the
// sandboxed harness (python/nnrag_harness/harvest.py) for a repository's entry points,
// then builds them one request each — greedy coverage (GreedyOrder): every family's
// first member (entry points reaching the same classes, at their smallest size) before
// any family's second, the entry point that can reach the most classes without a witness
// yet first, an entry point whose reachable classes all have witnesses skipped, a family
// exhausted after IDLE_RUNS runs without a new class — within a CPU-time budget per entry
// point (the harness stops a step by a CPU-time timer; a wall-clock budget covered less
// on a loaded machine, and by a wall-clock one of 6x + 10 s of it when it waits without
// computing) and a budget of PHASE_STEPS steps per phase, stopped early when every source
// (builders, tests, doctests, READMEs, examples/ scripts: stallSource) has had STALL_RUNS
// entry points in a row that witnessed no new class. Which steps run is so a function of
// the repository and the environment alone, not of the machine's speed or load (a budget
// of summed CPU time ended one cold harvest a step later than another: issue 28); a CPU
// and a wall-clock backstop per phase only end a pathological repository's phase, and
// such a harvest says it is not reproducible (HarvestResult.backstops).
// Each run step's answer is kept with the files its run read (the harness's `reads`, and
// the files those import names from: RunReuse.depends); a later harvest of the repository
// (some file changed) reuses the answer of a step asked again with the same request while
// those files are unchanged, and runs only the others (issue 27). Each step is chosen
// from the answers of the steps before it in dispatch order, not from which finished
// first, and charged the CPU of its first run: a re-run with some steps reused chooses
// the same steps and stops at the same one.
// The result (per class: witnesses, smallest first; per entry point: built or why not,
// time, classes covered) is cached by the caller (witness/store.ts).
import { createHash } from 'node:crypto';
import type { ValidatorPool } from '../pool.js';
import type { Witness } from '../types.js';

export interface HarvestEntry {
  /** registry value, factory function, class from its defaults, class of a `dict(type=…)` config file, `__main__` snippet;
   *  a test file, a Markdown code block, a class docstring's `>>>` examples, an examples/ script (harvest_docs.py) */
  kind: 'registry' | 'factory' | 'class' | 'config' | 'snippet' | 'test' | 'readme' | 'doctest' | 'example';
  module: string;
  qualname: string;
  via?: string;
  plan: Record<string, unknown>;
  /** classes of the repository the entry point's module defines or imports */
  reach: string[];
  /** model-size rank of its name (tiny before large) */
  rank: number;
  /** the registry or module of a family of entry points (variants of one model); null for a class */
  family: string | null;
  /** one of several model files for the same callable (its reach: the classes the file names) */
  variant?: boolean;
  /** the configuration switch this variant turns on (`args.masks`) */
  switch?: string;
  /** a test file or documented example: its path below the repository root (and line) */
  file?: string;
  line?: number;
}

/** What a test file's run did (harvest_docs.py): tests collected, their outcomes, the
 *  tests stopped by their own budget, the first failures. */
export interface TestsReport {
  collected: number;
  passed: number;
  failed: number;
  skipped: number;
  stopped: string[];
  errors: string[];
  /** tests not run: every class their code names already had called witnesses */
  unneeded?: number;
  /** tests not run: the step's budget was spent (its counted work or memory, or a backstop) */
  unrun?: number;
  /** of the tests stopped, those ended by their CPU or wall-clock timer (a backstop of
   *  their counted budget: another machine may stop them elsewhere) */
  timedOut?: string[];
  /** of the tests stopped, those an operation of which the live tensors' budget refused
   *  (a MemoryError, as under the address-space limit, at the same operation in every run) */
  memory?: string[];
  /** the session's test files none of whose tests ran (the step's budget was spent) */
  unrunFiles?: string[];
  /** the test files run in the session (the entry's first) */
  files?: string[];
  exit?: number;
}

/** Entry points from the repository's tests and documented examples. */
export const DOC_KINDS: ReadonlySet<HarvestEntry['kind']> = new Set(['test', 'readme', 'doctest', 'example']);

export interface EntryReport {
  entry: string;
  built: boolean;
  forward: boolean;
  error: string | null;
  forwardError?: string;
  input?: number[][];
  ms: number;
  /** CPU time of the step's process (what the budgets count), ms */
  cpuMs?: number;
  /** the stored answer of an earlier harvest was used: its files are unchanged */
  reused?: boolean;
  /** classes that got a witness from this entry point */
  covered: string[];
  /** companions built alongside the model (a criterion, post-processors): called, or why not */
  companions?: Record<string, string>;
  /** how far the entry point's resident memory rose at its peak, MB */
  memoryMb?: number;
  /** the budget that stopped it short: its time (the CPU timer), the work budget of its
   *  real forward or of its test session (counted operations and calls: the same stop on
   *  every machine) or its memory (a test session's live tensors, counted, or the
   *  address-space limit) */
  stopped?: 'time' | 'work' | 'memory';
  /** a doc step ended by a backstop rather than its counted budgets: its CPU or wall-clock
   *  timer, or the address-space limit (RLIMIT_AS); another machine may stop it elsewhere */
  backstop?: 'cpu' | 'wall' | 'address-space';
  /** the step's budget its real forwards' (or its doc step's) counted work needed, s (the
   *  harness's FORWARD_WORK_PER_SECOND, harvest_docs TEST_WORK_PER_SECOND): past the
   *  budget, it stops by work */
  workSeconds?: number;
  /** a doc step's counted work: torch operations, their multiply-adds and elements, what
   *  backward passes counted, Python calls, processes started, and the live tensors' peak (MB) */
  work?: {
    ops: number;
    elements: number;
    backward?: number;
    calls: number;
    processes?: number;
    tensorMb: number | null;
  };
  /** a test file's tests (kind `test`) */
  tests?: TestsReport;
}

export interface HarvestResult {
  repo: string;
  /** classes of the repository found at runtime */
  classes: string[];
  /** class id (module.Qualname) → witnesses, called ones first, smallest first */
  witnesses: Record<string, Witness[]>;
  entries: EntryReport[];
  /** entry points listed but not run (covered already, or budget spent) */
  skipped: number;
  importFailures: Record<string, string>;
  /** the installed modules the repository's code imports, which the run steps' zygote
   *  imported once before the repository (its list step found them) */
  preload?: string[];
  error?: string;
  ms: number;
  /** the entry points' peak memory growth, summed (MB): what the repository budget counts */
  memoryMb?: number;
  /** what ended the harvest before every entry point ran: a phase's budget of steps
   *  (PHASE_STEPS), its CPU or wall-clock backstop (`time`: see backstops), the memory
   *  budget, or coverage that stopped growing */
  stopped?: 'steps' | 'time' | 'memory' | 'coverage';
  /** per phase ended by a backstop, which: its CPU time (BACKSTOP_MS) or the wall clock.
   *  Such a phase ran as many steps as the machine's speed and load allowed: another
   *  harvest of the same repository may run more or fewer steps and witness differently */
  backstops?: Partial<Record<HarvestPhase, 'cpu' | 'wall'>>;
  /** the steps run are the repository's and the environment's alone (no backstop ended
   *  a phase); false when one did. (A step its own CPU timer stopped, entries[].stopped
   *  `time`, may still witness more or less on a machine of another speed.) */
  reproducible?: boolean;
  /** what the list step says about sources it could not use (`tests`: pytest is not importable) */
  notes?: Record<string, string>;
  /** time spent in entry points from tests and documented examples, ms */
  docsMs?: number;
  /** CPU time the run steps were charged, summed, ms (a step that ran before is charged
   *  what its first run spent: chargeOf) */
  cpuMs?: number;
  /** run steps whose stored answer was reused, and run steps asked of a worker */
  reusedRuns?: number;
  ranRuns?: number;
  /** each run step's answer by its request's key, with the files it depends on */
  runs?: Record<string, StoredRun>;
  /** per phase stopped by its wall-clock backstop (a loaded machine), the steps it had
   *  started then: a later harvest reusing its steps stops there too (RunReuse.wallStops) */
  wallStops?: Partial<Record<HarvestPhase, number>>;
  /** the files the list step read: its modules' and those they imported, the files it
   *  opened (absolute paths, under the roots of its sys.path) */
  listReads?: string[];
  /** what the harvest read outside its key (witness/store.ts harvestDepends) */
  depends?: HarvestDepends;
  /** the version of the rules it was made by (witness/store.ts HARVEST_RULES) */
  rules?: number;
}

/** What a stored harvest read outside its key: the files of other repositories, and the
 *  unindexed ones of its own (a YAML model file), with their blob ids then; or, when some
 *  step's reads are unknown (it gave no answer, or steps are not recorded), the digest of
 *  every repository's indexed files. */
export type HarvestDepends = { files: [string, string][] } | { listing: string };

/** The two phases of a harvest: the builders of whole models, then the tests and documents. */
export type HarvestPhase = 'builders' | 'docs';

/** A file a run step depends on: its absolute path and blob id then; for a module whose
 *  functions' runs are known, also the digest of its skeleton with the bodies of the
 *  functions that ran (in the step or at import) and their names (witness/parts.ts): an
 *  edit that leaves that digest unchanged leaves the step's answer current. */
export type RunFile = [string, string] | [string, string, string, string[]];

/** What a run step's harness reported of the functions that ran: per file, their
 *  co_qualnames in the step (`calls`) and in the zygote's import (`importCalls`), and the
 *  files the step opened (their whole content counts). */
export interface RunCalls {
  calls: Record<string, string[]>;
  importCalls: Record<string, string[]>;
  opened: string[];
}

/** A run step's answer, kept for the next harvest of the repository. */
export interface StoredRun {
  /** the files the run depends on (absolute paths) with their blob ids then (RunFile) */
  files: RunFile[];
  /** the step's CPU budget, seconds */
  budget: number;
  /** the harness's answer */
  harvest: Record<string, unknown>;
  ms: number;
  /** the CPU time the step is charged in its phase's budget, ms: what its first run spent
   *  (kept when it runs again because a file it read changed; see chargeOf) */
  charge?: number;
}

/** The CPU a stored step is charged: its first run's, else the run's own. */
export function chargeOf(stored: StoredRun): number {
  if (typeof stored.charge === 'number') return stored.charge;
  const cpu = (stored.harvest as { cpuMs?: unknown }).cpuMs;
  return typeof cpu === 'number' ? cpu : stored.budget * 1000;
}

/** Reuse of run steps across harvests (witness/store.ts gives it). */
export interface RunReuse {
  /** the environment the answers were computed in: its harvest id (ValidatorPool.harvestEnvId,
   *  which covers the harness modules a harvest runs) */
  envId: string;
  /** the stored runs of the repository's previous harvest */
  runs: Record<string, StoredRun>;
  /** the files a run depends on, from the files it read (absolute paths), with their
   *  current blob ids (and, given which functions ran, their parts' digests) */
  depends(read: string[], e: HarvestEntry, calls?: RunCalls): RunFile[];
  /** a file's current blob id, null when it is gone */
  blob(file: string): string | null;
  /** the digest of a file's skeleton with the bodies named now (witness/parts.ts
   *  partDigest), null when it cannot be told (gone, not parsed) */
  part?(file: string, names: string[]): string | null;
  /** the previous harvest's wall-clock stops (HarvestResult.wallStops): its steps
   *  answered at once from the store, this harvest would otherwise run past the step
   *  where load stopped that one, and choose and witness differently */
  wallStops?: Partial<Record<HarvestPhase, number>>;
  /** the key's view of a value: its folders named by place (store.ts, places.ts
   *  `nameValue`), so that a run's key, stored with the harvest, is the same on every
   *  machine (issue 28); absent: as it is */
  named?<T>(v: T): T;
}

export interface HarvestOptions {
  repo: string;
  /** sys.path entries: the repository's roots first, then those it imports from */
  sysPath: string[];
  /** how many of sysPath are the repository's own roots (its entry points and classes) */
  ownRoots?: number;
  /** module names of the repository to import (its indexed files) */
  modules: string[];
  /** top-level module that the repository's zygote imports first */
  zygoteModule: string;
  /** CPU time per entry point, ms (default 30000) */
  entryMs?: number;
  /** steps of the builders' phase (default PHASE_STEPS) */
  repoSteps?: number;
  /** steps of the tests' and documents' phase (default: repoSteps) */
  docsSteps?: number;
  /** CPU backstop of the builders' phase: the CPU time of its run steps, summed, ms
   *  (default BACKSTOP_MS) */
  repoMs?: number;
  /** wall-clock backstop of each phase (the builders, then the tests and documents), ms
   *  (default 4 x the phase's CPU backstop) */
  repoWallMs?: number;
  /** entry points in a row that witness no new class, after which a phase stops (default STALL_RUNS) */
  stallRuns?: number;
  /** run steps of an earlier harvest to reuse, and the files they depend on */
  reuse?: RunReuse;
  /** memory an entry point may add to its process, MB (RLIMIT_AS, within the pool's own memory limit; default: that limit alone) */
  entryMemoryMb?: number;
  /** the entry points' peak memory growth summed over the repository, MB, after which the harvest stops (default 131072) */
  repoMemoryMb?: number;
  /** at most this many witnesses kept per class (default 3) */
  perClass?: number;
  /** the repository's root folder: its tests, Markdown files and examples (harvest_docs.py) */
  repoRoot?: string;
  /** CPU time per test of a test file, ms (default 10000) */
  testMs?: number;
  /** CPU backstop of the tests and documented examples, after the builders, ms (default: repoMs) */
  docsMs?: number;
  onEntry?: (r: EntryReport) => void;
}

export async function harvestRepo(pool: ValidatorPool, o: HarvestOptions): Promise<HarvestResult> {
  const t0 = performance.now();
  const entryMs = o.entryMs ?? 30000;
  const repoMs = o.repoMs ?? BACKSTOP_MS;
  const repoSteps = o.repoSteps ?? PHASE_STEPS;
  const stallRuns = o.stallRuns ?? STALL_RUNS;
  const perClass = o.perClass ?? 3;
  const entryMemoryMb = o.entryMemoryMb;
  const base = {
    roots: o.sysPath,
    own: o.sysPath.slice(0, o.ownRoots ?? o.sysPath.length),
    modules: o.modules,
    ...(o.repoRoot ? { repoRoot: o.repoRoot, testSeconds: (o.testMs ?? 10000) / 1000 } : {}),
  };
  // the sandbox binds the roots of a request: the repository's root too when its tests
  // and documents lie outside its import roots (a src/ layout), last on sys.path
  const bound =
    o.repoRoot && !o.sysPath.some((p) => o.repoRoot === p || o.repoRoot!.startsWith(p + '/'))
      ? [...o.sysPath, o.repoRoot]
      : o.sysPath;
  const out: HarvestResult = {
    repo: o.repo,
    classes: [],
    witnesses: {},
    entries: [],
    skipped: 0,
    importFailures: {},
    ms: 0,
  };
  if (o.reuse) {
    out.runs = {};
    out.reusedRuns = 0;
    out.ranRuns = 0;
  }
  let cpuSpent = 0;
  // the installed modules the repository's code imports (its list step finds them): the
  // run steps' zygote imports them once, before the repository (zygote.py `preload`)
  let preload: string[] = [];
  const ask = (harvest: Record<string, unknown>, timeoutMs: number) =>
    pool.harvestStep({
      id: `harvest:${o.repo}`,
      source: '',
      className: '',
      original: { module: o.zygoteModule, className: '', sysPath: bound, ...(preload.length ? { preload } : {}) },
      harvest,
      timeoutMs,
    });
  // the list step's import budget is CPU time too (120 s, a quarter of the default CPU
  // backstop, as it was half of the old budget; 10 s at least); its wall-clock timeout a backstop
  const importBudget = Math.min(120, Math.max(10, repoMs / 4000));
  const listed = await ask(
    { ...base, mode: 'list', importBudget, ...(o.reuse ? { recordReads: true } : {}) },
    stepTimeoutMs(importBudget * 1000) + 45000,
  );
  const list = listed.harvest as
    | {
        reads?: string[];
        classes?: string[];
        entries?: HarvestEntry[];
        importFailures?: Record<string, string>;
        forwardKeys?: Record<string, string>;
        notes?: Record<string, string>;
        /** the functions the zygote's import ran, per file (reads.py): known with `calls` */
        importCalls?: Record<string, string[]>;
        /** the files whose source the zygote's import read (linecache): read whole */
        importSources?: string[];
        /** the installed modules the repository's code imports (harvest.InstalledImports) */
        preload?: string[];
        error?: string;
      }
    | undefined;
  if (!list?.entries) {
    out.error = list?.error ?? listed.error ?? 'the harness gave no entry points';
    out.ms = performance.now() - t0;
    return out;
  }
  out.classes = list.classes ?? [];
  if (Array.isArray(list.preload) && list.preload.length) out.preload = preload = list.preload.slice();
  const importCalls = list.importCalls;
  out.importFailures = list.importFailures ?? {};
  if (o.reuse && Array.isArray(list.reads)) out.listReads = list.reads;
  if (list.notes && Object.keys(list.notes).length) out.notes = list.notes;
  let docsMs = 0;
  const budgets = { memoryMb: o.repoMemoryMb ?? 131072, stallRuns };
  const order = new GreedyOrder(
    list.entries.filter((e) => !DOC_KINDS.has(e.kind)),
    budgets,
  );
  const docsOrder = new GreedyOrder(
    list.entries.filter((e) => DOC_KINDS.has(e.kind)),
    budgets,
  );
  const docsBudget = o.docsMs ?? repoMs;
  const workers = Math.max(1, pool.workerCount);
  // a wrapper of a whole model (`AutoShape(model)`, `ModelEma(model)`) is given the model
  // of the smallest entry point that built and ran one (the provider)
  let provider: { entry: HarvestEntry; rank: number } | null = null;
  // One lane per worker: a worker that finishes takes the next entry point at once (a
  // batch that waited for its slowest step left the other worker idle, half of the
  // tests' budget on pyg). What a step is given to run is decided from the answers of
  // the steps before it in a fixed order, never from which step happened to finish
  // first: step k is chosen once the answers of steps 0..k-LAG have been applied, in
  // order, and no later answer has (an answer read from the store arrives at once, a
  // re-run one seconds later; applied as they arrive, they changed every later choice,
  // the budget's stopping point and the witnesses, and one edited file re-validated a
  // hundred blocks). The CPU a step is charged is fixed by its first run (its stored
  // charge): a step re-run because a file it read changed costs what it cost then, so
  // the phase's budget stops at the same step. LAG is fixed, not the pool's size: a
  // pool of one worker (a queue's shard worker) and one of two (`extract --all`) choose
  // the same steps and harvest the same witnesses; a larger pool runs at most LAG steps
  // at once.
  const lag = HARVEST_LAG;
  type Answer = { harvest?: unknown; category?: string | null; error?: string | null; ms: number };
  interface Step {
    e: HarvestEntry;
    extra: HarvestEntry[];
    family: string;
    key: string;
    budget: number;
    /** the stored answer of this request, reusable or not (its charge counts) */
    stored: StoredRun | undefined;
    reused: boolean;
    answer: Promise<Answer>;
    settled: boolean;
  }
  const start = (cur: GreedyOrder, e: HarvestEntry, extra: HarvestEntry[]): Step => {
    // every step has the whole entry budget: one cut to what a phase's CPU had left
    // depended on how fast the steps before it ran
    const budget = Math.max(1000, entryMs);
    const request: Record<string, unknown> = {
      ...base,
      mode: 'run',
      entry: e,
      ...(entryMemoryMb ? { memoryMb: entryMemoryMb } : {}),
      ...(needsModel(e) && provider ? { provider: provider.entry } : {}),
      // a test file skips the tests that name only classes already called
      ...(e.kind === 'test' ? { called: [...cur.called].sort(), files: [e, ...extra].map((x) => x.file) } : {}),
    };
    // the same request (but its budget) asked before, and the files its run read unchanged
    const named = o.reuse?.named ?? (<T>(v: T) => v);
    const key = o.reuse ? runKey(o.reuse.envId, named(bound), named(request)) : '';
    const stored = o.reuse ? o.reuse.runs[key] : undefined;
    const reused = !!(stored && o.reuse && reusable(stored, budget / 1000, o.reuse));
    const step: Step = {
      e,
      extra,
      family: cur.family(e),
      key,
      budget,
      stored,
      reused,
      settled: reused,
      answer: reused
        ? Promise.resolve({ harvest: stored!.harvest, ms: stored!.ms })
        : // the budget is CPU time (the harness's timers: CPU, and 6x + 10 s of wall clock
          // for a step that waits); the pool's limits only back them up (stepTimeoutMs)
          ask(
            { ...request, budgetSeconds: budget / 1000, ...(o.reuse ? { recordReads: true } : {}) },
            stepTimeoutMs(budget),
          ),
    };
    step.answer.then(
      () => (step.settled = true),
      () => (step.settled = true),
    );
    return step;
  };
  /** A step's answer applied: its witnesses merged, the order told what it covered, the
   *  CPU charged. */
  const apply = (cur: GreedyOrder, s: Step, r: Answer): void => {
    const { e, extra, key, budget, stored, reused } = s;
    // what the harness's run step reports: an entry report with its entry point's
    // own name, plus the witnesses recorded per class
    const h = r.harvest as
      | (Omit<EntryReport, 'covered'> & {
          classes?: Record<string, { witnesses: Witness[] }>;
          reads?: string[];
          calls?: Record<string, string[]>;
          opened?: string[];
        })
      | undefined;
    // the CPU the step spent (a step without an answer: its whole budget); charged: what
    // its first run spent, when this request ran before
    const spent = typeof h?.cpuMs === 'number' ? h.cpuMs : budget;
    const charge = stored ? chargeOf(stored) : spent;
    if (o.reuse && out.runs) {
      if (reused) {
        out.runs[key] = stored!;
        out.reusedRuns!++;
      } else {
        out.ranRuns!++;
        if (h && Array.isArray(h.reads)) {
          const { reads, calls, opened, ...rest } = h;
          // which functions ran: known when both the step and the list step say
          const known =
            calls && opened && importCalls
              ? { calls, opened: [...opened, ...(list.importSources ?? [])], importCalls }
              : undefined;
          out.runs[key] = {
            files: o.reuse.depends(reads, e, known),
            budget: budget / 1000,
            harvest: rest,
            ms: r.ms,
            charge,
          };
        }
      }
    }
    const rep: EntryReport = {
      entry: entryName(e),
      built: !!h?.built,
      forward: !!h?.forward,
      error: h ? h.error : `${r.category ?? 'error'}: ${r.error ?? 'no answer'}`,
      ms: h?.ms ?? r.ms,
      covered: [],
    };
    rep.cpuMs = spent;
    cpuSpent += charge;
    if (reused) rep.reused = true;
    if (h?.forwardError) rep.forwardError = h.forwardError;
    if (h?.input) rep.input = h.input;
    if (h?.companions && Object.keys(h.companions).length) rep.companions = h.companions;
    if (typeof h?.memoryMb === 'number') rep.memoryMb = h.memoryMb;
    if (typeof h?.workSeconds === 'number') rep.workSeconds = h.workSeconds;
    if (h?.work) rep.work = h.work;
    if (h?.backstop) rep.backstop = h.backstop;
    if (h?.tests) rep.tests = h.tests;
    if (DOC_KINDS.has(e.kind)) docsMs += rep.ms;
    // the budget that stopped it: the harness says; a child the pool ended says by its category
    const stopped = h?.stopped ?? (r.category === 'memory' ? 'memory' : r.category === 'timeout' ? 'time' : undefined);
    if (stopped) rep.stopped = stopped;
    const classes: Record<string, { called: boolean }> = {};
    for (const [cls, c] of Object.entries(h?.classes ?? {})) {
      if (!c.witnesses.length) continue;
      rep.covered.push(cls);
      classes[cls] = { called: c.witnesses.some((w) => w.inputs) };
      out.witnesses[cls] = mergeWitnesses(out.witnesses[cls] ?? [], c.witnesses, perClass);
    }
    cur.progress(e, cur.report(e, rep.built, classes, rep.memoryMb ?? 0));
    if (extra.length) {
      // the files of the session: run with the first, or given back when none of
      // their tests started before the step's budget ended
      const unrun = new Set(h?.tests?.unrunFiles ?? []);
      cur.giveBack(extra.filter((x) => unrun.has(x.file ?? '')));
      for (const x of extra.filter((x) => !unrun.has(x.file ?? ''))) cur.report(x, rep.built, {}, 0);
      rep.entry += ` +${extra.length - unrun.size}`;
    }
    // the provider: the smallest model (the most parameters among the step's witnesses:
    // its whole model's) that built and ran, else the smallest that built; the first in
    // dispatch order of equals. Counted parameters, not the CPU time the step took: that
    // moves from run to run, and two models of close cost swapped places between two
    // cold harvests of one repository (yolov9's AutoShape got another model, another verdict)
    const size = Math.max(0, ...Object.values(h?.classes ?? {}).flatMap((c) => c.witnesses.map((w) => w.params ?? 0)));
    const rank = (rep.forward ? 0 : 1e15) + size;
    if (
      rep.built &&
      !needsModel(e) &&
      e.kind !== 'snippet' &&
      !DOC_KINDS.has(e.kind) &&
      (!provider || rank < provider.rank)
    )
      provider = { entry: e, rank };
    out.entries.push(rep);
    o.onEntry?.(rep);
  };
  const runPhase = async (cur: GreedyOrder, steps: number, limit: number, phase: HarvestPhase): Promise<void> => {
    // dispatched steps whose answers are not applied yet, in the order they were dispatched
    const flight: Step[] = [];
    const applyOldest = async () => {
      const s = flight.shift()!;
      apply(cur, s, await s.answer);
    };
    const cpu0 = cpuSpent;
    // per phase: a slow builders' phase on a loaded machine does not starve the tests'
    const w0 = performance.now();
    const wallMs = o.repoWallMs ?? 4 * limit;
    const inherited = o.reuse?.wallStops?.[phase];
    let dispatched = 0;
    let wallStop: number | undefined;
    for (;;) {
      // the answers the next choice is made from: all but the last lag-1 dispatched
      while (flight.length >= lag) await applyOldest();
      // coverage that stopped growing, the phase's budget of steps (both counted in
      // steps: the same on any machine); then its backstops, against a repository whose
      // steps are pathologically slow: its CPU time, and the wall clock (this harvest's,
      // or where it stopped the previous one)
      if (!cur.stopped && cur.allStalled()) cur.stopped = 'coverage';
      if (!cur.stopped && dispatched >= steps && cur.pending.length) cur.stopped = 'steps';
      if (!cur.stopped && cpuSpent - cpu0 >= limit) {
        cur.stopped = 'time';
        (out.backstops ??= {})[phase] = 'cpu';
      }
      if (!cur.stopped && ((inherited !== undefined && dispatched >= inherited) || performance.now() - w0 >= wallMs)) {
        cur.stopped = 'time';
        (out.backstops ??= {})[phase] = 'wall';
        wallStop = dispatched;
      }
      if (!cur.stopped && cur.pending.length) {
        // a free lane (the timing decides only when the next step starts, never which)
        for (let running = flight.filter((s) => !s.settled); running.length >= workers; ) {
          await Promise.race(running.map((s) => s.answer.catch(() => undefined)));
          running = flight.filter((s) => !s.settled);
        }
        // while steps are unapplied, what cannot start yet stays pending (a wrapper
        // waiting for a model, a family already running)
        const [e] = cur.next(1, !!provider, flight.length > 0, new Set(flight.map((s) => s.family)));
        if (e) {
          // test files share a pytest session, TEST_FILES_PER_STEP to a step: its start
          // (the runner, the conftest files) is paid once, and the per-test gate skips
          // what an earlier file of the session already called
          const extra = e.kind === 'test' ? cur.take((x) => x.kind === 'test', TEST_FILES_PER_STEP - 1) : [];
          flight.push(start(cur, e, extra));
          dispatched++;
          continue;
        }
      }
      if (!flight.length) break;
      await applyOldest();
    }
    if (wallStop !== undefined) (out.wallStops ??= {})[phase] = wallStop;
  };
  // two phases: the repository's builders of whole models within `repoMs`, then its tests
  // and documented examples within `docsMs` of their own, aimed at the classes the
  // builders left without a called witness (a slow test suite never takes the builders' budget)
  await runPhase(order, repoSteps, repoMs, 'builders');
  // on to the tests and documents: what the builders covered counts as covered
  docsOrder.seed(order);
  if (docsOrder.pending.length && !docsOrder.stopped)
    await runPhase(docsOrder, o.docsSteps ?? repoSteps, docsBudget, 'docs');
  out.skipped += order.skipped + order.pending.length + docsOrder.skipped + docsOrder.pending.length;
  out.memoryMb = Math.round(Math.max(order.memorySpent, docsOrder.memorySpent)); // the second starts from the first's
  if (docsMs) out.docsMs = Math.round(docsMs);
  out.cpuMs = Math.round(cpuSpent);
  if (order.pending.length || docsOrder.pending.length) out.stopped = order.stopped ?? docsOrder.stopped ?? 'time';
  out.reproducible = !out.backstops;
  borrowSiblingInputs(out.witnesses, list.forwardKeys ?? {}, out.classes, perClass);
  out.ms = performance.now() - t0;
  return out;
}

const entryName = (e: HarvestEntry) => e.via ?? `${e.module}.${e.qualname}`;
/** a wrapper of a whole model: its plan asks for a model instance */
const needsModel = (e: HarvestEntry) =>
  Object.values(e.plan).some((s) => !!s && typeof s === 'object' && 'instance' in (s as object));

/** The key of a run step's request: the environment's harvest id (`harvestId`, which
 *  covers the harness modules a harvest runs: environment.ts harvestHarness), the sys.path
 *  and the request without its budget (a stored answer serves another budget when the run
 *  ended within it: reusable). */
export function runKey(harvestId: string, sysPath: string[], request: Record<string, unknown>): string {
  return createHash('sha256')
    .update(`${harvestId}\0${JSON.stringify(sysPath)}\0`)
    .update(JSON.stringify(request))
    .digest('hex')
    .slice(0, 32);
}

/** A stored answer serves a step asked again when every file its run depends on is
 *  unchanged, and its budget gives the same ending: a run its budget stopped (the harness
 *  says `stopped: 'time'`: a timer fired, or tests were left unrun; `stopped: 'work'`:
 *  the real forward's counted work passed its budget, a pure function of the budget)
 *  only with the same budget; one that ended within its budget, with at least that
 *  budget, or with any budget above both the CPU time it spent and the budget its real
 *  forwards' counted work needed (`workSeconds`: a smaller budget would stop them by
 *  work). (Its CPU time counts the entry module's import, which runs before the
 *  budget's timer is armed: a step of the phase's last seconds may spend more than its
 *  budget without being stopped; such an answer was never reused.) */
export function reusable(stored: StoredRun, budgetSeconds: number, reuse: RunReuse): boolean {
  if (stored.files.some((x) => !unchangedFile(x, reuse))) return false;
  const h = stored.harvest as { stopped?: string; cpuMs?: number; workSeconds?: number };
  if (h.stopped === 'time' || h.stopped === 'work') return stored.budget === budgetSeconds;
  if (budgetSeconds >= stored.budget) return true;
  return typeof h.cpuMs === 'number' && h.cpuMs / 1000 <= budgetSeconds && (h.workSeconds ?? 0) <= budgetSeconds;
}

/** A file a step depends on is unchanged: the same blob, or the same digest of the parts
 *  the step could have seen (its skeleton and the bodies of the functions that ran). */
export function unchangedFile(x: RunFile, reuse: Pick<RunReuse, 'blob' | 'part'>): boolean {
  if (reuse.blob(x[0]) === x[1]) return true;
  return x.length === 4 && !!reuse.part && reuse.part(x[0], x[3]) === x[2];
}

/** What the pool allows a run step whose budget is `budgetMs` of CPU time: the worker
 *  ends it past twice that in CPU time plus 15 s (the entry module's import and the
 *  witnesses' encoding run outside the budget's timers), or past its wall-clock backstop
 *  of 6x + 10 s of that. Both lie beyond the harness's own timers (the budget in CPU time,
 *  6x + 10 s of it on the wall clock), which end the step with an answer; the pool's
 *  ending loses it. (The timeout was 8x + 15 s, taken by the worker as CPU time: a step
 *  that slept was ended after 26 minutes.) */
export function stepTimeoutMs(budgetMs: number): number {
  return 2 * budgetMs + 15000;
}

/** The steps of a harvest phase (a test session of several files is one step), after
 *  which it stops: its budget, counted in steps so that it ends at the same step on any
 *  machine, at any load. Chosen from the corpus's measured costs: a phase stopped by
 *  the earlier budget of 240 s of summed CPU time is timm's builders (every other
 *  repository of the corpus runs out of entry points or stalls first: torchvision after
 *  ~150 steps, pyg's tests after ~90), and that budget ran 259-277 of timm's steps
 *  (0.9 s of CPU a step; more on a faster machine): 280 steps keep every step those
 *  harvests ran, at about 6% more CPU than the old budget. */
export const PHASE_STEPS = 280;

/** The CPU backstop of a phase, ms: twice the budget of summed CPU time it replaces.
 *  Only a repository whose steps are pathologically slow reaches it (the heaviest of
 *  the corpus, yolov9's 47 builders at 5 s each, spend about 230 s); a phase it ends is
 *  not reproducible (HarvestResult.backstops). */
export const BACKSTOP_MS = 480000;

/** Step k of a harvest phase is chosen once the answers of steps 0..k-HARVEST_LAG are
 *  applied (see harvestRepo): the lag of two lanes, whatever the pool's size. */
export const HARVEST_LAG = 3;
/** Entry points of one source in a row whose runs witnessed no new class, after which that
 *  source stops (its entries left are not run), and a phase stops once every source it has
 *  left has: coverage stopped growing (the rest of its budget would buy nothing the order
 *  foresees). The sources (`stallSource`) are the repository's builders, its tests, its
 *  docstring examples, its Markdown code blocks and its examples/ scripts: what one yields
 *  says nothing of another (examples/ scripts that download a dataset all fail in a
 *  sandbox without network, while the tests beside them build every layer). */
export const STALL_RUNS = 24;

/** The source of an entry point's witnesses for the stall rule (STALL_RUNS). */
export function stallSource(e: HarvestEntry): string {
  return DOC_KINDS.has(e.kind) ? e.kind : 'builders';
}

/** Test files run in one pytest session (one harvest step). */
export const TEST_FILES_PER_STEP = 4;

/** Runs without a new class after which a family is exhausted. */
export const IDLE_RUNS = 2;

/**
 * The order of a harvest's entry points — greedy coverage. covered: classes with a
 * witness; called: with a witness that has recorded inputs (greedy coverage aims at
 * called classes: a construction alone, such as a base class built through
 * super().__init__, leaves its inputs to guesses).
 *
 * A family is the entry points reaching the same classes with the same architecture word
 * in their name (one architecture's registered sizes and variants: nameStem). Every family's first member runs before any family's second
 * (one family's sizes cannot spend the budget while other families wait); within that,
 * the most reachable classes not yet called first, then the smallest size, the smallest
 * input resolution and number named (`_224` before `_512`, `resnet18` before
 * `resnet101`), registries and factories before classes. An entry point whose reachable
 * classes are all called is skipped; a family is exhausted after IDLE_RUNS runs that
 * built its model and covered nothing new (what it reaches but did not build is behind
 * settings its members share), or after two failed builds.
 */
export class GreedyOrder {
  readonly pending: HarvestEntry[];
  readonly covered = new Set<string>();
  readonly called = new Set<string>();
  skipped = 0;
  private readonly runs = new Map<string, number>();
  private readonly idle = new Map<string, number>();
  private readonly failures = new Map<string, number>();
  private readonly exhausted = new Set<string>();
  /** the entry points' peak memory growth so far, summed (MB) */
  memorySpent = 0;
  /** what ended the phase: the memory budget, its budget of steps, a backstop (`time`),
   *  or coverage that stopped growing */
  stopped: 'memory' | 'steps' | 'time' | 'coverage' | undefined;
  /** per source (stallSource): runs since its last that witnessed a new class (or called one first) */
  private readonly sinceGain = new Map<string, number>();
  /** sources that ran STALL_RUNS entry points in a row without a gain: their entries stay pending, unrun */
  readonly stalled = new Set<string>();
  private readonly memoryMb: number;
  private readonly stallRuns: number;

  constructor(entries: HarvestEntry[], budgets: { memoryMb?: number; stallRuns?: number } = {}) {
    this.pending = [...entries];
    this.memoryMb = budgets.memoryMb ?? Infinity;
    this.stallRuns = budgets.stallRuns ?? STALL_RUNS;
  }

  /** Every source with entry points left has stalled (and one has): coverage stopped growing. */
  allStalled(): boolean {
    return this.stalled.size > 0 && this.pending.every((e) => this.stalled.has(stallSource(e)));
  }

  /** Start where another order left off: its covered and called classes, its memory spent. */
  seed(prev: GreedyOrder): void {
    for (const c of prev.covered) this.covered.add(c);
    for (const c of prev.called) this.called.add(c);
    this.memorySpent = prev.memorySpent;
    if (this.memorySpent >= this.memoryMb) this.stopped = 'memory';
  }

  private readonly families = new Map<HarvestEntry, string>();
  private readonly sortKeys = new Map<
    HarvestEntry,
    { name: string; resolution: number; number: number; kind: number }
  >();

  /** What orders entry points of equal score and rank, from their names (fixed: read once). */
  private sortKey(e: HarvestEntry) {
    let k = this.sortKeys.get(e);
    if (!k) {
      const name = entryName(e);
      this.sortKeys.set(e, (k = { name, resolution: resolutionOf(name), number: numberOf(name), kind: kindOrder(e) }));
    }
    return k;
  }

  family(e: HarvestEntry): string {
    let f = this.families.get(e);
    // a test file or documented example is a family of its own (its own list step names it)
    if (f === undefined)
      this.families.set(
        e,
        (f =
          DOC_KINDS.has(e.kind) && e.family
            ? e.family
            : (e.reach.join(',') || `${e.module}.${e.qualname}`) +
              `|${nameStem(e)}` +
              (e.switch ? `|${e.switch}` : '')),
      );
    return f;
  }

  score(e: HarvestEntry): number {
    return e.reach.filter((c) => !this.called.has(c)).length;
  }

  /** The next entry points to run at once (at most `workers`, one per family, none of a
   *  family in `busy`: running now); a wrapper of a whole model waits for a provider
   *  (`haveModel`). With nothing to give, what is pending is dropped unless `keep` (steps
   *  still running may give a model or free a family). */
  next(workers: number, haveModel: boolean, keep = false, busy?: ReadonlySet<string>): HarvestEntry[] {
    if (this.stopped) return [];
    const started = (e: HarvestEntry) => ((this.runs.get(this.family(e)) ?? 0) > 0 ? 1 : 0);
    // scores change only between batches: once per entry, not per comparison
    const score = new Map(this.pending.map((e) => [e, this.score(e)]));
    this.pending.sort((a, b) => {
      const ka = this.sortKey(a);
      const kb = this.sortKey(b);
      return (
        started(a) - started(b) ||
        score.get(b)! - score.get(a)! ||
        a.rank - b.rank ||
        ka.resolution - kb.resolution ||
        ka.number - kb.number ||
        ka.kind - kb.kind ||
        ka.name.localeCompare(kb.name)
      );
    });
    const batch: HarvestEntry[] = [];
    const deferred: HarvestEntry[] = [];
    while (this.pending.length && batch.length < workers) {
      const e = this.pending.shift()!;
      if ((e.reach.length && score.get(e) === 0) || this.exhausted.has(this.family(e))) {
        this.skipped++;
        continue;
      }
      // a stalled source's entries stay pending: the phase stops on them (allStalled)
      if ((needsModel(e) && !haveModel) || this.stalled.has(stallSource(e))) {
        deferred.push(e);
        continue;
      }
      // variants reaching the same classes: one at a time (the next may be covered then)
      if (batch.some((b) => this.family(b) === this.family(e)) || busy?.has(this.family(e))) deferred.push(e);
      else batch.push(e);
    }
    this.pending.unshift(...deferred);
    for (const e of batch) this.runs.set(this.family(e), (this.runs.get(this.family(e)) ?? 0) + 1);
    // nothing can run and nothing is running (`keep` false): what is left never will
    if (!batch.length && !keep) {
      this.skipped += this.pending.length;
      this.pending.length = 0;
    }
    return batch;
  }

  /** Up to `n` more pending entries that `want` accepts and that would still cover a class
   *  without a called witness, taken out of the order (best score first; their families
   *  count as started): test files that share one pytest session with a file `next` gave. */
  take(want: (e: HarvestEntry) => boolean, n: number): HarvestEntry[] {
    if (n <= 0 || this.stopped) return [];
    const out: HarvestEntry[] = [];
    const score = new Map(this.pending.map((e) => [e, this.score(e)]));
    const ranked = this.pending
      .filter(
        (e) => want(e) && score.get(e)! > 0 && !this.exhausted.has(this.family(e)) && !this.stalled.has(stallSource(e)),
      )
      .sort((a, b) => score.get(b)! - score.get(a)! || this.sortKey(a).name.localeCompare(this.sortKey(b).name));
    for (const e of ranked.slice(0, n)) {
      this.pending.splice(this.pending.indexOf(e), 1);
      this.runs.set(this.family(e), (this.runs.get(this.family(e)) ?? 0) + 1);
      out.push(e);
    }
    return out;
  }

  /** Counts runs of `e`'s source without a gain (report's answer) since its last with one. */
  progress(e: HarvestEntry, gained: number): void {
    const src = stallSource(e);
    const n = gained > 0 ? 0 : (this.sinceGain.get(src) ?? 0) + 1;
    this.sinceGain.set(src, n);
    if (n >= this.stallRuns) this.stalled.add(src);
  }

  /** Entries `take` gave back unrun (the step's budget ended before any of their tests). */
  giveBack(entries: HarvestEntry[]): void {
    for (const e of entries) this.runs.set(this.family(e), (this.runs.get(this.family(e)) ?? 1) - 1);
    this.pending.push(...entries);
  }

  /** What a run of `e` gave: built or not, per class covered whether it was called, and
   *  its peak memory growth (MB; the repository's memory budget, once spent, stops the
   *  harvest: next() gives nothing more). */
  report(e: HarvestEntry, built: boolean, classes: Record<string, { called: boolean }>, memoryMb = 0): number {
    this.memorySpent += memoryMb;
    if (this.memorySpent >= this.memoryMb) this.stopped = 'memory';
    let gained = 0;
    for (const [cls, c] of Object.entries(classes)) {
      if (!this.covered.has(cls)) gained++;
      this.covered.add(cls);
      if (c.called) {
        if (!this.called.has(cls)) gained++;
        this.called.add(cls);
      }
    }
    const f = this.family(e);
    if (built && gained === 0) {
      const n = (this.idle.get(f) ?? 0) + 1;
      this.idle.set(f, n);
      if (n >= IDLE_RUNS) this.exhausted.add(f);
    }
    if (!built) {
      const n = (this.failures.get(f) ?? 0) + 1;
      this.failures.set(f, n);
      if (n >= 2) this.exhausted.add(f);
    }
    return gained;
  }
}

/**
 * A class whose witnesses have no recorded inputs (the model never called it: one of two
 * interchangeable implementations, chosen by a setting) takes the inputs recorded for a
 * sibling — a class of the same module whose forward has the same parameters — as a
 * witness of its own construction with those inputs (`inputsFrom`).
 */
export function borrowSiblingInputs(
  witnesses: Record<string, Witness[]>,
  forwardKeys: Record<string, string>,
  classes: string[],
  perClass: number,
): void {
  const byKey = new Map<string, string[]>();
  for (const c of classes) {
    const k = forwardKeys[c];
    if (k) byKey.set(k, [...(byKey.get(k) ?? []), c]);
  }
  for (const c of classes) {
    const own = witnesses[c] ?? [];
    const k = forwardKeys[c];
    if (!k || !own.length || own.some((w) => w.inputs)) continue;
    const donor = (byKey.get(k) ?? []).find(
      (d) => d !== c && (witnesses[d] ?? []).some((w) => w.inputs && !w.inputsFrom),
    );
    if (!donor) continue;
    const inputs = witnesses[donor].find((w) => w.inputs && !w.inputsFrom)!.inputs;
    witnesses[c] = mergeWitnesses(own, [{ ...own[0], inputs, inputsFrom: donor }], perClass);
  }
}

/** The architecture word of a model's own name: the leading letters of its registry key
 *  (`MODELS['coatnet_nano_224']` → `coatnet`, `maxvit_tiny_224` → `maxvit`), else of its
 *  qualified name. Registered models are named `<architecture>_<size>_<variant>`: two
 *  architectures built by one module (and reaching the same classes) are two families. */
export function nameStem(e: HarvestEntry): string {
  const key = e.kind === 'registry' ? /\[['"]([^'"]+)['"]\]/.exec(e.via ?? '')?.[1] : undefined;
  const own = key ?? e.qualname.split('.').pop() ?? e.qualname;
  return (/^[A-Za-z]+/.exec(own)?.[0] ?? own).toLowerCase();
}

/** The first number of a model's own name (`resnet18` → 18, the registry key of
 *  `MODELS['efficientnet_b3']`), else 0: within one size, smaller numbers first. */
export function numberOf(name: string): number {
  const key = /\[['"]([^'"]+)['"]\]/.exec(name)?.[1] ?? name.split('.').pop() ?? name;
  const m = /(\d+)/.exec(key);
  return m ? Number(m[1]) : 0;
}

/** The input resolution a model name ends with (`maxvit_tiny_tf_512` → 512), else 0. */
export function resolutionOf(name: string): number {
  const m = /[_-](\d{3,4})\b[^\d]*$/.exec(name);
  return m ? Number(m[1]) : 0;
}

function kindOrder(e: HarvestEntry): number {
  // builders of whole models first; then tests and the documented examples, which build
  // layers one by one; examples/ scripts (which may train) last
  return (
    { registry: 0, factory: 1, config: 2, snippet: 3, test: 4, doctest: 5, readme: 6, class: 7, example: 8 }[e.kind] ??
    9
  );
}

/** Witnesses with recorded inputs first, then by parameters; distinct ones only. */
export function mergeWitnesses(a: Witness[], b: Witness[], n: number): Witness[] {
  const seen = new Set<string>();
  const out: Witness[] = [];
  for (const w of [...a, ...b].sort((x, y) => Number(!x.inputs) - Number(!y.inputs) || x.params - y.params)) {
    const k = JSON.stringify([w.args, w.kwargs, w.inputs ?? null]);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(w);
  }
  return out.slice(0, n);
}
