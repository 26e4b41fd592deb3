// The search's filters as one byte per document (fts.ts filterMask), made once per filter and
// store state, and the repository filter's choice between looking its documents up and one
// pass over the query's matches. On a small store with the large path's threshold set low:
// every filter's mask equals the verdict computed here from the documents' columns in SQL
// (repository, category, status, parameters, NULL parameters failing a range); a filter's
// second query makes no mask, and a filter given in another order is the same mask; the
// masks kept are bounded; and a repository filter whose query has related words (three
// terms to seek per document) reads the matches once instead of seeking each document,
// with the same page; and prepareSearch names the commonest class-name part.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import type { BlockStatus } from '../../src/records/block.js';
import {
  filterMask,
  filterMaskBuilds,
  MASK_HIDDEN,
  MASK_OUT,
  MASK_SHOWN,
  prepareSearch,
  searchBlocks,
  syncSearchIndex,
  type SearchFilters,
} from '../../src/search/fts.js';
import { tempDir } from '../helpers.js';
import { moduleText, putModule } from './module-text.js';
import { spyStatements } from './spy-statements.js';

describe('search: filter masks', () => {
  let dir: string;
  let store: IndexStore;
  before(() => {
    dir = tempDir('nnrag-search-mask-');
    store = IndexStore.open(dir);
    const statuses: BlockStatus[] = ['validated', 'extracted', 'failed'];
    store.write(() => {
      // 400 blocks whose docstring says "mlp" (a word with related words: feedforward, ffn)
      for (let i = 0; i < 400; i++) {
        const repo = `org/r${i % 5}`;
        const cls = i % 2 ? `TokenMixerMlp${i}` : `ChannelStage${i}`;
        const text = moduleText(cls, `Stage ${i}: an mlp over channels, a feedforward or ffn.`);
        putModule(store, { id: `${repo}:pkg.m${i}.${cls}`, repo, text, status: statuses[i % 3], path: `m${i}.py` });
      }
      // a repository of 3 blocks
      for (let i = 0; i < 3; i++) {
        const text = moduleText(`SmallMlp${i}`, 'A small mlp.');
        putModule(store, { id: `org/small:pkg.s${i}.SmallMlp${i}`, repo: 'org/small', text, path: `s${i}.py` });
      }
    });
    syncSearchIndex(store);
    // parameter counts (the documents of these modules have none: NULL), every fourth
    // left NULL, which a range never passes (SQL's comparisons with NULL are false)
    store.db.prepare('UPDATE search_docs SET params = CASE WHEN rowid % 4 = 0 THEN NULL ELSE rowid * 10 END').run();
  });
  after(() => store.close());

  test("every filter's mask is the documents' verdict from their columns", () => {
    const rows = store.db.prepare('SELECT rowid, repo, category, status, params FROM search_docs').all() as {
      rowid: number;
      repo: string;
      category: string;
      status: string;
      params: number | null;
    }[];
    const cats = [...new Set(rows.map((r) => r.category))];
    assert.ok(cats.length >= 1);
    const filters: SearchFilters[] = [
      {},
      { all: true },
      { validated: true },
      { repo: 'org/r3' },
      { repo: ['org/r1', 'org/r2'], all: true },
      { category: cats[0] },
      { category: 'nope' },
      { minParams: 500 },
      { maxParams: 1200, all: true },
      { validated: true, minParams: 300, maxParams: 3000 },
      { repo: 'org/small', minParams: 0 },
    ];
    for (const f of filters) {
      const m = filterMask(store, f);
      const repos = f.repo === undefined ? [] : [f.repo].flat();
      const catsF = f.category === undefined ? [] : [f.category].flat();
      const want = new Map<number, number>();
      for (const r of rows) {
        const passes =
          (!repos.length || repos.includes(r.repo)) &&
          (!catsF.length || catsF.includes(r.category)) &&
          (!f.validated || r.status === 'validated') &&
          (f.minParams === undefined || (r.params !== null && r.params >= f.minParams)) &&
          (f.maxParams === undefined || (r.params !== null && r.params <= f.maxParams));
        want.set(r.rowid, !passes ? MASK_OUT : r.status === 'failed' && !f.all ? MASK_HIDDEN : MASK_SHOWN);
      }
      for (let r = 0; r < m.length; r++)
        assert.equal(m[r], want.get(r) ?? MASK_OUT, `${JSON.stringify(f)}: rowid ${r}`);
      assert.ok(
        [...want.values()].some((v) => v !== MASK_OUT) || f.category === 'nope',
        `${JSON.stringify(f)} passes some document`,
      );
    }
  });

  test("a filter's second query makes no mask; the masks kept are bounded", () => {
    const f: SearchFilters = { repo: ['org/r4', 'org/r0'], validated: true };
    searchBlocks(store, 'mlp', { ...f, large: 50, limit: 5 });
    const made = filterMaskBuilds();
    const again = searchBlocks(store, 'mlp', { repo: ['org/r0', 'org/r4'], validated: true, large: 50, limit: 5 });
    assert.ok(again.hits.length > 0);
    assert.equal(filterMaskBuilds(), made, 'the same filter (its repositories in another order): no new mask');
    const kept = filterMask(store, f);
    assert.equal(filterMask(store, { validated: true, repo: ['org/r0', 'org/r4'] }), kept);
    // 20 other filters: the first is evicted and made again
    for (let i = 0; i < 20; i++) filterMask(store, { minParams: i });
    const before = filterMaskBuilds();
    assert.notEqual(filterMask(store, f), kept);
    assert.equal(filterMaskBuilds(), before + 1);
  });

  test('a repository filter reads the matches once when seeking each of its documents costs more', () => {
    const ran: string[] = [];
    const restore = spyStatements(store, (sql) => ran.push(sql));
    let page;
    try {
      // "mlp" matches 403 blocks (> large: the large path); org/small has 3 documents, each
      // sought for 3 terms (mlp, feedforward, ffn): 3 × 100 × 3 lookups' cost against a
      // pass over mlp's 403 documents and its related words' 400
      page = searchBlocks(store, 'mlp', { repo: 'org/small', large: 50, limit: 5 });
    } finally {
      restore();
    }
    const union = ran.filter((s) => /search_fts MATCH \? AND \+?rowid IN \(SELECT value FROM json_each/.test(s));
    assert.ok(union.length >= 1, ran.join('\n'));
    assert.match(union[0], /\+rowid IN/, 'one pass over the matches, not a seek per document');
    assert.deepEqual(page.hits.map((h) => h.name).sort(), ['SmallMlp0', 'SmallMlp1', 'SmallMlp2']);
    assert.equal(page.total, 3);
    // the same page as the exact path's (every match read)
    const exact = searchBlocks(store, 'mlp', { repo: 'org/small', large: Number.POSITIVE_INFINITY, limit: 5 });
    assert.deepEqual(
      page.hits.map((h) => [h.id, h.score]),
      exact.hits.map((h) => [h.id, h.score]),
    );
  });

  test('prepareSearch returns the commonest class-name part (the catalog renders a page of it at its start)', () => {
    // TokenMixerMlp<i> (200 names) and SmallMlp<i> (3) hold `mlp`; ChannelStage<i> (200)
    // hold `channel` and `stage`
    assert.equal(prepareSearch(store), 'mlp');
  });
});
