// Discovery: nn.Module subclasses through resolved bases, across files and across two
// indexed repositories; abstract classes, non-modules and base classes without a
// forward are not blocks; torch.nn's classes under any module path (private bases too).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ParsePool } from '../../src/indexer/pool.js';
import * as api from '../../src/nnrag.js';
import { UsageError } from '../../src/util/errors.js';
import { fixture, repoRoot, tempDir } from '../helpers.js';
import { needsTorch } from '../support/tier.js';
import { PYTHON } from '../support/python.js';

function writeTree(root: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    const f = path.join(root, rel);
    mkdirSync(path.dirname(f), { recursive: true });
    writeFileSync(f, text);
  }
}

const spec = (name: string, p: string, priority = 1) => ({
  name,
  url: null,
  path: p,
  priority,
  paths: [],
  description: null,
  packageRoots: null,
});

describe('discovery', () => {
  // one parse worker for every index run of this file (a pool per run starts tree-sitter each time)
  const pool = new ParsePool(1);
  after(() => pool.close());
  it("a class defined under `if __name__ == '__main__':` is no block; one in its else branch or another `if` is", async () => {
    const dir = tempDir();
    const repo = path.join(dir, 'repo');
    const block = (name: string, indent = '') =>
      `${indent}class ${name}(nn.Module):\n${indent}    def forward(self, x):\n${indent}        return x\n`;
    writeTree(repo, {
      'pkg/__init__.py': '',
      'pkg/script.py':
        'from torch import nn\n\n' +
        block('Real') +
        "\nif __name__ == '__main__':\n    import sys\n" +
        block('ScriptOnly', '    ') +
        '\nif ("__main__" == __name__):\n' +
        block('AlsoScriptOnly', '    ') +
        'else:\n' +
        block('ImportedBranch', '    ') +
        '\nif __name__ != "__main__":\n' +
        block('OnImport', '    ') +
        '\nif nn is not None:\n' +
        block('Conditional', '    '),
    });
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      await api.index(ws, { repos: [spec('r', repo)], pool });
      assert.deepEqual(
        api
          .storedBlocks(ws)
          .map((b) => b.name)
          .sort(),
        ['Conditional', 'ImportedBranch', 'OnImport', 'Real'],
      );
    } finally {
      ws.close();
    }
  });

  it('follows the index: a block added or deleted by re-indexing appears or disappears', async () => {
    const dir = tempDir();
    const repo = path.join(dir, 'repo');
    writeTree(repo, {
      'pkg/__init__.py': '',
      'pkg/a.py': 'from torch import nn\n\nclass OldOne(nn.Module):\n    def forward(self, x):\n        return x\n',
    });
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      await api.index(ws, { repos: [spec('r', repo)], pool });
      assert.deepEqual(
        api.storedBlocks(ws).map((b) => b.name),
        ['OldOne'],
      );
      writeTree(repo, {
        'pkg/b.py': 'from torch import nn\n\nclass NewOne(nn.Module):\n    def forward(self, x):\n        return x\n',
      });
      await api.index(ws, { repos: [], pool });
      assert.deepEqual(
        api
          .storedBlocks(ws)
          .map((b) => b.name)
          .sort(),
        ['NewOne', 'OldOne'],
      );
      assert.equal(api.resolveBlockNames(ws, ['NewOne'])[0].id, 'pkg.b.NewOne');
      rmSync(path.join(repo, 'pkg', 'a.py'));
      await api.index(ws, { repos: [], pool });
      assert.deepEqual(
        api.storedBlocks(ws).map((b) => b.name),
        ['NewOne'],
      );
      assert.throws(() => api.resolveBlockNames(ws, ['OldOne']), /no block named/);
      // an index run that changes nothing keeps the stored list
      await api.index(ws, { repos: [], pool });
      assert.equal(ws.store.listBlocks().length, 1);
    } finally {
      ws.close();
    }
  });

  it('finds exactly the blocks of the example corpus', async () => {
    const ws = api.Workspace.open(tempDir());
    try {
      await api.index(ws, { repos: [spec('examples', path.join(repoRoot, 'examples'))], pool });
      const ids = api
        .discover(ws)
        .map((b) => b.id)
        .sort();
      assert.deepEqual(ids, [
        'tinyvision.layers.activations.GELUTanh',
        'tinyvision.layers.activations.HardSigmoid',
        'tinyvision.layers.attention.Attention',
        'tinyvision.layers.attention.Block',
        'tinyvision.layers.attention.WindowAttention',
        'tinyvision.layers.conv.ConvBnAct',
        'tinyvision.layers.mlp.Mlp',
        'tinyvision.models.mixer.Block',
        'tinyvision.models.mixer.LinearHead',
        'tinyvision.models.mixer.Mlp',
        'tinyvision.models.resnet.Bottleneck',
        'tinyvision.models.variants.ResBottleneck',
        'tinyvision.models.wrappers.FeatureTap',
      ]);
    } finally {
      ws.close();
    }
  });

  it('follows bases across two indexed repositories and every spelling of nn.Module', async () => {
    const dir = tempDir();
    writeTree(path.join(dir, 'base'), {
      'basepkg/__init__.py': 'from .core import BaseModule\n__all__ = ["BaseModule"]\n',
      'basepkg/core.py':
        'import torch.nn as tnn\n\nclass BaseModule(tnn.Module):\n    def init_weights(self):\n        pass\n',
    });
    writeTree(path.join(dir, 'app'), {
      'app/__init__.py': '',
      'app/blocks.py':
        [
          'import abc',
          'import torch',
          'from torch import nn',
          'from torch.nn import Module as M',
          'from basepkg import BaseModule',
          'from . import layers as L',
          '',
          'class Uses(BaseModule):',
          '    def forward(self, x):',
          '        return x',
          '',
          'class Spelled1(torch.nn.Module):',
          '    def forward(self, x):',
          '        return x',
          '',
          'class Spelled2(M):',
          '    def forward(self, x):',
          '        return x',
          '',
          'class Seq(nn.Sequential):',
          '    pass',
          '',
          'class NoForward(nn.Module):',
          '    pass',
          '',
          'class Abstract(nn.Module, abc.ABC):',
          '    @abc.abstractmethod',
          '    def forward(self, x): ...',
          '',
          'class Concrete(Abstract):',
          '    def forward(self, x):',
          '        return x',
          '',
          'class ViaAlias(L.Thing):',
          '    pass',
          '',
          'class Plain:',
          '    def forward(self, x):',
          '        return x',
          '',
          'def f():',
          '    class Nested(nn.Module):',
          '        def forward(self, x):',
          '            return x',
          '    return Nested',
        ].join('\n') + '\n',
      'app/layers.py': 'from torch import nn\n\nclass Thing(nn.Module):\n    def forward(self, x):\n        return x\n',
    });
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      await api.index(ws, {
        repos: [spec('org/base', path.join(dir, 'base')), spec('org/app', path.join(dir, 'app'), 2)],
        pool,
      });
      const blocks = api.discover(ws);
      const names = blocks
        .filter((b) => b.module === 'app.blocks')
        .map((b) => b.name)
        .sort();
      assert.deepEqual(names, ['Concrete', 'Seq', 'Spelled1', 'Spelled2', 'Uses', 'ViaAlias']);
      const uses = blocks.find((b) => b.name === 'Uses')!;
      assert.equal(uses.repo, 'org/app');
      assert.deepEqual(uses.bases, ['BaseModule']);
      assert.ok(!blocks.some((b) => b.name === 'BaseModule'), 'a base without forward is not a block');
      // bare names resolve, ambiguous ones by repository priority with alternatives listed
      const [r] = api.resolveBlockNames(ws, ['Thing']);
      assert.equal(r.id, 'app.layers.Thing');
    } finally {
      ws.close();
    }
  });

  it('refuses an ambiguous name with the candidates and their repositories, accepts qualified ones', async () => {
    const dir = tempDir();
    const block = 'import torch.nn as nn\n\nclass Mlp(nn.Module):\n    def forward(self, x):\n        return x\n';
    writeTree(path.join(dir, 'one'), { 'one/__init__.py': '', 'one/mlp.py': block });
    writeTree(path.join(dir, 'two'), { 'two/__init__.py': '', 'two/mlp.py': block });
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      await api.index(ws, {
        repos: [spec('r/one', path.join(dir, 'one'), 5), spec('r/two', path.join(dir, 'two'), 1)],
        pool,
      });
      api.discover(ws);
      assert.throws(
        () => api.resolveBlockNames(ws, ['Mlp']),
        (e: Error) =>
          e instanceof UsageError &&
          /ambiguous/.test(e.message) &&
          /one\.mlp\.Mlp +\(r\/one/.test(e.message) &&
          /two\.mlp\.Mlp +\(r\/two/.test(e.message),
      );
      assert.equal(api.resolveBlockNames(ws, ['two.mlp.Mlp'])[0].id, 'two.mlp.Mlp');
      assert.equal(api.resolveBlockNames(ws, ['r/one:one.mlp.Mlp'])[0].id, 'one.mlp.Mlp');
      assert.equal(api.resolveBlockNames(ws, ['r/one:Mlp'])[0].id, 'one.mlp.Mlp');
      assert.throws(() => api.resolveBlockNames(ws, ['Nope']), /no block named "Nope"/);
    } finally {
      ws.close();
    }
  });

  it('knows every class of torch.nn as a base, under any module path or alias', { skip: needsTorch() }, async () => {
    // fixture test/fixtures/discover/torch-bases: private bases of torch.nn's submodules
    // (_BatchNorm, _ConvNd, _DropoutNd, _NormBase), containers, DistributedDataParallel,
    // parametrize.ParametrizationList, import aliases; Parameter is not a module
    const root = fixture('discover', 'torch-bases');
    const ws = api.Workspace.open(tempDir());
    try {
      await api.index(ws, { repos: [spec('fixtures/torch-bases', root)], pool });
      const ids = api
        .discover(ws)
        .map((b) => b.id)
        .sort();
      const expected = [
        'tb.layers.AliasedBatchNorm',
        'tb.layers.BatchNormXd',
        'tb.layers.Dropout',
        'tb.layers.MyConv2',
        'tb.layers.Plist',
        'tb.layers.StackWithForward',
        'tb.layers.Wrapped',
      ];
      assert.deepEqual(ids, expected);
      // the same listing as torch itself gives, when the validation Python is here
      if (existsSync(PYTHON)) {
        const out = path.join(tempDir(), 'runtime.json');
        const r = spawnSync(PYTHON, [path.join(repoRoot, 'bench', 'runtime_blocks.py'), root, 'tb', out], {
          encoding: 'utf8',
        });
        if (r.status === 0)
          assert.deepEqual(ids, (JSON.parse(readFileSync(out, 'utf8')) as { blocks: string[] }).blocks);
      }
    } finally {
      ws.close();
    }
  });

  it('gives ids with the repository to a qualified name two repositories define', async () => {
    const dir = tempDir();
    const block = (n: number) =>
      `import torch.nn as nn\n\nclass Conv(nn.Module):\n    def forward(self, x):\n        return x * ${n}\n`;
    writeTree(path.join(dir, 'a'), {
      'models/__init__.py': '',
      'models/common.py': block(1) + '\nclass OnlyA(nn.Module):\n    def forward(self, x):\n        return x\n',
    });
    writeTree(path.join(dir, 'b'), { 'models/__init__.py': '', 'models/common.py': block(2) });
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      await api.index(ws, {
        repos: [spec('org/a', path.join(dir, 'a'), 1), spec('org/b', path.join(dir, 'b'), 1)],
        pool,
      });
      const ids = api
        .discover(ws)
        .map((b) => b.id)
        .sort();
      assert.deepEqual(ids, ['models.common.OnlyA', 'org/a:models.common.Conv', 'org/b:models.common.Conv']);
      assert.throws(() => api.resolveBlockNames(ws, ['models.common.Conv']), UsageError);
      assert.equal(api.resolveBlockNames(ws, ['org/b:Conv'])[0].id, 'org/b:models.common.Conv');
      const recs = api.extractBlocks(
        ws,
        ['org/a:models.common.Conv', 'org/b:models.common.Conv', 'models.common.OnlyA'],
        { out: path.join(dir, 'lib') },
      );
      assert.ok(recs[0].file.endsWith('org%2Fa%3Amodels.common.Conv.py'), recs[0].file);
      assert.match(readFileSync(recs[0].file, 'utf8'), /x \* 1/);
      assert.match(readFileSync(recs[1].file, 'utf8'), /x \* 2/);
      assert.ok(recs[2].ok, recs[2].error);
    } finally {
      ws.close();
    }
  });
});
