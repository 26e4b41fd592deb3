// Shared bytecode between virtual environments (src/environment/bytecode.ts), with the real
// uv and interpreter: two environments install one small wheel written here from one uv
// cache (uv hardlinks the files, so both hold the same inodes). The first compiles its
// bytecode; the second hardlinks it, compiles only a file that is not the same inode (a
// copy), and its interpreter then loads every module of the package from that bytecode
// without compiling any source (`python -v` says which). No torch is involved.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compileBytecode, donorEnvironments, sitePackagesOf, venvInterpreter } from '../../src/environment/bytecode.js';
import { findUv } from '../../src/environment/pypi.js';
import { tempDir } from '../helpers.js';

const BASE = '/usr/bin/python3';
const uv = findUv();
const skip = !uv
  ? 'uv is not installed (scripts/setup.sh installs it)'
  : !existsSync(BASE)
    ? 'no /usr/bin/python3'
    : false;

/** A pure-Python wheel of `nnragfix_bc` (a package of three modules), PEP 427. */
function buildWheel(dir: string): void {
  const script = String.raw`
import sys, zipfile, hashlib, base64
d = sys.argv[1]
name = "nnragfix_bc-1.0"
files = {
  "nnragfix_bc/__init__.py": "from . import a, b\n",
  "nnragfix_bc/a.py": "def f(x):\n    return x + 1\n",
  "nnragfix_bc/b.py": "from .a import f\n\nVALUE = f(41)\n",
  f"{name}.dist-info/METADATA": "Metadata-Version: 2.1\nName: nnragfix-bc\nVersion: 1.0\n",
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
  execFileSync(BASE, ['-c', script, dir]);
}

function makeEnv(dir: string, wheels: string, cache: string): string {
  execFileSync(uv!, ['venv', '--quiet', '--python', BASE, '--no-managed-python', '--no-python-downloads', dir]);
  execFileSync(uv!, [
    'pip',
    'install',
    '--quiet',
    '--python',
    path.join(dir, 'bin', 'python'),
    '--offline',
    '--no-index',
    '--find-links',
    wheels,
    '--cache-dir',
    cache,
    '--link-mode',
    'hardlink',
    'nnragfix-bc',
  ]);
  return dir;
}

test('a second environment hardlinks the bytecode of the files it shares with the first and loads it without compiling', {
  skip,
  timeout: 180_000,
}, async () => {
  const root = tempDir('nnrag-bytecode-');
  const wheels = path.join(root, 'wheels');
  const cache = path.join(root, 'uv-cache');
  mkdirSync(wheels);
  buildWheel(wheels);
  const envs = path.join(root, 'envs');
  const a = makeEnv(path.join(envs, 'a'), wheels, cache);
  const pkgA = path.join(sitePackagesOf(a)[0], 'nnragfix_bc');

  // the first environment: nothing to share from, every file compiled
  const first = await compileBytecode(a, { donors: donorEnvironments(a) });
  assert.equal(first.linked, 0);
  assert.ok(first.compiled >= 3, JSON.stringify(first));
  const tag = execFileSync(BASE, ['-c', 'import sys; print(sys.implementation.cache_tag)'], {
    encoding: 'utf8',
  }).trim();
  const pyc = (pkg: string, mod: string) => path.join(pkg, '__pycache__', `${mod}.${tag}.pyc`);
  for (const m of ['__init__', 'a', 'b']) assert.ok(existsSync(pyc(pkgA, m)), m);

  // the second: the same wheel from the same cache, so the same inodes; b.py replaced by a
  // copy of itself (same bytes, another inode and time), whose bytecode is not shared
  const b = makeEnv(path.join(envs, 'b'), wheels, cache);
  const pkgB = path.join(sitePackagesOf(b)[0], 'nnragfix_bc');
  assert.equal(
    statSync(path.join(pkgB, 'a.py')).ino,
    statSync(path.join(pkgA, 'a.py')).ino,
    'uv hardlinks from its cache',
  );
  copyFileSync(path.join(pkgB, 'b.py'), path.join(pkgB, 'b.py.copy'));
  renameSync(path.join(pkgB, 'b.py.copy'), path.join(pkgB, 'b.py'));
  const donors = donorEnvironments(b);
  assert.deepEqual(donors, [a]);
  const second = await compileBytecode(b, { donors });
  assert.deepEqual(second.donors, [a]);
  // __init__.py and a.py shared; b.py (a copy) and the venv's own `_virtualenv.py`, which
  // uv writes in each environment, compiled
  assert.equal(second.linked, 2, JSON.stringify(second));
  assert.equal(second.compiled, second.sources - 2, JSON.stringify(second));
  for (const m of ['__init__', 'a'])
    assert.equal(statSync(pyc(pkgB, m)).ino, statSync(pyc(pkgA, m)).ino, `${m}: the first environment's bytecode`);
  assert.notEqual(statSync(pyc(pkgB, 'b')).ino, statSync(pyc(pkgA, 'b')).ino, 'b.py is another file: compiled');

  // the second environment imports the package from that bytecode: importlib says
  // "<pyc> matches <source>" for each module and compiles no source of it
  const before = ['__init__', 'a', 'b'].map((m) => statSync(pyc(pkgB, m)));
  const run = spawnSync(path.join(b, 'bin', 'python'), ['-v', '-c', 'import nnragfix_bc; print(nnragfix_bc.b.VALUE)'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
  });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), '42');
  for (const m of ['__init__', 'a', 'b'])
    assert.ok(run.stderr.includes(`${pyc(pkgB, m)} matches ${path.join(pkgB, `${m}.py`)}`), `${m}\n${run.stderr}`);
  assert.ok(
    !run.stderr.split('\n').some((l) => /code object from '?[^']*nnragfix_bc[^']*\.py'?$/.test(l.trim())),
    'no module of the package was compiled from its source',
  );
  ['__init__', 'a', 'b'].forEach((m, i) => {
    const now = statSync(pyc(pkgB, m));
    assert.equal(now.ino, before[i].ino, `${m}: not rewritten`);
    assert.equal(now.mtimeMs, before[i].mtimeMs, `${m}: not rewritten`);
  });

  // once everything is compiled, nothing is linked or compiled again
  const again = await compileBytecode(b, { donors });
  assert.equal(again.linked + again.compiled, 0, JSON.stringify(again));
  assert.equal(again.valid, again.sources);
});

test('only environments of the same interpreter give their bytecode', () => {
  const root = tempDir('nnrag-bytecode-');
  const cfg = (dir: string, version: string) => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'pyvenv.cfg'),
      `home = /usr/bin\nimplementation = CPython\nversion_info = ${version}\ninclude-system-site-packages = false\n`,
    );
    return dir;
  };
  const me = cfg(path.join(root, 'me'), '3.11.2');
  const same = cfg(path.join(root, 'same'), '3.11.2');
  cfg(path.join(root, 'other'), '3.12.1');
  const group = cfg(path.join(root, 'same', 'repos', 'acme__x'), '3.11.2');
  mkdirSync(path.join(root, 'not-an-env'));
  const elsewhere = cfg(path.join(root, 'home', 'envs', 'default'), '3.11.2');
  assert.equal(venvInterpreter(me), 'CPython 3.11.2 /usr/bin');
  assert.equal(venvInterpreter(path.join(root, 'not-an-env')), null);
  assert.deepEqual(donorEnvironments(me, [path.join(root, 'home', 'envs')]), [same, group, elsewhere]);
  // a group under DIR/repos/ also finds its shared environment
  assert.ok(donorEnvironments(group).includes(same));
  assert.ok(!donorEnvironments(group).includes(group));
});
