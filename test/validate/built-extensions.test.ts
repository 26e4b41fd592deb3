// A repository whose own build compiles an extension module its modules load at import
// time (mmcv's `mmcv._ext`, detectron2's `detectron2._C`): the environment installed the
// build of its checkout, extension included, but the checkout the originals are imported
// from was never built in place, so the original failed at import ("No module named
// 'mmcv._ext'") and equivalence never ran. The harness's finder of built extensions
// (src/validate/python/nnrag_harness/stash.py, BuiltExtensions) gives the checkout's
// package the installed build's extension module when that build holds the checkout's
// code; an installed copy whose code differs gets nothing (the control).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defaultEnvDir, envPython } from '../../src/environment/pypi.js';
import { ValidatorPool, type ValidationRequest } from '../../src/validate/index.js';
import { which } from '../../src/util/fs.js';
import { fixture, tempDir } from '../helpers.js';
import { cannotValidate, validateFixture } from './common.js';

const base = envPython(defaultEnvDir());
const cc = which('cc') ?? which('gcc');
const skip =
  (await cannotValidate(true)) ??
  (!existsSync(base) ? 'no default environment' : !cc ? 'no C compiler to build the fixture extension' : false);

const sysconfig = (py: string, expr: string) =>
  execFileSync(py, ['-c', `import sysconfig; print(${expr})`], { encoding: 'utf8' }).trim();

/** A virtual environment that sees the default environment's packages (torch) through a
 *  .pth file, with extpkg installed as its build installs it: the checkout's files
 *  (`edit` applied to them) and the extension module compiled from ext.c. */
function envWithBuild(dir: string, checkout: string, edit?: (pkg: string) => void): string {
  execFileSync(base, ['-m', 'venv', '--without-pip', dir]);
  const py = envPython(dir);
  const site = sysconfig(py, "sysconfig.get_paths()['purelib']");
  writeFileSync(path.join(site, 'nnrag-default-env.pth'), `${sysconfig(base, "sysconfig.get_paths()['purelib']")}\n`);
  const pkg = path.join(site, 'extpkg');
  cpSync(path.join(checkout, 'extpkg'), pkg, { recursive: true });
  edit?.(pkg);
  const out = path.join(pkg, `_ext${sysconfig(py, "sysconfig.get_config_var('EXT_SUFFIX')")}`);
  const include = sysconfig(py, "sysconfig.get_paths()['include']");
  execFileSync(cc!, ['-shared', '-fPIC', '-O0', `-I${include}`, fixture('validate', 'builtext', 'ext.c'), '-o', out]);
  const info = path.join(site, 'extpkg-0.1.dist-info');
  mkdirSync(info);
  writeFileSync(path.join(info, 'METADATA'), 'Metadata-Version: 2.1\nName: extpkg\nVersion: 0.1\n');
  writeFileSync(path.join(info, 'top_level.txt'), 'extpkg\n');
  return py;
}

describe("a checkout whose installed build compiled the package's extension module", { skip }, () => {
  let dir: string;
  let checkout: string;
  const pools: ValidatorPool[] = [];
  before(() => {
    dir = tempDir('nnrag-builtext-');
    chmodSync(dir, 0o755); // the sandbox runs as nobody when the tests run as root
    checkout = path.join(dir, 'repo');
    cpSync(fixture('validate', 'builtext', 'repo'), checkout, { recursive: true });
  });
  after(async () => {
    for (const p of pools) await p.close();
  });

  const req = (): ValidationRequest => ({
    id: 'builtext/scaler.py',
    source: validateFixture('builtext', 'scaler.py'),
    className: 'Scaler',
    original: { module: 'extpkg.layers', className: 'Scaler', sysPath: [checkout] },
    requiredStages: ['import', 'instantiate', 'forward', 'equivalence'],
  });

  it("imports the original from the checkout with the installed build's extension module", {
    timeout: 600_000,
  }, async () => {
    const pool = await ValidatorPool.start({ python: envWithBuild(path.join(dir, 'same'), checkout), workers: 1 });
    pools.push(pool);
    const r = await pool.validate(req());
    assert.equal(r.stages.forward, 'pass', `${r.stage} ${r.category} ${r.error}`);
    assert.equal(r.stages.equivalence, 'pass', `${r.equivalence?.reason}`);
    assert.equal(r.ok, true);
  });

  it('gives nothing to a checkout whose code the installed build does not hold', { timeout: 600_000 }, async () => {
    const py = envWithBuild(path.join(dir, 'other'), checkout, (pkg) =>
      appendFileSync(path.join(pkg, 'utils.py'), '\n\ndef other():\n    return 0\n'),
    );
    const pool = await ValidatorPool.start({ python: py, workers: 1 });
    pools.push(pool);
    const r = await pool.validate(req());
    // the copy imports the installed build and runs; the original cannot import
    assert.equal(r.stages.forward, 'pass', `${r.stage} ${r.category} ${r.error}`);
    assert.equal(r.stages.equivalence, 'skip');
    assert.match(`${r.equivalence?.reason}`, /original does not import/);
  });
});
