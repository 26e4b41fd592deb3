// Submodules read through an extern package (emit/submodules.ts, Language Reference
// §5.4.2): `import pkg` then `pkg.sub.f()` gets `import pkg.sub` in the emitted module
// when pkg's `__init__` neither imports the submodule (itself or through its package's
// modules) nor binds the name to something else; decided from the validation
// environment's installed files (InstalledFiles.locate) or, for an indexed package kept
// extern, its indexed source. The emitted modules run in the real Python with torch,
// with the fixture's installed packages on PYTHONPATH.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { InstalledFiles } from '../../src/environment/installed.js';
import { initParser } from '../../src/parse/parser.js';
import { fixture, tempDir } from '../helpers.js';
import { assertRan, checkModules } from '../support/python.js';

const repo = fixture('submodules', 'repo');
const site = fixture('submodules', 'site');

describe('submodules read through an extern package', () => {
  let ws: api.Workspace;
  let dir: string;
  const installed = new InstalledFiles([site]);
  before(async () => {
    await initParser();
    dir = tempDir();
    ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
    await api.index(ws, {
      repos: [
        {
          name: 'org/submodules',
          url: null,
          path: repo,
          priority: 1,
          paths: ['usesub', 'idxpkg'],
          description: null,
          packageRoots: null,
        },
      ],
      workers: 1,
    });
  });
  after(() => ws.close());

  const emit = (cls: string, mod = 'usesub.blocks') =>
    api.extractText(ws, `${mod}.${cls}`, { installed, extern: ['idxpkg'], profile: 'faithful' }).text;
  /** run each module in its own process (a submodule one loaded must not help another) */
  const run = (cases: { name: string; text: string; expect: number }[]) => {
    const files = cases.map((c) => {
      const file = path.join(dir, `${c.name}.py`);
      writeFileSync(file, c.text);
      return {
        name: c.name,
        file,
        run: `import torch\nassert float(m.${c.name}()(torch.ones(1))) == ${c.expect}, float(m.${c.name}()(torch.ones(1)))`,
      };
    });
    const prev = process.env.PYTHONPATH;
    process.env.PYTHONPATH = `${site}${path.delimiter}${repo}`;
    try {
      return checkModules(files);
    } finally {
      if (prev === undefined) delete process.env.PYTHONPATH;
      else process.env.PYTHONPATH = prev;
    }
  };

  it("imports a submodule the package's __init__ does not load, the deepest of a chain only", () => {
    const lazy = emit('Lazy');
    assert.match(lazy, /^import lazypkg$/m);
    assert.match(lazy, /^import lazypkg\.tools$/m);
    const deep = emit('Deep');
    assert.match(deep, /^import lazypkg\.sub\.inner$/m);
    assert.doesNotMatch(deep, /^import lazypkg\.sub$/m, 'import lazypkg.sub.inner loads lazypkg.sub');
    const r = run([
      { name: 'Lazy', text: lazy, expect: 2 },
      { name: 'Deep', text: deep, expect: 7 },
    ]);
    assertRan(r.Lazy);
    assertRan(r.Deep);
  });

  it('adds nothing where the __init__ imports the submodule, itself or through its own modules', () => {
    const text = emit('Eager');
    assert.doesNotMatch(text, /^import eagerpkg\./m);
    assertRan(run([{ name: 'Eager', text, expect: 15 }]).Eager);
  });

  it('adds nothing where the __init__ binds the name to something else, or fills its namespace dynamically', () => {
    const bound = emit('Bound');
    assert.doesNotMatch(bound, /^import boundpkg\./m, 'importing boundpkg.tools would rebind boundpkg.tools');
    const dyn = emit('Dynamic');
    assert.doesNotMatch(dyn, /^import dynpkg\./m);
    const r = run([
      { name: 'Bound', text: bound, expect: 13 },
      { name: 'Dynamic', text: dyn, expect: 19 },
    ]);
    assertRan(r.Bound);
    assertRan(r.Dynamic);
  });

  it("loads the submodule under the binding's own name when a definition holds the package's name", () => {
    const text = emit('Aliased', 'usesub.aliased');
    assert.match(text, /^import lazypkg as lp$/m);
    assert.match(text, /^def lazypkg\(x\):/m);
    // `import lazypkg.tools` would bind `lazypkg` before the definition does: harmless
    // here, but the rule never rebinds a name the module holds
    assert.match(text, /^import lazypkg\.tools as lp\nimport lazypkg as lp$/m);
    assertRan(run([{ name: 'Aliased', text, expect: 2 }]).Aliased);
  });

  it("decides an indexed package kept extern from its indexed source, without the environment's files", () => {
    const text = api.extractText(ws, 'usesub.blocks.Indexed', { extern: ['idxpkg'], profile: 'faithful' }).text;
    assert.match(text, /^import idxpkg\.helpers$/m);
    assertRan(run([{ name: 'Indexed', text, expect: 11 }]).Indexed);
  });

  it('without the environment (nothing known of an installed package) adds nothing', () => {
    const text = api.extractText(ws, 'usesub.blocks.Lazy', { profile: 'faithful' }).text;
    assert.doesNotMatch(text, /^import lazypkg\./m);
  });
});

describe('InstalledFiles.locate', () => {
  it('finds packages, modules, extension modules and namespace portions, not folders of stubs', () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'pkg', 'stubs'), { recursive: true });
    mkdirSync(path.join(root, 'pkg', 'ns'), { recursive: true });
    writeFileSync(path.join(root, 'pkg', '__init__.py'), '');
    writeFileSync(path.join(root, 'pkg', 'mod.py'), '');
    writeFileSync(path.join(root, 'pkg', 'fast.cpython-311-x86_64-linux-gnu.so'), '');
    writeFileSync(path.join(root, 'pkg', 'stubs', '__init__.pyi'), '');
    writeFileSync(path.join(root, 'pkg', 'ns', 'x.py'), '');
    const f = new InstalledFiles([path.join(root, 'missing'), root]);
    assert.deepEqual(f.locate('pkg'), { isPackage: true, file: path.join(root, 'pkg', '__init__.py') });
    assert.deepEqual(f.locate('pkg.mod'), { isPackage: false, file: path.join(root, 'pkg', 'mod.py') });
    assert.deepEqual(f.locate('pkg.fast'), { isPackage: false, file: null });
    assert.equal(f.locate('pkg.stubs'), null, 'type stubs only (PEP 561)');
    assert.deepEqual(f.locate('pkg.ns'), { isPackage: true, file: null }, 'a namespace portion (PEP 420)');
    assert.equal(f.locate('pkg.nothing'), null);
    assert.equal(f.locate('other'), null);
  });
});
