// Multi-repository resolution (issue 9), on fixture repositories under
// test/fixtures/{universes,namespace,ondemand}:
// - each repository is its own import universe: two repositories with their own
//   `models/common.py` each get their blocks' closures from their own file;
// - PEP 420 namespace folders take the names the repository's scripts import them by;
// - `paths` scope discovery only: a closure reads modules outside them on demand, from
//   the work tree or, for a sparse blobless clone, through git.
// Emitted modules are run in the real Python with torch (test/support/python.ts).
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import type { ConfiguredRepo } from '../../src/config/repos.js';
import { fixture, tempDir } from '../helpers.js';
import { makeRemote } from '../repos/git-helpers.js';
import { assertRan, checkModules } from '../support/python.js';

const local = (name: string, p: string, paths: string[] = [], priority = 1): ConfiguredRepo => ({
  name,
  url: null,
  path: p,
  priority,
  paths,
  description: null,
  packageRoots: null,
});

/** Extract `id`, write it, and return its text with the record. */
function emit(ws: api.Workspace, id: string, dir: string): { text: string; record: api.BlockRecord; file: string } {
  const { record, text } = api.extractText(ws, id);
  assert.ok(text, `nothing emitted for ${id}: ${record.error}`);
  const file = path.join(dir, `${id.replace(/[/:]/g, '_')}.py`);
  writeFileSync(file, text);
  return { text, record, file };
}

describe('import universes', () => {
  it('takes each block closure from its own repository when two repositories share module names', async () => {
    const dir = tempDir();
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      // beta has the better priority: with one global namespace its models.common would win
      await api.index(ws, {
        repos: [
          local('org/alpha', fixture('universes', 'alpha'), [], 2),
          local('org/beta', fixture('universes', 'beta'), [], 1),
        ],
        workers: 1,
      });
      const blocks = api.discover(ws);
      assert.deepEqual(blocks.map((b) => `${b.repo} ${b.id}`).sort(), [
        'org/alpha models.yolo.AlphaNet',
        'org/alpha org/alpha:models.common.Conv',
        'org/beta models.yolo.BetaNet',
        'org/beta org/beta:models.common.Conv',
      ]);
      const alpha = emit(ws, 'models.yolo.AlphaNet', dir);
      const beta = emit(ws, 'models.yolo.BetaNet', dir);
      assert.match(alpha.text, /ALPHA_SCALE = 2/);
      assert.doesNotMatch(alpha.text, /BETA_SHIFT|helper/);
      assert.match(beta.text, /BETA_SHIFT = 1/);
      assert.doesNotMatch(beta.text, /ALPHA_SCALE/);
      for (const r of [alpha.record, beta.record]) assert.deepEqual(r.diagnostics, []);
      const provenance = (r: api.BlockRecord) => [...new Set((r.provenance as { repo: string }[]).map((p) => p.repo))];
      assert.deepEqual(provenance(alpha.record), ['org/alpha']);
      assert.deepEqual(provenance(beta.record), ['org/beta']);
      const checks = checkModules([
        {
          name: 'alpha',
          file: alpha.file,
          run: 'import torch\nassert m.AlphaNet()(torch.ones(1, 4, 2, 2)).shape == (1, 4, 2, 2)',
        },
        {
          name: 'beta',
          file: beta.file,
          run: 'import torch\nassert m.BetaNet()(torch.ones(1, 4, 2, 2)).shape == (1, 4, 2, 2)',
        },
      ]);
      assertRan(checks.alpha, checks.alpha.result);
      assertRan(checks.beta, checks.beta.result);
    } finally {
      ws.close();
    }
  });

  it("resolves a repository's own namespace folder before another repository's regular package", async () => {
    const dir = tempDir();
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      await api.index(ws, {
        repos: [
          local('org/gamma', fixture('universes', 'gamma'), [], 2),
          local('org/beta', fixture('universes', 'beta'), [], 1),
        ],
        workers: 1,
      });
      api.discover(ws);
      const gamma = emit(ws, 'models_gamma.GammaNet', dir);
      assert.deepEqual(gamma.record.diagnostics, []);
      assert.ok(gamma.record.interned.includes('util.helper'), JSON.stringify(gamma.record.interned));
      assert.match(gamma.text, /return x \* 3/);
    } finally {
      ws.close();
    }
  });
});

describe('namespace packages (PEP 420) under a script root', () => {
  it('names modules of folders without __init__.py as the repository scripts import them', async () => {
    const dir = tempDir();
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      await api.index(ws, {
        repos: [local('org/flat', fixture('namespace', 'flat')), local('org/nested', fixture('namespace', 'nested'))],
        workers: 1,
      });
      const ids = api
        .discover(ws)
        .map((b) => b.id)
        .sort();
      assert.deepEqual(ids, [
        'models.net.Net',
        'models.net.PositionalEncoding',
        'nets.deep.block.Block',
        'nets.deep.layers.conv.ConvUnit',
      ]);
      const net = emit(ws, 'models.net.Net', dir);
      const block = emit(ws, 'nets.deep.block.Block', dir);
      assert.deepEqual(net.record.diagnostics, []);
      assert.ok(net.record.interned.includes('util.pos'), JSON.stringify(net.record.interned));
      assert.doesNotMatch(net.text, /^from util/m);
      assert.deepEqual(block.record.diagnostics, []);
      assert.ok(block.record.interned.includes('nets.deep.layers.conv'), JSON.stringify(block.record.interned));
      const pe = emit(ws, 'models.net.PositionalEncoding', dir);
      const checks = checkModules([
        {
          name: 'pe',
          file: pe.file,
          run: 'import torch\nassert m.PositionalEncoding()(torch.ones(4, 8)).shape == (4, 8)',
        },
        { name: 'net', file: net.file, run: 'import torch\nassert m.Net()(torch.ones(4, 8)).shape == (4, 8)' },
        {
          name: 'block',
          file: block.file,
          run: 'import torch\nassert m.Block()(torch.ones(1, 3, 4, 4)).shape == (1, 3, 4, 4)',
        },
      ]);
      assertRan(checks.pe, checks.pe.result);
      assertRan(checks.net, checks.net.result);
      assertRan(checks.block, checks.block.result);
    } finally {
      ws.close();
    }
  });
});

describe('closures beyond the configured paths', () => {
  const check = (ws: api.Workspace, dir: string) => {
    const ids = api
      .discover(ws)
      .map((b) => b.id)
      .sort();
    // paths scope discovery: pkg/typing.py's module is not a block
    assert.deepEqual(ids, ['pkg.nn.lin.Broken', 'pkg.nn.lin.Lin']);
    const lin = emit(ws, 'pkg.nn.lin.Lin', dir);
    assert.deepEqual(lin.record.diagnostics, []);
    assert.match(lin.text, /DEFAULT_WIDTH = 6/);
    assert.match(lin.text, /def act\(x\)/);
    const broken = api.extractText(ws, 'pkg.nn.lin.Broken').record;
    assert.deepEqual(
      broken.diagnostics.map((d) => `${d.name}:${d.reason}`),
      ['thing:missing-module'],
    );
    const support = ws.store.listSupportFiles().map((f) => `${f.path} ${f.module}`);
    assert.ok(support.includes('pkg/typing.py pkg.typing'), JSON.stringify(support));
    assert.ok(support.includes('pkg/utils/act.py pkg.utils.act'), JSON.stringify(support));
    const c = checkModules([
      { name: 'lin', file: lin.file, run: 'import torch\nassert m.Lin()(torch.ones(2, 6)).shape == (2, 6)' },
    ]);
    assertRan(c.lin, c.lin.result);
  };

  it('reads modules of the same repository from the work tree on demand', async () => {
    const dir = tempDir();
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      await api.index(ws, { repos: [local('org/pkg', fixture('ondemand'), ['pkg/nn'])], workers: 1 });
      assert.deepEqual(
        ws.store.listFiles().map((f) => f.path),
        ['pkg/nn/__init__.py', 'pkg/nn/lin.py'],
      );
      check(ws, dir);
      // a new process finds the stored facts: nothing is parsed again
      ws.invalidate();
      api.extractText(ws, 'pkg.nn.lin.Lin');
      const stats = (ws.corpus().moduleLoader as unknown as { stats: { loaded: number; parsed: number } }).stats;
      assert.ok(stats.loaded >= 2 && stats.parsed === 0, JSON.stringify(stats));
    } finally {
      ws.close();
    }
  });

  it('fetches them through git from a sparse blobless clone', async () => {
    const dir = tempDir();
    const src = path.join(dir, 'src');
    cpSync(fixture('ondemand'), src, { recursive: true });
    const files: Record<string, string> = {};
    for (const rel of [
      'pkg/__init__.py',
      'pkg/nn/__init__.py',
      'pkg/nn/lin.py',
      'pkg/typing.py',
      'pkg/utils/__init__.py',
      'pkg/utils/act.py',
    ]) {
      files[rel] = readFileSync(path.join(src, rel), 'utf8');
    }
    const remote = makeRemote(files);
    const ws = api.Workspace.open(path.join(dir, 'store'));
    try {
      await api.index(ws, {
        repos: [
          {
            name: 'org/pkg',
            url: remote.url,
            path: null,
            priority: 1,
            paths: ['pkg/nn'],
            description: null,
            packageRoots: null,
          },
        ],
        workers: 1,
      });
      check(ws, dir);
      const stats = (ws.corpus().moduleLoader as unknown as { stats: { fetched: number } }).stats;
      assert.ok(stats.fetched >= 2, JSON.stringify(stats));
    } finally {
      ws.close();
    }
  });
});
