// The sandbox's /etc: what installed packages keep there is visible (Debian's matplotlib
// reads /etc/matplotlibrc), secrets are not (/etc/shadow), and nothing can be written.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers.js';
import { ValidatorPool, type ValidationResult } from '../../src/validate/index.js';
import { etcEntries } from '../../src/validate/environment.js';
import { cannotValidate, request } from './common.js';

const skip = await cannotValidate(true);
const py = '/usr/bin/python3';
const haveMatplotlib =
  existsSync(py) &&
  (() => {
    try {
      execFileSync(py, ['-c', 'import matplotlib.pyplot'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();

describe('the /etc entries the sandbox binds', () => {
  it('are an allow-list: world-readable configuration that may hold credentials stays out', () => {
    const etc = tempDir();
    const files = [
      'ld.so.cache',
      'passwd',
      'group',
      'nsswitch.conf',
      'mime.types',
      'pip.conf',
      'npmrc',
      'gitconfig',
      'wgetrc',
      'netrc',
      'environment',
      'some-service.conf',
    ];
    for (const f of files) writeFileSync(path.join(etc, f), 'x\n');
    for (const d of ['alternatives', 'python3.11', 'apt/auth.conf.d', 'docker', 'pki', 'default'])
      mkdirSync(path.join(etc, d), { recursive: true });
    for (const f of files) chmodSync(path.join(etc, f), 0o644);
    const got = etcEntries(etc);
    assert.deepEqual(got, [
      'alternatives',
      'group',
      'ld.so.cache',
      'mime.types',
      'nsswitch.conf',
      'passwd',
      'python3.11',
    ]);
  });
});

describe('the sandbox /etc', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  const results = new Map<string, ValidationResult>();
  before(async () => {
    pool = await ValidatorPool.start({ workers: 1 });
    const files = ['read_shadow.py', 'write_etc.py', ...(haveMatplotlib ? ['uses_matplotlib.py'] : [])];
    for (const r of await pool.validateMany(files.map((f) => request('etc', f)))) results.set(r.id, r);
  });
  after(async () => {
    await pool?.close();
  });

  it('binds what packages keep in /etc, never the secrets', () => {
    const etc = etcEntries();
    assert.ok(etc.includes('passwd') && etc.includes('ld.so.cache'));
    for (const secret of ['shadow', 'gshadow', 'sudoers', 'ssh', 'machine-id'])
      assert.ok(!etc.includes(secret), secret);
  });

  it('a block cannot read /etc/shadow', () => {
    const r = results.get('etc/read_shadow.py')!;
    assert.equal(r.ok, false);
    assert.equal(r.stage, 'import');
    assert.match(r.error ?? '', /No such file or directory|Permission denied/);
  });

  it('a block cannot write under /etc', () => {
    const r = results.get('etc/write_etc.py')!;
    assert.equal(r.ok, false);
    assert.match(r.error ?? '', /Read-only file system|Permission denied/);
    assert.ok(!existsSync('/etc/nnrag-was-here'));
  });

  it('a block importing matplotlib validates (its /etc configuration is there)', {
    skip: !haveMatplotlib && 'matplotlib is not installed',
  }, () => {
    const r = results.get('etc/uses_matplotlib.py')!;
    assert.equal(r.ok, true, `${r.category}: ${r.error}`);
  });
});
