// Isolation between the blocks of one validation batch, in the real bubblewrap sandbox
// with one worker (every request goes through the same sandbox): a forger that tries to
// take the result channel (pidfd_getfd, /proc/PID/fd, ptrace, process_vm_readv), a
// /dev/shm filler, a scratch-name squatter, a repository whose import starts a daemon
// in the shared zygote, one whose import starts a thread forging results, and a block of one repository reading another's untracked
// secrets run among honest blocks: every honest block validates, nothing hostile
// passes, no secret reaches a result, host shared memory does not grow, and nothing is
// left running.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  ValidatorPool,
  forStorage,
  toRecord,
  MAX_STORED_ERROR,
  type ValidationRequest,
  type ValidationResult,
} from '../../src/validate/index.js';
import { fixture, tempDir } from '../helpers.js';
import { cannotValidate, processTree as tree, request, validateFixture } from './common.js';

const skip = await cannotValidate(true);

function shmemKb(): number {
  const m = /^Shmem:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) : 0;
}

function gitRepo(dir: string, tracked: string[]) {
  execFileSync('git', ['init', '-q', dir]);
  execFileSync('git', ['-C', dir, 'add', ...tracked]);
}

describe('isolation between the blocks of one batch', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  const results = new Map<string, ValidationResult>();
  const tag = `${process.pid}-${Date.now()}`;
  const secrets = [`ENV-A-${tag}`, `GIT-A-${tag}`, `ENV-Z-${tag}`, `GIT-Z-${tag}`];
  const honest: string[] = [];
  let shmGrowthMb = 0;
  let workerTree: { pid: number; depth: number }[] = [];

  before(async () => {
    const base = tempDir('nnrag-isolation-');
    chmodSync(base, 0o755); // the sandbox runs as nobody when the tests run as root
    const repoA = path.join(base, 'a');
    const repoZ = path.join(base, 'z');
    const repoD = path.join(base, 'd');
    const repoT = path.join(base, 't');
    cpSync(fixture('validate', 'isolation', 'a_repo'), repoA, { recursive: true });
    cpSync(fixture('validate', 'isolation', 'a_repo'), repoZ, { recursive: true });
    cpSync(fixture('validate', 'isolation', 'daemon_repo'), repoD, { recursive: true });
    cpSync(fixture('validate', 'isolation', 'thread_repo'), repoT, { recursive: true });
    gitRepo(repoA, ['apkg']);
    gitRepo(repoZ, ['apkg']);
    writeFileSync(path.join(repoA, '.env'), `TOKEN=${secrets[0]}\n`);
    execFileSync('git', ['-C', repoA, 'config', 'nnrag.token', secrets[1]]);
    writeFileSync(path.join(repoZ, '.env'), `TOKEN=${secrets[2]}\n`);
    execFileSync('git', ['-C', repoZ, 'config', 'nnrag.token', secrets[3]]);

    const iso = (f: string) => validateFixture('isolation', f);
    const blockOf = (repo: string, pkg: string, cls: string, id: string): ValidationRequest => ({
      id,
      source: readFileSync(path.join(repo, pkg, 'blocks.py'), 'utf8'),
      className: cls,
      original: { module: `${pkg}.blocks`, className: cls, sysPath: [repo] },
    });
    const good = ['mlp_defaults.py', 'conv_block.py', 'attention.py', 'embed.py', 'two_inputs.py'];
    let n = 0;
    const plain = () => {
      const r = request('good', good[n % good.length]);
      r.id = `honest-${n++}/${r.id}`;
      honest.push(r.id);
      return r;
    };
    const reqs: ValidationRequest[] = [plain()];
    for (const f of ['forge_pidfd.py', 'forge_ptrace.py', 'shm_filler.py', 'scratch_squatter.py']) {
      reqs.push({ id: `hostile/${f}`, source: iso(f), className: 'Hostile' });
      reqs.push(plain(), plain(), plain());
    }
    // repository A's own block binds A (with its untracked .env); then a block of
    // repository Z tries to read A's and its own secrets
    reqs.push(blockOf(repoA, 'apkg', 'ABlock', 'honest-a'));
    honest.push('honest-a');
    const paths = [
      path.join(repoA, '.env'),
      path.join(repoA, '.git', 'config'),
      path.join(repoZ, '.env'),
      path.join(repoZ, '.git', 'config'),
    ];
    reqs.push({
      id: 'hostile/reader.py',
      source: iso('reader.py').replace('__PATHS__', JSON.stringify(paths)),
      className: 'Hostile',
      original: { module: 'apkg.blocks', className: 'ABlock', sysPath: [repoZ] },
    });
    reqs.push(blockOf(repoZ, 'apkg', 'ABlock', 'honest-z'));
    honest.push('honest-z');
    // a repository whose import starts a daemon in the shared zygote
    for (let i = 0; i < 4; i++) {
      reqs.push(blockOf(repoD, 'dpkg', 'DBlock', `honest-d-${i}`));
      honest.push(`honest-d-${i}`);
    }
    // a repository whose import starts a thread writing forged results everywhere: its
    // zygote is unclean and not used; what it does to its own blocks is its own business
    for (let i = 0; i < 2; i++) reqs.push(blockOf(repoT, 'tpkg', 'TBlock', `thread-repo-${i}`));
    reqs.push(plain(), blockOf(repoA, 'apkg', 'ABlock', 'honest-a2'));
    honest.push('honest-a2');

    const shm0 = shmemKb();
    pool = await ValidatorPool.start({ workers: 1 });
    // sampled as each result arrives (a worker restarted later would free what an
    // earlier candidate left, and hide it from a measurement at the end only)
    let peak = 0;
    for (const r of await pool.validateMany(reqs, () => (peak = Math.max(peak, shmemKb() - shm0))))
      results.set(r.id, r);
    shmGrowthMb = Math.max(peak, shmemKb() - shm0) / 1024;
    await new Promise((r) => setTimeout(r, 300));
    workerTree = pool.workerPids().flatMap((p) => tree(p));
  });

  after(async () => {
    await pool?.close();
  });

  it('validates every honest block of the batch', () => {
    for (const id of honest) {
      const r = results.get(id)!;
      assert.ok(r, id);
      assert.equal(r.ok, true, `${id}: ${r.stage} ${r.category} ${r.error}`);
      if (id.startsWith('honest-') && !id.includes('/'))
        assert.equal(r.equivalence?.status, 'pass', `${id}: ${JSON.stringify(r.equivalence)}`);
    }
  });

  it('passes nothing hostile', () => {
    for (const [id, r] of results) if (id.startsWith('hostile/')) assert.equal(r.ok, false, id);
    for (const r of results.values())
      if (!r.id.startsWith('thread-repo-')) assert.ok(!String(r.error).includes('FORGED'), `${r.id}: ${r.error}`);
  });

  it('gives candidates no way to another process: no descriptor, no ptrace, no memory', () => {
    assert.match(results.get('hostile/forge_pidfd.py')!.error!, /pidfd_getfd took \[\]/);
    assert.match(results.get('hostile/forge_ptrace.py')!.error!, /ptrace attached to \[\]; process_vm_readv read \[\]/);
  });

  it('lets no block read another repository, or its own .git and untracked files', () => {
    const reader = results.get('hostile/reader.py')!;
    assert.equal(reader.category, 'runtime-error', `${reader.error}`);
    assert.ok(!/=/.test(reader.error!.replace(/^[^:]*: /, '').replace(/\w+Error/g, '')), reader.error!);
    for (const r of results.values())
      for (const s of secrets) assert.ok(!JSON.stringify(r).includes(s), `${r.id} leaked ${s}`);
  });

  it('keeps shared memory bounded and leaves nothing in the sandbox', () => {
    // the filler ran: /dev is read-only, /dev/shm and /tmp stopped it at their size
    const m = /'\/dev\/shm': (\d+), '\/dev': (\d+), '\/tmp': (\d+)/.exec(
      results.get('hostile/shm_filler.py')!.error ?? '',
    );
    assert.ok(m, results.get('hostile/shm_filler.py')!.error!);
    assert.ok(Number(m[1]) <= 64 && Number(m[2]) === 0 && Number(m[1]) + Number(m[3]) <= 256, m[0]);
    assert.ok(shmGrowthMb < 300, `host shared memory grew by ${shmGrowthMb.toFixed(0)} MB`);
    // bwrap → its init → the worker → at most its zygotes, which have no children
    assert.ok(
      workerTree.every((p) => p.depth <= 3),
      JSON.stringify(workerTree),
    );
  });

  it('leaves no process behind once the pool is closed', async () => {
    const pids = pool.workerPids();
    await pool.close();
    await new Promise((r) => setTimeout(r, 300));
    for (const p of pids) assert.deepEqual(tree(p), [], `worker ${p} left processes`);
    assert.deepEqual(
      tree(process.pid).filter((p) => p.depth > 0),
      [],
      'processes left below the test',
    );
  });
});

describe('what a stored record keeps of a failure', () => {
  it('keeps no output and no source lines, and caps the error message', () => {
    const r = {
      id: 'x',
      ok: false,
      stages: {
        parse: 'pass',
        compile: 'pass',
        import: 'fail',
        instantiate: 'skip',
        forward: 'skip',
        equivalence: 'skip',
      },
      timings: {},
      category: 'runtime-error',
      error: 'RuntimeError: ' + 'S'.repeat(5000),
      stage: 'import',
      args: null,
      input_shapes: null,
      output_shapes: null,
      params: null,
      envId: 'e',
      ms: 1,
      output: 'TOKEN=printed-secret',
      traceback:
        'Traceback (most recent call last):\n  File "/r/m.py", line 3, in <module>\n    secret = "quoted-source-line"\nRuntimeError: boom',
    } as ValidationResult;
    const s = forStorage(r);
    assert.equal(s.output, undefined);
    assert.ok(!s.traceback!.includes('quoted-source-line'), s.traceback);
    assert.match(s.traceback!, /File "\/r\/m.py", line 3/);
    assert.match(s.traceback!, /RuntimeError: boom$/);
    assert.ok(s.error!.length <= MAX_STORED_ERROR + 1);
    assert.ok(toRecord(r).error!.length <= MAX_STORED_ERROR + 1);
  });

  it('keeps the exception (type, end of the message, innermost frames) of a long error, cut from the middle', () => {
    // a harness error as the torch-2 batch crash stored it: a long traceback as the message
    const frames = Array.from(
      { length: 80 },
      (_, i) =>
        `  File "/usr/lib/python3/dist-packages/torch/_dynamo/m${i}.py", line ${i + 1}, in f${i}\n    code_line_${i}()`,
    );
    const trace = [
      'Traceback (most recent call last):',
      ...frames,
      'RuntimeError: Only a single TORCH_LIBRARY can be used to register the namespace _inductor_test',
    ].join('\n');
    const r = {
      id: 'y',
      ok: false,
      stages: {},
      timings: {},
      category: 'crash',
      stage: 'instantiate',
      args: null,
      input_shapes: null,
      output_shapes: null,
      params: null,
      envId: 'e',
      ms: 1,
      error: 'harness error: ' + trace,
      traceback: trace,
    } as unknown as ValidationResult;
    for (const e of [forStorage(r).error!, toRecord(r).error!]) {
      assert.ok(e.length <= MAX_STORED_ERROR + 1, String(e.length));
      assert.match(e, /^harness error: Traceback/);
      assert.match(
        e,
        /RuntimeError: Only a single TORCH_LIBRARY can be used to register the namespace _inductor_test$/,
      );
      assert.match(e, /m79\.py", line 80/, 'the innermost frame');
    }
    const t = forStorage(r).traceback!;
    assert.match(t, /m79\.py", line 80, in f79\nRuntimeError: Only a single TORCH_LIBRARY/);
    assert.ok(!t.includes('code_line_'), 'no source lines');
  });
});
