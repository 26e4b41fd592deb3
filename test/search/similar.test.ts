// `similar`: nearest blocks by the de-duplication signatures (lexical and structural
// MinHash, exact Jaccard for the finalists), on the example library (emitted, not
// validated: similarity reads module text only) plus planted copies.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import { getExtraction, putExtraction, textHash } from '../../src/store/records.js';
import { refreshSearch } from '../../src/search/refresh.js';
import { similarBlocks } from '../../src/search/similar.js';
import { repoRoot } from '../helpers.js';
import { buildExampleLibrary } from './library-fixture.js';

const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
const WA = 'tinyvision.layers.attention.WindowAttention';

describe('similar blocks', () => {
  let dir: string;
  let store: IndexStore;
  before(async () => {
    dir = await buildExampleLibrary({ validate: false });
    store = IndexStore.open(dir);
    // planted: a renamed copy of layers.mlp.Mlp (structural duplicate) and an exact copy
    const mlp = getExtraction(store, 'tinyvision.layers.mlp.Mlp')!;
    const renamed = mlp.text.replace(/\bMlp\b/g, 'FeedForward').replace(/\bhidden_features\b/g, 'inner_dim');
    putExtraction(store, { ...mlp, id: 'planted.ffn.FeedForward', text: renamed, hash: textHash(renamed) });
    putExtraction(store, { ...mlp, id: 'planted.copy.Mlp' });
    refreshSearch(store);
  });

  test('blocks sharing code with window attention come first', () => {
    const hits = similarBlocks(store, WA, 5);
    assert.ok(!hits.some((h) => h.id === WA), 'never itself');
    // WindowAttention subclasses Attention (copied into its module); attention.Block copies both
    assert.deepEqual(
      new Set(hits.slice(0, 2).map((h) => h.id)),
      new Set(['tinyvision.layers.attention.Attention', 'tinyvision.layers.attention.Block']),
    );
    for (let i = 1; i < hits.length; i++) assert.ok(hits[i - 1].score >= hits[i].score, 'sorted by score');
    for (const h of hits) assert.ok(h.score > 0 && h.score <= 1 && h.lexical >= 0 && h.structural >= 0);
    assert.ok(hits[0].score > hits[hits.length - 1].score + 0.2, 'related blocks stand out from unrelated ones');
  });

  test('planted copies are found and labelled as duplicates', () => {
    const hits = similarBlocks(store, 'tinyvision.layers.mlp.Mlp', 3);
    const exact = hits.find((h) => h.id === 'planted.copy.Mlp');
    const renamed = hits.find((h) => h.id === 'planted.ffn.FeedForward');
    assert.ok(exact && renamed, JSON.stringify(hits));
    assert.equal(exact.duplicate, 'exact');
    assert.equal(exact.score, 1);
    assert.equal(renamed.duplicate, 'structural');
    assert.equal(renamed.structural, 1);
    assert.ok(renamed.lexical < 1);
  });

  test('k limits the answer; an unknown id is an error', () => {
    assert.equal(similarBlocks(store, WA, 2).length, 2);
    assert.throws(() => similarBlocks(store, 'no.such.Block'), /no library block/);
  });

  test('signatures follow changed modules', () => {
    const copy = getExtraction(store, 'planted.copy.Mlp')!;
    const text = getExtraction(store, WA)!.text;
    putExtraction(store, { ...copy, text, hash: textHash(text) });
    refreshSearch(store);
    const hits = similarBlocks(store, WA, 1);
    assert.equal(hits[0].id, 'planted.copy.Mlp');
    assert.equal(hits[0].duplicate, 'exact');
  });

  test('nnrag similar --json', () => {
    const out = JSON.parse(
      execFileSync('node', [bin, 'similar', 'WindowAttention', '--store', dir, '--json', '--limit', '3'], {
        encoding: 'utf8',
      }),
    );
    assert.equal(out.id, WA);
    assert.equal(out.similar.length, 3);
    assert.ok(out.similar.every((h: { id: string }) => h.id !== WA));
  });
});
