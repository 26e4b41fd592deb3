// The library stage on the example corpus, through the real pipeline (index, discover,
// extraction, validation in the sandboxed validator with /usr/bin/python3's torch): specs
// next to the modules and in the store, manifests whose SWHIDs equal `git hash-object` of
// the source files, requirements pinned to the validation environment's torch, stored
// de-duplication clusters.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import {
  buildLibrary,
  clusterOf,
  diversityTopUp,
  getDedup,
  getSpec,
  listSpecs,
  runDedup,
  type LibraryResult,
} from '../../src/library/library.js';
import type { RequiredRepos } from '../../src/library/provenance.js';
import { listExtractions, putExtraction } from '../../src/store/records.js';
import { BLOCK_RECORD_SCHEMA } from '../../src/library/record-schema.js';
import { violations } from '../support/json-schema.js';
import { publicVersion } from '../../src/environment/requirements.js';
import type { BlockSpec } from '../../src/records/spec.js';
import { originUrl } from '../../src/library/swhid.js';
import { extractAndValidate } from '../../src/commands/extract.js';
import { repoRoot, tempDir } from '../helpers.js';
import { needsTorch } from '../support/tier.js';

const PY = '/usr/bin/python3';
const haveTorch =
  !needsTorch() &&
  existsSync(PY) &&
  (() => {
    try {
      execFileSync(PY, ['-c', 'import torch'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
const skip = !haveTorch && 'no /usr/bin/python3 with torch';

let ws: api.Workspace;
let lib: LibraryResult;
let out: string;

before(async () => {
  if (!haveTorch) return;
  const store = tempDir();
  ws = api.Workspace.open(store);
  await api.index(ws, {
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
  const blocks = api.discover(ws);
  await extractAndValidate(
    ws,
    blocks.map((b) => b.id),
    { pool: { python: PY } },
  );
  lib = await buildLibrary(ws, { python: PY });
  out = lib.out;
});

after(() => ws?.close());

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;
const originOf = (url: string | null) => (url ? originUrl(url) : null);

test('one spec per stored block, next to its module, and the same spec in the store', { skip }, () => {
  const records = listExtractions(ws.store);
  assert.equal(lib.specs, records.length);
  assert.equal(records.length, 13);
  for (const r of records) {
    const dir = r.status === 'validated' ? 'blocks' : r.status === 'failed' ? 'failed' : 'extracted';
    assert.ok(existsSync(path.join(out, dir, `${r.id}.py`)), `${r.id}.py in ${dir}`);
    const file = readJson<BlockSpec>(path.join(out, dir, `${r.id}.spec.json`));
    assert.deepEqual(getSpec(ws.store, r.id), file);
    assert.equal(file.status, r.status);
    assert.ok(existsSync(path.join(out, dir, `${r.id}.required_repos.json`)));
  }
  assert.equal(listSpecs(ws.store).length, records.length);
  assert.equal(
    listSpecs(ws.store, { status: 'validated' }).length,
    readdirSync(path.join(out, 'blocks')).filter((f) => f.endsWith('.py')).length,
  );
  assert.deepEqual(lib.byStatus, { validated: 12, failed: 1 });
});

test('WindowAttention: attention, signature, layers, shapes, dependencies — and no source code', { skip }, () => {
  const s = getSpec(ws.store, 'tinyvision.layers.attention.WindowAttention')!;
  assert.equal(s.category, 'attention');
  assert.equal(s.class, 'WindowAttention');
  assert.deepEqual(s.origin, {
    repo: 'examples',
    module: 'tinyvision.layers.attention',
    path: 'tinyvision/layers/attention.py',
    line: s.origin.line,
    // the origin URL (the checkout's remote, when it has one) is normalised without a
    // trailing `.git`, as in SWHID origin qualifiers
    revision: s.origin.revision,
    url: originOf(ws.store.getRepo('examples')!.url),
  });
  assert.match(
    readFileSync(path.join(repoRoot, 'examples', s.origin.path), 'utf8').split('\n')[s.origin.line - 1],
    /^class WindowAttention\b/,
  );
  assert.deepEqual(s.hyperparameters, ['dim', 'num_heads', 'window_size', 'qkv_bias']);
  assert.deepEqual(
    s.init.map((p) => p.default),
    ['32', '4', '4', 'True'],
  );
  assert.deepEqual(
    s.forward.map((p) => p.name),
    ['x'],
  );
  assert.equal(s.summary, 'Local window attention: tokens attend only within non-overlapping windows.');
  assert.deepEqual(s.bases, ['Attention']);
  assert.deepEqual(s.layers, { Linear: 2 });
  assert.equal(s.params, 4224); // qkv 32*96+96, proj 32*32+32
  assert.deepEqual(s.input_shapes, [[2, 8, 32]]);
  assert.deepEqual(s.output_shapes, s.input_shapes);
  assert.ok(s.dependencies.includes('tinyvision.layers.helpers'));
  assert.deepEqual(s.externs, ['torch']);
  assert.equal(s.stages?.forward, 'pass');
  const text = JSON.stringify(s);
  assert.ok(!/\bdef |\bself\.|return /.test(text), 'no source code in a spec');
});

test('categories and inherited signatures of the other blocks', { skip }, () => {
  const cat = (id: string) => getSpec(ws.store, id)!.category;
  assert.equal(cat('tinyvision.layers.attention.Attention'), 'attention');
  assert.equal(cat('tinyvision.layers.attention.Block'), 'transformer block');
  assert.equal(cat('tinyvision.layers.conv.ConvBnAct'), 'convolution');
  assert.equal(cat('tinyvision.models.resnet.Bottleneck'), 'convolution');
  // LinearHead defines no forward: it is BaseHead's (tinybase.module), found through the base
  const head = getSpec(ws.store, 'tinyvision.models.mixer.LinearHead')!;
  assert.deepEqual(
    head.forward.map((p) => p.name),
    ['x'],
  );
  assert.deepEqual(head.hyperparameters, ['in_features', 'num_classes']);
  // ResBottleneck(…, **kwargs): the var-keyword parameter is not a hyperparameter
  const rb = getSpec(ws.store, 'tinyvision.models.variants.ResBottleneck')!;
  assert.equal(rb.init.at(-1)?.kind, 'var-keyword');
  assert.ok(!rb.hyperparameters.includes(rb.init.at(-1)!.name));
  // the failed block keeps its stages and is in failed/
  const failed = getSpec(ws.store, 'tinyvision.models.wrappers.FeatureTap')!;
  assert.equal(failed.status, 'failed');
  assert.equal(failed.stages?.instantiate, 'fail');
  assert.equal(failed.stages?.forward, 'skip');
  // the mixer Block's input needs exactly cfg.num_tokens tokens, read from its dataclass config
  assert.deepEqual(getSpec(ws.store, 'tinyvision.models.mixer.Block')!.input_shapes, [[2, 16, 32]]);
});

function gitHashObject(file: string): string {
  return execFileSync('git', ['hash-object', '--no-filters', file], { encoding: 'utf8' }).trim();
}

test('manifest SWHIDs equal `git hash-object` of the source files', { skip }, () => {
  const root = path.join(repoRoot, 'examples');
  const manifest = readJson<RequiredRepos>(path.join(out, 'required_repos.json'));
  assert.equal(manifest.block, null);
  assert.equal(manifest.repos.length, 1);
  const repo = manifest.repos[0];
  assert.equal(repo.name, 'examples');
  assert.ok(repo.files.length >= 8);
  for (const f of repo.files) assert.equal(f.swhid, `swh:1:cnt:${gitHashObject(path.join(root, f.path))}`, f.path);
  assert.deepEqual(repo.swhids, [...new Set(repo.files.map((f) => f.swhid))].sort());
  if (repo.revision) assert.equal(repo.revision_swhid, `swh:1:rev:${repo.revision}`);
  assert.deepEqual(lib.changedFiles, []);
  // per block: exactly the files its provenance names, each with its copied line ranges
  const wa = readJson<RequiredRepos>(
    path.join(out, 'blocks', 'tinyvision.layers.attention.WindowAttention.required_repos.json'),
  );
  assert.equal(wa.block, 'tinyvision.layers.attention.WindowAttention');
  const paths = wa.repos[0].files.map((f) => f.path);
  // the library holds the slim module: `@register_block` returns its argument, so it and
  // its registry (tinyvision/registry.py) are left out
  assert.deepEqual(paths, ['tinyvision/layers/attention.py', 'tinyvision/layers/helpers.py']);
  for (const f of wa.repos[0].files) {
    assert.equal(f.swhid, `swh:1:cnt:${gitHashObject(path.join(root, f.path))}`);
    assert.ok(f.lines!.length > 0);
  }
  // every file of the library manifest lists the blocks that copy from it
  const attn = repo.files.find((f) => f.path === 'tinyvision/layers/attention.py')!;
  assert.ok(attn.blocks!.includes('tinyvision.layers.attention.WindowAttention'));
});

test('requirements pin torch to the validation environment version', { skip }, () => {
  const v = execFileSync(PY, ['-c', 'import importlib.metadata as m; print(m.version("torch"))'], {
    encoding: 'utf8',
  }).trim();
  const pin = `torch==${publicVersion(v)}`;
  assert.ok(lib.requirements.includes(pin), lib.requirements.join(' '));
  const txt = readFileSync(path.join(out, 'requirements.txt'), 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#'));
  assert.deepEqual(txt, lib.requirements);
  // the standard library (math, typing, functools …) needs no requirement
  assert.ok(!txt.some((l) => /^(math|typing|functools|collections|itertools|abc|dataclasses)\b/.test(l)));
  assert.deepEqual(getSpec(ws.store, 'tinyvision.layers.activations.GELUTanh')!.requirements, [pin]);
  // cached by environment in the store: a second build does not need the interpreter
  const envId = (listExtractions(ws.store)[0].record.validation as { envId: string }).envId;
  const cached = JSON.parse(ws.store.getKV(`requirements:env:${envId}`) ?? '{}') as Record<
    string,
    { pep508: string | null }
  >;
  assert.equal(cached.torch?.pep508, pin);
});

test('a second build reuses the cached requirements and moves files with the status', { skip }, async () => {
  const again = await buildLibrary(ws, { python: '/nonexistent/python3' });
  assert.deepEqual(again.requirements, lib.requirements);
  assert.deepEqual(again.warnings, []);
  // demote a validated block in the store: its spec moves from blocks/ to failed/
  const id = 'tinyvision.layers.activations.HardSigmoid';
  const e = listExtractions(ws.store).find((x) => x.id === id)!;
  putExtraction(ws.store, { ...e, status: 'failed', ok: false });
  try {
    await buildLibrary(ws, { python: PY });
    assert.ok(existsSync(path.join(out, 'failed', `${id}.spec.json`)));
    assert.ok(!existsSync(path.join(out, 'blocks', `${id}.spec.json`)));
    assert.equal(getSpec(ws.store, id)!.status, 'failed');
  } finally {
    putExtraction(ws.store, e);
    await buildLibrary(ws, { python: PY });
  }
  assert.ok(existsSync(path.join(out, 'blocks', `${id}.spec.json`)));
  assert.ok(!existsSync(path.join(out, 'failed', `${id}.spec.json`)));
});

test('records stored without layers get them from the stored validation result', { skip }, async () => {
  const id = 'tinyvision.layers.attention.WindowAttention';
  const e = listExtractions(ws.store).find((x) => x.id === id)!;
  const { layers, ...rest } = e.record.validation!;
  assert.deepEqual(layers, { Linear: 2 });
  putExtraction(ws.store, { ...e, record: { ...e.record, validation: rest } });
  try {
    await buildLibrary(ws, { python: PY });
    assert.deepEqual(getSpec(ws.store, id)!.layers, { Linear: 2 });
  } finally {
    putExtraction(ws.store, e);
  }
});

test('dedup: clusters stored, freshness follows the extractions', { skip }, async () => {
  const d = await runDedup(ws, { threads: 0 });
  assert.equal(d.total, 13);
  // the two Mlp classes differ (different layers and init), nothing else is copied twice
  assert.equal(d.uniqueCount, 13 - d.clusters.reduce((a, c) => a + c.members.length - 1, 0));
  assert.equal(d.perRepo.examples.total, 13);
  const stored = getDedup(ws.store)!;
  assert.equal(stored.fresh, true);
  assert.equal(stored.uniqueCount, d.uniqueCount);
  assert.deepEqual(stored.clusters, d.clusters);
  // plant an exact copy (comments differ) under another id: one exact cluster
  const src = listExtractions(ws.store).find((x) => x.id === 'tinyvision.layers.mlp.Mlp')!;
  const copyId = 'tinyvision.layers.mlp_copy.Mlp';
  putExtraction(ws.store, { ...src, id: copyId, hash: src.hash + 'x', text: '# a copy\n' + src.text });
  assert.equal(getDedup(ws.store)!.fresh, false);
  try {
    const d2 = await runDedup(ws, { threads: 0 });
    assert.equal(d2.total, 14);
    assert.equal(d2.uniqueCount, d.uniqueCount);
    const c = clusterOf(ws.store, copyId)!;
    assert.equal(c.kind, 'exact');
    assert.deepEqual(c.members, [copyId, 'tinyvision.layers.mlp.Mlp'].sort());
    assert.equal(clusterOf(ws.store, 'tinyvision.layers.mlp.Mlp')!.representative, c.representative);
  } finally {
    ws.store.write(() => ws.store.stmt('DELETE FROM extractions WHERE id = ?').run(copyId));
  }
});

test('diversity top-up adds back the least similar cluster members of thin categories', () => {
  const spec = (id: string, category: string, status = 'validated') => ({ id, category, status }) as BlockSpec;
  const specs = [
    spec('a.Attn1', 'attention'),
    spec('b.Attn1', 'attention'),
    spec('c.Attn1', 'attention'),
    spec('d.Attn1', 'attention', 'failed'),
    spec('a.Conv', 'convolution'),
    spec('b.Conv', 'convolution'),
    spec('c.Conv', 'convolution'),
    spec('x.Pool', 'pooling'),
  ];
  const clusters = [
    {
      kind: 'near' as const,
      representative: 'a.Attn1',
      members: ['a.Attn1', 'b.Attn1', 'c.Attn1', 'd.Attn1'],
      scores: [
        { id: 'a.Attn1', exact: true, near: 1, structural: 1 },
        { id: 'b.Attn1', exact: false, near: 0.97, structural: 1 },
        { id: 'c.Attn1', exact: false, near: 0.91, structural: 1 },
        { id: 'd.Attn1', exact: false, near: 0.9, structural: 1 },
      ],
    },
    {
      kind: 'exact' as const,
      representative: 'a.Conv',
      members: ['a.Conv', 'b.Conv'],
      scores: [
        { id: 'a.Conv', exact: true, near: 1, structural: 1 },
        { id: 'b.Conv', exact: true, near: 1, structural: 1 },
      ],
    },
  ];
  const top = Object.fromEntries(diversityTopUp(specs, clusters, 2).map((t) => [t.category, t]));
  // attention: one unique (the representative); the least similar validated member comes back (d is failed)
  assert.deepEqual(top.attention, { category: 'attention', unique: 1, added: ['c.Attn1'] });
  // convolution already has two unique blocks (a.Conv, c.Conv)
  assert.deepEqual(top.convolution, { category: 'convolution', unique: 2, added: [] });
  // pooling has no duplicates to add back
  assert.deepEqual(top.pooling, { category: 'pooling', unique: 1, added: [] });
  assert.deepEqual(diversityTopUp(specs, clusters, 3).find((t) => t.category === 'attention')!.added, [
    'c.Attn1',
    'b.Attn1',
  ]);
});

test('validated records conform to docs/block-record.schema.json', { skip }, () => {
  const records = listExtractions(ws.store);
  assert.ok(records.some((e) => e.record.validation));
  for (const e of records) assert.deepEqual(violations(BLOCK_RECORD_SCHEMA, e.record), [], e.id);
});
