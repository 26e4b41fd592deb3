// ValidatorPool: N harness workers (default: one per core), each a sandboxed Python
// process that imported torch once and forks a child per candidate, on the generic pool
// of util/pool.ts (queue, idle workers, watchdog, replacement, giving up when workers keep
// failing to start). Requests are queued and handed to idle workers; results come back
// as JSON lines. A worker that
// dies (killed by a candidate, crashed) is replaced and the request it was running is
// reported as `crash` in the stage that was running; a worker that stops answering is
// killed by a watchdog. A worker binds exactly the repository roots (read-only) of the
// requests it runs: a request whose roots differ runs on a worker restarted with its
// roots, and idle workers take the queued requests whose roots they already have first.
// Every request carries a random nonce the worker answers with; lines without it (or
// for another request) are ignored.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { normalizeDistName } from '../environment/names.js';
import { defaultEnvDir, envPython, lockDigestOf } from '../environment/pypi.js';
import { NnragError } from '../util/errors.js';
import { WorkerPool, type PoolWorker } from '../util/pool.js';
import { treeCpuMs } from '../util/procs.js';
import {
  sandboxCanRead,
  defaultLimits,
  environmentId,
  findBwrap,
  harnessSource,
  locatePython,
  probeInSandbox,
  workerLaunch,
  PROTOCOL_FDS,
  type Probe,
  type SandboxConfig,
} from './environment.js';
import { STAGES, type EnvironmentFacts, type Stage, type StageStatus } from '../records/validation.js';
import { USAGE_MAX_CHARS } from '../records/block.js';
import {
  DEFAULT_REQUIRED_STAGES,
  USAGE_PARTS,
  type Limits,
  type PoolOptions,
  type ValidationRequest,
  type ValidationResult,
} from './types.js';
import { interpreterPlaces, Places, storePlaces, type Place } from './places.js';
import { passesStages } from './record.js';

/** One JSON line of the harness (harness.py): untrusted, each field converted where it is
 *  read (String(), ?? defaults, finalize's checks). */
// biome-ignore lint/suspicious/noExplicitAny: the protocol boundary; fields are checked where read
type HarnessMessage = any;

const WORKER_START_TIMEOUT_MS = 120000;
/** A start may take longer than WORKER_START_TIMEOUT_MS of wall time only while it keeps
 *  computing (a loaded machine slows it down; a start blocked on nothing does not
 *  compute): at most this much CPU, and this many times the wall timeout. */
const WORKER_START_CPU_MS = 120000;
const WORKER_START_WALL_FACTOR = 10;
/** the window over which a start must have computed to be given more time, and the share
 *  of one CPU it must have used in it */
const WORKER_START_WINDOW_MS = 30000;
const WORKER_START_MIN_SHARE = 0.02;
const WORKER_START_CHECK_MS = 5000;

/** Why a worker that has not said it is ready should be stopped now, or null to wait
 *  longer. `cpu` holds readings of the worker's process tree CPU time as [wallMs, cpuMs]
 *  (oldest first; empty where /proc cannot be read, which keeps the plain wall timeout). */
export function startOverdue(wallMs: number, cpu: [number, number][]): string | null {
  const plain = `worker did not start within ${WORKER_START_TIMEOUT_MS} ms`;
  if (wallMs < WORKER_START_TIMEOUT_MS) return null;
  const last = cpu[cpu.length - 1];
  if (!last) return plain;
  if (last[1] >= WORKER_START_CPU_MS)
    return `worker did not start within ${WORKER_START_CPU_MS} ms of CPU time (${Math.round(wallMs)} ms of wall time)`;
  if (wallMs >= WORKER_START_TIMEOUT_MS * WORKER_START_WALL_FACTOR)
    return `worker did not start within ${WORKER_START_TIMEOUT_MS * WORKER_START_WALL_FACTOR} ms (still computing: the machine is overloaded)`;
  // the reading at least a window before the last one
  let base: [number, number] | undefined;
  for (let i = cpu.length - 1; i >= 0; i--)
    if (last[0] - cpu[i][0] >= WORKER_START_WINDOW_MS) {
      base = cpu[i];
      break;
    }
  if (!base) return null; // not a window of readings yet
  const share = (last[1] - base[1]) / (last[0] - base[0]);
  return share < WORKER_START_MIN_SHARE
    ? `${plain} (and it computed for ${Math.round(last[1] - base[1])} ms in the last ${Math.round(last[0] - base[0])} ms: it waits on something)`
    : null;
}
/** extra time the TS watchdog gives the harness beyond a request's wall-clock backstop */
const WATCHDOG_GRACE_MS = 10000;
/** A request's timeout is CPU time of its candidate; the harness ends a candidate that
 *  waits without computing by a wall-clock backstop of this many times the timeout plus
 *  BACKSTOP_SLACK_MS (procs.py WALL_PER_CPU, WALL_SLACK: keep them equal). */
export const BACKSTOP_PER_CPU = 6;
const BACKSTOP_SLACK_MS = 10000;
const MAX_CONSECUTIVE_START_FAILURES = 3;

interface Job {
  rid: number;
  /** 32 hex characters the worker's answers must carry (never given to a candidate) */
  nonce: string;
  req: ValidationRequest;
  resolve: (r: ValidationResult) => void;
  reject: (e: Error) => void;
  roots: string[];
  attempts: number;
  /** set when the original's import killed the worker twice before the candidate
   *  reported anything: the request runs once more without its original (why) */
  withoutOriginal?: string;
}

interface Resolved {
  python: string;
  probe: Probe | null;
  rootfs: string | null;
  sandbox: boolean;
  bwrap: string | null;
  limits: Limits;
}

class Worker implements PoolWorker<Job> {
  proc: ChildProcess | null = null;
  state: 'starting' | 'idle' | 'busy' | 'dead' = 'starting';
  roots: Set<string>;
  job: Job | null = null;
  progress: { running: Stage | null; stages: Partial<Record<Stage, StageStatus>> } = { running: null, stages: {} };
  info: { torch: string; python: string; executable: string } | null = null;
  private buf = '';
  private stderrTail = '';
  private requests: NodeJS.WritableStream | null = null;
  private scratchDir: string | undefined;
  private readyWaiters: { resolve: () => void; reject: (e: Error) => void } | null = null;
  /** start(), for ValidatorPool.start to wait on */
  started: Promise<void> = Promise.resolve();

  constructor(
    private pool: ValidatorPool,
    roots: Iterable<string>,
  ) {
    this.roots = new Set(roots);
  }

  start(): Promise<void> {
    const env = this.pool.env;
    let launch;
    try {
      launch = workerLaunch({
        python: env.python,
        probe: env.probe,
        rootfs: env.rootfs,
        roots: [...this.roots],
        limits: env.limits,
        sandbox: env.sandbox,
        bwrap: env.bwrap,
      });
    } catch (e) {
      // nothing was started: report it like a worker that died while starting
      this.state = 'dead';
      const err = e instanceof Error ? e : new Error(String(e));
      queueMicrotask(() => this.pool.workers.exited(this, err));
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    this.scratchDir = launch.scratchDir;
    this.state = 'starting';
    const proc = spawn(launch.command, launch.args, {
      stdio: launch.stdio,
      uid: launch.uid,
      gid: launch.gid,
      env: launch.env,
      cwd: '/',
      detached: launch.detached,
    });
    this.proc = proc;
    const fds = proc.stdio as unknown as (NodeJS.ReadWriteStream | null | undefined)[];
    const feed = (fd: number, data: string | Buffer | undefined) => {
      const s = fds[fd];
      if (!s || data === undefined) return;
      s.on('error', () => {});
      s.end(data);
    };
    feed(3, launch.stdio3);
    feed(6, launch.seccomp);
    const [reqFd, resFd] = PROTOCOL_FDS;
    this.requests = fds[reqFd] ?? null;
    this.requests?.on('error', () => {});
    const results = fds[resFd];
    results?.on('error', () => {});
    results?.setEncoding('utf8');
    results?.on('data', (d: string) => this.onData(d));
    proc.stderr!.setEncoding('utf8');
    proc.stderr!.on('data', (d: string) => {
      this.stderrTail = (this.stderrTail + d).slice(-4000);
    });
    const p = new Promise<void>((resolve, reject) => {
      this.readyWaiters = { resolve, reject };
    });
    // the start deadline: wall time, extended while the worker's processes compute
    // (startOverdue); readings of their CPU time every WORKER_START_CHECK_MS
    const t0 = performance.now();
    const readings: [number, number][] = [];
    let procReadable = true;
    const t = setInterval(() => {
      const wall = performance.now() - t0;
      if (procReadable && proc.pid !== undefined) {
        const cpu = treeCpuMs(proc.pid);
        if (cpu === null) procReadable = false;
        else {
          readings.push([wall, cpu]);
          if (readings.length > 64) readings.splice(0, readings.length - 64);
        }
      }
      const why = startOverdue(wall, procReadable ? readings : []);
      if (why) {
        clearInterval(t);
        this.fail(new Error(why));
      }
    }, WORKER_START_CHECK_MS);
    proc.on('error', (e) => {
      this.stderrTail += String(e);
      this.fail(e);
      // a process that could not be spawned emits no 'exit'
      if (proc.pid === undefined) {
        clearInterval(t);
        this.onExit(null, null);
      }
    });
    proc.on('exit', (code, signal) => {
      clearInterval(t);
      this.onExit(code, signal);
    });
    return p.finally(() => clearInterval(t));
  }

  private fail(e: Error) {
    if (this.readyWaiters) {
      const w = this.readyWaiters;
      this.readyWaiters = null;
      w.reject(e);
    }
    this.kill();
  }

  alive(): boolean {
    const p = this.proc;
    return !!p && p.exitCode === null && p.signalCode === null;
  }

  kill() {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    try {
      if (p.pid && this.scratchDir)
        process.kill(-p.pid, 'SIGKILL'); // detached process group (no-sandbox)
      else p.kill('SIGKILL');
    } catch {
      try {
        p.kill('SIGKILL');
      } catch {
        /* gone */
      }
    }
  }

  private onData(d: string) {
    this.buf += d;
    let nl: number;
    while ((nl = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (!line.trim()) continue;
      let msg: HarnessMessage;
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      this.onMessage(msg);
    }
    if (this.buf.length > 8 << 20) this.buf = '';
  }

  private onMessage(msg: HarnessMessage) {
    if (msg.type === 'ready' && this.state === 'starting') {
      this.info = { torch: String(msg.torch), python: String(msg.python), executable: String(msg.executable) };
      // the worker's CPU time until ready (its interpreter's start, torch's import)
      if (typeof msg.cpu_ms === 'number') this.pool.spawned.readyCpuMs += msg.cpu_ms;
      this.state = 'idle';
      if (this.readyWaiters) {
        const w = this.readyWaiters;
        this.readyWaiters = null;
        w.resolve();
      }
      this.pool.workers.ready(this);
      return;
    }
    const job = this.job;
    if (!job || msg.rid !== job.rid || msg.nonce !== job.nonce) return; // stale or forged line
    if (msg.type === 'progress') {
      this.progressSeen = true;
      if (msg.ev === 'start') {
        this.progress.running = msg.stage;
        // equivalence builds and runs two more copies: it has a budget of its own
        // (the harness extends its limits the same way, once)
        if (msg.stage === 'equivalence' && !this.eqExtended) {
          this.eqExtended = true;
          this.pool.workers.rearm(this);
        }
      } else {
        this.progress.stages[msg.stage as Stage] = msg.status;
        this.progress.running = null;
      }
      return;
    }
    if (msg.type === 'result') {
      this.finish(this.pool.toResult(job, msg));
    }
  }

  jobStart = 0;

  /** the candidate reported a stage (a crash after that is the candidate's) */
  progressSeen = false;

  run(job: Job) {
    this.progressSeen = false;
    this.jobStart = performance.now();
    this.state = 'busy';
    this.job = job;
    this.progress = { running: null, stages: {} };
    this.eqExtended = false;
    const timeout = this.pool.requestTimeout(job);
    const req = {
      source: job.req.source,
      className: job.req.className,
      callSites: job.req.callSites ?? [],
      dataSites: job.req.dataSites ?? [],
      original: job.withoutOriginal ? null : (job.req.original ?? null),
      namespace: job.withoutOriginal ? null : (job.req.namespace ?? null),
      copyNames: job.req.copyNames ?? [],
      usagePackages: job.req.usagePackages ?? [],
      witnesses: job.req.witnesses ?? [],
      witnessRepoTops: job.req.witnessRepoTops ?? [],
      providers: job.req.providers ?? {},
      harvest: job.req.harvest ?? null,
      timeoutMs: timeout,
      stages: this.pool.stagesToRun(job.req),
      ...(job.req.argumentsOnly ? { argumentsOnly: true } : {}),
    };
    this.send(job.nonce, { type: 'validate', rid: job.rid, req });
  }

  /** One framed request: nonce (32 hex characters), payload length (8 hex digits), JSON. */
  private send(nonce: string, msg: object) {
    const body = Buffer.from(JSON.stringify(msg), 'utf8');
    this.requests?.write(
      Buffer.concat([
        Buffer.from(nonce.padEnd(32, '0').slice(0, 32), 'ascii'),
        Buffer.from(body.length.toString(16).padStart(8, '0'), 'ascii'),
        body,
      ]),
    );
  }

  private eqExtended = false;

  private finish(r: ValidationResult) {
    this.state = 'idle';
    const job = this.pool.workers.finished(this);
    this.job = null;
    job?.resolve(r);
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null) {
    this.state = 'dead';
    if (this.scratchDir) rmSync(this.scratchDir, { recursive: true, force: true });
    const why = `validation worker ${signal ? `killed by ${signal}` : `exited with status ${code}`}`;
    if (this.readyWaiters) {
      const w = this.readyWaiters;
      this.readyWaiters = null;
      w.reject(
        new NnragError(
          `${why} before it was ready${this.stderrTail ? ': ' + this.stderrTail.trim().slice(-1500) : ''}`,
        ),
      );
    }
    this.pool.workers.exited(this, new Error(why));
    this.job = null;
  }

  /** The job this worker was running when it died (`timedOut`: killed by the watchdog):
   *  run once more elsewhere when the candidate had not reported anything yet (the worker
   *  may have been dead already when the job was handed over), else `crash` / `timeout`
   *  in the stage that was running. */
  lost(job: Job, why: { error: Error; timedOut: boolean }) {
    if (!this.progressSeen && !why.timedOut && job.attempts < 1) {
      job.attempts++;
      this.pool.workers.requeue(job);
      return;
    }
    if (!this.progressSeen && !why.timedOut && job.req.original && !job.withoutOriginal) {
      // dead twice before the copy's first stage started: what ran is the original's
      // import (in the repository's zygote), not the copy. The copy is validated without
      // it; namespace and equivalence are skipped with the reason, never a `parse` failure
      const reason = `not decided: the original's import killed the validation worker (${why.error.message})`;
      job.withoutOriginal = reason;
      const resolve = job.resolve;
      job.resolve = (r) => {
        if (r.stages.equivalence === 'skip') r.equivalence = { status: 'skip', reason };
        if (job.req.namespace && r.stages.namespace === 'skip')
          r.namespace = { checked: 0, reason, status: 'skip' } as ValidationResult['namespace'];
        resolve(r);
      };
      this.pool.workers.requeue(job);
      return;
    }
    const stages = Object.fromEntries(STAGES.map((s) => [s, this.progress.stages[s] ?? 'skip'])) as Record<
      Stage,
      StageStatus
    >;
    // the stage that was running, else the first after the last one reported (a stage
    // whose report was lost is never failed beside later stages that ran); null when
    // every stage reported and only the result line was lost
    let lastReported = -1;
    STAGES.forEach((s, i) => {
      if (this.progress.stages[s] !== undefined) lastReported = i;
    });
    const running: Stage | null = this.progress.running ?? STAGES[lastReported + 1] ?? null;
    if (running) stages[running] = 'fail';
    const r = this.pool.finalize(job, {
      stages,
      timings: {},
      category: why.timedOut ? 'timeout' : 'crash',
      error: why.timedOut
        ? `worker did not answer within the timeout; killed`
        : `${why.error.message} ${running ? 'while validating (candidate killed its worker?)' : 'after the last stage, before its result (candidate killed its worker?)'}`,
      stage: running,
      args: null,
      input_shapes: null,
      output_shapes: null,
      params: null,
      ms: Math.round((performance.now() - this.jobStart) * 1000) / 1000,
    });
    job.resolve(r);
  }

  /** Ask the worker to exit and kill it; resolves when its process is gone (at most 3 s). */
  close(): Promise<void> {
    const p = this.proc;
    if (!p || this.state === 'dead' || p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      try {
        this.send('', { type: 'exit' });
        this.requests?.end();
      } catch {
        /* closed */
      }
      this.kill();
      setTimeout(resolve, 3000).unref();
    });
  }
}

/** A validation environment as probed, before any worker starts (ValidatorPool.probe). */
export interface ProbedEnvironment {
  /** @internal */
  readonly env: Resolved;
  /** digest of everything the environment id covers except what only the workers report
   *  (torch's `__version__`, the Python version they run): with those remembered, the id
   *  is known without starting a worker (environmentIdOf) */
  readonly key: string;
}

/** What the workers of an environment reported when they started. */
export interface WorkerInfo {
  torch: string;
  python: string;
}

/** The environment id of a probed environment whose workers reported `info`; the same
 *  formula as ValidatorPool.start's. With `scope` 'harvest': the id its witness harvests
 *  are stored under (environment.ts environmentId; `dir` as there). */
export function environmentIdOf(
  p: ProbedEnvironment,
  info: WorkerInfo,
  scope: 'validation' | 'harvest' = 'validation',
  dir?: string,
): string {
  const env = p.env;
  return environmentId(
    {
      python: env.probe?.realpath ?? env.python,
      pythonVersion: info.python,
      torch: info.torch,
      sandbox: env.sandbox,
      rootfs: env.rootfs,
      probe: env.probe,
    },
    scope,
    dir,
  );
}

/** The facts of a probed environment whose workers reported `info` (types.ts
 *  EnvironmentFacts), without the per-block distributions (factsForBlock adds them). */
export function environmentFactsOf(p: ProbedEnvironment, info: WorkerInfo): EnvironmentFacts {
  const env = p.env;
  const probe = env.probe;
  const venv = probe && probe.prefix !== probe.base_prefix ? probe.prefix : undefined;
  const versions = `python ${info.python}, torch ${info.torch}`;
  const where = env.rootfs ?? venv;
  // a PyPI environment nnrag made: its lock (what the environment id is made of). It is
  // named by what it is, its lock and versions, not by its folder (issue 28: two workers
  // whose environments made from the same lock lie in different folders record the same
  // bytes): the lock is the digest of its nnrag-lock.txt, the exact distributions it
  // installed, wherever it lies. Any other interpreter is identified by its path (the
  // environment id reads it), and named by it.
  const lock = !env.rootfs && probe?.prefix ? lockDigestOf(probe.prefix) : null;
  if (lock)
    return {
      id: environmentIdOf(p, info),
      label: `PyPI environment, lock ${lock} (${versions})`,
      python: info.python,
      torch: info.torch,
      lock,
    };
  const facts: EnvironmentFacts = {
    id: environmentIdOf(p, info),
    label: where ? `${where} (${versions})` : `${env.python} (${versions})`,
    python: info.python,
    torch: info.torch,
    interpreter: env.python,
  };
  if (env.rootfs) facts.rootfs = env.rootfs;
  if (venv) facts.venv = venv;
  return facts;
}

/** The environment's facts for one block: the installed distributions (probe) that
 *  provide the block's top-level imports, torch always included. An import maps to the
 *  distribution named like it (PEP 503 normalisation) or, for the well-known mismatches
 *  (`PIL` → Pillow), the table `names` gives; an import no distribution provides is left
 *  out (export names it without a version). */
export function factsForBlock(
  facts: EnvironmentFacts,
  probe: Probe | null,
  imports: readonly string[],
  names: Record<string, string> = {},
): EnvironmentFacts {
  const norm = normalizeDistName;
  const { installed, stdlib } = probeIndex(probe);
  const out = new Set<string>();
  const unpinned: string[] = [];
  for (const top of new Set(['torch', ...imports.map((m) => m.split('.')[0]).filter((m) => m && !m.startsWith('.'))])) {
    const hit = installed.get(norm(top)) ?? (names[top] ? installed.get(norm(names[top])) : undefined);
    if (hit) out.add(hit);
    else if (top !== 'torch' && !stdlib.has(top) && top !== '__future__') unpinned.push(top);
  }
  // torch as the workers imported it (a distribution without dist-info, e.g. a source
  // build, is still tested)
  if (![...out].some((d) => d.startsWith('torch=='))) out.add(`torch==${facts.torch}`);
  const r: EnvironmentFacts = { ...facts, distributions: [...out].sort() };
  if (unpinned.length) r.unpinned = unpinned.sort();
  return r;
}

/** The top-level import names of `imports` that an installed distribution of the probe
 *  provides (named like it, PEP 503 normalisation, or by the table `names`), torch and the
 *  standard library left out, each once, sorted: the packages a usage line may import a
 *  public name from (the request's `usagePackages`, snippet.py installed_spelling). */
export function installedImports(
  probe: Probe | null,
  imports: readonly string[],
  names: Record<string, string> = {},
): string[] {
  const norm = normalizeDistName;
  const { installed, stdlib } = probeIndex(probe);
  const out = new Set<string>();
  for (const top of imports.map((m) => m.split('.')[0])) {
    if (!top || top === 'torch' || top === '__future__' || stdlib.has(top) || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(top))
      continue;
    if (installed.has(norm(top)) || (names[top] && installed.has(norm(names[top])))) out.add(top);
  }
  return [...out].sort();
}

/** A probe's installed distributions by PEP 503 name and its standard-library names, built
 *  once per probe (factsForBlock runs for every validated block). */
const probeIndexes = new WeakMap<Probe, { installed: Map<string, string>; stdlib: Set<string> }>();
function probeIndex(probe: Probe | null): { installed: Map<string, string>; stdlib: Set<string> } {
  const known = probe && probeIndexes.get(probe);
  if (known) return known;
  const installed = new Map<string, string>();
  for (const d of probe?.distributions ?? []) {
    const i = d.indexOf('==');
    if (i > 0) installed.set(normalizeDistName(d.slice(0, i)), d);
  }
  const out = { installed, stdlib: new Set(probe?.stdlib ?? []) };
  if (probe) probeIndexes.set(probe, out);
  return out;
}

export class ValidatorPool {
  readonly env: Resolved;
  envId = '';
  /** the id its witness harvests are stored under: envId's environment with only the
   *  harness modules a harvest runs (environment.ts environmentId, scope 'harvest') */
  harvestEnvId = '';
  /** what this environment is (EnvironmentFacts without per-block distributions) */
  facts: EnvironmentFacts | null = null;
  /** ProbedEnvironment.key of this pool's environment */
  envKey = '';
  readonly warnings: string[] = [];
  /** milliseconds from start() to every worker ready */
  startMs = 0;
  /** where start time went: finding the interpreter, then the workers importing torch */
  startBreakdown = { environmentMs: 0, workersMs: 0 };
  torch = '';
  pythonVersion = '';
  /** worker processes started (the first ones, replacements of dead workers, restarts for
   *  other repository roots), and the wall time until each was ready (summed) */
  readonly spawned = { starts: 0, restarts: 0, readyMs: 0, readyCpuMs: 0 };
  /** @internal the generic pool (util/pool.ts) that queues requests and runs the workers */
  readonly workers: WorkerPool<Job, Worker>;
  private rid = 0;
  private roots = new Set<string>();
  private size: number;
  /** the folders a result's texts name by what they are (places.ts): the interpreter's,
   *  and the repositories' checkouts the caller named (`nameRepositories`) */
  private placeList: Place[] = [];
  private places: Places;
  /** the folders a result's values (`args`, the usage line) are named by: those the store
   *  knows (`storePlaces`, as witness/store.ts names a harvest), which every reader of a
   *  stored value can map back; not the interpreter's */
  private valuePlaces = new Places([]);

  private constructor(env: Resolved, size: number, roots: string[]) {
    this.env = env;
    this.size = size;
    this.placeList = interpreterPlaces(env.probe?.paths, env.probe?.path);
    this.places = new Places(this.placeList);
    for (const r of roots) this.roots.add(path.resolve(r));
    this.workers = new WorkerPool<Job, Worker>(
      {
        // a worker binds exactly the roots of the requests it runs (no repository sees
        // another's files): a replacement keeps the roots of the one it replaces, a
        // worker restarted for a request gets that request's roots
        spawn: (prev, job) => {
          const w = new Worker(this, job ? job.roots : prev ? prev.roots : this.roots);
          const t = performance.now();
          if (prev) this.spawned.restarts++;
          else this.spawned.starts++;
          w.started = w.start();
          w.started.then(
            () => void (this.spawned.readyMs += performance.now() - t),
            () => {
              /* its exit is reported to the pool */
            },
          );
          return w;
        },
        lost: (job, w, why) => w.lost(job, why),
        reject: (job, why) =>
          job.reject(
            why === 'closed'
              ? new NnragError('validator pool closed')
              : new NnragError('validation workers keep failing to start'),
          ),
        // idle workers take the queued requests whose roots they already have first,
        // else the worker is restarted with the roots of the first queued request no
        // other worker has (a repository with few requests gets one worker, not a start
        // and a repository import in each), else of the request at the head
        pick: (w, queue) =>
          nextRequest(
            w.roots,
            this.workers
              .workers()
              .filter((o) => o !== w && o.alive())
              .map((o) => o.roots),
            queue,
          ),
        fits: (w, job) => sameRoots(job.roots, w.roots),
        timeoutMs: (job) => this.requestTimeout(job) * BACKSTOP_PER_CPU + BACKSTOP_SLACK_MS + WATCHDOG_GRACE_MS,
      },
      { size, maxStartFailures: MAX_CONSECUTIVE_START_FAILURES },
    );
  }

  /** @internal the CPU time a request's candidate gets in the harness (the TS watchdog
   *  waits for its wall-clock backstop and a grace) */
  requestTimeout(job: Job): number {
    return job.req.timeoutMs ?? this.env.limits.timeoutMs;
  }

  /** Resolve the environment (find the interpreter, probe it; no worker starts): about
   *  half a second, where starting the workers (each imports torch) takes seconds. */
  static async probe(opts: PoolOptions = {}): Promise<ProbedEnvironment> {
    const env = await resolveEnvironment(opts);
    const h = createHash('sha256');
    h.update(
      JSON.stringify({
        python: env.python,
        probe: env.probe,
        sandbox: env.sandbox,
        rootfs: env.rootfs,
        harness: harnessSource().hash,
      }),
    );
    return { env, key: h.digest('hex').slice(0, 32) };
  }

  /** Resolve the environment (or take one probed before) and start the workers;
   *  resolves when all are ready. */
  static async start(opts: PoolOptions = {}, probed?: ProbedEnvironment): Promise<ValidatorPool> {
    const t0 = performance.now();
    const p = probed ?? (await ValidatorPool.probe(opts));
    const env = p.env;
    const tEnv = performance.now();
    const warnings: string[] = [];
    if (!env.sandbox) {
      const w =
        'running repository code WITHOUT a sandbox (--no-sandbox): only rlimits and timeouts apply; candidates can read your files and use the network';
      warnings.push(w);
      opts.onWarning?.(w);
    }
    const size = Math.max(1, opts.workers ?? os.availableParallelism?.() ?? os.cpus().length);
    const pool = new ValidatorPool(env, size, opts.roots ?? []);
    pool.warnings.push(...warnings);
    try {
      await Promise.all(pool.workers.warm(size).map((w) => w.started));
    } catch (e) {
      await pool.close();
      const msg = e instanceof Error ? e.message : String(e);
      const hint = env.sandbox
        ? ' (is bubblewrap allowed to create namespaces here? `nnrag doctor` checks; --no-sandbox runs without it)'
        : '';
      throw new NnragError(`cannot start the validation workers with ${env.python}: ${msg}${hint}`);
    }
    const w0 = pool.workers.workers()[0].info!;
    pool.torch = w0.torch;
    pool.pythonVersion = w0.python;
    pool.envId = environmentIdOf(p, { torch: w0.torch, python: w0.python });
    pool.harvestEnvId = environmentIdOf(p, { torch: w0.torch, python: w0.python }, 'harvest');
    pool.facts = environmentFactsOf(p, { torch: w0.torch, python: w0.python });
    pool.envKey = p.key;
    pool.startMs = performance.now() - t0;
    pool.startBreakdown = { environmentMs: tEnv - t0, workersMs: performance.now() - tEnv };
    return pool;
  }

  /** number of workers (requests that run at once) */
  get workerCount(): number {
    return this.size;
  }

  get limits(): Limits {
    return this.env.limits;
  }

  /** Name these repositories' checkouts by their names in every result's texts and values
   *  from now on (`<owner/name>/path`, places.ts), and the store's folder and nnrag's home
   *  (`storePlaces`); the pipeline gives its workspace's. */
  nameRepositories(repos: readonly { name: string; root: string }[], storeDir?: string): void {
    const known = new Set(this.placeList.map((p) => `${p.dir}\0${p.name}`));
    const stored = storePlaces(repos, storeDir);
    const add = stored.filter((p) => !known.has(`${p.dir}\0${p.name}`));
    if (!add.length) return;
    this.placeList = [...this.placeList, ...add];
    this.places = new Places(this.placeList);
    this.valuePlaces = new Places(stored);
  }

  /** Validate one block (queued until a worker is free). Never rejects for candidate failures. */
  validate(req: ValidationRequest): Promise<ValidationResult> {
    return this.enqueue(req);
  }

  /** One witness-harvest step (`req.harvest`, see witness/harvest.ts), queued like a
   *  validation; the step's answer is in the result's `harvest`. */
  harvestStep(req: ValidationRequest & { harvest: Record<string, unknown> }): Promise<ValidationResult> {
    return this.enqueue(req);
  }

  private enqueue(req: ValidationRequest): Promise<ValidationResult> {
    if (this.workers.closed) return Promise.reject(new NnragError('validator pool is closed'));
    if (this.workers.broken) return Promise.reject(new NnragError('validation workers keep failing to start'));
    return new Promise((resolve, reject) => {
      const roots = requestRoots(req);
      this.workers.submit({
        rid: ++this.rid,
        nonce: randomBytes(16).toString('hex'),
        req,
        resolve,
        reject,
        roots,
        attempts: 0,
      });
    });
  }

  /** Validate many; `onResult` is called as each finishes. Results are in request order. */
  async validateMany(
    reqs: ValidationRequest[],
    onResult?: (r: ValidationResult, index: number) => void,
  ): Promise<ValidationResult[]> {
    return Promise.all(
      reqs.map((r, i) =>
        this.validate(r).then((res) => {
          onResult?.(res, i);
          return res;
        }),
      ),
    );
  }

  /** @internal every stage runs (equivalence reports `skip` without an original);
   *  requiredStages only decides `ok` */
  stagesToRun(_req: ValidationRequest): Stage[] {
    return [...STAGES];
  }

  /** @internal convert a harness result line */
  toResult(job: Job, msg: HarnessMessage): ValidationResult {
    return this.finalize(job, {
      stages: msg.stages,
      timings: msg.timings ?? {},
      category: msg.category ?? null,
      error: msg.error ?? null,
      stage: msg.stage ?? null,
      args: msg.args ?? null,
      input_shapes: msg.input_shapes ?? null,
      output_shapes: msg.output_shapes ?? null,
      params: msg.params ?? null,
      layers: msg.layers,
      // a snippet is recorded whole or not at all (a cut one would not parse)
      usage: typeof msg.usage === 'string' && msg.usage.length <= USAGE_MAX_CHARS ? msg.usage : undefined,
      usageCheck:
        msg.usageCheck === 'ran' || msg.usageCheck === 'values' || msg.usageCheck === 'seeded'
          ? msg.usageCheck
          : undefined,
      usageDraws: typeof msg.usageDraws === 'string' ? msg.usageDraws.slice(0, 300) : undefined,
      usageSkipped: typeof msg.usageSkipped === 'string' ? msg.usageSkipped.slice(0, 200) : undefined,
      usageNeeds: usageNeedsOf(msg.usageNeeds),
      argumentsSource: typeof msg.argumentsSource === 'string' ? msg.argumentsSource : undefined,
      argumentsOrigin: typeof msg.argumentsOrigin === 'string' ? msg.argumentsOrigin.slice(0, 500) : undefined,
      harvest: msg.harvest,
      witnessSkipped: Array.isArray(msg.witnessSkipped) ? msg.witnessSkipped.map(String).slice(0, 3) : undefined,
      providersWanted: Array.isArray(msg.providersWanted) ? msg.providersWanted.map(String) : undefined,
      // (an arguments-only request that went on as the whole one: types.ts `argumentsOnly`)
      whole: job.req.argumentsOnly && msg.whole === true ? true : undefined,
      equivalence: msg.equivalence,
      namespace: msg.namespace,
      traceback: msg.traceback,
      output: msg.output,
      ms: msg.ms ?? 0,
      zygoteMs: typeof msg.zygoteMs === 'number' ? msg.zygoteMs : undefined,
      zygoteSibling: msg.zygoteSibling === true ? true : undefined,
      usageMs: typeof msg.usageMs === 'number' ? msg.usageMs : undefined,
      cpuTimings: msg.cpuTimings && typeof msg.cpuTimings === 'object' ? msg.cpuTimings : undefined,
      usageCpuMs: typeof msg.usageCpuMs === 'number' ? msg.usageCpuMs : undefined,
      zygoteCpuMs: typeof msg.zygoteCpuMs === 'number' ? msg.zygoteCpuMs : undefined,
      outside: outsideOf(msg.outside),
      usageParts: usagePartsOf(msg.usageParts),
    });
  }

  /** @internal */
  finalize(job: Job, r: Omit<ValidationResult, 'id' | 'ok' | 'envId'>): ValidationResult {
    const required = job.req.requiredStages ?? DEFAULT_REQUIRED_STAGES;
    // a crash or timeout after the last stage reported, before the result (stage null):
    // nothing says the block finished, so it is never a pass
    const ok = passesStages(r, required) && !((r.category === 'crash' || r.category === 'timeout') && r.stage === null);
    const out: ValidationResult = { id: job.req.id, ok, ...r, envId: this.envId };
    this.namePlaces(out);
    // the interpreter by its path only where its path is what identifies it (not a PyPI
    // environment nnrag made, which its facts name by its lock)
    if (!this.env.rootfs && !this.facts?.lock) out.python = this.env.python;
    if (this.facts) out.environment = this.facts;
    for (const k of [
      'layers',
      'equivalence',
      'namespace',
      'traceback',
      'output',
      'usage',
      'usageCheck',
      'usageDraws',
      'usageSkipped',
      'usageNeeds',
      'argumentsSource',
      'argumentsOrigin',
      'harvest',
      'witnessSkipped',
      'providersWanted',
      'whole',
      'zygoteMs',
      'zygoteSibling',
      'usageMs',
      'cpuTimings',
      'usageCpuMs',
      'zygoteCpuMs',
      'outside',
      'usageParts',
    ] as const)
      if (out[k] === undefined) delete out[k];
    return out;
  }

  /** @internal Every text of a result that reports what happened with its folders named
   *  by what they are and harness frames without line numbers (places.ts), and the values
   *  it computed with (`args`, the usage line) with their folders named (a configuration
   *  file's path under a checkout: `<owner/name>/models/x.yaml`): the same validation
   *  stores the same bytes on any machine and in any folder. A harvest's answer is named
   *  where it is stored (witness/store.ts); what uses a value again maps it back
   *  (`Places.localValue`). */
  namePlaces(r: ValidationResult): void {
    const n = this.places;
    if (r.args) r.args = this.valuePlaces.nameValue(r.args);
    if (typeof r.usage === 'string') r.usage = this.valuePlaces.nameFolders(r.usage);
    r.error = n.name(r.error) ?? null;
    if (r.traceback !== undefined) r.traceback = n.name(r.traceback);
    if (r.output !== undefined) r.output = n.name(r.output);
    if (r.usageSkipped !== undefined) r.usageSkipped = n.name(r.usageSkipped);
    if (r.witnessSkipped) r.witnessSkipped = r.witnessSkipped.map((w) => n.name(w));
    if (r.equivalence?.reason !== undefined) r.equivalence = { ...r.equivalence, reason: n.name(r.equivalence.reason) };
    if (r.namespace) {
      const ns = { ...r.namespace };
      if (ns.reason !== undefined) ns.reason = n.name(ns.reason);
      // what a copied name denotes in the copy and in the original (a value's repr)
      if (ns.mismatches)
        ns.mismatches = ns.mismatches.map((m) => ({ ...m, copy: n.name(m.copy), original: n.name(m.original) }));
      r.namespace = ns;
    }
  }

  /** Stop every worker; queued requests are rejected. */
  async close(): Promise<void> {
    await this.workers.close();
  }

  /** @internal for tests: the OS pids of the worker processes */
  workerPids(): number[] {
    return this.workers.workers().map((w) => w.proc?.pid ?? -1);
  }
}

/** A result's `outside` parts (worker.py OutsideClock) as sent: part -> [wall ms, CPU ms]. */
function outsideOf(v: unknown): Record<string, [number, number]> | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const out: Record<string, [number, number]> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>))
    if (Array.isArray(x) && typeof x[0] === 'number' && typeof x[1] === 'number') out[k.slice(0, 60)] = [x[0], x[1]];
  return Object.keys(out).length ? out : undefined;
}

/** The repository roots a worker binds to run `req` (its original's sys.path, else its
 *  universe), sorted. Roots the sandbox user cannot read would make bwrap fail at start:
 *  they are left out (the equivalence stage then reports that the original does not
 *  import). A pool started with the roots of its first request (`PoolOptions.roots`)
 *  runs it without restarting a worker. */
export function requestRoots(req: Pick<ValidationRequest, 'original' | 'universe'>): string[] {
  const roots = (req.original?.sysPath ?? req.universe ?? [])
    .filter((p) => path.isAbsolute(p))
    .map((p) => path.resolve(p))
    .filter((p) => sandboxCanRead(p));
  return [...new Set(roots)].sort();
}

/** The queued request an idle worker with roots `own` takes next: the first with its
 *  roots; else (the worker is restarted for it) the first whose roots none of the
 *  `others` workers has, so that a repository with few requests is run by one worker
 *  rather than restarted into by each (a worker start and the repository's import in
 *  each, issue 27) while the other goes on with the next repository; else the head. */
export function nextRequest(own: Set<string>, others: Set<string>[], queue: readonly { roots: string[] }[]): number {
  const mine = queue.findIndex((j) => sameRoots(j.roots, own));
  if (mine >= 0) return mine;
  const unserved = queue.findIndex((j) => !others.some((o) => sameRoots(j.roots, o)));
  return unserved >= 0 ? unserved : 0;
}

function sameRoots(a: string[], b: Set<string>): boolean {
  return a.length === b.size && a.every((r) => b.has(r));
}

/** Interpreter, sandbox and limits for a pool (shared with doctor). */
export async function resolveEnvironment(opts: PoolOptions): Promise<Resolved> {
  const limits = defaultLimits(opts);
  const sandbox = opts.sandbox !== false;
  const rootfs = opts.rootfs ? path.resolve(opts.rootfs) : null;
  const bw = await findBwrap();
  if (sandbox && !bw) {
    throw new NnragError(
      'bubblewrap (bwrap) is not installed: refusing to run repository code without a sandbox. Install bubblewrap, or pass --no-sandbox to run with limits and timeouts only.',
    );
  }
  if (rootfs) {
    if (!bw) throw new NnragError('--rootfs needs bubblewrap (bwrap) to enter the root filesystem');
    if (!sandbox) throw new NnragError('--rootfs cannot be combined with --no-sandbox');
    const python = opts.python ?? process.env.NNRAG_PYTHON ?? '/usr/bin/python3';
    const cfg: SandboxConfig & { bwrap: string } = { python, probe: null, rootfs, roots: [], limits, bwrap: bw.path };
    const { probe, error } = await probeInSandbox(cfg, false);
    if (!probe) throw new NnragError(`cannot run ${python} inside ${rootfs}: ${error}`);
    if (!probe.torch_spec)
      throw new NnragError(`${python} inside ${rootfs} has no torch (install python3-torch there; see createRootfs)`);
    return { python, probe, rootfs, sandbox, bwrap: bw.path, limits };
  }
  if (opts.env && !opts.python && !existsSync(envPython(opts.env)))
    throw new NnragError(
      `--env ${opts.env}: no virtual environment there (make one with: nnrag env create ${opts.env} --store S)`,
    );
  const explicit = opts.python ?? (opts.env ? envPython(opts.env) : undefined);
  const loc = await locatePython(explicit, true);
  const named = explicit ?? process.env.NNRAG_PYTHON;
  if (!loc && named)
    throw new NnragError(`cannot run the Python interpreter ${named}${explicit ? '' : ' (from NNRAG_PYTHON)'}`);
  if (!loc)
    throw new NnragError(
      `no Python with torch found: make a PyPI environment (nnrag env create ${defaultEnvDir()}, or run scripts/setup.sh), or pass --env DIR / --python PY, or set NNRAG_PYTHON`,
    );
  if (loc.torchError) throw new NnragError(`${loc.python} cannot import torch: ${loc.torchError}`);
  return { python: loc.python, probe: loc.probe, rootfs: null, sandbox, bwrap: bw?.path ?? null, limits };
}

/** The harness's `usageParts` (snippet.py run_snippet): the parts of USAGE_PARTS given
 *  as numbers; undefined when none is. */
function usagePartsOf(v: unknown): ValidationResult['usageParts'] {
  if (!v || typeof v !== 'object') return undefined;
  const out: NonNullable<ValidationResult['usageParts']> = {};
  for (const k of USAGE_PARTS) {
    const p = (v as Record<string, unknown>)[k] as Record<string, unknown> | undefined;
    if (p && typeof p.ms === 'number' && typeof p.cpuMs === 'number' && typeof p.n === 'number')
      out[k] = { ms: p.ms, cpuMs: p.cpuMs, n: p.n };
  }
  return Object.keys(out).length ? out : undefined;
}

/** The harness's `usageNeeds` (snippet.py usage_needs): `[module, qualname]` pairs of
 *  dotted identifiers, at most 8; anything else is dropped. */
function usageNeedsOf(v: unknown): [string, string][] | undefined {
  if (!Array.isArray(v)) return undefined;
  const dotted = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
  const out = v
    .filter(
      (x): x is [string, string] =>
        Array.isArray(x) &&
        x.length === 2 &&
        typeof x[0] === 'string' &&
        typeof x[1] === 'string' &&
        dotted.test(x[0]) &&
        dotted.test(x[1]),
    )
    .slice(0, 8)
    .map(([m, q]) => [m, q] as [string, string]);
  return out.length ? out : undefined;
}
