// Search: identifier splitting, injection-safe query parsing, BM25 ranking and filters on
// the validated example library, incremental sync, and the `nnrag search` command.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import { getExtraction, putExtraction, textHash } from '../../src/store/records.js';
import { expandText, identifierParts, parseQuery } from '../../src/search/tokens.js';
import { getDoc, searchBlocks, syncSearchIndex, resolveLibraryId } from '../../src/search/fts.js';
import { UsageError } from '../../src/util/errors.js';
import * as api from '../../src/nnrag.js';
import { buildLibrary, getSpec } from '../../src/library/library.js';
import { firstSentence } from '../../src/search/documents.js';
import { parseParams } from '../../src/parse/params.js';
import { initParser } from '../../src/parse/parser.js';
import { repoRoot } from '../helpers.js';
import { needsSandbox } from '../support/tier.js';
import { buildExampleLibrary } from './library-fixture.js';

const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');

describe('tokens', () => {
  test('identifiers split at camelCase, acronyms, underscores and digits', () => {
    assert.deepEqual(identifierParts('WindowAttention'), ['window', 'attention']);
    assert.deepEqual(identifierParts('MHSAttention'), ['mhs', 'attention']);
    assert.deepEqual(identifierParts('HTTPServer'), ['http', 'server']);
    assert.deepEqual(identifierParts('qkv_bias'), ['qkv', 'bias']);
    assert.deepEqual(identifierParts('Conv2d'), ['conv', '2d']);
    assert.deepEqual(identifierParts('__init__'), ['init']);
    assert.deepEqual(identifierParts('ResNet50'), ['res', 'net', '50']);
  });

  test('documents carry the parts and the joined word', () => {
    assert.equal(expandText('WindowAttention'), 'window attention windowattention');
    assert.equal(expandText('nn.Conv2d(x)'), 'nn conv 2d conv2d x');
  });

  test('every query term is a quoted FTS5 string', () => {
    const q = parseQuery('window attention');
    assert.equal(q.all, '"window" AND "attention"*');
    assert.equal(q.any, '"window" OR "attention"*');
    assert.equal(parseQuery('WindowAttention').all, '("windowattention"* OR ("window" AND "attention"*))');
    assert.equal(
      parseQuery('window attention', { isWord: (t) => t === 'attention' }).all,
      '"window" AND "attention"',
      'a whole indexed word is not a prefix',
    );
    assert.equal(parseQuery('  ').all, null);
    assert.equal(parseQuery('"()*:^').all, null);
    // FTS5 operators and column filters in the input are plain words
    assert.equal(parseQuery('name:mlp OR NEAR').all, '"name" AND "mlp" AND "or" AND "near"*');
  });

  test('parameter names (read as the binder reads them) and first sentences', async () => {
    await initParser();
    const names = parseParams('(self, dim=32, num_heads: int = 4, *args, act=partial(f, a=1), **kw)', {
      dropFirst: true,
    }).map((p) => p.name);
    assert.deepEqual(names, ['dim', 'num_heads', 'args', 'act', 'kw']);
    assert.equal(
      firstSentence('Local window attention: tokens attend. More.\n\nDetails.'),
      'Local window attention: tokens attend.',
    );
  });
});

describe('search over the example library', { skip: needsSandbox() }, () => {
  let dir: string;
  let store: IndexStore;
  before(async () => {
    dir = await buildExampleLibrary();
    store = IndexStore.open(dir);
    const r = syncSearchIndex(store);
    assert.equal(r.added, 13);
  });

  const ids = (q: string, f = {}) => searchBlocks(store, q, f).hits.map((h) => h.id);

  test('"window attention" finds the window-attention block first', () => {
    const hits = ids('window attention');
    assert.equal(hits[0], 'tinyvision.layers.attention.WindowAttention');
    assert.equal(ids('WindowAttention')[0], 'tinyvision.layers.attention.WindowAttention');
    assert.equal(ids('window att')[0], 'tinyvision.layers.attention.WindowAttention', 'prefix of the last word');
  });

  test('names rank above mentions', () => {
    const mlp = ids('mlp');
    assert.deepEqual(new Set(mlp.slice(0, 2)), new Set(['tinyvision.layers.mlp.Mlp', 'tinyvision.models.mixer.Mlp']));
    assert.equal(ids('bottleneck')[0], 'tinyvision.models.resnet.Bottleneck');
    assert.equal(ids('conv bn act')[0], 'tinyvision.layers.conv.ConvBnAct');
    assert.equal(ids('hard sigmoid')[0], 'tinyvision.layers.activations.HardSigmoid');
  });

  test('words match their other forms (Porter stemming) and identifier parts', () => {
    // "attentions", "bottlenecks", "activation" of ConvBnAct's `act`: stems, not spellings
    assert.equal(ids('window attentions')[0], 'tinyvision.layers.attention.WindowAttention');
    assert.equal(ids('bottlenecks')[0], 'tinyvision.models.resnet.Bottleneck');
    assert.equal(ids('hard sigmoids')[0], 'tinyvision.layers.activations.HardSigmoid');
    assert.equal(searchBlocks(store, 'window attentions').mode, 'all', 'every word matched, not the any-word fallback');
  });

  test('docstrings, layers and categories are searchable', () => {
    // "identity" appears only in ResBottleneck's docstring
    assert.equal(ids('starts as the identity')[0], 'tinyvision.models.variants.ResBottleneck');
    // BatchNorm2d is a layer of the convolution blocks only
    const bn = ids('batchnorm2d');
    assert.ok(bn.length >= 3 && bn.includes('tinyvision.layers.conv.ConvBnAct'), bn.join());
    assert.ok(!bn.includes('tinyvision.layers.mlp.Mlp'));
  });

  test('a query whose words do not all match falls back to any word', () => {
    const r = searchBlocks(store, 'window zzzunknownzzz');
    assert.equal(r.mode, 'any');
    assert.equal(r.hits[0].id, 'tinyvision.layers.attention.WindowAttention');
    assert.equal(searchBlocks(store, 'zzzunknownzzz').total, 0);
  });

  test('filters: category, validated, parameter range, repo', () => {
    const conv = searchBlocks(store, '', { category: 'convolution' }).hits;
    assert.ok(conv.length >= 3);
    assert.ok(conv.every((h) => h.category === 'convolution'));
    const all = searchBlocks(store, '', { limit: 100, all: true });
    assert.equal(all.total, 13);
    const failed = all.hits.filter((h) => h.status !== 'validated').map((h) => h.id);
    assert.deepEqual(failed, ['tinyvision.models.wrappers.FeatureTap'], 'FeatureTap needs a real backbone');
    assert.equal(searchBlocks(store, '', { limit: 100 }).total, 12, 'failed blocks are left out unless asked for');
    const validated = searchBlocks(store, 'feature', { validated: true }).hits.map((h) => h.id);
    assert.ok(!validated.includes('tinyvision.models.wrappers.FeatureTap'));
    assert.ok(!searchBlocks(store, 'feature').hits.some((h) => h.id === 'tinyvision.models.wrappers.FeatureTap'));
    assert.ok(
      searchBlocks(store, 'feature', { all: true }).hits.some((h) => h.id === 'tinyvision.models.wrappers.FeatureTap'),
    );
    const wa = all.hits.find((h) => h.id.endsWith('.WindowAttention'))!;
    assert.ok(wa.params! > 0);
    const range = searchBlocks(store, 'attention', { minParams: wa.params!, maxParams: wa.params! }).hits;
    assert.ok(range.every((h) => h.params === wa.params));
    assert.ok(range.some((h) => h.id === wa.id));
    assert.ok(
      !searchBlocks(store, 'attention', { minParams: wa.params! + 1, maxParams: wa.params! + 1 }).hits.some(
        (h) => h.id === wa.id,
      ),
    );
    assert.equal(searchBlocks(store, 'attention', { repo: 'nope' }).total, 0);
    assert.ok(searchBlocks(store, 'attention', { repo: 'examples' }).total > 0);
  });

  test('FTS5 syntax in queries is never interpreted', () => {
    for (const q of [
      '"',
      'mlp OR',
      'NEAR(a b)',
      '*',
      'name:mlp',
      'a AND',
      '-x',
      '^mlp',
      ')(',
      "'; DROP TABLE search_docs; --",
      'ünïcödé',
      '{name}: mlp',
      'mlp"*',
    ]) {
      assert.doesNotThrow(() => searchBlocks(store, q), q);
    }
    // a column filter in the input is two words, not a filter on the name column
    const colon = searchBlocks(store, 'name:mlp');
    assert.deepEqual(
      colon.hits.map((h) => h.id),
      searchBlocks(store, 'name mlp').hits.map((h) => h.id),
    );
    assert.equal(searchBlocks(store, '', { all: true }).total, 13, 'table intact');
  });

  test('incremental sync rebuilds only changed rows and drops removed ones', () => {
    assert.deepEqual({ ...syncSearchIndex(store), ms: 0 }, { added: 0, updated: 0, removed: 0, unchanged: 13, ms: 0 });
    const e = getExtraction(store, 'tinyvision.layers.mlp.Mlp')!;
    const text = e.text
      .replace('class Mlp(', '# zebracorn marker\nclass Mlp(')
      .replace('"""Linear', '"""Zebracorn linear');
    putExtraction(store, { ...e, text, hash: textHash(text) });
    const r = syncSearchIndex(store);
    assert.equal(r.updated, 1);
    assert.equal(r.unchanged, 12);
    assert.deepEqual(ids('zebracorn'), ['tinyvision.layers.mlp.Mlp']);
    store.write(() => store.stmt('DELETE FROM extractions WHERE id = ?').run('tinyvision.layers.mlp.Mlp'));
    assert.equal(syncSearchIndex(store).removed, 1);
    assert.deepEqual(ids('zebracorn'), []);
    putExtraction(store, e);
    assert.equal(syncSearchIndex(store).added, 1);
  });

  test('stored specs (nnrag library) replace the derived documents', async () => {
    const ws = api.Workspace.open(dir);
    try {
      await buildLibrary(ws);
      const r = syncSearchIndex(ws.store);
      assert.equal(r.updated, 13);
      const doc = getDoc(ws.store, 'tinyvision.layers.attention.WindowAttention')!;
      assert.equal(doc.source, 'spec');
      assert.deepEqual(doc.layers, getSpec(ws.store, doc.id)!.layers, 'layers counted in the instantiated block');
      assert.equal(searchBlocks(ws.store, 'window attention').hits[0].id, doc.id);
      assert.equal(syncSearchIndex(ws.store).unchanged, 13);
    } finally {
      ws.close();
    }
  });

  test('bare names resolve to library ids', () => {
    assert.equal(resolveLibraryId(store, 'WindowAttention'), 'tinyvision.layers.attention.WindowAttention');
    assert.throws(() => resolveLibraryId(store, 'NoSuchBlock'), /no library block/);
    // the same rules as extract: a mistyped name gets the nearest ones, an ambiguous one
    // is a usage error that lists the candidates (no silent pick)
    assert.throws(() => resolveLibraryId(store, 'WindowAtention'), /did you mean WindowAttention\?/);
    assert.throws(
      () => resolveLibraryId(store, 'Mlp'),
      (e: unknown) =>
        e instanceof UsageError &&
        /tinyvision\.layers\.mlp\.Mlp/.test(e.message) &&
        /tinyvision\.models\.mixer\.Mlp/.test(e.message),
    );
    assert.equal(resolveLibraryId(store, 'mixer.Mlp'), 'tinyvision.models.mixer.Mlp');
    assert.equal(resolveLibraryId(store, 'examples:layers.mlp.Mlp'), 'tinyvision.layers.mlp.Mlp');
  });

  test('nnrag search: human and --json output, exit codes', () => {
    const out = JSON.parse(
      execFileSync('node', [bin, 'search', 'window', 'attention', '--store', dir, '--json'], { encoding: 'utf8' }),
    );
    assert.equal(out.hits[0].id, 'tinyvision.layers.attention.WindowAttention');
    assert.equal(out.hits[0].status, 'validated');
    assert.equal(out.hits[0].origin.path, 'tinyvision/layers/attention.py');
    assert.ok(out.hits[0].score > 0);
    const human = execFileSync('node', [bin, 'search', 'mlp', '--category', 'utility', '--validated', '--store', dir], {
      encoding: 'utf8',
    });
    assert.match(human, /Mlp/);
    const bad = spawnSync('node', [bin, 'search', 'x', '--min-params', 'lots', '--store', dir], { encoding: 'utf8' });
    assert.equal(bad.status, 2, bad.stderr);
    const empty = spawnSync('node', [bin, 'search', '--store', dir], { encoding: 'utf8' });
    assert.equal(empty.status, 2, 'no query and no filter is a usage error');
    const nowhere = spawnSync('node', [bin, 'search', 'mlp', '--repo', 'nosuchrepo', '--store', dir], {
      encoding: 'utf8',
    });
    assert.equal(nowhere.status, 2);
    assert.match(nowhere.stderr, /nosuchrepo.*repositories: examples/);
    // blocks sharing a name are one entry; failed blocks only with --all
    const grouped = JSON.parse(
      execFileSync('node', [bin, 'search', 'mlp', '--store', dir, '--json'], { encoding: 'utf8' }),
    );
    const mlp = grouped.groups.find((g: { name: string }) => g.name === 'Mlp');
    assert.deepEqual(new Set(mlp.ids), new Set(['tinyvision.layers.mlp.Mlp', 'tinyvision.models.mixer.Mlp']));
    assert.match(
      execFileSync('node', [bin, 'search', 'mlp', '--store', dir], { encoding: 'utf8' }),
      /also Mlp in: tinyvision\.(layers\.mlp|models\.mixer)\.Mlp/,
    );
    const tap = (args: string[]) =>
      JSON.parse(
        execFileSync('node', [bin, 'search', 'feature', 'tap', ...args, '--store', dir, '--json'], {
          encoding: 'utf8',
        }),
      ).hits.map((h: { id: string }) => h.id);
    assert.ok(!tap([]).includes('tinyvision.models.wrappers.FeatureTap'));
    assert.ok(tap(['--all']).includes('tinyvision.models.wrappers.FeatureTap'));
  });
});
