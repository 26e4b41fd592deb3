// The commands as functions of the package API (what `nnrag <command> --json` prints,
// without the CLI): index, discover and extract the example corpus, then library, search,
// similar, requirements, dedup and report on it, each called directly.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import * as nnrag from '../../src/nnrag.js';
import { repoRoot, tempDir } from '../helpers.js';

let ws: nnrag.Workspace;

before(async () => {
  ws = nnrag.Workspace.open(tempDir());
  await nnrag.index(ws, {
    repos: [
      {
        name: 'examples',
        url: null,
        path: path.join(repoRoot, 'examples'),
        priority: 1,
        paths: [],
        description: null,
        packageRoots: null,
      },
    ],
  });
  const ids = nnrag.discover(ws).map((b) => b.id);
  nnrag.extractBlocks(ws, ids);
});

after(() => ws?.close());

test('library, search and similar are functions of the API', async () => {
  const lib = await nnrag.library(ws, { python: '/usr/bin/python3' });
  assert.ok(lib.specs > 3);
  assert.ok(existsSync(path.join(lib.out, 'required_repos.json')));
  const res = nnrag.search(ws, 'attention');
  assert.ok(res.hits.length > 0);
  assert.ok(res.hits.every((h) => h.status === 'extracted'));
  const near = nnrag.similar(ws, res.hits[0].id, 3);
  assert.equal(near.id, res.hits[0].id);
  assert.throws(() => nnrag.search(ws, 'x', { repo: 'nowhere' }), /no library block comes from it/);
});

test('requirements, dedup and report are functions of the API', async () => {
  const reqs = await nnrag.requirements(ws, { python: '/usr/bin/python3' });
  assert.deepEqual(
    reqs.map((r) => r.repo),
    ['examples'],
  );
  const d = await nnrag.dedup(ws, { threads: 0 });
  assert.ok(d.total > 3);
  const r = await nnrag.report(ws, { dedup: false });
  assert.ok(r.repos.some((x) => x.name === 'examples' && x.discovered > 3));
});

test('extract is one function: it indexes the repositories it is given, discovers, resolves names and selects', async () => {
  const own = nnrag.Workspace.open(tempDir());
  try {
    const indexed: number[] = [];
    const recs = await nnrag.extract(own, {
      repos: [
        {
          name: 'examples',
          url: null,
          path: path.join(repoRoot, 'examples'),
          priority: 1,
          paths: [],
          description: null,
          packageRoots: null,
        },
      ],
      names: ['ConvBnAct', 'layers.mlp.Mlp'],
      validate: false,
      onIndexed: (r) => indexed.push(r.files),
    });
    assert.equal(indexed.length, 1);
    assert.ok(indexed[0] > 5);
    assert.deepEqual(
      recs.map((r) => r.id),
      ['tinyvision.layers.conv.ConvBnAct', 'tinyvision.layers.mlp.Mlp'],
    );
    assert.ok(recs.every((r) => r.ok && existsSync(r.file) && r.file.includes(`${path.sep}extracted${path.sep}`)));
    // an ambiguous bare name is a usage error naming the candidates
    await assert.rejects(nnrag.extract(own, { names: ['Mlp'], validate: false }), /ambiguous: 2 blocks/);
    const all = nnrag.selectBlocks(own);
    assert.equal(all.length, nnrag.storedBlocks(own).length);
    assert.deepEqual(nnrag.selectBlocks(own, { startFrom: all[2], limit: 2 }), all.slice(2, 4));
    // names for --names-json: bare where one block has the name, ids otherwise
    const names = nnrag.blockNames(own, nnrag.storedBlocks(own));
    assert.ok(names.includes('ConvBnAct') && names.includes('tinyvision.models.mixer.Mlp') && !names.includes('Mlp'));
    assert.equal(nnrag.stats(own).files, indexed[0]);
  } finally {
    own.close();
  }
});
