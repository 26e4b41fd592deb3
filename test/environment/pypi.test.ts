// PyPI environments (src/environment/pypi.ts) with the real uv, offline: three small
// repositories written here — acme/liba (declares nnragfix-dep==1.0 and the indexed
// acme/libb), acme/libb (a setup.py distribution), acme/libc (declares nnragfix-dep==2.0,
// which conflicts) — and two wheels of nnragfix-dep built here (--wheels). The shared
// environment holds liba with libb installed from its checkout; libc gets an environment
// of its own; a block of libc validates in libc's environment (--env routes it); the
// lock pins what is installed; a second sync with nothing changed installs nothing.
// torch is the base interpreter's (--system-torch: Debian's python3-torch), so nothing is
// downloaded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import {
  blamedRepos,
  checkoutPins,
  cudaToolkit,
  declaredDistributionName,
  envFor,
  type EnvManifestPyPI,
  failedForCuda,
  type IndexedInstall,
  type NativeBuild,
  torchCxxStandard,
  envPython,
  findUv,
  fromIndexOf,
  groupRequirements,
  indexedInstalls,
  lockPins,
  nativeBuildDirs,
  syncPyPIEnvironment,
  torchRequirement,
} from '../../src/environment/pypi.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { environmentProblems, pypiNeeds } from '../../src/commands/environment.js';
import { tempDir } from '../helpers.js';
import { needsTorch } from '../support/tier.js';

const BASE = '/usr/bin/python3';
const uv = findUv();
const skip =
  needsTorch() ||
  (!uv ? 'uv is not installed (scripts/setup.sh installs it)' : !existsSync(BASE) ? 'no /usr/bin/python3' : false);

/** An index spec of a local folder (paths: the folders indexed; all when empty). */
function repoSpec(name: string, root: string, paths: string[] = []) {
  return { name, url: null, path: root, priority: 1, paths, description: null, packageRoots: null };
}

function write(root: string, files: Record<string, string>): string {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return root;
}

/** A pure-Python wheel of `nnragfix_dep` (or of a distribution `dist` holding package
 *  `pkg`) at `version`, written with zipfile (PEP 427). */
function buildWheel(dir: string, version: string, dist = 'nnragfix-dep', pkg = 'nnragfix_dep'): void {
  const script = String.raw`
import sys, zipfile, hashlib, base64
d, v, dist, pkg = sys.argv[1:5]
name = dist.replace("-", "_") + f"-{v}"
files = {
  f"{pkg}/__init__.py": f"__version__ = '{v}'\n",
  f"{name}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {v}\n",
  f"{name}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
rec = []
for p, t in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode()
    rec.append(f"{p},sha256={h},{len(t.encode())}")
rec.append(f"{name}.dist-info/RECORD,,")
files[f"{name}.dist-info/RECORD"] = "\n".join(rec) + "\n"
with zipfile.ZipFile(f"{d}/{name}-py3-none-any.whl", "w") as z:
    for p, t in files.items():
        z.writestr(p, t)
`;
  execFileSync(BASE, ['-c', script, dir, version, dist, pkg]);
}

test('torch requirement and lock pins', () => {
  assert.equal(torchRequirement(), 'torch');
  assert.equal(torchRequirement('2.6'), 'torch==2.6.*');
  assert.equal(torchRequirement('2.6.0'), 'torch==2.6.0');
  assert.equal(torchRequirement('>=2.4'), 'torch>=2.4');
  assert.throws(() => torchRequirement('latest'), /not a torch version/);
  assert.deepEqual(lockPins('Torch==2.6.0 ; python_version >= "3.9"\n# comment\nnumpy==2.1.0  # via x\n'), [
    'numpy==2.1.0',
    'torch==2.6.0',
  ]);
});

test('compiled operators and distribution names are read from the packaging files, never run', () => {
  const root = write(tempDir(), {
    'setup.py': "from setuptools import setup\nsetup(name='acme-ops', version='1')\n",
    'ops/setup.py': 'from torch.utils.cpp_extension import CppExtension, BuildExtension\nimport sys; sys.exit(3)\n',
    'other/setup.py': "print('no extension here')\n",
  });
  assert.deepEqual(nativeBuildDirs(root), [path.join(root, 'ops')]);
  assert.equal(declaredDistributionName(root), 'acme-ops');
  write(root, { 'pyproject.toml': '[project]\nname = "acme-pyproject"\nversion = "1"\n' });
  assert.equal(declaredDistributionName(root), 'acme-pyproject');
});

test('an operator build that needs CUDA on a machine without a CUDA toolkit is a warning; any other failure fails', () => {
  const dir = tempDir();
  // no toolkit: CUDA_HOME unset, no nvcc on PATH (a folder without one), none in /usr/local/cuda
  const none = cudaToolkit({ PATH: dir }) ?? null;
  if (!existsSync('/usr/local/cuda/bin/nvcc')) assert.equal(none, null);
  // a toolkit: $CUDA_HOME/bin/nvcc
  write(dir, { 'cuda/bin/nvcc': '' });
  assert.equal(cudaToolkit({ PATH: '', CUDA_HOME: path.join(dir, 'cuda') }), path.join(dir, 'cuda', 'bin', 'nvcc'));
  // the error lines of real builds: Mask2Former's ops, InternImage's dcnv3, a missing nvcc
  for (const line of [
    'NotImplementedError: CUDA_HOME is None. Please set environment variable CUDA_HOME.',
    'NotImplementedError: Cuda is not availabel',
    "error: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'",
  ]) {
    assert.equal(failedForCuda(line, null), true, line);
    assert.equal(failedForCuda(line, '/usr/local/cuda/bin/nvcc'), false, `${line}: a machine with a toolkit`);
  }
  assert.equal(failedForCuda("error: command 'c++' failed: No such file or directory", null), false);
  assert.equal(failedForCuda('ops.cpp:12:10: fatal error: kernel.h: No such file or directory', null), false);
  const group = (native: NativeBuild[], indexed: IndexedInstall[] = []): EnvManifestPyPI => ({
    version: 1,
    backend: 'pypi',
    created: '',
    updated: '',
    basePython: BASE,
    torch: 'torch',
    systemTorch: false,
    groups: [{ name: 'shared', dir, repos: [], requirements: [], lockDigest: '', pins: [], native, indexed }],
    unresolved: [],
  });
  const cuda: NativeBuild = {
    repo: 'acme/a',
    dir: '/x/ops',
    error: 'NotImplementedError: Cuda is not available',
    needsCuda: true,
  };
  const broken: NativeBuild = { repo: 'acme/b', dir: '/y', error: 'fatal error: kernel.h: No such file' };
  const ok = environmentProblems(group([cuda, { repo: 'acme/c', dir: '/z', wheel: '/w.whl' }]));
  assert.deepEqual(ok.failures, []);
  assert.equal(ok.warnings.length, 1);
  assert.match(ok.warnings[0], /acme\/a in \/x\/ops need CUDA, which this machine does not have/);
  assert.equal(environmentProblems(group([cuda, broken])).failures.length, 1);
  const failed = environmentProblems(
    group([], [{ repo: 'acme/d', distribution: 'acme-d', root: '/d', error: 'flit_core: LICENSE not found' }]),
  );
  assert.match(failed.failures[0], /acme-d from the indexed acme\/d did not install: flit_core: LICENSE not found/);
});

test("the C++ standard torch's headers require is read from them", () => {
  const dir = tempDir();
  assert.equal(torchCxxStandard(dir), null);
  write(dir, {
    'lib/python3.11/site-packages/torch/include/ATen/ATen.h':
      '#pragma once\n#if __cplusplus < 202002L\n#error C++20 or later compatible compiler is required to use ATen.\n#endif\n',
  });
  assert.equal(torchCxxStandard(dir), '20');
});

test("the repositories a resolver's error names are set aside: their own requirements, not torch's or the tools'", () => {
  const needs = {
    indexed: new Map<string, string>(),
    repos: [
      {
        name: 'acme/pose',
        root: '/p',
        declared: ['numpy', 'poseval@git+https://example.org/x/poseval.git'],
        imported: [],
        unknown: [],
      },
      { name: 'acme/img', root: '/i', declared: ['torch>=2', 'numpy', 'pytest'], imported: ['pillow'], unknown: [] },
      { name: 'acme/ocr', root: '/o', declared: ['rapid_fuzz>=2'], imported: [], unknown: [] },
    ],
  };
  const all = needs.repos.map((r) => r.name);
  const git =
    "fatal: unable to access 'https://example.org/x/poseval.git/': Could not resolve host: example.org\nBecause torch==2.15 and numpy>=2 ...";
  assert.deepEqual(blamedRepos(needs, all, git), ['acme/pose']);
  // a name as the resolver normalises it (PEP 503)
  assert.deepEqual(
    blamedRepos(
      needs,
      all,
      'No solution found when resolving dependencies:\n  ╰─▶ Because rapid-fuzz>=2 was not found in the package registry',
    ),
    ['acme/ocr'],
  );
  // a word inside another name is not the name
  assert.deepEqual(blamedRepos(needs, all, 'Because pillow-simd is yanked'), []);
  assert.deepEqual(blamedRepos(needs, all, 'because pillow==1 conflicts'), ['acme/img']);
});

test('a repository is installed from its checkout when it is a package named for its distribution', () => {
  const dir = tempDir();
  // a library whose registry imports its own package at run time (PEP 503: acme_lib is acme-lib)
  const lib = write(path.join(dir, 'lib'), {
    'setup.cfg': '[metadata]\nname = acme-lib\n',
    'setup.py': 'from setuptools import setup\nsetup()\n',
    'acme_lib/__init__.py': '',
  });
  // a flat checkout of scripts: its distribution is not one of its top-level packages
  const scripts = write(path.join(dir, 'scripts'), {
    'pyproject.toml': '[project]\nname = "AcmeScripts"\nversion = "1"\n',
    'models/__init__.py': '',
  });
  // a package whose root setup.py compiles operators: its own build installs it
  const ops = write(path.join(dir, 'ops'), {
    'setup.py': "from torch.utils.cpp_extension import CppExtension\nsetup(name='acme_ops')\n",
    'acme_ops/__init__.py': '',
  });
  // sources only: nothing to install
  const src = write(path.join(dir, 'src'), { 'acme_src/__init__.py': '' });
  const repo = (name: string, root: string, declared: string[] = []) => ({
    name,
    root,
    declared,
    imported: [],
    unknown: [],
  });
  const needs = {
    repos: [
      repo('acme/lib', lib),
      repo('acme/scripts', scripts),
      repo('acme/ops', ops),
      repo('acme/src', src, ['acme-lib>=1']),
    ],
    indexed: new Map([
      ['acme_lib', 'acme/lib'],
      ['models', 'acme/scripts'],
      ['acme_ops', 'acme/ops'],
      ['acme_src', 'acme/src'],
    ]),
  };
  const installs = (repos: string[]) => indexedInstalls(needs, repos).map((x) => `${x.repo} ${x.distribution}`);
  assert.deepEqual(installs(['acme/lib']), ['acme/lib acme-lib']);
  assert.deepEqual(installs(['acme/scripts']), []);
  assert.deepEqual(installs(['acme/ops']), []);
  // a repository that declares an indexed one gets that one installed; itself stays on the path
  assert.deepEqual(installs(['acme/src']), ['acme/lib acme-lib']);
});

test("a checkout whose version does not meet another repository's pin is not installed for it", () => {
  const dir = tempDir();
  // the library's checkout is 2.2.0 (its setup.py reads its version file)
  const lib = write(path.join(dir, 'lib'), {
    'setup.py': "version_file = 'acme_lib/version.py'\nsetup(name='acme-lib', version=get_version())\n",
    'acme_lib/__init__.py': '',
    'acme_lib/version.py': "__version__ = '2.2.0'\n",
  });
  const repo = (name: string, root: string, declared: string[] = []) => ({
    name,
    root,
    declared,
    imported: [],
    unknown: [],
  });
  const needs = {
    repos: [
      repo('acme/lib', lib),
      repo('acme/new', write(path.join(dir, 'new'), { 'acme_new/__init__.py': '' }), ['acme-lib>=2.0,<2.4']),
      repo('acme/old', write(path.join(dir, 'old'), { 'acme_old/__init__.py': '' }), ['acme-lib>=2.0.0rc4,<2.2.0']),
      // a range the checkout meets, and a bound it does not (one learnt from an import)
      repo('acme/both', write(path.join(dir, 'both'), { 'acme_both/__init__.py': '' }), [
        'acme-lib>=2.0,<3.0',
        'acme-lib>=2.0.0rc4,<2.2.0',
      ]),
    ],
    indexed: new Map([
      ['acme_lib', 'acme/lib'],
      ['acme_new', 'acme/new'],
      ['acme_old', 'acme/old'],
      ['acme_both', 'acme/both'],
    ]),
  };
  const installs = (repos: string[]) => indexedInstalls(needs, repos).map((x) => x.repo);
  assert.deepEqual(installs(['acme/new']), ['acme/lib']);
  // the pin excludes the checkout: the pinned version comes from the index instead
  assert.deepEqual(installs(['acme/old']), []);
  // every requirement of it must be met, not the first one
  assert.deepEqual(installs(['acme/both']), []);
  // a group that installs the checkout resolves it as itself: name==its version
  assert.deepEqual(
    [...checkoutPins(needs, ['acme/new', 'acme/lib']).values()],
    [{ repo: 'acme/lib', distribution: 'acme-lib', version: '2.2.0' }],
  );
  assert.equal(checkoutPins(needs, ['acme/old']).size, 0);
});

test("torch's family is taken from the index, at the group's torch, by a group without its indexed repository", () => {
  const dir = tempDir();
  // torchvision's indexed repository, sources only (stays on the path), and another such
  // library, which the rule does not concern
  const vision = write(path.join(dir, 'vision'), { 'torchvision/__init__.py': '' });
  const lib = write(path.join(dir, 'lib'), { 'acme_lib/__init__.py': '' });
  const repo = (name: string, root: string, declared: string[] = [], imported: string[] = []) => ({
    name,
    root,
    declared,
    imported,
    unknown: [],
  });
  const needs = {
    repos: [
      repo('pytorch/vision', vision),
      repo('acme/lib', lib),
      // imports torchvision without declaring it (pypiNeeds keeps it), and the library
      repo('open/ocr', write(path.join(dir, 'ocr'), { 'ocr/__init__.py': '' }), [], ['torchvision', 'acme_lib']),
      // declares it with a range
      repo('open/det', write(path.join(dir, 'det'), { 'det/__init__.py': '' }), ['torchvision>=0.6.0']),
    ],
    indexed: new Map([
      ['torchvision', 'pytorch/vision'],
      ['acme_lib', 'acme/lib'],
      ['ocr', 'open/ocr'],
      ['det', 'open/det'],
    ]),
  };
  const reqs = (repos: string[], systemTorch = false) =>
    groupRequirements(needs, repos, 'torch', [], systemTorch)
      .filter((r) => r.neededBy.some((b) => b !== 'nnrag'))
      .map((r) => `${r.spec} ${r.neededBy.join(',')}`);
  // resolved with the group's torch: the index's torchvision that requires it
  assert.deepEqual(reqs(['open/ocr']), ['torchvision open/ocr']);
  assert.deepEqual(reqs(['open/det']), ['torchvision>=0.6.0 open/det']);
  // the group holds the repository: its checkout, as for any indexed repository
  assert.deepEqual(reqs(['open/ocr', 'pytorch/vision', 'acme/lib']), []);
  assert.deepEqual(reqs(['open/det', 'pytorch/vision']), []);
  // with the base interpreter's torch, its family is the interpreter's
  assert.deepEqual(reqs(['open/ocr'], true), []);
  // the installed release, not the checkout, is what the group's originals import
  assert.deepEqual(fromIndexOf(needs, ['open/ocr'], ['acme-lib==1.0', 'torch==2.15.0', 'torchvision==0.29.2']), [
    { repo: 'pytorch/vision', distribution: 'torchvision', version: '0.29.2' },
  ]);
  assert.deepEqual(fromIndexOf(needs, ['open/ocr', 'pytorch/vision'], ['torchvision==0.29.2']), []);
});

test("the store's needs keep torch's family that a repository's package imports outside its blocks, even when an indexed repository provides it", async () => {
  const dir = tempDir();
  const vision = write(path.join(dir, 'vision'), {
    'torchvision/__init__.py': '',
    'torchvision/ops.py': 'import torch\n\n\nclass Op(torch.nn.Module):\n    pass\n',
  });
  const lib = write(path.join(dir, 'lib'), {
    'acme_lib/__init__.py': '',
    'acme_lib/m.py': 'import torch\n\n\nclass L(torch.nn.Module):\n    pass\n',
  });
  // the indexed models import neither; a module outside the indexed paths (a dataset
  // transform its registry imports at run time) imports torchvision in a function, and
  // names torchaudio only in a docstring
  const ocr = write(path.join(dir, 'ocr'), {
    'ocr/__init__.py': '',
    'ocr/models/__init__.py': '',
    'ocr/models/m.py': 'import torch\nimport acme_lib\n\n\nclass M(torch.nn.Module):\n    pass\n',
    'ocr/datasets/__init__.py': '',
    'ocr/datasets/wrappers.py':
      'def tv(name):\n    """Like `import torchaudio`."""\n    from torchvision.transforms import functional as F\n    return getattr(F, name)\n',
    // a file outside the packages: not scanned
    'tools/train.py': 'import torchaudio\n',
  });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  try {
    await api.index(ws, {
      repos: [repoSpec('pytorch/vision', vision), repoSpec('acme/lib', lib), repoSpec('open/ocr', ocr, ['ocr/models'])],
      workers: 1,
    });
    await extractAndValidate(
      ws,
      api.discover(ws).map((b) => b.id),
      { validate: false },
    );
    const needs = await pypiNeeds(ws, { python: BASE });
    const ocrNeeds = needs.repos.find((r) => r.name === 'open/ocr');
    assert.deepEqual(ocrNeeds?.imported, ['torchvision'], JSON.stringify(ocrNeeds));
    // an indexed repository that is not of torch's family stays the checkout's
    assert.ok(!ocrNeeds?.imported.includes('acme_lib') && !ocrNeeds?.unknown.includes('acme_lib'));
    assert.deepEqual(needs.repos.find((r) => r.name === 'acme/lib')?.imported, []);
  } finally {
    ws.close();
  }
});

test('a PyPI environment: shared group, a conflicting repository in its own, indexed repositories installed, routing by --env', {
  skip,
  timeout: 600_000,
}, async () => {
  const dir = tempDir('nnrag-pypi-');
  chmodSync(dir, 0o755); // the sandbox's user (uid 65534 under root) enters the environment
  const wheels = path.join(dir, 'wheels');
  mkdirSync(wheels);
  buildWheel(wheels, '1.0');
  buildWheel(wheels, '2.0');
  // a release of acme/libb other than its checkout's 0.1
  buildWheel(wheels, '1.0', 'nnragfix-libb', 'libb');
  // each block checks, when it is built, the version of nnragfix_dep its environment has
  const block = (name: string, check: string) =>
    `import torch\nimport nnragfix_dep\n\n\nclass ${name}(torch.nn.Module):\n    def __init__(self, dim=4):\n        super().__init__()\n        ${check}\n        self.lin = torch.nn.Linear(dim, dim)\n\n    def forward(self, x):\n        return self.lin(x)\n`;
  const liba = write(path.join(dir, 'liba'), {
    'requirements.txt': 'nnragfix-dep==1.0\nnnragfix-libb\n',
    'liba/__init__.py': '',
    'liba/blocks.py': block('BlockA', "assert nnragfix_dep.__version__ == '1.0', nnragfix_dep.__version__"),
  });
  const libb = write(path.join(dir, 'libb'), {
    'setup.py': "from setuptools import setup\nsetup(name='nnragfix-libb', version='0.1', packages=['libb'])\n",
    'libb/__init__.py': 'VALUE = 42\n',
  });
  const libc = write(path.join(dir, 'libc'), {
    'requirements.txt': 'nnragfix-dep==2.0\n',
    'libc/__init__.py': '',
    'libc/blocks.py': block('BlockC', "assert nnragfix_dep.__version__ == '2.0', nnragfix_dep.__version__"),
    'libc/extra.py':
      'import torch\nimport nnragfix_never_declared\n\n\nclass BlockX(torch.nn.Module):\n    def forward(self, x):\n        return nnragfix_never_declared.f(x)\n',
  });
  // a package named for its distribution whose requirement resolves nowhere: it validates
  // in the shared environment, and is installed there
  const libd = write(path.join(dir, 'libd'), {
    'requirements.txt': 'nnragfix-dep==3.0\n',
    'setup.py':
      "from setuptools import setup\nsetup(name='nnragfix-libd', version='0.1', packages=['nnragfix_libd'])\n",
    'nnragfix_libd/__init__.py': 'VALUE = 7\n',
  });
  // pins a version of the indexed acme/libb that its checkout (0.1) is not: its checkout is
  // resolved as nnragfix-libb==0.1 with the shared requirements, so libe conflicts and gets
  // an environment of its own, with nnragfix-libb 1.0 from the index
  const libe = write(path.join(dir, 'libe'), {
    'requirements.txt': 'nnragfix-libb>=1.0\n',
    'libe/__init__.py': '',
  });
  for (const r of [liba, libb, libc, libd, libe]) execFileSync('git', ['init', '-q', r]);
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  await api.index(ws, {
    repos: [
      repoSpec('acme/liba', liba),
      repoSpec('acme/libb', libb),
      repoSpec('acme/libc', libc),
      repoSpec('acme/libd', libd),
      repoSpec('acme/libe', libe),
    ],
    workers: 1,
  });
  await extractAndValidate(
    ws,
    api.discover(ws).map((b) => b.id),
    { validate: false },
  );
  const needs = await pypiNeeds(ws, { python: BASE });
  assert.deepEqual(
    needs.repos.find((r) => r.name === 'acme/libc')?.unknown,
    ['nnragfix_never_declared'],
    'an import nothing declares is reported, not guessed',
  );

  const env = path.join(dir, 'env');
  const logs: string[] = [];
  const m = await syncPyPIEnvironment(env, needs, {
    python: BASE,
    systemTorch: true,
    offline: true,
    wheels,
    onLog: (l) => logs.push(l),
  });
  const shared = m.groups.find((g) => g.name === 'shared')!;
  const own = m.groups.find((g) => g.name === 'acme/libc');
  assert.ok(shared.repos.includes('acme/liba') && shared.repos.includes('acme/libb'), JSON.stringify(shared.repos));
  assert.ok(
    own,
    `libc has an environment of its own: ${JSON.stringify(m.groups.map((g) => g.name))}\n${logs.join('\n')}`,
  );
  assert.ok(own!.conflict, 'and the reason it has one');
  assert.ok(shared.pins.includes('nnragfix-dep==1.0') && own!.pins.includes('nnragfix-dep==2.0'));
  assert.deepEqual(
    m.unresolved.map((u) => u.module),
    ['nnragfix_never_declared'],
  );
  const ver = (e: string) =>
    execFileSync(envPython(e), ['-c', 'import nnragfix_dep, sys; print(nnragfix_dep.__version__)']).toString().trim();
  assert.equal(ver(env), '1.0');
  assert.equal(ver(own!.dir), '2.0');
  // acme/libb is installed from its checkout: the same file
  const file = execFileSync(envPython(env), ['-c', 'import libb; print(libb.__file__)'], { cwd: '/' })
    .toString()
    .trim();
  assert.ok(file.startsWith(env), file);
  assert.equal(readFileSync(file, 'utf8'), readFileSync(path.join(libb, 'libb/__init__.py'), 'utf8'));
  assert.equal(envFor(env, 'acme/libc'), own!.dir);
  // acme/libe: its pin of acme/libb conflicts with the checkout the shared group installs
  const ownE = m.groups.find((g) => g.name === 'acme/libe');
  assert.ok(ownE?.conflict, `libe has an environment of its own: ${JSON.stringify(m.groups.map((g) => g.name))}`);
  assert.match(ownE!.conflict!, /nnragfix-libb/);
  assert.deepEqual(ownE!.fromIndex, [{ repo: 'acme/libb', distribution: 'nnragfix-libb', version: '1.0' }]);
  assert.ok(!ownE!.repos.includes('acme/libb') && !ownE!.indexed.some((x) => x.repo === 'acme/libb'));
  assert.equal(
    execFileSync(envPython(ownE!.dir), ['-c', 'import libb; print(libb.__version__)'], { cwd: '/' }).toString().trim(),
    '1.0',
  );
  // the checkout's pin never reaches a lock: the shared one has no nnragfix-libb line
  assert.ok(!shared.pins.some((p) => p.startsWith('nnragfix-libb==')), JSON.stringify(shared.pins));
  assert.ok(!shared.fromIndex);
  assert.equal(envFor(env, 'acme/liba'), env);
  assert.ok(shared.repos.includes('acme/libd'), JSON.stringify(shared.repos));
  assert.ok(
    shared.indexed.some((x) => x.repo === 'acme/libd' && !x.error),
    `${JSON.stringify(shared.indexed)}\n${logs.join('\n')}`,
  );
  assert.equal(
    execFileSync(envPython(env), ['-c', 'import nnragfix_libd; print(nnragfix_libd.VALUE)'], { cwd: '/' })
      .toString()
      .trim(),
    '7',
  );

  // nothing changed: nothing is installed again
  const again: string[] = [];
  await syncPyPIEnvironment(env, needs, {
    python: BASE,
    systemTorch: true,
    offline: true,
    wheels,
    onLog: (l) => again.push(l),
  });
  assert.ok(
    again.some((l) => /up to date with its lock/.test(l)),
    again.join('\n'),
  );
  assert.ok(!again.some((l) => /^installing the shared/.test(l)), again.join('\n'));

  // --env routes each repository's blocks to its group: each block asserts its version at import
  const ids = api
    .discover(ws)
    .map((b) => b.id)
    .filter((id) => /Block[AC]$/.test(id));
  assert.equal(ids.length, 2);
  const recs = await extractAndValidate(ws, ids, { pool: { env, workers: 1 }, equivalence: false });
  for (const r of recs) assert.equal(r.validation?.stages.instantiate, 'pass', `${r.id}: ${r.validation?.error}`);
});

test('an import of a module its distribution removed asks for a release before the removal, declared or not', {
  skip: needsTorch(),
}, async () => {
  const dir = tempDir();
  const block = () =>
    `import pkg_resources\nimport torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        pkg_resources.parse_version('1.0')\n        return x\n`;
  // one repository declares setuptools, one does not; both import pkg_resources
  const declares = write(path.join(dir, 'declares'), {
    'requirements.txt': 'setuptools>=70\n',
    'a/__init__.py': '',
    'a/m.py': block(),
  });
  const silent = write(path.join(dir, 'silent'), { 'b/__init__.py': '', 'b/m.py': block() });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  try {
    await api.index(ws, { repos: [repoSpec('acme/declares', declares), repoSpec('acme/silent', silent)], workers: 1 });
    await extractAndValidate(
      ws,
      api.discover(ws).map((b) => b.id),
      { validate: false },
    );
    const needs = await pypiNeeds(ws, { python: BASE });
    for (const name of ['acme/declares', 'acme/silent']) {
      const r = needs.repos.find((x) => x.name === name);
      assert.ok(r?.imported.includes('setuptools<82'), `${name}: ${JSON.stringify(r)}`);
      assert.ok(!r?.unknown.includes('pkg_resources'), `${name}: ${JSON.stringify(r)}`);
    }
    assert.ok(needs.repos.find((x) => x.name === 'acme/declares')?.declared.includes('setuptools>=70'));
  } finally {
    ws.close();
  }
});
