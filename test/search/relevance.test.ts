// Search that finds the obvious (issue 26): on a small validated fixture library
// (test/fixtures/searchlib: a diffusion U-Net's blocks, image filters, object-detection
// parts, a rotary embedding, LayerNorm defined three times, an Upsample that fails
// validation), queries whose words do not all occur in one block still find it (OR
// semantics, related ML words, name coverage), a single block scores > 0, `--json` groups
// same-named blocks with `--limit` counting groups, and a query only a failed block
// matches shows it, marked.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { rmSync } from 'node:fs';
import { IndexStore } from '../../src/store/store.js';
import { getDoc, searchBlocks } from '../../src/search/fts.js';
import { refreshSearch } from '../../src/search/refresh.js';
import { nameCoverage, queryWords, sameStem } from '../../src/search/tokens.js';
import { fixture, repoRoot } from '../helpers.js';
import { needsSandbox } from '../support/tier.js';
import { buildLibraryOf } from './library-fixture.js';

const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
const lib = fixture('searchlib');

describe('query words', () => {
  test('related words of the field expand a word, never a repository name', () => {
    const up = queryWords('upsample')[0];
    assert.match(up.related ?? '', /"interpolate"/);
    assert.match(queryWords('residual')[0].related ?? '', /"resnet"/);
    assert.match(queryWords('edge')[0].related ?? '', /"sobel"/);
    assert.equal(queryWords('zebracorn')[0].related, null);
    // a word typed twice is one word
    assert.equal(queryWords('norm norm').length, 1);
  });

  test('stems and the share of a name a query covers', () => {
    assert.ok(sameStem('upsample', 'upsampling'));
    assert.ok(sameStem('norm', 'normalization'));
    assert.ok(!sameStem('edge', 'sobel'));
    assert.ok(!sameStem('at', 'attention'), 'two letters are not a stem');
    assert.equal(nameCoverage('Residual', ['residual', 'block']), 1);
    assert.equal(nameCoverage('LinearAttention', ['attention']), 0.5);
    // related word (resnet ~ residual) 0.8, the generic part "block" half weight
    assert.ok(Math.abs(nameCoverage('ResnetBlock', ['residual', 'block']) - (0.8 + 0.5) / 1.5) < 1e-9);
    assert.equal(nameCoverage('DexiNed', ['edge', 'detection']), 0);
  });
});

describe('search over the fixture library (validated in the sandbox)', { skip: needsSandbox() }, () => {
  let dir: string;
  let store: IndexStore;
  before(async () => {
    dir = await buildLibraryOf('searchlib', lib);
    store = IndexStore.open(dir);
    refreshSearch(store);
  });
  after(() => store?.close());

  const names = (q: string, opts = {}) => [
    ...new Set(searchBlocks(store, q, { limit: 20, ...opts }).hits.map((h) => h.name)),
  ];

  test('the library is what the fixture says: every block validated but Upsample', () => {
    const all = searchBlocks(store, '', { all: true, limit: 100 }).hits;
    assert.equal(all.length, 16);
    assert.deepEqual(
      all.filter((h) => h.status !== 'validated').map((h) => h.name),
      ['Upsample'],
    );
  });

  test('"residual block" finds Residual and ResnetBlock first', () => {
    const top = names('residual block').slice(0, 2);
    assert.deepEqual(new Set(top), new Set(['Residual', 'ResnetBlock']), names('residual block').join());
    // a block named by a generic word only ("Block") comes after them
    assert.ok(names('residual block').indexOf('Block') > 1);
    assert.deepEqual(names('skip connection').slice(0, 2).sort(), ['ResnetBlock', 'Residual'].sort());
  });

  test('"edge detection" finds Sobel and DexiNed without "detection" being required', () => {
    const r = searchBlocks(store, 'edge detection');
    const top3 = [...new Set(r.hits.map((h) => h.name))].slice(0, 3);
    assert.equal(top3[0], 'Sobel', top3.join());
    assert.ok(top3.includes('DexiNed'), top3.join());
    assert.equal(r.mode, 'any', 'no block has both words in one field: some words only');
    assert.deepEqual(new Set(names('edge').slice(0, 2)), new Set(['Sobel', 'DexiNed']));
  });

  test('a query only a failed block matches shows it, marked; otherwise failed blocks are counted', () => {
    const r = searchBlocks(store, 'upsample');
    assert.equal(r.failedOnly, true);
    assert.deepEqual(
      r.hits.map((h) => [h.name, h.status]),
      [['Upsample', 'failed']],
    );
    assert.equal(searchBlocks(store, 'upsampling').hits[0]?.name, 'Upsample', 'stemmed');
    assert.equal(searchBlocks(store, 'interpolate').hits[0]?.name, 'Upsample', 'a related word');
    const text = execFileSync('node', [bin, 'search', 'upsample', '--store', dir], { encoding: 'utf8' });
    assert.match(text, /only blocks that failed validation match/);
    assert.match(text, /searchlib\.unet\.sampling\.Upsample .* failed/);
    // "convolution" is in Upsample's docstring, and validated blocks match too: it is left
    // out and counted
    const conv = searchBlocks(store, 'convolution');
    assert.equal(conv.failedOnly, false);
    assert.ok(!conv.hits.some((h) => h.status === 'failed'));
    assert.equal(conv.hiddenFailed, 1);
    assert.match(
      execFileSync('node', [bin, 'search', 'convolution', '--store', dir], { encoding: 'utf8' }),
      /1 that failed validation left out: --all shows them/,
    );
    assert.ok(searchBlocks(store, 'convolution', { all: true }).hits.some((h) => h.name === 'Upsample'));
    assert.equal(searchBlocks(store, 'upsample', { validated: true }).total, 0, '--validated stays strict');
  });

  test('--json groups same-named blocks as the text does, and --limit counts groups', () => {
    const out = JSON.parse(
      execFileSync('node', [bin, 'search', 'layer', 'norm', '--limit', '2', '--json', '--store', dir], {
        encoding: 'utf8',
      }),
    );
    assert.equal(out.groups.length, 2);
    assert.equal(out.groups[0].name, 'LayerNorm');
    assert.deepEqual(
      new Set(out.groups[0].ids),
      new Set(['searchlib.common.norm.LayerNorm', 'searchlib.text.norm.LayerNorm', 'searchlib.vision.norm.LayerNorm']),
    );
    assert.equal(out.groups[0].hits.length, 3);
    assert.equal(out.groups[1].name, 'ChanLayerNorm');
    assert.equal(out.hits.length, 4, 'every block of the two groups');
    assert.ok(out.totalGroups >= 2 && out.total >= 4);
    const text = execFileSync('node', [bin, 'search', 'layer', 'norm', '--limit', '2', '--store', dir], {
      encoding: 'utf8',
    });
    assert.match(text, / 1\. searchlib\.\w+\.norm\.LayerNorm/);
    assert.match(text, /also LayerNorm in: /);
    assert.match(text, / 2\. searchlib\.common\.chan\.ChanLayerNorm/);
    assert.doesNotMatch(text, / 3\. /);
  });

  test('categories: RotaryEmbedding and SinusoidalPosEmb are embeddings, Residual and PreNorm wrappers', () => {
    const cat = (n: string) => getDoc(store, n)!.category;
    assert.equal(cat('searchlib.text.rotary.RotaryEmbedding'), 'embedding');
    assert.equal(cat('searchlib.unet.blocks.SinusoidalPosEmb'), 'embedding');
    assert.equal(cat('searchlib.unet.blocks.Residual'), 'wrapper');
    assert.equal(cat('searchlib.unet.blocks.PreNorm'), 'wrapper');
    assert.equal(cat('searchlib.unet.blocks.ResnetBlock'), 'convolution');
    assert.deepEqual(names('', { category: 'embedding' }).sort(), ['RotaryEmbedding', 'SinusoidalPosEmb']);
  });
});

describe('a store with one block', { skip: needsSandbox() }, () => {
  let dir: string;
  before(async () => {
    dir = await buildLibraryOf('searchlib', lib, { only: ['RotaryEmbedding'] });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('its score says how well it matches, not 0.00', () => {
    const out = JSON.parse(
      execFileSync('node', [bin, 'search', 'rotary', 'embedding', '--json', '--store', dir], { encoding: 'utf8' }),
    );
    assert.equal(out.hits.length, 1);
    assert.equal(out.hits[0].score, 1, 'the query names the block');
    const partial = JSON.parse(
      execFileSync('node', [bin, 'search', 'rotary', '--json', '--store', dir], { encoding: 'utf8' }),
    ).hits[0].score;
    assert.ok(partial > 0.5 && partial < 1, String(partial));
    const text = execFileSync('node', [bin, 'search', 'rotary', '--store', dir], { encoding: 'utf8' });
    assert.doesNotMatch(text, /score 0\.00/);
    assert.match(text, /score 0\.\d[1-9]|score 0\.[1-9]/);
  });
});
