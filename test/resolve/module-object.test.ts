// An interned package used as a module object (`verpkg.__version__`): the copy keeps
// `import verpkg` when the validation environment can import verpkg (a warning says
// so), and reports an error saying why otherwise. The emitted module is run in the real
// Python with torch, with the package installed on its path.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';
import { assertRan, checkModules } from '../support/python.js';
import { FAST } from '../support/tier.js';

const root = fixture('modobj', 'repo');

describe('module objects of interned packages', () => {
  it('keeps the import extern when the package is importable, else says why not', async () => {
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

      const no = api.extractText(ws, id, { importable: ['torch'] });
      const err = no.record.diagnostics.find((d) => d.severity === 'error' && d.reason === 'module-object');
      assert.ok(
        err && /not importable in the validation environment/.test(err.message),
        JSON.stringify(no.record.diagnostics),
      );
      const unknown = api.extractText(ws, id);
      assert.ok(unknown.record.diagnostics.some((d) => d.severity === 'error' && /unknown here/.test(d.message)));
    } finally {
      ws.close();
    }
  });

  it('keeps a module object imported inside a function where it was, whether importable or not', async () => {
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
      const id = 'usepkg.layers.Listing';
      const no = api.extractText(ws, id, { importable: ['torch'] });
      assert.match(no.text, /^ {4}import verpkg as vp$/m, 'the lazy import stays in the function');
      assert.doesNotMatch(no.text, /^import verpkg/m);
      assert.ok(
        no.record.diagnostics.some(
          (d) => d.severity === 'error' && d.reason === 'module-object' && /not importable/.test(d.message),
        ),
      );
      const file = path.join(dir, 'listing.py');
      writeFileSync(file, no.text);
      // without verpkg installed: the module imports, the call fails naming the module
      const without = checkModules([{ name: 'l', file, run: 'm.Listing()' }]).l;
      assert.deepEqual(without.undefined, []);
      if (!FAST) assert.match(without.result, /ModuleNotFoundError: No module named 'verpkg'/);
      const prev = process.env.PYTHONPATH;
      process.env.PYTHONPATH = root;
      try {
        const withIt = checkModules([
          { name: 'l', file, run: "assert m.Listing().names == ['scale'], m.Listing().names" },
        ]).l;
        assertRan(withIt);
      } finally {
        if (prev === undefined) delete process.env.PYTHONPATH;
        else process.env.PYTHONPATH = prev;
      }
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
