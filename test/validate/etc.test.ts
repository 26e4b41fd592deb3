// The sandbox's /etc: what installed packages keep there is visible (Debian's matplotlib
// reads /etc/matplotlibrc), secrets are not (/etc/shadow), and nothing can be written.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { ValidatorPool, type ValidationResult } from '../../src/validate/index.js';
import { etcEntries } from '../../src/validate/environment.js';
import { cannotValidate, request } from './common.js';

const skip = await cannotValidate(true);
const py = '/usr/bin/python3';
const haveMatplotlib = existsSync(py) && (() => {
  try {
    execFileSync(py, ['-c', 'import matplotlib.pyplot'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

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
    for (const secret of ['shadow', 'gshadow', 'sudoers', 'ssh', 'machine-id']) assert.ok(!etc.includes(secret), secret);
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

  it('a block importing matplotlib validates (its /etc configuration is there)', { skip: !haveMatplotlib && 'matplotlib is not installed' }, () => {
    const r = results.get('etc/uses_matplotlib.py')!;
    assert.equal(r.ok, true, `${r.category}: ${r.error}`);
  });
});
