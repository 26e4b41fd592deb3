// A definition that reads its module's `__file__` (to find a file beside it: a compiled
// extension, a template, a table) means something else once copied into a standalone
// module: `__file__` is then the standalone module's path. When the package is
// importable in the validation environment the definition is imported from it instead
// (and the copy works, in the real Python); else it is copied with a warning, and the
// copy indeed looks in the wrong folder.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { fixture } from '../helpers.js';
import { indexedFixture } from '../support/indexed.js';
import { assertRan, checkModules } from '../support/python.js';

/** Runs the modules with `site` on PYTHONPATH (the package installed there), as checkModules does. */
function checkWithSite(site: string, modules: Parameters<typeof checkModules>[0]): ReturnType<typeof checkModules> {
  const before = process.env.PYTHONPATH;
  process.env.PYTHONPATH = site;
  try {
    return checkModules(modules);
  } finally {
    if (before === undefined) delete process.env.PYTHONPATH;
    else process.env.PYTHONPATH = before;
  }
}

const ID = 'filepkg.blocks.Scaled';
const ENV = ['os', 'sys', 'torch'];

describe("definitions that read their module's __file__", () => {
  it('are imported from the installed package where it is importable, copied with a warning where not', async () => {
    const { ws, dir } = await indexedFixture('modfile', 'org/modfile', ['filepkg']);
    try {
      assert.ok(api.discover(ws).some((b) => b.id === ID));

      // filepkg installed in the environment: asset_path comes from there
      const inst = api.extractText(ws, ID, { importable: [...ENV, 'filepkg'] });
      assert.match(inst.text, /^from filepkg\.assets import asset_path$/m);
      assert.doesNotMatch(inst.text, /def asset_path|__file__/);
      assert.match(inst.text, /^def scale_from_file\(\):/m, 'what does not read __file__ is still copied');
      assert.match(inst.text, /^def double\(x\):/m);
      const warned = inst.record.diagnostics.filter((d) => d.reason === 'module-file');
      assert.equal(warned.length, 1, JSON.stringify(inst.record.diagnostics));
      assert.equal(warned[0].severity, 'warning');
      assert.match(
        warned[0].message,
        /filepkg\.assets\.asset_path reads its module's __file__.*imported from the filepkg installed/,
      );

      // not installed: copied, and the warning says what __file__ now means
      const copied = api.extractText(ws, ID, { importable: ENV });
      assert.match(copied.text, /^def asset_path\(name\):/m);
      const w2 = copied.record.diagnostics.filter((d) => d.reason === 'module-file');
      assert.equal(w2.length, 1);
      assert.match(w2[0].message, /standalone module's path \(filepkg is not importable/);

      // in the real Python, with filepkg installed (on PYTHONPATH) and the copy elsewhere:
      // the import form finds scale.txt, the copied form looks beside the copy
      const a = path.join(dir, 'out', 'installed.py');
      const b = path.join(dir, 'out', 'copied.py');
      cpSync(fixture('modfile'), path.join(dir, 'site'), { recursive: true });
      mkdirSync(path.dirname(a), { recursive: true });
      writeFileSync(a, inst.text);
      writeFileSync(b, copied.text);
      const r = checkWithSite(path.join(dir, 'site'), [
        { name: 'installed', file: a, run: 'import torch\nassert m.Scaled()(torch.ones(2)).tolist() == [5.0, 5.0]' },
        {
          name: 'copied',
          file: b,
          run: 'try:\n    m.Scaled()\n    raise AssertionError("built")\nexcept FileNotFoundError:\n    pass',
        },
      ]);
      assertRan(r.installed, JSON.stringify(r.installed));
      assertRan(r.copied, JSON.stringify(r.copied));
    } finally {
      ws.close();
    }
  });

  it('a definition the installed module binds too is imported from it: one class, one identity', async () => {
    const { ws, dir } = await indexedFixture('modfile-identity', 'org/modfile-identity', ['idpkg']);
    try {
      const id = 'idpkg.conv.Conv';
      const inst = api.extractText(ws, id, { importable: [...ENV, 'idpkg'] });
      // Passing reads its file: imported; Aggregation, which passing.py binds and tests
      // with isinstance, is imported from the installed package as well; ScaledAggregation,
      // which passing.py does not bind, is copied, a subclass of the installed Aggregation
      assert.match(inst.text, /^from idpkg\.passing import Passing$/m);
      assert.match(inst.text, /^from idpkg\.base import Aggregation$/m);
      assert.doesNotMatch(inst.text, /^class Aggregation\b/m);
      assert.match(inst.text, /^class ScaledAggregation\(Aggregation\):/m);
      assert.match(inst.text, /^class Conv\(Passing\):/m);
      // nothing installed: everything copied, one Aggregation
      const copied = api.extractText(ws, id, { importable: ENV });
      assert.match(copied.text, /^class Aggregation\(torch\.nn\.Module\):/m);
      assert.match(copied.text, /^class Passing\(torch\.nn\.Module\):/m);

      // in the real Python with idpkg installed (on PYTHONPATH): the installed Passing
      // accepts the copied ScaledAggregation
      const a = path.join(dir, 'out', 'conv.py');
      cpSync(fixture('modfile-identity'), path.join(dir, 'site'), { recursive: true });
      mkdirSync(path.dirname(a), { recursive: true });
      writeFileSync(a, inst.text);
      const r = checkWithSite(path.join(dir, 'site'), [
        {
          name: 'conv',
          file: a,
          run: 'import torch\nassert m.Conv()(torch.ones(2, 3)).tolist() == [14.0, 14.0, 14.0]',
        },
      ]);
      assertRan(r.conv, JSON.stringify(r.conv));
    } finally {
      ws.close();
    }
  });
});
