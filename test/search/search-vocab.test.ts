// A word's document frequency read from FTS5's vocabulary (src/store/search.ts termDocs)
// instead of counted by a MATCH: on a small store whose documents were replaced and deleted
// after they were indexed, termDocs equals countFts for words, stems (a Porter-stemmed
// query word), digits and a word no document holds; a string the tokenizer makes several
// terms, a prefix and an OR are left to countFts (null); a query's one-term words run no
// count over search_fts, and the vocabulary's temp table does not change what the search
// keeps per store state (a second query counts nothing again).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import { searchBlocks, syncSearchIndex } from '../../src/search/fts.js';
import { countFts, termDocs } from '../../src/store/search.js';
import { deleteExtraction } from '../../src/store/records.js';
import { tempDir } from '../helpers.js';
import { moduleText, putModule } from './module-text.js';

describe('search: document frequencies from the vocabulary', () => {
  let dir: string;
  let store: IndexStore;
  before(() => {
    dir = tempDir('nnrag-search-vocab-');
    store = IndexStore.open(dir);
    const put = (i: number, doc: string) =>
      putModule(store, {
        id: `org/r:pkg.m${i}.Block${i}`,
        repo: 'org/r',
        text: moduleText(`Block${i}`, doc),
        path: `m${i}.py`,
      });
    store.write(() => {
      for (let i = 0; i < 60; i++) put(i, i % 3 ? 'Windowed attention over tokens.' : 'A conv2d stem, convolutions.');
    });
    syncSearchIndex(store);
    // replaced (their documents rewritten: attention → pooling) and deleted blocks: the
    // vocabulary must not count their old terms
    store.write(() => {
      for (let i = 1; i < 20; i += 3) put(i, 'Pooling only.');
    });
    store.write(() => {
      for (let i = 40; i < 50; i++) deleteExtraction(store, `org/r:pkg.m${i}.Block${i}`);
    });
    syncSearchIndex(store);
  });
  after(() => store.close());

  test('termDocs equals the counted documents; other expressions are left to the count', () => {
    for (const expr of [
      '"attention"',
      '"attentions"',
      '"pooling"',
      '"pool"',
      '"conv2d"',
      '"stem"',
      '"nothing"',
      '"block1"',
    ]) {
      const n = termDocs(store, expr);
      assert.notEqual(n, null, expr);
      assert.equal(n, countFts(store, expr), expr);
    }
    assert.ok(countFts(store, '"attention"') > 0);
    assert.ok(countFts(store, '"pooling"') > 0);
    for (const expr of ['"windowed attention"', '"conv"*', '"conv" OR "attention"', 'attention', '"a-b"'])
      assert.equal(termDocs(store, expr), null, expr);
  });

  test("a query's one-term words run no count over search_fts; the scores are unchanged", () => {
    const fresh = IndexStore.open(dir, { create: false });
    // every statement the search prepares or reuses (counts are `get`s)
    const ran: string[] = [];
    const stmt = fresh.stmt.bind(fresh);
    fresh.stmt = (sql: string) => {
      ran.push(sql);
      return stmt(sql);
    };
    try {
      const r = searchBlocks(fresh, 'attention pooling', { limit: 50 });
      const counts = (t: string) => ran.filter((s) => s.startsWith(`SELECT count(*) FROM ${t} WHERE`)).length;
      assert.ok(r.hits.length > 0);
      assert.equal(counts('search_fts'), 0, ran.join('\n'));
      assert.ok(ran.some((s) => s.includes('search_fts_vocab')));
      // the counts are kept per store state: the vocabulary's temp table is no write that
      // would drop them (a second search reads none again)
      const before = ran.length;
      const again = searchBlocks(fresh, 'attention pooling', { limit: 50 });
      assert.deepEqual(
        again.hits.map((h) => [h.id, h.score]),
        r.hits.map((h) => [h.id, h.score]),
      );
      assert.equal(
        ran.slice(before).filter((s) => /count\(\*\)|search_fts_vocab/.test(s)).length,
        0,
        'nothing counted again',
      );
    } finally {
      fresh.stmt = stmt;
      fresh.close();
    }
  });
});
