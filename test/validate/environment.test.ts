// The validation environment: interpreter discovery, doctor, the refusal to run
// repository code without bubblewrap unless --no-sandbox is explicit, and the
// unsandboxed mode (limits and timeouts only, with a warning).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NnragError } from '../../src/util/errors.js';
import { ValidatorPool, doctor, findPython } from '../../src/validate/index.js';
import { bwrapArgs, defaultLimits, hiddenEntries, seccompProgram } from '../../src/validate/environment.js';
import { cannotValidate, request, torchPython } from './common.js';

const noTorch = await cannotValidate(false);
const noSandbox = await cannotValidate(true);

describe('validation environment', () => {
  it('finds a Python whose torch imports, and honours an explicit one', { skip: noTorch ?? false }, async () => {
    const found = (await torchPython())!;
    assert.match(found.torch, /^\d+\.\d+/);
    const again = await findPython(found.python);
    assert.deepEqual(again, found);
    assert.equal(await findPython('/nonexistent/python3'), null);
  });

  it('doctor reports interpreter, torch, sandbox, limits and environment id', {
    skip: noSandbox ?? false,
  }, async () => {
    const d = await doctor({ workers: 1 });
    assert.deepEqual(d.problems, []);
    assert.ok(d.python && d.torch && d.pythonVersion);
    assert.equal(d.sandbox.working, true);
    assert.ok(d.sandbox.bwrap);
    assert.equal(d.limits.memoryMb, 2048);
    assert.match(d.envId!, /^[0-9a-f]{16}$/);
    if (process.getuid?.() === 0) assert.equal(d.sandbox.uid, 65534);
  });

  it('refuses to run repository code when bwrap is missing and --no-sandbox is not given', async () => {
    const saved = process.env.PATH;
    const empty = mkdtempSync(path.join(os.tmpdir(), 'nnrag-nopath-'));
    process.env.PATH = empty;
    try {
      await assert.rejects(
        ValidatorPool.start({ python: '/usr/bin/python3', workers: 1 }),
        (e: unknown) => e instanceof NnragError && /--no-sandbox/.test(e.message),
      );
    } finally {
      process.env.PATH = saved;
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('names the interpreter it cannot use', async () => {
    await assert.rejects(
      ValidatorPool.start({ python: '/nonexistent/python3', workers: 1 }),
      (e: unknown) =>
        e instanceof NnragError && /cannot run the Python interpreter \/nonexistent\/python3/.test(e.message),
    );
  });

  it('runs without the sandbox only when asked, with a warning, still under timeouts and limits', {
    skip: noTorch ?? false,
  }, async () => {
    const warnings: string[] = [];
    const pool = await ValidatorPool.start({ sandbox: false, workers: 1, onWarning: (w) => warnings.push(w) });
    try {
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /WITHOUT a sandbox/);
      assert.deepEqual(pool.warnings, warnings);
      const good = await pool.validate(request('good', 'conv_block.py'));
      assert.equal(good.ok, true, `${good.error}`);
      const spin = await pool.validate(request('fail', 'timeout.py', { timeoutMs: 1500 }));
      assert.equal(spin.category, 'timeout');
      const shape = await pool.validate(request('fail', 'forward_shape.py'));
      assert.equal(shape.category, 'forward-shape');
      // a different sandbox setting is a different environment
      const sandboxed = await doctor({});
      if (sandboxed.envId) assert.notEqual(pool.envId, sandboxed.envId);
    } finally {
      await pool.close();
    }
  });

  it('builds a sandbox that hides home folders and binds only what it needs', () => {
    const args = bwrapArgs({
      python: '/usr/bin/python3',
      probe: null,
      rootfs: null,
      roots: ['/opt/some-repo-root-that-does-not-exist'],
      limits: defaultLimits(),
    });
    const joined = args.join(' ');
    for (const flag of ['--unshare-all', '--die-with-parent', '--new-session', '--clearenv', '--remount-ro'])
      assert.ok(args.includes(flag), flag);
    assert.ok(!/--(ro-)?bind \/ \//.test(joined), 'the whole root must not be bound');
    assert.ok(!/ \/root\b| \/home\b/.test(joined), 'no home folder may be bound');
    assert.ok(!joined.includes('some-repo-root'), 'missing roots are not bound');
    // every writable place is a size-limited tmpfs: /tmp and /dev/shm; /dev itself read-only
    for (const dir of ['/tmp', '/dev/shm']) {
      const i = args.findIndex((a, k) => a === '--tmpfs' && args[k + 1] === dir);
      assert.ok(i > 0, dir);
      assert.equal(args[i - 2], '--size', dir);
      assert.ok(Number(args[i - 1]) <= defaultLimits().scratchMb * 1024 * 1024, dir);
    }
    const dev = args.findIndex((a, k) => a === '--dev' && args[k + 1] === '/dev');
    assert.deepEqual(args.slice(dev + 2, dev + 4), ['--remount-ro', '/dev']);
  });

  it('hides .git and files git does not track in a bound repository root', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'nnrag-hide-'));
    try {
      mkdirSync(path.join(root, 'pkg'));
      writeFileSync(path.join(root, 'pkg', '__init__.py'), '');
      writeFileSync(path.join(root, 'pkg', 'secret.key'), 'x');
      writeFileSync(path.join(root, '.env'), 'TOKEN=x');
      // untracked: a Python file (an indexed source, stays), a folder of data (hidden
      // whole), a new package with a data file (the package stays, the data goes)
      writeFileSync(path.join(root, 'pkg', 'version.py'), '');
      mkdirSync(path.join(root, 'data', 'sub'), { recursive: true });
      writeFileSync(path.join(root, 'data', 'sub', 'x.bin'), '');
      mkdirSync(path.join(root, 'newpkg'));
      writeFileSync(path.join(root, 'newpkg', '__init__.py'), '');
      writeFileSync(path.join(root, 'newpkg', 'weights.pt'), '');
      execFileSync('git', ['init', '-q', root]);
      execFileSync('git', ['-C', root, 'add', 'pkg/__init__.py']);
      const hidden = hiddenEntries(root)
        .map((h) => path.relative(root, h.path))
        .sort();
      assert.deepEqual(hidden, ['.env', '.git', 'data', 'newpkg/weights.pt', 'pkg/secret.key']);
      const args = bwrapArgs({
        python: '/usr/bin/python3',
        probe: null,
        rootfs: null,
        roots: [root],
        limits: defaultLimits(),
      });
      const j = args.join(' ');
      assert.ok(j.includes(`--ro-bind /dev/null ${path.join(root, '.env')}`), j);
      assert.ok(j.includes(`--tmpfs ${path.join(root, '.git')} --remount-ro ${path.join(root, '.git')}`), j);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('builds a seccomp program that denies ptrace and descriptor theft', () => {
    const prog = seccompProgram('x64')!;
    assert.equal(prog.length % 8, 0);
    const ks = Array.from({ length: prog.length / 8 }, (_, i) => prog.readUInt32LE(i * 8 + 4));
    for (const nr of [101, 310, 311, 438]) assert.ok(ks.includes(nr), String(nr));
    // System V IPC (shmget, shmat, msgget, semget) and memfd_create / memfd_secret
    for (const nr of [29, 30, 68, 64, 319, 447]) assert.ok(ks.includes(nr), String(nr));
    const rets = Array.from({ length: prog.length / 8 }, (_, i) => [
      prog.readUInt16LE(i * 8),
      prog.readUInt32LE(i * 8 + 4),
    ])
      .filter(([c]) => c === 0x06)
      .map(([, k]) => k);
    assert.ok(rets.includes(0x00050000 | 38), 'an ENOSYS return');
    assert.equal(seccompProgram('mips'), null);
  });

  it('gives a virtual environment its own id, which changes when a distribution is installed, and runs it in the sandbox', {
    skip: noSandbox ?? false,
  }, async () => {
    const python = (await torchPython())!.python;
    // a venv under the temporary folder (the sandbox mounts its own /tmp: the venv must
    // still be visible) that sees the system's torch
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nnrag-venv-'));
    chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
    try {
      const venv = path.join(dir, 'venv');
      execFileSync(python, ['-m', 'venv', '--system-site-packages', '--without-pip', venv]);
      const vpy = path.join(venv, 'bin', 'python');
      const system = await doctor({ python });
      const before = await doctor({ python: vpy });
      assert.ok(before.envId && system.envId);
      assert.notEqual(
        before.envId,
        system.envId,
        'a venv is not the system interpreter, even if its binary resolves to it',
      );
      // install a distribution the way pip leaves it: a dist-info folder with METADATA
      const site = execFileSync(vpy, ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], {
        encoding: 'utf8',
      }).trim();
      const info = path.join(site, 'nnrag_probe_dist-1.2.3.dist-info');
      mkdirSync(info, { recursive: true });
      writeFileSync(path.join(info, 'METADATA'), 'Metadata-Version: 2.1\nName: nnrag_probe_dist\nVersion: 1.2.3\n');
      const after = await doctor({ python: vpy });
      assert.ok(after.distributions!.includes('nnrag-probe-dist==1.2.3'), 'the package set is reported');
      assert.notEqual(after.envId, before.envId, 'installing a distribution changes the environment id');
      assert.deepEqual(after.problems, [], 'the sandbox starts with an interpreter under /tmp');
      const pool = await ValidatorPool.start({ python: vpy, workers: 1 });
      try {
        assert.equal(pool.envId, after.envId);
        const good = await pool.validate(request('good', 'conv_block.py'));
        assert.equal(good.ok, true, `${good.error}`);
      } finally {
        await pool.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
