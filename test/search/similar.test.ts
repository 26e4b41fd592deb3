// `similar`: nearest blocks by the de-duplication signatures (lexical and structural
// MinHash, exact Jaccard for the finalists), on the example library (emitted, not
// validated: similarity reads module text only) plus planted copies.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import { deleteExtraction, getExtraction, listExtractions, putExtraction, textHash } from '../../src/store/records.js';
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
    // the scan scores every block, unrelated ones too: the related ones stand out (the band
    // index lists only blocks sharing a band: the related ones)
    const all = similarBlocks(store, WA, 5, { scan: true });
    assert.deepEqual(
      all.slice(0, 2).map((h) => h.id),
      hits.slice(0, 2).map((h) => h.id),
    );
    assert.ok(all[0].score > all[all.length - 1].score + 0.2, 'related blocks stand out from unrelated ones');
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

// The band index against the scan of every signature: on a library of near-duplicate
// families (each example block with renamed and edited copies, as libraries copy code), a
// block whose best candidates share a band with it gets the scan's answer; the index only
// ever leaves out blocks, never adds or reorders them.
describe('similar blocks from the band index', () => {
  let dir: string;
  let store: IndexStore;
  const ids: string[] = [];
  before(async () => {
    dir = await buildExampleLibrary({ validate: false });
    store = IndexStore.open(dir);
    const originals = listExtractions(store).filter((e) => e.text);
    originals.forEach((e, n) => {
      const classes = [...new Set([...e.text.matchAll(/^class\s+([A-Za-z_]\w*)/gm)].map((m) => m[1]))];
      for (let c = 1; c <= 4; c++) {
        let text = e.text;
        for (const name of classes) text = text.replace(new RegExp(`\\b${name}\\b`, 'g'), `${name}V${c}`);
        // edits: an integer changed, a statement added, a comment added (copy 1 only renamed)
        if (c === 2) text = text.replace(/\b(\d+)\b/, (m) => String(Number(m) * 2 + 1));
        if (c === 3) text = text.replace(/\n(\s+)return /, (m, ind: string) => `\n${ind}_ = None${m}`);
        if (c === 4) text = `# vendored copy ${n}\n${text}`;
        const id = `copies${c}.${e.id}`;
        putExtraction(store, { ...e, id, text, hash: textHash(text) });
      }
    });
    refreshSearch(store);
    ids.push(...listExtractions(store).map((e) => e.id));
  });

  test('same answers as the scan for blocks whose candidates share a band', () => {
    let same = 0;
    for (const id of ids) {
      const fromIndex = similarBlocks(store, id, 8);
      const fromScan = similarBlocks(store, id, 8, { scan: true });
      assert.ok(fromScan.length === 8, `${id}: the scan fills the panel`);
      if (JSON.stringify(fromIndex) === JSON.stringify(fromScan)) same++;
      // where they differ, the index left out blocks of low similarity that share no band
      // (the scan lists unrelated blocks at 0.1–0.25 to fill the panel): every block of
      // similarity ≥ 0.5 is listed by both, with the same figures, in the same order
      const strong = (hs: typeof fromScan) => hs.filter((h) => h.score >= 0.5);
      assert.deepEqual(strong(fromIndex), strong(fromScan), id);
      assert.ok(strong(fromScan).length >= 4, `${id}: its four copies (or original and copies) are found`);
      // what the index lists is scored as the scan scores it
      for (const h of fromIndex) {
        const s = fromScan.find((x) => x.id === h.id);
        if (s) assert.deepEqual(h, s);
      }
    }
    // most blocks' panels are identical (measured: 45 of the 65)
    assert.ok(same >= ids.length / 2, `${same} of ${ids.length} identical`);
  });

  test('the band keys follow changed and removed signatures', () => {
    const id = 'copies1.tinyvision.models.mixer.LinearHead';
    const before = similarBlocks(store, id, 8);
    assert.ok(before.some((h) => h.id === 'copies2.tinyvision.models.mixer.LinearHead'));
    // a copy changed into another block's text: it leaves this family and joins that one
    const other = getExtraction(store, 'tinyvision.models.wrappers.FeatureTap')!;
    const e = getExtraction(store, 'copies2.tinyvision.models.mixer.LinearHead')!;
    putExtraction(store, { ...e, text: other.text, hash: other.hash });
    refreshSearch(store);
    assert.ok(!similarBlocks(store, id, 8).some((h) => h.id === e.id));
    const joined = similarBlocks(store, other.id, 8).find((h) => h.id === e.id);
    assert.equal(joined?.duplicate, 'exact');
    // a removed block leaves no band key behind: no panel lists it, and the table holds
    // the keys of the stored signatures only (64 per valid signature)
    deleteExtraction(store, e.id);
    refreshSearch(store);
    assert.ok(!similarBlocks(store, other.id, 8).some((h) => h.id === e.id));
    const sigs = store.db.prepare('SELECT count(*) FROM search_sigs WHERE near IS NOT NULL').pluck().get() as number;
    const keys = store.db.prepare('SELECT count(*) FROM search_bands').pluck().get() as number;
    assert.equal(keys, sigs * 64);
  });
});
