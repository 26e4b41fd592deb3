// Version bounds a distribution enforces at import without declaring them
// (src/environment/import-probe.ts): the specifiers an import error names that the
// installed versions do not meet (mmdet's real message), and a whole PyPI environment by
// the real uv against a package index served on 127.0.0.1 (no network): nnragfix-user
// asserts at import that nnragfix-dep is before 2.0 but declares nothing, the resolver
// takes nnragfix-dep 2.0, the import fails, and the environment is resolved again with
// the bound learnt, as a requirement of the repository that needs nnragfix-user; and
// NumPy 2's error for a member its 2.0 release removed (imgaug's `np.sctypes`), which
// means numpy<2 for the repository that needs the importing distribution.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { numpy2Removal, unmetBounds } from '../../src/environment/import-probe.js';
import { envPython, findUv, syncPyPIEnvironment, type PyPINeeds } from '../../src/environment/pypi.js';
import { BASE, indexFolder, makeFile, pointUvAt, serveIndex, uvTestSkip } from './local-index.js';

test('the bounds an import error names that the installed versions do not meet', () => {
  const installed = new Map([
    ['mmcv', '2.2.0'],
    ['mmdet', '3.2.0'],
    ['mmengine', '0.10.7'],
  ]);
  // mmdet/__init__.py's assertion, as it prints
  const mmdet = {
    distribution: 'mmdet',
    module: 'mmdet',
    error: 'AssertionError: MMCV==2.2.0 is used but incompatible. Please install mmcv>=2.0.0rc4, <2.2.0.',
  };
  assert.deepEqual(unmetBounds(mmdet, installed), [
    { distribution: 'mmcv', requirement: 'mmcv>=2.0.0rc4,<2.2.0', installed: '2.2.0' },
  ]);
  // a bound the installed version meets, the importing distribution's own version, and a
  // name that is not installed teach nothing
  assert.deepEqual(
    unmetBounds(
      { ...mmdet, error: 'ImportError: needs mmengine>=0.7.1, mmdet>=4.0 and keras>=3 (found mmcv==2.2.0)' },
      installed,
    ),
    [],
  );
  assert.deepEqual(
    unmetBounds({ ...mmdet, error: "ImportError: cannot import name 'x' from 'mmcv.ops'" }, installed),
    [],
  );
  // NumPy 2's ABI error for an extension compiled against NumPy 1.x (xtcocotools 1.14.3)
  const abi = {
    distribution: 'xtcocotools',
    module: 'xtcocotools',
    error:
      'ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject',
  };
  assert.deepEqual(unmetBounds(abi, new Map([['numpy', '2.3.5']])), [
    { distribution: 'numpy', requirement: 'numpy<2', installed: '2.3.5' },
  ]);
  assert.deepEqual(unmetBounds(abi, new Map([['numpy', '1.26.4']])), [], 'already before NumPy 2');
});

test("NumPy 2's error for a member its 2.0 release removed means numpy<2", () => {
  // imgaug 0.4.0 under NumPy 2, as NumPy words it
  const imgaug = {
    distribution: 'imgaug',
    module: 'imgaug',
    error: 'AttributeError: `np.sctypes` was removed in the NumPy 2.0 release. Access dtypes explicitly instead.',
  };
  assert.deepEqual(unmetBounds(imgaug, new Map([['numpy', '2.3.5']])), [
    { distribution: 'numpy', requirement: 'numpy<2', installed: '2.3.5' },
  ]);
  assert.deepEqual(unmetBounds(imgaug, new Map([['numpy', '1.26.4']])), [], 'already before NumPy 2');
  // Python's own wording, for a member of the removed list only
  assert.equal(numpy2Removal("AttributeError: module 'numpy' has no attribute 'float_'"), true);
  assert.equal(numpy2Removal("AttributeError: module 'numpy' has no attribute 'find_common_type'"), true);
  assert.equal(numpy2Removal("AttributeError: module 'numpy' has no attribute 'flaot32'"), false, 'a typo');
  assert.equal(numpy2Removal("AttributeError: module 'torch' has no attribute 'float_'"), false, 'not numpy');
  assert.deepEqual(
    unmetBounds(
      { ...imgaug, error: "AttributeError: module 'numpy' has no attribute 'product'" },
      new Map([['numpy', '2.3.5']]),
    ),
    [],
    'removed by a later release than 2.0: not this rule',
  );
});

const uv = findUv();
const skip = uvTestSkip(uv);

test('a bound an installed distribution enforces at import is learnt and resolved with, by the real uv', {
  skip,
  timeout: 300_000,
}, async () => {
  const { dir, files } = indexFolder('nnrag-probe-');
  const T = '2024-06-01T00:00:00.000000Z';
  const check =
    "import nnragfix_dep\nassert nnragfix_dep.__version__.startswith('1.'), f'nnragfix-dep=={nnragfix_dep.__version__} is used but incompatible. Please install nnragfix-dep>=1.0, <2.0.'\n";
  const uploaded = new Map<string, string>([
    [makeFile(files, 'wheel', 'nnragfix-dep', '1.0'), T],
    [makeFile(files, 'wheel', 'nnragfix-dep', '2.0'), T],
    // declares nnragfix-dep without a bound (its bound lives in an extra, or nowhere)
    [makeFile(files, 'wheel', 'nnragfix-user', '1.0', ['nnragfix-dep'], check), T],
    [makeFile(files, 'wheel', 'numpy', '1.0'), T],
    [makeFile(files, 'wheel', 'pytest', '1.0'), T],
  ]);
  const index = await serveIndex(files, uploaded);
  const repo = path.join(dir, 'repo');
  mkdirSync(repo);
  const needs: PyPINeeds = {
    repos: [{ name: 'acme/user', root: repo, declared: ['nnragfix-user'], imported: [], unknown: [] }],
    indexed: new Map(),
  };
  const restore = pointUvAt(index.url, path.join(dir, 'uv-cache'));
  try {
    const logs: string[] = [];
    const env = path.join(dir, 'env');
    const m = await syncPyPIEnvironment(env, needs, { python: BASE, systemTorch: true, onLog: (l) => logs.push(l) });
    const show = logs.join('\n');
    assert.deepEqual(
      m.importConstraints?.map((c) => [c.requirement, c.by, c.repos]),
      [['nnragfix-dep>=1.0,<2.0', 'nnragfix-user==1.0', ['acme/user']]],
      show,
    );
    assert.ok(m.groups[0].pins.includes('nnragfix-dep==1.0'), `${m.groups[0].pins}\n${show}`);
    assert.deepEqual(m.groups[0].importFailures, [], 'once resolved with the bound, the import works');
    assert.equal(
      execFileSync(envPython(env), ['-c', 'import nnragfix_user, nnragfix_dep; print(nnragfix_dep.__version__)'], {
        cwd: '/',
      })
        .toString()
        .trim(),
      '1.0',
    );
    // env sync applies what was learnt before resolving: nothing to learn again
    const again: string[] = [];
    const m2 = await syncPyPIEnvironment(env, needs, { python: BASE, systemTorch: true, onLog: (l) => again.push(l) });
    assert.ok(m2.groups[0].pins.includes('nnragfix-dep==1.0'));
    assert.ok(!again.some((l) => /enforces/.test(l)), again.join('\n'));
    assert.ok(
      again.some((l) => /up to date with its lock/.test(l)),
      again.join('\n'),
    );
    // without the probe, the resolver's choice stands
    const plain = await syncPyPIEnvironment(path.join(dir, 'env2'), needs, {
      python: BASE,
      systemTorch: true,
      probeImports: false,
    });
    assert.ok(plain.groups[0].pins.includes('nnragfix-dep==2.0'), `${plain.groups[0].pins}`);
    assert.equal(plain.importConstraints, undefined);
  } finally {
    index.close();
    restore();
  }
});

test('a package that uses a member NumPy 2.0 removed gets numpy<2, learnt at import by the real uv', {
  skip,
  timeout: 300_000,
}, async () => {
  const { dir, files } = indexFolder('nnrag-probe-np2-');
  const T = '2024-06-01T00:00:00.000000Z';
  // stand-ins for numpy: 1.0 has `sctypes`; 2.0's module __getattr__ raises as NumPy 2's
  // does for the members its 2.0 release removed
  const removed =
    "def __getattr__(attr):\n    raise AttributeError(f'`np.{attr}` was removed in the NumPy 2.0 release. Access dtypes explicitly instead.')\n";
  const uploaded = new Map<string, string>([
    [makeFile(files, 'wheel', 'numpy', '1.0', [], 'sctypes = {}\n'), T],
    [makeFile(files, 'wheel', 'numpy', '2.0', [], removed), T],
    // declares numpy without a bound, and reads np.sctypes at import
    [makeFile(files, 'wheel', 'nnragfix-old', '1.0', ['numpy'], 'import numpy\nnumpy.sctypes\n'), T],
    [makeFile(files, 'wheel', 'pytest', '1.0'), T],
  ]);
  const index = await serveIndex(files, uploaded);
  const repo = path.join(dir, 'repo');
  mkdirSync(repo);
  const needs: PyPINeeds = {
    repos: [{ name: 'acme/old', root: repo, declared: ['nnragfix-old'], imported: [], unknown: [] }],
    indexed: new Map(),
  };
  const restore = pointUvAt(index.url, path.join(dir, 'uv-cache'));
  try {
    const logs: string[] = [];
    const env = path.join(dir, 'env');
    const m = await syncPyPIEnvironment(env, needs, {
      python: BASE,
      systemTorch: true,
      decisions: false,
      onLog: (l) => logs.push(l),
    });
    const show = logs.join('\n');
    assert.deepEqual(
      m.importConstraints?.map((c) => [c.requirement, c.by, c.repos]),
      [['numpy<2', 'nnragfix-old==1.0', ['acme/old']]],
      show,
    );
    assert.ok(m.groups[0].pins.includes('numpy==1.0'), `${m.groups[0].pins}\n${show}`);
    assert.deepEqual(m.groups[0].importFailures, [], 'with numpy<2 the import works');
  } finally {
    index.close();
    restore();
  }
});
