// Harvest reuse per entry point (issue 27; src/validate/README.md "Witnesses"): in the
// real sandbox, a fixture package with two entry points in different modules, whose
// __init__ imports both; after an edit of a file only one of them reads, a harvest runs
// that entry point again and reuses the other's stored answer, and its witnesses equal
// those of a harvest that runs everything. A constant read at import time (beta's width,
// from another module) counts as read: editing it runs beta again. What counts of a
// module is its skeleton and the bodies of the functions that ran (witness/parts.ts): a
// comment, or the body of a function nothing ran, keeps every stored answer; the body of
// a function that ran at import (the zygote's) counts for the steps that read its module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { libraryModules, repoWitnesses } from '../../src/validate/witness/index.js';
import type { HarvestResult } from '../../src/validate/witness/harvest.js';
import { fixture, tempDir } from '../helpers.js';
import { cannotValidate } from './common.js';

const skip = await cannotValidate(true);

const ran = (h: HarvestResult) =>
  h.entries
    .filter((e) => !e.reused)
    .map((e) => e.entry)
    .sort();
const reused = (h: HarvestResult) =>
  h.entries
    .filter((e) => e.reused)
    .map((e) => e.entry)
    .sort();

test('a harvest after an edit runs only the entry points that read the edited file; the witnesses equal a full harvest', {
  skip: skip ?? false,
}, async () => {
  const dir = tempDir();
  chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
  const repo = path.join(dir, 'hrepo');
  cpSync(fixture('harvest-reuse'), repo, { recursive: true });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  // one worker: the order in which answers arrive is the order of the steps
  let pool = await ValidatorPool.start({ workers: 1 });
  // after an edit, a new pool (a new nnrag process): a running zygote keeps the modules
  // it imported before the edit
  const reindex = async () => {
    await pool.close();
    pool = await ValidatorPool.start({ workers: 1 });
    await api.index(ws, {
      repos: [{ name: 'hrepo', url: null, path: repo, priority: 1, paths: [], description: null, packageRoots: null }],
    });
    api.discover(ws);
  };
  const harvest = async (full = false) => {
    const got = await repoWitnesses(ws.store, pool, 'hrepo', {
      modules: libraryModules(ws.corpus(), 'hrepo'),
      corpus: ws.corpus(),
      force: full,
      noRunReuse: full,
    });
    assert.ok(got && !got.cached);
    return got.result;
  };
  try {
    await reindex();
    const cold = await harvest();
    assert.deepEqual(ran(cold), ['hrpkg.alpha.build_alpha', 'hrpkg.beta.build_beta'], JSON.stringify(cold.entries));
    assert.equal(cold.reusedRuns, 0);
    assert.ok(cold.witnesses['hrpkg.alpha_parts.AlphaBlock']?.[0]?.inputs, JSON.stringify(cold.witnesses));
    assert.ok(cold.witnesses['hrpkg.beta_parts.BetaBlock']?.[0]?.inputs, JSON.stringify(cold.witnesses));
    // what each run read: its own modules, not the other entry point's
    const files = (entry: string) =>
      Object.values(cold.runs ?? {})
        .filter((r) => (r.harvest as { entry?: string }).entry === entry)
        .flatMap((r) => r.files.map(([f]) => path.relative(repo, f)));
    assert.ok(
      files('hrpkg.alpha.build_alpha').includes('hrpkg/alpha_parts.py'),
      files('hrpkg.alpha.build_alpha').join(),
    );
    assert.ok(!files('hrpkg.alpha.build_alpha').includes('hrpkg/beta_parts.py'));
    assert.ok(files('hrpkg.beta.build_beta').includes('hrpkg/sizes.py'), files('hrpkg.beta.build_beta').join());
    assert.ok(!files('hrpkg.beta.build_beta').includes('hrpkg/alpha_parts.py'));
    for (const e of cold.entries) assert.ok((e.cpuMs ?? 0) > 0, `CPU time measured: ${JSON.stringify(e)}`);

    const parts = path.join(repo, 'hrpkg', 'alpha_parts.py');
    const edit = async (file: string, from: string | RegExp, to: string) => {
      const text = readFileSync(file, 'utf8');
      const next = text.replace(from, to);
      assert.notEqual(next, text, `${String(from)} is in ${file}`);
      writeFileSync(file, next);
      await reindex();
      return harvest();
    };
    // comments and blank lines (not tokens): every stored answer is reused
    appendFileSync(parts, '\n# edited\n');
    const commented = await edit(
      parts,
      '    def forward(self, x):\n',
      '    def forward(self, x):\n        # a comment\n\n',
    );
    assert.deepEqual(ran(commented), []);
    assert.deepEqual(reused(commented), ['hrpkg.alpha.build_alpha', 'hrpkg.beta.build_beta']);
    assert.deepEqual(commented.witnesses, cold.witnesses);
    // the body of a function no step ran, nor the import: reused
    const unran = await edit(parts, '"alpha block of scale %s"', '"an alpha block, scale %s"');
    assert.deepEqual(ran(unran), []);
    assert.equal(unran.reusedRuns, 2);

    // alpha's block edited (its forward, which build_alpha's step ran): only build_alpha runs again
    const edited = await edit(parts, 'torch.tanh(', 'torch.sigmoid(');
    assert.deepEqual(ran(edited), ['hrpkg.alpha.build_alpha']);
    assert.deepEqual(reused(edited), ['hrpkg.beta.build_beta']);
    assert.equal(edited.ranRuns, 1);
    assert.equal(edited.reusedRuns, 1);
    // the same witnesses as a harvest that runs every entry point
    const full = await harvest(true);
    assert.deepEqual(ran(full), ['hrpkg.alpha.build_alpha', 'hrpkg.beta.build_beta']);
    assert.deepEqual(edited.witnesses, full.witnesses);
    assert.deepEqual(edited.classes, full.classes);

    // a constant beta reads at import time, in a module none of whose code runs in the
    // step, computed by a function that ran at import (the zygote's): its body edited
    const wider = await edit(path.join(repo, 'hrpkg', 'sizes.py'), 'return 5', 'return 7');
    assert.deepEqual(ran(wider), ['hrpkg.beta.build_beta']);
    assert.deepEqual(reused(wider), ['hrpkg.alpha.build_alpha']);
    assert.deepEqual(wider.witnesses['hrpkg.beta.BetaNet']?.[0]?.args, [7, 'relu']);

    // nothing changed since: the whole harvest is read from the store, nothing runs
    const again = await repoWitnesses(ws.store, pool, 'hrepo', { modules: libraryModules(ws.corpus(), 'hrepo') });
    assert.ok(again?.cached);
    assert.deepEqual(again.result.witnesses, wider.witnesses);
  } finally {
    await pool.close();
    ws.close();
  }
});
