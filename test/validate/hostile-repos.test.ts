// Hostile repositories run through the pipeline (index, discover, extract + validate in
// the real sandbox), as an attacker would use them: a repository module named like the
// harness's own modules must not make the copy be compared with itself or with the
// harness (the equivalence a faithful-looking copy would otherwise get for free).
import { after, before, describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { tempDir } from '../helpers.js';
import { cannotValidate, request, validateFixture } from './common.js';
import { fixture } from '../helpers.js';

const skip = await cannotValidate(true);

function writeTree(root: string, files: Record<string, string>) {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
}

// computes x * 1000 anywhere but in the repository's own file: a copy compared with
// itself (or with anything but the original) would look equivalent
const TWO_FACED = (file: string) =>
  'import os\nimport torch.nn as nn\n\n\n' +
  'class TwoFaced(nn.Module):\n    def __init__(self, dim=8):\n        super().__init__()\n        self.fc = nn.Linear(dim, dim)\n\n' +
  `    def forward(self, x):\n        return self.fc(x) * (1.0 if os.path.basename(__file__) == ${JSON.stringify(file)} else 1000.0)\n`;

describe('hostile repositories through the pipeline', { skip: skip ?? false }, () => {
  let dir: string;
  let ws: api.Workspace;
  let pool: ValidatorPool;
  before(async () => {
    dir = tempDir();
    chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
    pool = await ValidatorPool.start({ workers: 1 });
  });
  after(async () => {
    await pool?.close();
    ws?.close();
  });

  it("a repository module named like the harness's names is compared with the original, not with the copy or the harness", async () => {
    const repo = path.join(dir, 'clash');
    writeTree(repo, {
      // the name the harness gave the copy
      'nnrag_candidate.py': TWO_FACED('nnrag_candidate.py'),
      // the harness's own package and one of its modules
      'nnrag_harness/__init__.py': '',
      'nnrag_harness/stages.py': TWO_FACED('stages.py'),
      // the same class under a name of its own: the reference verdict
      'plain_mod.py': TWO_FACED('plain_mod.py'),
    });
    ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
    await api.index(ws, {
      repos: [
        { name: 'evil/clash', url: null, path: repo, priority: 1, paths: [], description: null, packageRoots: null },
      ],
    });
    api.discover(ws);
    const ids = ['plain_mod.TwoFaced', 'nnrag_candidate.TwoFaced', 'nnrag_harness.stages.TwoFaced'];
    const recs = await extractAndValidate(ws, ids, {
      validator: pool,
      force: true,
      required: ['import', 'instantiate', 'forward', 'equivalence'],
    });
    const by = new Map(recs.map((r) => [r.id, r]));
    const v = (id: string) =>
      by.get(id)!.validation as {
        stages: Record<string, string>;
        category: string | null;
        equivalence?: { status: string; reason?: string };
      };
    for (const id of ['plain_mod.TwoFaced', 'nnrag_candidate.TwoFaced']) {
      assert.equal(v(id).stages.equivalence, 'fail', `${id}: ${JSON.stringify(v(id))}`);
      assert.equal(v(id).category, 'not-equivalent', id);
    }
    // the harness's module cannot be imported as the original: equivalence is not proven
    assert.notEqual(
      v('nnrag_harness.stages.TwoFaced').stages.equivalence,
      'pass',
      JSON.stringify(v('nnrag_harness.stages.TwoFaced')),
    );
    for (const id of ids) assert.equal(by.get(id)!.ok, false, id);
  });
});

test('a module path longer than a file name may hold is extracted with the other blocks: its library file name is shortened, its id kept', async () => {
  const dir = tempDir();
  const repo = path.join(dir, 'deep');
  // three folders of 100 characters: the module path is 300+ bytes (NAME_MAX is 255)
  const folders = ['a', 'b', 'c'].map((c) => `${c}${'x'.repeat(99)}`);
  const body =
    'import torch.nn as nn\n\n\nclass Deep(nn.Module):\n    def __init__(self, dim=4):\n        super().__init__()\n        self.fc = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        return self.fc(x)\n';
  const files: Record<string, string> = {
    'shallow.py': body.replace('Deep', 'Shallow'),
    [`${folders.join('/')}/deepmod.py`]: body,
  };
  for (let i = 1; i <= folders.length; i++) files[`${folders.slice(0, i).join('/')}/__init__.py`] = '';
  writeTree(repo, files);
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  try {
    await api.index(ws, {
      repos: [
        { name: 'evil/deep', url: null, path: repo, priority: 1, paths: [], description: null, packageRoots: null },
      ],
    });
    api.discover(ws);
    const deepId = `${folders.join('.')}.deepmod.Deep`;
    assert.ok(Buffer.byteLength(deepId) > 255);
    const recs = await extractAndValidate(ws, [deepId, 'shallow.Shallow'], { validate: false });
    for (const r of recs) {
      assert.equal(r.error, undefined, `${r.id}: ${r.error}`);
      assert.ok(r.file && existsSync(r.file), r.id);
      assert.ok(Buffer.byteLength(path.basename(r.file)) <= 255, r.file);
    }
    assert.equal(recs[0].id, deepId);
    // a second run finds the stored extraction and its file
    const again = await extractAndValidate(ws, [deepId], { validate: false });
    assert.equal(again[0].file, recs[0].file);
  } finally {
    ws.close();
  }
});

describe('memory no rlimit counts, and IPC objects between blocks', { skip: skip ?? false }, () => {
  it('refuses System V shared memory and memfd beyond the memory limit, and leaves no segment to the next block', async () => {
    const pool = await ValidatorPool.start({ workers: 1, memoryMb: 256 });
    try {
      const [hog, peek] = await pool.validateMany([request('ipc', 'hog.py'), request('ipc', 'peek.py')]);
      // the hog's forward raises when it held more than the limit
      assert.doesNotMatch(hog.error ?? '', /outside the memory limit/, JSON.stringify(hog));
      assert.equal(hog.stages.forward, 'pass', `${hog.category}: ${hog.error}`);
      assert.equal(peek.ok, true, `${peek.category}: ${peek.error}`);
    } finally {
      await pool.close();
    }
  });
});

test('a second folder with the name of an indexed repository is refused, the first one kept', async () => {
  const dir = tempDir();
  const first = path.join(dir, 'a', 'models');
  const second = path.join(dir, 'b', 'models');
  writeTree(first, { 'net.py': 'import torch.nn as nn\n\n\nclass First(nn.Module):\n    pass\n' });
  writeTree(second, { 'net.py': 'import torch.nn as nn\n\n\nclass Second(nn.Module):\n    pass\n' });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  const spec = (p: string) => ({
    name: 'models',
    url: null,
    path: p,
    priority: 1,
    paths: [],
    description: null,
    packageRoots: null,
  });
  try {
    await api.index(ws, { repos: [spec(first)] });
    await assert.rejects(api.index(ws, { repos: [spec(second)] }), /already indexed from .*a\/models/);
    assert.equal(ws.store.getRepo('models')?.root, first);
    // the same folder again is a re-index, not a clash
    await api.index(ws, { repos: [spec(first)] });
  } finally {
    ws.close();
  }
});

describe('an original whose import kills the worker', { skip: skip ?? false }, () => {
  it("is not the copy's failure: the copy's stages run, namespace and equivalence are skipped with the reason", async () => {
    const pool = await ValidatorPool.start({ workers: 1 });
    try {
      const r = await pool.validate({
        id: 'killer/copy.py',
        source: validateFixture('killer', 'copy.py'),
        className: 'Plain',
        original: { module: 'killpkg.blocks', className: 'Plain', sysPath: [fixture('validate', 'killer', 'repo')] },
      });
      assert.equal(r.stages.parse, 'pass', JSON.stringify(r));
      assert.equal(r.stages.import, 'pass');
      assert.equal(r.stages.forward, 'pass');
      assert.equal(r.stages.equivalence, 'skip');
      assert.match(r.equivalence?.reason ?? '', /original's import killed the validation worker/);
      assert.equal(r.ok, true, `${r.category}: ${r.error}`);
    } finally {
      await pool.close();
    }
  });
});
