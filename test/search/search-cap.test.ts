// The re-ranking's candidate cap (fts.ts CANDIDATES): a query matching more blocks than the
// cap re-ranks the blocks it names whole, then its name matches, then matches by field. On
// a store with more matches than the cap: the whole-name match still ranks first, totals
// stay exact, and where the cap does not bite (the best entries are name matches, fewer
// than the cap) the page equals the uncapped ranking's.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import { putExtraction, textHash } from '../../src/store/records.js';
import { emptyRecord } from '../../src/records/block.js';
import { CANDIDATES, searchBlocks, syncSearchIndex } from '../../src/search/fts.js';
import { tempDir } from '../helpers.js';
import { moduleText } from './module-text.js';

describe('search: the candidate cap', () => {
  let store: IndexStore;
  const put = (id: string, cls: string, doc: string) => {
    const text = moduleText(cls, doc);
    putExtraction(store, {
      id,
      hash: textHash(text),
      ok: true,
      status: 'validated',
      lines: text.split('\n').length,
      record: emptyRecord(id, 'caprepo'),
      text,
    });
  };
  before(() => {
    store = IndexStore.open(tempDir('nnrag-search-cap-'));
    store.write(() => {
      // 1,200 blocks with "conv" in their name; the block named Conv comes last (highest rowid)
      for (let i = 0; i < 1200; i++) put(`caprepo:units.u${i}.ConvUnit${i}`, `ConvUnit${i}`, 'A projection unit.');
      // "attention": 150 blocks by name, 900 more only in their docstring
      for (let i = 0; i < 150; i++) put(`caprepo:pools.p${i}.AttentionPool${i}`, `AttentionPool${i}`, 'Pools tokens.');
      for (let i = 0; i < 900; i++)
        put(`caprepo:mixers.m${i}.Mixer${i}`, `Mixer${i}`, 'Mixes tokens without attention.');
      put(
        'caprepo:layers.Conv',
        'Conv',
        'A plain projection, named after the layer it replaces in a longer docstring.',
      );
    });
    syncSearchIndex(store);
  });

  test('more matches than the cap: the whole-name match ranks first, totals stay exact', () => {
    const r = searchBlocks(store, 'conv', { limit: 10 });
    assert.ok(r.total > CANDIDATES, `${r.total} matches`);
    assert.equal(r.total, 1201);
    assert.equal(r.ranked, CANDIDATES, 'the cap bit');
    assert.equal(r.hits[0].id, 'caprepo:layers.Conv');
    assert.equal(r.hits[0].score, 1);
    // uncapped, the same block is first
    const all = searchBlocks(store, 'conv', { limit: 10, candidates: Number.POSITIVE_INFINITY });
    assert.equal(all.ranked, 1201);
    assert.equal(all.hits[0].id, 'caprepo:layers.Conv');
  });

  test('where the cap does not bite, the page is the uncapped ranking', () => {
    const capped = searchBlocks(store, 'attention', { limit: 20 });
    const uncapped = searchBlocks(store, 'attention', { limit: 20, candidates: Number.POSITIVE_INFINITY });
    assert.equal(capped.total, 1050);
    assert.equal(capped.ranked, CANDIDATES);
    assert.equal(uncapped.ranked, 1050);
    // the 150 name matches are all among the candidates and rank above the docstring ones
    assert.deepEqual(capped.hits, uncapped.hits);
    assert.ok(capped.hits.every((h) => h.name.startsWith('AttentionPool')));
    // a page deeper in the name matches is the same too
    const deep = (candidates?: number) =>
      searchBlocks(store, 'attention', { limit: 20, offset: 120, candidates }).hits.map((h) => h.id);
    assert.deepEqual(deep(), deep(Number.POSITIVE_INFINITY));
  });

  test('pages past the ranked candidates are empty', () => {
    // a cap of 100: a page of 150 holds the 100 ranked blocks only
    const small = searchBlocks(store, 'attention', { limit: 150, candidates: 100 });
    assert.equal(small.ranked, 100);
    assert.equal(small.hits.length, 100, 'pages past the ranked blocks are empty');
  });
});
