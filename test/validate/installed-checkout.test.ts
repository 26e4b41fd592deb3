// A repository the environment has also installed from the same code (pytorch_geometric,
// installed from its checkout): the zygote imports the original from the checkout, and a
// candidate's function-level `import regpkg.ops` of the installed distribution must get
// those modules, not import the package a second time from site-packages, whose
// import-time registration (a torch functional DataPipe name) refuses to run twice
// (src/validate/python/nnrag_harness/stash.py, same_as_installed). An installed copy
// whose code differs is hidden behind the checkout as before, and then the second import
// does run: the control that shows the fixture reproduces the failure.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defaultEnvDir, envPython } from '../../src/environment/pypi.js';
import { ValidatorPool, type ValidationRequest } from '../../src/validate/index.js';
import { fixture, tempDir } from '../helpers.js';
import { cannotValidate, validateFixture } from './common.js';

const base = envPython(defaultEnvDir());
const skip = (await cannotValidate(true)) ?? (existsSync(base) ? false : 'no default environment');

const purelib = (py: string) =>
  execFileSync(py, ['-c', "import sysconfig; print(sysconfig.get_paths()['purelib'])"], {
    encoding: 'utf8',
  }).trim();

/** A virtual environment that sees the default environment's packages (torch) through a
 *  .pth file and has regpkg installed: the checkout's files, `edit` applied to them. */
function envWithInstalled(dir: string, checkout: string, edit?: (pkg: string) => void): string {
  execFileSync(base, ['-m', 'venv', '--without-pip', dir]);
  const py = envPython(dir);
  const site = purelib(py);
  writeFileSync(path.join(site, 'nnrag-default-env.pth'), `${purelib(base)}\n`);
  cpSync(path.join(checkout, 'regpkg'), path.join(site, 'regpkg'), { recursive: true });
  edit?.(path.join(site, 'regpkg'));
  const info = path.join(site, 'regpkg-0.1.dist-info');
  mkdirSync(info);
  writeFileSync(path.join(info, 'METADATA'), 'Metadata-Version: 2.1\nName: regpkg\nVersion: 0.1\n');
  writeFileSync(path.join(info, 'top_level.txt'), 'regpkg\n');
  return py;
}

describe('a checkout the environment installed from the same code', { skip }, () => {
  let dir: string;
  let checkout: string;
  const pools: ValidatorPool[] = [];
  before(() => {
    dir = tempDir('nnrag-installed-');
    chmodSync(dir, 0o755); // the sandbox runs as nobody when the tests run as root
    checkout = path.join(dir, 'repo');
    cpSync(fixture('validate', 'installed', 'repo'), checkout, { recursive: true });
  });
  after(async () => {
    for (const p of pools) await p.close();
  });

  const req = (): ValidationRequest => ({
    id: 'installed/doubler.py',
    source: validateFixture('installed', 'doubler.py'),
    className: 'Doubler',
    original: { module: 'regpkg.layers', className: 'Doubler', sysPath: [checkout] },
    requiredStages: ['import', 'instantiate', 'forward', 'equivalence'],
  });

  it("gives the candidate's import of the installed package the modules the zygote imported", {
    timeout: 600_000,
  }, async () => {
    const pool = await ValidatorPool.start({ python: envWithInstalled(path.join(dir, 'same'), checkout), workers: 1 });
    pools.push(pool);
    const r = await pool.validate(req());
    assert.equal(r.ok, true, `${r.stage} ${r.category} ${r.error}`);
    assert.equal(r.stages.instantiate, 'pass');
    assert.equal(r.stages.equivalence, 'pass', `${r.equivalence?.reason}`);
  });

  it('hides an installed copy whose code differs, which then imports a second time', {
    timeout: 600_000,
  }, async () => {
    const py = envWithInstalled(path.join(dir, 'other'), checkout, (pkg) =>
      appendFileSync(path.join(pkg, 'ops.py'), '\n\ndef triple(x):\n    return x * 3\n'),
    );
    const pool = await ValidatorPool.start({ python: py, workers: 1 });
    pools.push(pool);
    const r = await pool.validate(req());
    assert.equal(r.ok, false);
    assert.equal(r.stage, 'instantiate');
    assert.match(`${r.error}`, /nnrag_fixture_batch as it is already taken/);
  });
});
