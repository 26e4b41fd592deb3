// The search's large path (fts.ts LARGE): a query matching more blocks than LARGE counts the
// blocks shown among its first LARGE matches, at most TOTAL_CAP ("more than N", in the
// result, the CLI line and the catalog) and
// takes its candidates from the class names held in memory, each looked up in the index.
// On a small store with the thresholds set low: the capped total, and the first entries
// equal to the uncapped ranking's (the exact path over every match), validated first, the
// whole-name match first, with a repository filter, and hidden failed blocks.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import type { BlockStatus } from '../../src/records/block.js';
import { searchBlocks, syncSearchIndex, type SearchOptions } from '../../src/search/fts.js';
import { startServer, type CatalogServer } from '../../src/serve/server.js';
import { Workspace } from '../../src/workspace.js';
import { countFts } from '../../src/store/search.js';
import { tempDir } from '../helpers.js';
import { moduleText, putModule } from './module-text.js';
import { spyStatements } from './spy-statements.js';

// the thresholds of the large path, low enough for this store; UNCAPPED is the exact path
const LOW: SearchOptions = { large: 100, totalCap: 50, candidates: 40 };
const UNCAPPED: SearchOptions = { large: Number.POSITIVE_INFINITY, candidates: Number.POSITIVE_INFINITY };

describe('search: the large path', () => {
  let dir: string;
  let store: IndexStore;
  const put = (repo: string, cls: string, doc: string, status: BlockStatus = 'validated') => {
    const id = `${repo}:m.${cls}`;
    putModule(store, { id, repo, text: moduleText(cls, doc), status });
  };
  before(() => {
    dir = tempDir('nnrag-search-large-');
    store = IndexStore.open(dir);
    store.write(() => {
      // 300 name matches of "conv" covering a sixth of their name (all tied), written first
      for (let i = 0; i < 300; i++) put('org/fill', `ConvAlphaBetaGammaDelta${i}`, 'A projection unit.');
      // 200 blocks that mention it in their docstring only
      for (let i = 0; i < 200; i++) put('org/doc', `Mixer${i}`, 'Mixes tokens after a conv.');
      // 30 failed ones, hidden by default
      for (let i = 0; i < 30; i++) put('org/bad', `ConvBroken${i}`, 'Fails.', 'failed');
      // names covering more of the name, each once, written last (highest rowids)
      put('org/best', 'ConvBnActPoolBlock', 'Conv, norm, activation, pool.');
      put('org/best', 'ConvBnActPool', 'Conv, norm, activation, pool.');
      put('org/best', 'ConvBnAct', 'Conv, norm, activation.');
      put('org/best', 'ConvDownLayer', 'Conv that halves the size.');
      put('org/best', 'ConvPool', 'Conv then pool.', 'extracted');
      put('org/best', 'ConvGate', 'Conv, gated.');
      put('org/best', 'ConvBlock', 'A conv block.');
      put('org/best', 'Conv', 'A plain conv.');
    });
    syncSearchIndex(store);
  });
  after(() => store.close());

  test('more matches than the count cap: a capped total, the ranking of every match on the first page', () => {
    const capped = searchBlocks(store, 'conv', { ...LOW, limit: 10 });
    const exact = searchBlocks(store, 'conv', { ...UNCAPPED, limit: 10 });
    assert.equal(exact.total, 508, 'every match counted by the exact path');
    assert.equal(exact.capped, undefined);
    assert.equal(capped.capped, true);
    assert.equal(capped.total, 50, 'the blocks shown among the first 101 matches, at most totalCap');
    assert.equal(capped.ranked, 40, 'the candidates');
    // failed blocks counted among the matches read (a lower bound, as the total)
    assert.ok(capped.hiddenFailed <= exact.hiddenFailed);
    assert.equal(exact.hiddenFailed, 30);
    // the names covering most of their name, each once, in the exact ranking's order (the
    // whole name first; ConvPool covers as much as ConvGate but is not validated: it comes
    // after every validated name match, past this page)
    const order = [
      'Conv',
      'ConvBlock',
      'ConvGate',
      'ConvDownLayer',
      'ConvBnAct',
      'ConvBnActPool',
      'ConvBnActPoolBlock',
    ];
    assert.deepEqual(
      exact.hits.slice(0, 7).map((h) => h.name),
      order,
    );
    assert.deepEqual(capped.hits.slice(0, 7), exact.hits.slice(0, 7));
    assert.equal(capped.hits[0].name, 'Conv');
    // past them, blocks of equal score: the same scores (their order among themselves is
    // by rowid on the large path, by BM25 on the exact one)
    assert.deepEqual(
      capped.hits.map((h) => h.score),
      exact.hits.map((h) => h.score),
    );
  });

  test('BM25 only where two blocks of the head tie: the same pages as BM25 over every head', () => {
    let untied = 0,
      tied = 0;
    for (const q of ['conv', 'ConvBnActPoolBlock', 'ConvGate', 'conv block', 'mixer', 'pool', 'gated conv', 'plain'])
      for (const [offset, limit] of [
        [0, 1],
        [0, 5],
        [0, 20],
        [3, 4],
        [290, 20],
      ]) {
        const o = { ...UNCAPPED, offset, limit, all: true };
        const skip = searchBlocks(store, q, o);
        const always = searchBlocks(store, q, { ...o, headBm25: 'always' });
        assert.deepEqual(skip.hits, always.hits, `${q} at ${offset}+${limit}`);
        const scores = always.hits.map((h) => h.score);
        if (new Set(scores).size === scores.length) untied++;
        else tied++;
      }
    // both kinds of page were compared: heads without a tie (BM25 skipped) and with ties
    assert.ok(untied >= 5 && tied >= 5, `untied ${untied}, tied ${tied}`);
  });

  test('the phrase of a multi-word query is checked only in the fields where a candidate could hold it: the same pages', () => {
    const phrasePasses: string[] = [];
    // every statement's first argument seen (the MATCH expression)
    const restore = spyStatements(store, (_sql, a) => {
      // the phrase checks among the candidates: `{fields} : ("a" + "b")`
      if (typeof a[0] === 'string' && / \+ /.test(a[0])) phrasePasses.push(a[0]);
    });
    try {
      let fewer = 0;
      for (const q of [
        'conv block',
        'plain conv',
        'mixes tokens',
        'conv pool',
        'projection unit',
        'gated conv',
        'after a conv',
      ])
        for (const o of [UNCAPPED, LOW, { ...LOW, all: true }]) {
          phrasePasses.length = 0;
          const needed = searchBlocks(store, q, { ...o, limit: 30 });
          const n = phrasePasses.length;
          const every = searchBlocks(store, q, { ...o, limit: 30, phraseChecks: 'every' });
          // every field asked (a field's table that holds no document of the phrase answers
          // from its count, without a pass)
          const e = phrasePasses.length - n;
          assert.ok(e <= 4, `${q}: ${e} fields checked`);
          assert.deepEqual(needed.hits, every.hits, q);
          if (n < e) fewer++;
        }
      assert.ok(fewer > 0, 'some field passes were skipped');
    } finally {
      restore();
    }
  });

  test('a page deeper than the distinct scores holds the same blocks in the same scores', () => {
    const page = (o: SearchOptions) => searchBlocks(store, 'conv', { ...o, limit: 30, offset: 5 });
    assert.deepEqual(
      page(LOW).hits.map((h) => h.score),
      page(UNCAPPED).hits.map((h) => h.score),
    );
  });

  test('a filter that shows none of the first matches reads on; a repository filter is looked up by rowid', () => {
    // the first chunk read shows none (no block has parameters): the count reads on to the end
    const none = searchBlocks(store, 'conv', { ...LOW, minParams: 1, limit: 5 });
    assert.equal(none.capped, undefined);
    assert.equal(none.total, 0);
    assert.equal(searchBlocks(store, 'conv', { ...UNCAPPED, minParams: 1 }).total, 0);
    const repo = searchBlocks(store, 'conv', { ...LOW, repo: 'org/best', limit: 20 });
    const repoExact = searchBlocks(store, 'conv', { ...UNCAPPED, repo: 'org/best', limit: 20 });
    assert.equal(repo.capped, undefined);
    assert.equal(repo.total, 8);
    assert.deepEqual(repo.hits, repoExact.hits);
    // failed blocks only when asked for, and then ranked like the others
    const all = searchBlocks(store, 'conv broken', { ...LOW, all: true, limit: 5 });
    const allExact = searchBlocks(store, 'conv broken', { ...UNCAPPED, all: true, limit: 5 });
    assert.equal(all.hits[0].name.startsWith('ConvBroken'), true);
    assert.deepEqual(
      all.hits.map((h) => [h.score, h.status]),
      allExact.hits.map((h) => [h.score, h.status]),
    );
  });

  test('the catalog builds the per-store structures at its start: its first search page reads no filter row', async () => {
    const ws = Workspace.open(dir);
    // every statement the catalog's store runs, by its SQL
    const ran: string[] = [];
    const stmt = ws.store.stmt.bind(ws.store);
    ws.store.stmt = (sql: string) => {
      ran.push(sql);
      return stmt(sql);
    };
    const filterRows = (sql: string) => /SELECT rowid, id, repo, category, status, params FROM search_docs/.test(sql);
    const srv = await startServer({ ws, port: 0, search: LOW });
    try {
      assert.equal(ran.filter(filterRows).length, 1, 'the filter columns read once, at the start');
      ran.length = 0;
      const html = await (await fetch(new URL('/?q=conv', srv.url))).text();
      assert.match(html, /id="count">more than 50 blocks/);
      assert.equal(ran.filter(filterRows).length, 0, 'the first page read no filter row');
      assert.ok(ran.length > 0);
    } finally {
      await srv.close();
      ws.close();
    }
  });

  test("a one-term word's document frequency: counted unfiltered, it is its count over the fields", () => {
    // search counts a word of one identifier part without column filters (the fields cover
    // every column)
    const fields = ['{exact name}', '{summary}', '{category layers params qualname}', '{identifiers deps}'];
    const overFields = (e: string) => countFts(store, fields.map((f) => `${f} : (${e})`).join(' OR '));
    for (const e of ['"conv"', '"mixes"', '"gated"', '"conv"*', '"projection"', '"proj"']) {
      assert.equal(countFts(store, e), overFields(e), e);
      assert.ok(countFts(store, e) > 0, e);
    }
  });

  test('the catalog says "more than N"', async () => {
    const srv: CatalogServer = await startServer({ storeDir: dir, port: 0, search: LOW });
    try {
      const html = await (await fetch(new URL('/?q=conv', srv.url))).text();
      assert.match(html, /id="count">more than 50 blocks/);
      const small = await (await fetch(new URL('/?q=gate', srv.url))).text();
      assert.match(small, /id="count">1 block ·/);
    } finally {
      await srv.close();
    }
  });
});
