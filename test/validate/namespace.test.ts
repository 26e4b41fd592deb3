// Namespace stage, in the real sandbox: every top-level name of an emitted module that
// came from the original corpus denotes what it denotes in the original modules. The
// blocks are extracted from resolver fixtures (real index, closure, emitter); the
// mismatching copies are faithful ones with one name bound to something else, the way
// an emitter bug would bind it (the issue's `import torch.distributed.nn as torch_loss`).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';
import { ValidatorPool, type ValidationRequest } from '../../src/validate/index.js';
import { cannotValidate } from './common.js';

const skip = await cannotValidate(true);

async function extract(name: string, target: string): Promise<{ req: ValidationRequest; dir: string }> {
  const dir = fixture('resolve', name);
  const ws = api.Workspace.open(path.join(tempDir('nnrag-ns-'), 'store'));
  try {
    await api.index(ws, {
      repos: [{ name, url: null, path: dir, priority: 1, paths: [], description: null, packageRoots: [''] }],
      workers: 1,
    });
    const { text, namespace, record } = api.extractText(ws, target);
    assert.ok(text && namespace, record.error);
    const dot = target.lastIndexOf('.');
    return {
      dir,
      req: {
        id: target,
        source: text,
        className: target.slice(dot + 1),
        original: { module: target.slice(0, dot), className: target.slice(dot + 1), sysPath: [dir] },
        namespace,
      },
    };
  } finally {
    ws.close();
  }
}

describe('namespace stage', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  before(async () => {
    pool = await ValidatorPool.start({ workers: 1 });
  });
  after(async () => pool?.close());

  it('passes a faithful copy: renamed definitions, imports, constants', async () => {
    for (const [name, target, least] of [
      ['name-collision', 'pkg.a.Block', 4],
      ['import-forms-rename', 'pkg.a.Block', 12],
      ['dotted-import-same-module', 'pkg.a.Block', 6],
      ['rebinding-order', 'pkg.a.Block', 5],
      // a flag the copied `try` binds but nothing reads is not compared
      ['try-flag-unused', 'pkg.a.Block', 2],
      // a value computed from the working directory: the original imports in one like the copy's
      ['cwd-value', 'pkg.a.Block', 2],
      // names bound only under `if TYPE_CHECKING:` are unbound in the original at run time
      ['type-checking-names', 'pkg.a.Block', 2],
      // a function an extern factory made (one code object, equal closure cells)
      ['extern-factory-closure', 'pkg.a.Block', 3],
      // a function a copied factory made with functools.wraps (builtins.print's name)
      ['copied-factory-wraps', 'pkg.a.Block', 3],
    ] as const) {
      const { req } = await extract(name, target);
      const r = await pool.validate(req);
      assert.equal(r.stages.namespace, 'pass', `${name}: ${r.error} ${JSON.stringify(r.namespace)}`);
      assert.ok(r.namespace!.checked >= least, `${name}: ${JSON.stringify(r.namespace)}`);
      assert.equal(r.namespace!.mismatches, undefined);
      assert.equal(r.ok, true, `${name}: ${r.error}`);
      assert.equal(typeof r.timings.namespace, 'number');
    }
  });

  it('fails a copy whose names are bound to the other definitions', async () => {
    const { req } = await extract('name-collision', 'pkg.a.Block');
    // swap the two helpers' names (an emitter that renamed the wrong one)
    const source = req.source
      .replace('def helper(', 'def @@(')
      .replace('def helper_y(', 'def helper(')
      .replace('def @@(', 'def helper_y(');
    assert.notEqual(source, req.source);
    const r = await pool.validate({ ...req, source });
    assert.equal(r.stages.namespace, 'fail');
    assert.equal(r.category, 'rebound-name');
    assert.equal(r.stage, 'namespace');
    assert.equal(r.ok, false);
    const m = r.namespace!.mismatches!.find((x) => x.name === 'helper');
    assert.ok(m, JSON.stringify(r.namespace));
    assert.match(m.copy, /function helper copied from pkg\.y lines/);
    assert.match(m.original, /^pkg\.[ax]\.helper: function pkg\.x\.helper$/);
    assert.ok(r.namespace!.mismatches!.some((x) => x.name === 'helper_y'));
    assert.match(r.error ?? '', /helper is function helper copied from pkg\.y/);
  });

  it("catches the issue's rename: a submodule bound where the package was", async () => {
    const { req } = await extract('dotted-import-same-module', 'pkg.a.Block');
    const source = req.source.replace(
      '    import torch.distributed.nn\n',
      '    import torch.distributed.nn as torch_loss\n',
    );
    assert.notEqual(source, req.source);
    const namespace = {
      ...req.namespace!,
      names: [...req.namespace!.names, { name: 'torch_loss', origins: [['pkg.loss', 'torch']] as [string, string][] }],
    };
    const r = await pool.validate({ ...req, source, namespace });
    assert.equal(r.category, 'rebound-name', `${r.error}`);
    assert.deepEqual(r.namespace!.mismatches, [
      { name: 'torch_loss', copy: 'module torch.distributed.nn', original: 'pkg.loss.torch: module torch' },
    ]);
  });

  it('compares plain data by value', async () => {
    const { req } = await extract('rebinding-order', 'pkg.a.Block');
    const source = req.source.replace('SCALE = 10', 'SCALE = 11');
    const r = await pool.validate({ ...req, source });
    assert.equal(r.category, 'rebound-name');
    assert.deepEqual(r.namespace!.mismatches, [{ name: 'SCALE', copy: '11', original: 'pkg.a.SCALE: 10' }]);
  });

  it('skips without an original, and where an origin does not import', async () => {
    const { req } = await extract('name-collision', 'pkg.a.Block');
    const r = await pool.validate({ ...req, original: undefined });
    assert.equal(r.stages.namespace, 'skip');
    assert.equal(r.namespace?.reason, 'no original module given');
    assert.equal(r.ok, true);
    const names = req.namespace!.names.map((n) => ({
      ...n,
      origins: n.origins.map(([, a]): [string, string] => ['pkg.nonexistent', a]),
    }));
    const r2 = await pool.validate({ ...req, namespace: { ...req.namespace!, names } });
    assert.equal(r2.stages.namespace, 'skip');
    assert.match(r2.namespace?.reason ?? '', /module pkg\.nonexistent does not import/);
    assert.equal(r2.namespace?.checked, 0);
  });
});
