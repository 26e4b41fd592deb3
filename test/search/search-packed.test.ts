// The search's per-store structures without a JS object per document (src/search/packed.ts):
// the class names and their identifier parts packed in byte buffers, decoded when a query
// needs one; the browse totals and the library's size counted on the filter columns in
// memory, not by an SQL count over every document's row. On a store of a few thousand
// blocks: packed strings round-trip (Unicode, empty, skipped indexes), browse totals equal
// SQL's count for each filter without running one, searches by name parts still find and
// rank their blocks, and what prepareSearch keeps on the JS heap does not grow with the
// documents (the names as strings and arrays did, by ~200 bytes a document).
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { after, before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import type { BlockStatus } from '../../src/records/block.js';
import { prepareSearch, searchBlocks, syncSearchIndex } from '../../src/search/fts.js';
import { countDocs, type DocFilters } from '../../src/store/search.js';
import { PackedStrings, PackedStringsBuilder } from '../../src/search/packed.js';
import { tempDir } from '../helpers.js';
import { moduleText, putModule } from './module-text.js';

const N = 3000;

describe('search: packed per-document structures', () => {
  let dir: string;
  let store: IndexStore;
  before(() => {
    dir = tempDir('nnrag-search-packed-');
    store = IndexStore.open(dir);
    const statuses: BlockStatus[] = ['validated', 'extracted', 'failed'];
    store.write(() => {
      for (let i = 0; i < N; i++) {
        const repo = `org/r${i % 7}`;
        // long camelCase names (several identifier parts each), a Unicode one among them
        const cls = i === 5 ? 'ÜberAttentionBlock' : `WindowAttentionMixerStage${i}`;
        const id = `${repo}:pkg.layers.m${i}.${cls}`;
        const text = moduleText(cls, `Block ${i}: attends within windows.`);
        const status = statuses[i % 3];
        putModule(store, { id, repo, text, status, path: `m${i}.py` });
      }
    });
    syncSearchIndex(store);
  });
  after(() => store.close());

  test('packed strings round-trip, skipped indexes empty', () => {
    const b = new PackedStringsBuilder(6, 1);
    b.set(0, 'Attention');
    b.set(2, 'Über\0net');
    b.set(3, '');
    b.set(4, '注意力');
    const p: PackedStrings = b.build();
    assert.deepEqual(
      Array.from({ length: p.length }, (_, i) => p.get(i)),
      ['Attention', '', 'Über\0net', '', '注意力', ''],
    );
    assert.equal(p.byteLength(2), Buffer.byteLength('Über\0net'));
    assert.equal(p.get(-1), '');
    assert.equal(p.get(6), '');
    assert.throws(() => b.set(1, 'late'), /index 1 after/);
  });

  test('browse totals are counted in memory and equal the SQL count, filter by filter', () => {
    const filters: (Partial<DocFilters> & { repo?: string })[] = [
      {},
      { all: true },
      { validated: true },
      { repos: ['org/r3'] },
      { repos: ['org/r3'], all: true },
      { categories: ['nope'] },
    ];
    const ran: string[] = [];
    const stmt = store.stmt.bind(store);
    store.stmt = (sql: string) => {
      ran.push(sql);
      return stmt(sql);
    };
    try {
      for (const f of filters) {
        const df: DocFilters = { repos: [], categories: [], validated: false, all: false, ...f };
        const total = searchBlocks(store, '', {
          repo: df.repos,
          category: df.categories,
          validated: df.validated,
          all: df.all,
          limit: 1,
        }).total;
        assert.equal(total, countDocs(store, df), JSON.stringify(f));
      }
      // (countDocs itself ran above, for the comparison: one per filter)
      const counts = ran.filter((s) => /count\(\*\) FROM search_docs/.test(s));
      assert.equal(counts.length, filters.length, 'the browse totals ran no SQL count of their own');
    } finally {
      store.stmt = stmt;
    }
  });

  test('names and their parts decoded from the packed buffers rank as before', () => {
    const r = searchBlocks(store, 'WindowAttentionMixerStage18', { limit: 3 });
    assert.equal(r.hits[0].name, 'WindowAttentionMixerStage18');
    const u = searchBlocks(store, 'über attention', { limit: 3, all: true });
    assert.equal(u.hits[0].name, 'ÜberAttentionBlock');
    // the large path's candidates come from the name index built from the packed parts
    const large = searchBlocks(store, 'mixer', { large: 100, totalCap: 50, candidates: 40, limit: 5 });
    assert.equal(large.capped, true);
    assert.ok(large.hits.every((h) => h.name.startsWith('WindowAttentionMixerStage')));
  });

  test('what prepareSearch keeps on the JS heap does not grow with the documents', () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    // fresh handles: nothing memoized for them yet
    const fresh = [0, 1, 2].map(() => IndexStore.open(dir, { create: false }));
    try {
      // the JS objects' spaces (not the compiled code's: a function optimized during the
      // measured call is no document's)
      const heap = () => {
        gc();
        gc();
        return v8
          .getHeapSpaceStatistics()
          .filter((sp) => !sp.space_name.startsWith('code'))
          .reduce((a, sp) => a + sp.space_used_size, 0);
      };
      // the statements' first preparation and the code's first runs, out of the figure;
      // these handles are held until after it (their structures are collected with them:
      // not in the middle of the measurement)
      const warm = [0, 1, 2].map(() => IndexStore.open(dir, { create: false }));
      for (const w of warm) prepareSearch(w);
      // three measurements, the least: what a handle keeps is in each, while what the
      // collector or the compiler had under way beside it (tens of KB, more on a loaded
      // machine) is not in all three
      const kept = Math.min(
        ...fresh.map((f) => {
          const before = heap();
          prepareSearch(f);
          return heap() - before;
        }),
      );
      for (const w of warm) w.close();
      // 3,000 names as strings and part arrays were 1.3–1.4 MB; packed, a few KB of maps
      // and the typed arrays' handles (their bytes are outside the JS heap)
      assert.ok(kept < 40 * N, `prepareSearch kept ${kept} bytes of JS heap for ${N} documents`);
    } finally {
      for (const f of fresh) f.close();
    }
  });
});
