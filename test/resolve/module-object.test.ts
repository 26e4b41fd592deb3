// An interned package used as a module object (`verpkg.__version__`): the copy keeps
// `import verpkg` when the validation environment can import verpkg (a warning says
// so), and otherwise rebuilds the module from the copies of its names; so does a module
// bound by an import inside a function and used as a value (`vars(m)`): a
// `types.ModuleType` holding the copies. The emitted modules are run in the real Python
// with torch.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';
import { assertRan, checkModules } from '../support/python.js';

const root = fixture('modobj', 'repo');

async function indexModobj(ws: api.Workspace): Promise<void> {
  await api.index(ws, {
    repos: [
      {
        name: 'org/modobj',
        url: null,
        path: root,
        priority: 1,
        paths: ['usepkg'],
        description: null,
        packageRoots: null,
      },
    ],
    workers: 1,
  });
}

describe('module objects of interned packages', () => {
  it('keeps the import extern when the package is importable, else rebuilds the module from its copies', async () => {
    const dir = tempDir();
    const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
    try {
      await api.index(ws, {
        repos: [
          {
            name: 'org/modobj',
            url: null,
            path: root,
            priority: 1,
            paths: ['usepkg'],
            description: null,
            packageRoots: null,
          },
        ],
        workers: 1,
      });
      const id = 'usepkg.layers.Scale';
      assert.ok(api.discover(ws).some((b) => b.id === id));

      const ok = api.extractText(ws, id, { importable: ['verpkg', 'torch'] });
      assert.match(ok.text, /^import verpkg$/m, 'the module object stays an import');
      assert.match(ok.text, /^def scale\(x\):/m, 'its function is still copied');
      assert.deepEqual(
        ok.record.diagnostics.filter((d) => d.severity === 'error'),
        [],
      );
      assert.ok(
        ok.record.diagnostics.some(
          (d) => d.reason === 'module-object' && d.severity === 'warning' && /verpkg installed/.test(d.message),
        ),
      );
      assert.ok(ok.record.externs.includes('verpkg'), 'and becomes a requirement');
      const file = path.join(dir, 'scale.py');
      writeFileSync(file, ok.text);
      const prev = process.env.PYTHONPATH;
      process.env.PYTHONPATH = root; // verpkg installed
      try {
        const r = checkModules([
          { name: 'scale', file, run: 'import torch\nassert float(m.Scale()(torch.ones(1))) == 2.0' },
        ]).scale;
        assert.deepEqual(r.undefined, []);
        assertRan(r);
      } finally {
        if (prev === undefined) delete process.env.PYTHONPATH;
        else process.env.PYTHONPATH = prev;
      }

      // not importable, or unknown: the module-level `import verpkg` is copied, rewritten
      // to build a module named verpkg holding the copies of the attributes the module
      // reads (not OTHER, which it never reads)
      for (const opts of [{ importable: ['torch'] }, {}]) {
        const no = api.extractText(ws, id, opts);
        assert.deepEqual(
          no.record.diagnostics.filter((d) => d.severity === 'error'),
          [],
        );
        assert.match(
          no.text,
          /^verpkg = types\.ModuleType\("verpkg"\); verpkg\.__dict__\.update\(\{"__version__": __version__, "scale": scale\}\)$/m,
        );
        assert.doesNotMatch(no.text, /^import verpkg/m);
        const f = path.join(dir, 'scale_rebuilt.py');
        writeFileSync(f, no.text);
        const r = checkModules([
          { name: 'scale', file: f, run: 'import torch\nassert float(m.Scale()(torch.ones(1))) == 2.0' },
        ]).scale;
        assert.deepEqual(r.undefined, []);
        assertRan(r);
      }
    } finally {
      ws.close();
    }
  });

  it('rebuilds a module object imported inside a function and used as a value from the copies', async () => {
    const dir = tempDir();
    const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
    try {
      await indexModobj(ws);
      const id = 'usepkg.layers.Listing';
      const no = api.extractText(ws, id, { importable: ['torch'] });
      // `vars(vp)` reads every name of verpkg: its version and its function, copied
      assert.match(
        no.text,
        /^ {4}vp = types\.ModuleType\("verpkg"\); vp\.__dict__\.update\(\{"OTHER": OTHER, "__version__": __version__, "scale": scale\}\)$/m,
      );
      assert.match(no.text, /^import types$/m);
      assert.doesNotMatch(no.text, /import verpkg/);
      assert.deepEqual(
        no.record.diagnostics.filter((d) => d.severity === 'error'),
        [],
      );
      assert.ok(
        no.record.diagnostics.some(
          (d) => d.severity === 'warning' && d.reason === 'module-object' && /used as a value/.test(d.message),
        ),
      );
      const file = path.join(dir, 'listing.py');
      writeFileSync(file, no.text);
      // without verpkg installed, the listing is the original's
      const r = checkModules([
        { name: 'l', file, run: "assert m.Listing().names == ['OTHER', 'scale'], m.Listing().names" },
      ]).l;
      assert.deepEqual(r.undefined, []);
      assertRan(r);
    } finally {
      ws.close();
    }
  });

  it('lists a package of layers whole with vars() (every name it binds) or copies only the attributes read', async () => {
    const dir = tempDir();
    const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
    try {
      await indexModobj(ws);
      const pool = api.extractText(ws, 'usepkg.resolve.Pool', { importable: ['torch'] });
      assert.deepEqual(
        pool.record.diagnostics.filter((d) => d.severity === 'error'),
        [],
      );
      assert.match(pool.text, /aggr = types\.ModuleType\("aggpkg"\)/);
      for (const name of ['Aggregation', 'MeanAggregation', 'SumAggregation', '__all__', 'classes'])
        assert.match(pool.text, new RegExp(`"${name}": `), `the namespace holds ${name}`);
      assert.match(pool.text, /^class SumAggregation\(Aggregation\):/m, 'a class only vars() reaches is copied');
      const sum = api.extractText(ws, 'usepkg.resolve.SumPool', { importable: ['torch'] });
      assert.match(
        sum.text,
        /basic = types\.ModuleType\("aggpkg\.basic"\); basic\.__dict__\.update\(\{"SumAggregation": SumAggregation\}\)/,
      );
      assert.doesNotMatch(sum.text, /class MeanAggregation/, 'attribute reads copy only what they read');
      const pf = path.join(dir, 'pool.py');
      const sf = path.join(dir, 'sum.py');
      writeFileSync(pf, pool.text);
      writeFileSync(sf, sum.text);
      const r = checkModules([
        {
          name: 'p',
          file: pf,
          run: 'import torch\nx = torch.tensor([[1.0], [3.0]])\nassert float(m.Pool()(x)) == 2.0\nassert float(m.Pool("sum")(x)) == 4.0',
        },
        { name: 's', file: sf, run: 'import torch\nassert float(m.SumPool()(torch.ones(3, 1))) == 3.0' },
      ]);
      assert.deepEqual(r.p.undefined, []);
      assertRan(r.p);
      assertRan(r.s);
    } finally {
      ws.close();
    }
  });

  it('renames a definition read through a package where a function binds its name locally', async () => {
    const dir = tempDir();
    const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
    try {
      await api.index(ws, {
        repos: [
          {
            name: 'org/modobj',
            url: null,
            path: root,
            priority: 1,
            paths: ['usepkg'],
            description: null,
            packageRoots: null,
          },
        ],
        workers: 1,
      });
      const { text, record } = api.extractText(ws, 'usepkg.layers.Fast', { importable: ['torch'] });
      assert.deepEqual(
        record.diagnostics.filter((d) => d.severity === 'error'),
        [],
      );
      assert.match(text, /^use_fast_backend = None$/m, 'the module-level copy gives up the name the function binds');
      assert.match(text, /if use_fast_backend is None:/);
      const file = path.join(dir, 'fast.py');
      writeFileSync(file, text);
      const r = checkModules([
        { name: 'f', file, run: 'import torch\nassert float(m.Fast()(torch.ones(2)).sum()) == 4.0' },
      ]).f;
      assert.deepEqual(r.undefined, []);
      assertRan(r);
    } finally {
      ws.close();
    }
  });
});
