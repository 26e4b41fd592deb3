// Python file listing (scoping, skipped folders, symlinks, size limit), package roots
// and module names as Python would import them, and git blob ids.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  detectPackageRoots,
  gitBlobId,
  listPythonFiles,
  moduleNameCandidates,
  importedNamesOf,
  moduleNameFor,
} from '../../src/repos/cache.js';
import { tempDir } from '../helpers.js';
import { writeFiles } from './git-helpers.js';

test('lists .py files only, skipping hidden, __pycache__, node_modules and virtualenv folders', async () => {
  const root = tempDir();
  writeFiles(root, {
    'a.py': 'x = 1\n',
    'pkg/__init__.py': '',
    'pkg/b.py': 'y = 2\n',
    'pkg/data.json': '{}',
    'pkg/__pycache__/b.cpython-311.py': '',
    '.git/hooks/x.py': '',
    '.hidden/c.py': '',
    'node_modules/m/d.py': '',
    'venv/pyvenv.cfg': 'home = /usr/bin\n',
    'venv/lib/site.py': '',
  });
  const { files, problems } = await listPythonFiles(root);
  assert.deepEqual(
    files.map((f) => f.path),
    ['a.py', 'pkg/__init__.py', 'pkg/b.py'],
  );
  assert.equal(files[0].size, 6);
  assert.ok(files[0].mtimeMs > 0);
  assert.deepEqual(problems, []);
});

test('scopes the walk by path globs', async () => {
  const root = tempDir();
  writeFiles(root, {
    'timm/__init__.py': '',
    'timm/layers/mlp.py': '',
    'timm/models/vit.py': '',
    'models_vit.py': '',
    'models/a.py': '',
    'models/x/b.py': '',
    'other/c.py': '',
  });
  const list = async (paths: string[]) => (await listPythonFiles(root, { paths })).files.map((f) => f.path);
  assert.deepEqual(await list(['timm/layers']), ['timm/layers/mlp.py']);
  assert.deepEqual(await list(['models/*']), ['models/a.py', 'models/x/b.py']);
  assert.deepEqual(await list(['models_vit']), ['models_vit.py']);
  assert.deepEqual(await list(['**/vit.py', 'other/']), ['other/c.py', 'timm/models/vit.py']);
});

test('symlink loops and symlinks leaving the root are problems, not failures', async () => {
  const root = tempDir();
  const outside = tempDir();
  writeFiles(root, { 'pkg/__init__.py': '', 'pkg/m.py': 'z = 3\n' });
  writeFileSync(path.join(outside, 'secret.py'), 'password = 1\n');
  symlinkSync('..', path.join(root, 'pkg', 'loop')); // pkg/loop -> root: a cycle
  symlinkSync(outside, path.join(root, 'escape'));
  symlinkSync(path.join(outside, 'secret.py'), path.join(root, 'secret.py'));
  symlinkSync('m.py', path.join(root, 'pkg', 'alias.py')); // inside the root: the same file, listed once
  const { files, problems } = await listPythonFiles(root);
  assert.deepEqual(
    files.map((f) => f.path),
    ['pkg/__init__.py', 'pkg/m.py'],
  );
  const byPath = Object.fromEntries(problems.map((p) => [p.path, p.problem]));
  assert.match(byPath['pkg/alias.py'], /same file as pkg\/m.py/);
  assert.match(byPath['pkg/loop'], /symlink loop/);
  assert.match(byPath.escape, /leaves the repository/);
  assert.match(byPath['secret.py'], /leaves the repository/);
});

test('files over 2 MB are reported as too large and skipped', async () => {
  const root = tempDir();
  mkdirSync(path.join(root, 'gen'));
  writeFileSync(path.join(root, 'gen', 'table.py'), Buffer.alloc(2 * 1024 * 1024 + 1, 0x23));
  writeFileSync(path.join(root, 'gen', 'ok.py'), '# ok\n');
  const { files, problems } = await listPythonFiles(root);
  assert.deepEqual(
    files.map((f) => f.path),
    ['gen/ok.py'],
  );
  assert.equal(problems.length, 1);
  assert.equal(problems[0].path, 'gen/table.py');
  assert.match(problems[0].problem, /too large/);
});

test('package roots and module names: timm-like layout', () => {
  const files = [
    'timm/__init__.py',
    'timm/layers/__init__.py',
    'timm/layers/mlp.py',
    'timm/models/__init__.py',
    'timm/models/vit.py',
    'setup.py',
  ];
  const roots = detectPackageRoots(files);
  assert.deepEqual(roots, ['']);
  assert.equal(moduleNameFor('timm/layers/mlp.py', roots), 'timm.layers.mlp');
  assert.equal(moduleNameFor('timm/layers/__init__.py', roots), 'timm.layers');
  assert.equal(moduleNameFor('timm/__init__.py', roots), 'timm');
  assert.equal(moduleNameFor('setup.py', roots), 'setup');
});

test('package roots and module names: src layout', () => {
  const files = [
    'src/transformers/__init__.py',
    'src/transformers/models/__init__.py',
    'src/transformers/models/bert/__init__.py',
    'src/transformers/models/bert/modeling_bert.py',
    'tests/test_bert.py',
  ];
  // `src` holds only a regular package: it is the sys.path entry (no import says otherwise);
  // `tests` holds modules: a namespace package under the repository root
  const roots = detectPackageRoots(files);
  assert.deepEqual(roots, ['', 'src']);
  assert.equal(
    moduleNameFor('src/transformers/models/bert/modeling_bert.py', roots),
    'transformers.models.bert.modeling_bert',
  );
  assert.equal(moduleNameFor('tests/test_bert.py', roots), 'tests.test_bert');
});

test('package roots and module names: loose scripts and namespace folders (PEP 420)', () => {
  const files = ['train.py', 'models/yolo.py', 'models/common.py', 'utils/__init__.py', 'utils/general.py'];
  const roots = detectPackageRoots(files);
  assert.deepEqual(roots, ['']);
  assert.equal(moduleNameFor('models/yolo.py', roots), 'models.yolo');
  assert.equal(moduleNameFor('utils/general.py', roots), 'utils.general');
  assert.equal(moduleNameFor('train.py', roots), 'train');
  assert.deepEqual(moduleNameCandidates('models/yolo.py', ['', 'models']), ['yolo', 'models.yolo']);
});

test('package roots: nested namespace folders, and the names the code imports win', () => {
  const files = ['main.py', 'nets/deep/block.py', 'nets/deep/layers/__init__.py', 'nets/deep/layers/conv.py'];
  assert.deepEqual(detectPackageRoots(files), ['']);
  assert.equal(moduleNameFor('nets/deep/layers/conv.py', ['']), 'nets.deep.layers.conv');
  // code that imports `block` (its folder on sys.path) names the folder the entry
  assert.deepEqual(
    detectPackageRoots(files, undefined, () => ['block', 'layers.conv', 'torch']),
    ['', 'nets/deep'],
  );
  // evidence for the middle folder
  assert.deepEqual(
    detectPackageRoots(files, undefined, () => ['deep.block']),
    ['', 'nets'],
  );
  // a src layout that imports itself through `src.` follows its imports too
  const src = ['src/pkg/__init__.py', 'src/pkg/mod.py'];
  assert.deepEqual(detectPackageRoots(src), ['src']);
  assert.deepEqual(
    detectPackageRoots(src, undefined, () => ['src.pkg.mod']),
    [''],
  );
  // a folder whose name is no identifier cannot be a package
  assert.deepEqual(detectPackageRoots(['my-tools/run.py', 'my-tools/helper.py']), ['my-tools']);
});

test('imported names are read from the source text', () => {
  const text = [
    'import torch, torch.nn as nn',
    'from util.pos_embed import get_2d_sincos_pos_embed, other as o',
    'from models import (',
    '    net,',
    ')',
    'from . import sibling',
    '    from a.b import *  # nested',
  ].join('\n');
  assert.deepEqual(
    importedNamesOf(text).sort(),
    [
      'a.b',
      'models',
      'torch',
      'torch.nn',
      'util.pos_embed',
      'util.pos_embed.get_2d_sincos_pos_embed',
      'util.pos_embed.other',
    ].sort(),
  );
});

test('names that Python cannot import are null', () => {
  assert.equal(moduleNameFor('my-scripts/run.py', ['']), null);
  assert.equal(moduleNameFor('pkg/1st.py', ['']), null);
  assert.equal(moduleNameFor('pkg/class.py', ['']), null);
  assert.equal(moduleNameFor('pkg/a.b.py', ['']), null);
  assert.equal(moduleNameFor('__init__.py', ['']), null);
  assert.equal(moduleNameFor('pkg/readme.txt', ['']), null);
  assert.equal(moduleNameFor('other/x.py', ['src']), null);
  assert.equal(moduleNameFor('pkg/ünï.py', ['']), 'pkg.ünï');
  // the longest matching root wins
  assert.equal(moduleNameFor('src/pkg/a.py', ['', 'src']), 'pkg.a');
});

test('gitBlobId equals git hash-object', () => {
  const dir = tempDir();
  for (const [name, content] of [
    ['empty.py', Buffer.alloc(0)],
    ['crlf.py', Buffer.from('x = 1\r\ny = "é"\r\n', 'utf8')],
    ['bin.py', Buffer.from([0, 1, 2, 255, 10])],
  ] as const) {
    const f = path.join(dir, name);
    writeFileSync(f, content);
    const expected = execFileSync('git', ['hash-object', '--no-filters', '--', f], { encoding: 'utf8' }).trim();
    assert.equal(gitBlobId(content), expected, name);
  }
});

test('symlink fan-out: a folder reached through many paths is walked once, the listing stays linear', async () => {
  // every level holds a module and two symlinks to the next level (a DAG, no loop): 2^8
  // paths reach the deepest folder; each file must be listed once, under its real path
  const root = tempDir();
  const depth = 8;
  for (let i = 0; i <= depth; i++) writeFiles(root, { [`l${i}/__init__.py`]: '', [`l${i}/m${i}.py`]: `x = ${i}\n` });
  for (let i = 0; i < depth; i++) {
    symlinkSync(`../l${i + 1}`, path.join(root, `l${i}`, 'a'));
    symlinkSync(`../l${i + 1}`, path.join(root, `l${i}`, 'b'));
  }
  const { files, problems } = await listPythonFiles(root);
  assert.equal(files.length, 2 * (depth + 1), files.map((f) => f.path).join(' '));
  assert.deepEqual(
    files.map((f) => f.path).filter((p) => !/^l\d+\/(m\d+|__init__)\.py$/.test(p)),
    [],
  );
  assert.ok(
    problems.every((p) => /same folder as l\d+/.test(p.problem)),
    JSON.stringify(problems.slice(0, 3)),
  );
  // one problem per symlink: nothing below a folder already walked is walked again
  assert.equal(problems.length, 2 * depth);
});
