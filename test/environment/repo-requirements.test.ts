// Requirements a repository declares, read from every packaging format without running
// anything (the fixture's setup.py would write a file if it were executed), and the
// Debian package names of distributions.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  environmentRequirements,
  debianPackageFor,
  environmentGaps,
  readDeclaredRequirements,
  repositoryRequirements,
} from '../../src/environment/repo-requirements.js';
import { meetsSpecifier } from '../../src/environment/requirements.js';
import { initParser } from '../../src/parse/parser.js';
import { fixture, tempDir } from '../helpers.js';

const root = fixture('requirements', 'allformats');
const marker = '/tmp/nnrag-setup-py-was-executed';

before(async () => {
  await initParser();
  rmSync(marker, { force: true });
});

test('every packaging format, with file, line and group', () => {
  const reqs = readDeclaredRequirements(root);
  assert.ok(!existsSync(marker), 'setup.py was read, not run');
  const by = (name: string) =>
    reqs.filter((r) => r.name === name).map((r) => `${r.group} ${r.file}:${r.line} ${r.spec}`);
  // requirements files: includes followed, options and -e skipped, comments dropped
  assert.deepEqual(by('torch'), ['install requirements.txt:6 torch>=1.8']);
  assert.deepEqual(by('numpy'), ['install requirements/runtime.txt:1 numpy']);
  assert.deepEqual(by('opencv-python'), ['install requirements/runtime.txt:2 opencv-python >=4.2, != 4.5.5.*']);
  assert.deepEqual(by('regex'), ["install requirements/runtime.txt:3 regex; sys_platform == 'win32'"]);
  assert.deepEqual(by('pytest'), ['dev requirements/tests.txt:1 pytest']);
  assert.deepEqual(by('scipy'), ['optional:optional requirements/optional.txt:1 scipy']);
  // setup.py: a module-level list, concatenation, implicit string concatenation, extras
  assert.deepEqual(by('einops'), ['install setup.py:6 einops>=0.6']);
  assert.deepEqual(by('PyYAML'), ['install setup.py:6 PyYAML']);
  assert.deepEqual(by('timm'), ['install setup.py:15 timm']);
  assert.deepEqual(by('seaborn'), ['optional:vis setup.py:17 seaborn>=0.12']);
  // setup.cfg
  assert.deepEqual(by('termcolor'), ['install setup.cfg:6 termcolor>=1.1']);
  assert.deepEqual(by('rich'), ['install setup.cfg:7 rich']);
  assert.deepEqual(by('sphinx'), ['optional:docs setup.cfg:12 sphinx']);
  // pyproject.toml (PEP 621 only, not other tables)
  assert.deepEqual(by('packaging'), ['install pyproject.toml:7 packaging']);
  assert.deepEqual(by('tqdm'), ['install pyproject.toml:8 tqdm>4.29']);
  assert.deepEqual(by('pandas'), ['optional:graph pyproject.toml:12 pandas[performance]>=2']);
  assert.deepEqual(by('not-a-requirement'), []);
  // environment.yml: conda names (not python or pip), channel prefixes, the pip list
  assert.deepEqual(by('h5py'), ['install environment.yml:8 h5py']);
  assert.deepEqual(by('libjpeg-turbo'), ['install environment.yml:7 libjpeg-turbo==2.1']);
  assert.deepEqual(by('fvcore'), ['install environment.yml:10 fvcore>=0.1.5']);
  assert.deepEqual(by('python'), []);
});

test('imports of the emitted blocks next to what the repository declares', () => {
  const [r] = repositoryRequirements(
    [{ name: 'fixture', root }],
    [
      { repo: 'fixture', externs: ['torch.nn', 'cv2', 'os'] },
      { repo: 'fixture', externs: ['torch', 'xformers.ops'] },
      { repo: 'other', externs: ['jax'] },
    ],
    (m) => ({ cv2: 'opencv-python' })[m] ?? m,
    (m) => m === 'os',
  );
  assert.deepEqual(r.imports, [
    { module: 'torch', blocks: 2, distribution: 'torch', declared: true },
    { module: 'cv2', blocks: 1, distribution: 'opencv-python', declared: true },
    { module: 'xformers', blocks: 1, distribution: 'xformers', declared: false },
  ]);
  assert.equal(r.debian.pyyaml, debianPackageFor('PyYAML'));
});

test("Debian packages: dh-python's table where a name differs, else python3-<name>", () => {
  assert.equal(debianPackageFor('einops'), 'python3-einops');
  assert.equal(debianPackageFor('typing_extensions'), 'python3-typing-extensions');
  if (existsSync('/usr/share/dh-python/dist/cpython3_fallback')) {
    assert.equal(debianPackageFor('PyYAML'), 'python3-yaml');
    assert.equal(debianPackageFor('pillow'), 'python3-pil');
  }
});

test('what the environment lacks: imports that do not import, declared requirements not installed', async () => {
  const reqs = repositoryRequirements(
    [{ name: 'fixture', root }],
    [{ repo: 'fixture', externs: ['torch', 'cv2', 'einops'] }],
    (m) => ({ cv2: 'opencv-python' })[m] ?? m,
    () => false,
    (m) => m !== 'einops',
  );
  const installed = new Set([
    'torch',
    'numpy',
    'pyyaml',
    'termcolor',
    'packaging',
    'tqdm',
    'timm',
    'h5py',
    'fvcore',
    'libjpeg-turbo',
  ]);
  const gaps = await environmentGaps(reqs, installed);
  const names = gaps.map((g) => g.distribution);
  assert.equal(names[0], 'einops', 'what blocks import comes first');
  assert.deepEqual(gaps[0].neededBy, [
    { repo: 'fixture', why: 'import', blocks: 1 },
    { repo: 'fixture', why: 'declared' },
  ]);
  assert.ok(!names.includes('opencv-python'), 'cv2 imports, so opencv-python is there whatever its package is called');
  assert.ok(!names.includes('torch'));
  assert.ok(names.includes('rich'), 'declared and not installed');
  assert.ok(!names.includes('regex'), 'a requirement with an environment marker is not assumed to apply');
  assert.ok(!names.includes('pytest') && !names.includes('scipy'), 'dev and optional groups are not required');
  for (const g of gaps) assert.ok(g.candidate === null || typeof g.candidate === 'string');
});

test('the torch a repository declares is checked like any requirement: its version too', async () => {
  // the fixture declares `torch>=1.8` (requirements.txt line 6)
  const reqs = repositoryRequirements(
    [{ name: 'fixture', root }],
    [{ repo: 'fixture', externs: ['torch'] }],
    (m) => m,
    () => false,
    () => true,
  );
  const installed = new Set([
    'torch',
    'numpy',
    'pyyaml',
    'termcolor',
    'packaging',
    'tqdm',
    'timm',
    'h5py',
    'fvcore',
    'libjpeg-turbo',
    'rich',
    'einops',
    'regex',
  ]);
  const old = await environmentGaps(reqs, installed, new Map([['torch', '1.7.1']]));
  const t = old.find((g) => g.distribution === 'torch');
  assert.ok(t, JSON.stringify(old.map((g) => g.distribution)));
  assert.deepEqual(t!.version, { installed: '1.7.1', required: 'torch>=1.8', file: 'requirements.txt', line: 6 });
  assert.deepEqual(t!.neededBy, [{ repo: 'fixture', why: 'declared' }]);
  assert.equal(t!.candidate, null, 'no Debian candidate is offered for a version gap');
  // Debian's build of 1.13 meets it (pre-release and local labels do not count)
  const ok = await environmentGaps(reqs, installed, new Map([['torch', '1.13.0a0+gitunknown']]));
  assert.ok(!ok.some((g) => g.distribution === 'torch'));
});

test('PEP 440 specifiers against installed versions', () => {
  assert.equal(meetsSpecifier('1.13.0a0+gitunknown', 'torch>=2.0'), false);
  assert.equal(meetsSpecifier('2.6.0+cpu', 'torch>=2.0'), true);
  assert.equal(meetsSpecifier('2.6.0', 'torch>=2.0,<2.5'), false);
  assert.equal(meetsSpecifier('2.4.1', 'torch >= 2.0, < 2.5'), true);
  assert.equal(meetsSpecifier('1.13.1', 'torch==1.13.*'), true);
  assert.equal(meetsSpecifier('1.12.1', 'torch==1.13.*'), false);
  assert.equal(meetsSpecifier('1.13.1', 'torch!=1.13.1'), false);
  assert.equal(meetsSpecifier('1.4.2', 'pkg~=1.4'), true);
  assert.equal(meetsSpecifier('2.0', 'pkg~=1.4'), false);
  assert.equal(meetsSpecifier('0.9', 'pkg[extra]>1.0'), false);
  assert.equal(meetsSpecifier('1.0', 'torch'), true, 'no specifier: met');
});

test('an environment installs the install group and what the blocks import from other groups', () => {
  const req = (name: string, spec: string, group: string, file = 'f') => ({
    name,
    key: name.toLowerCase(),
    spec,
    file,
    line: 1,
    group,
  });
  const declared = [
    req('numpy', 'numpy', 'install'),
    req('mmcv', 'mmcv-lite', 'dev', 'requirements/docs.txt'),
    req('mmcv', 'mmcv>=2.0,<2.2', 'optional:mim'),
    req('mmdet', 'mmdet>=3.0', 'optional:mim'),
    req('pytest', 'pytest', 'dev'),
  ];
  // the blocks import mmcv (declared only in an extra) and numpy; mmdet and pytest nobody imports
  const got = environmentRequirements(declared, ['MMCV', 'numpy']).map((d) => d.spec);
  assert.deepEqual(got, ['numpy', 'mmcv>=2.0,<2.2'], 'an extra wins over a development file');
  assert.deepEqual(
    environmentRequirements(declared, []).map((d) => d.spec),
    ['numpy'],
    'without imports only the install group',
  );
});

test('a requirements file that neither the root requirements nor the packaging reach is an extra of its own', () => {
  const dir = tempDir();
  const put = (rel: string, text: string) => {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  };
  put('requirements.txt', '-r requirements/runtime.txt\n');
  put('requirements/runtime.txt', 'numpy\n');
  put('requirements/mminstall.txt', 'acme-core>=2.0,<2.2\n');
  put('requirements/poseval.txt', 'poseval@git+https://example.invalid/poseval.git\n');
  put(
    'setup.py',
    "setup(name='acme', install_requires=parse_requirements('requirements/runtime.txt'),\n      extras_require={'mim': parse_requirements('requirements/mminstall.txt')})\n",
  );
  const group = (name: string) => readDeclaredRequirements(dir).find((r) => r.name === name)?.group;
  assert.equal(group('numpy'), 'install');
  // named by the packaging (here for an extra): declared, by its file name's group
  assert.equal(group('acme-core'), 'install');
  // named by nothing: `pip install .` and `pip install -r requirements.txt` never install it
  assert.equal(group('poseval'), 'optional:poseval');
  // with no other declaration, a requirements/ file is the install requirements
  const bare = tempDir();
  mkdirSync(path.join(bare, 'requirements'));
  writeFileSync(path.join(bare, 'requirements', 'base.txt'), 'numpy\n');
  assert.equal(readDeclaredRequirements(bare).find((r) => r.name === 'numpy')?.group, 'install');
});
