// Stored de-duplication signatures (src/store/dedup-sigs.ts, written beside each extraction):
// `nnrag dedup` from the stored signatures gives byte-identical clusters to dedup from the
// module texts; a stale, corrupt or missing signature is recomputed (and stored again),
// never used; a changed module gets a row of its own; a merge takes a shard's signatures and
// computes those a shard lacks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { IndexStore } from '../../src/store/store.js';
import { deleteExtraction, putExtraction, textHash, type ExtractionWrite } from '../../src/store/records.js';
import {
  eachDedupSignature,
  putDedupSignatures,
  pruneDedupSignatures,
  storedDedupSignatures,
} from '../../src/store/dedup-sigs.js';
import { mergeShardRows, type ShardMark } from '../../src/store/merge.js';
import { clusterOf, putDedup } from '../../src/store/specs.js';
import { emptyRecord } from '../../src/records/block.js';
import {
  computeSignature,
  dedup,
  dedupSignatureRow,
  encodeSignatures,
  SIGNATURE_VERSION,
  storedMinHash,
} from '../../src/library/dedup.js';
import { runDedup, storeMissingSignatures, type StoredDedup } from '../../src/library/library.js';
import { generateBlocks } from '../../bench/dedup.js';
import { chooseBands } from '../../src/util/minhash.js';
import { MINHASH_K, STORED_NEAR_BANDS, STORED_STRUCT_BANDS } from '../../src/store/dedup-layout.js';
import { tempDir } from '../helpers.js';

interface Block {
  id: string;
  repo: string;
  text: string;
  /** the validation's parse stage (undefined: not validated, dedup checks the syntax) */
  parse?: 'pass' | 'fail';
}

/** Copies of generated blocks (exact, near, structural duplicates and near-misses) and the
 *  edge cases: a lexical error, a module that is only a docstring, a syntax error the
 *  tokenizer does not see (copied, so that it would join a cluster), a module twice under
 *  two ids, a block whose validation failed to parse it. */
function library(n: number, seed: number): Block[] {
  const { blocks } = generateBlocks(n, seed);
  const out: Block[] = blocks.map((b, i) => ({
    id: `${b.repo}.${b.id.replace(/[^\w.]/g, '_')}`,
    repo: b.repo,
    text: b.text,
    parse: i % 3 === 0 ? undefined : 'pass',
  }));
  const bad = 'class Broken(nn.Module):\n    def forward(self x):\n        return x\n';
  out.push(
    { id: 'edge.lexical.A', repo: 'edge', text: 'x = (1,\n' },
    { id: 'edge.docstring.A', repo: 'edge', text: '"""\n  only a docstring\n"""\n' },
    { id: 'edge.syntax.A', repo: 'edge', text: bad },
    { id: 'edge.syntax.B', repo: 'edge', text: `# a copy\n${bad}` },
    { id: 'edge.twice.A', repo: 'edge', text: blocks[0].text },
    { id: 'edge.twice.B', repo: 'other', text: blocks[0].text },
    { id: 'edge.failed.A', repo: 'edge', text: blocks[1].text, parse: 'fail' },
  );
  return out;
}

function extraction(b: Block, signature = true): ExtractionWrite {
  const record = emptyRecord(b.id, b.repo);
  record.provenance = [{ repo: b.repo, revision: null, url: null, path: 'x.py', module: 'x', swhid: '', ranges: [] }];
  if (b.parse)
    record.validation = {
      stages: {
        parse: b.parse,
        compile: 'pass',
        import: 'pass',
        namespace: 'skip',
        instantiate: 'pass',
        forward: 'pass',
        equivalence: 'skip',
      },
      category: null,
      error: null,
      args: null,
      input_shapes: null,
      output_shapes: null,
      params: 0,
      envId: 'test',
    };
  return {
    id: b.id,
    hash: textHash(b.text),
    ok: true,
    status: 'validated',
    lines: b.text.split('\n').length,
    record,
    text: b.text,
    ...(signature ? { signature: dedupSignatureRow(b.text) } : {}),
  };
}

function storeOf(blocks: Block[], signature = true): IndexStore {
  const store = IndexStore.open(path.join(tempDir(), 'store'));
  store.write(() => {
    for (const b of blocks) putExtraction(store, extraction(b, signature));
  });
  return store;
}

/** What a dedup run stored, without what differs between two runs (time, timings, counts
 *  of stored and computed signatures). */
const result = (d: StoredDedup) =>
  JSON.stringify({
    ...d,
    at: undefined,
    timings: undefined,
    cpu: undefined,
    signatures: undefined,
    prunedSignatures: undefined,
  });

/** The two results are the same text; else fail showing where they part (not both texts). */
function same(a: string, b: string): void {
  if (a === b) return;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  assert.fail(
    `results differ at ${i}: …${a.slice(Math.max(0, i - 150), i + 150)}… against …${b.slice(Math.max(0, i - 150), i + 150)}…`,
  );
}

test('dedup from the stored signatures gives the clusters dedup from the texts gives, byte for byte', async () => {
  const blocks = library(2600, 17);
  const store = storeOf(blocks);
  try {
    const hashes = new Set(blocks.map((b) => textHash(b.text)));
    assert.equal(storedDedupSignatures(store, SIGNATURE_VERSION).size, hashes.size);
    // threads: 2 computes on the signature threads (at least 2000 to compute)
    const fromTexts = await runDedup({ store }, { threads: 2, storedSignatures: false });
    const fromStore = await runDedup({ store }, { threads: 2 });
    assert.deepEqual(fromTexts.signatures, { stored: 0, computed: blocks.length });
    assert.deepEqual(fromStore.signatures, { stored: blocks.length, computed: 0 });
    same(result(fromStore), result(fromTexts));
    // and dedup() handed the texts directly, in the store's order (by id), agrees
    const sorted = [...blocks].sort((a, b) => (a.id < b.id ? -1 : 1));
    const direct = await dedup(
      sorted.map((b) => ({
        id: b.id,
        repo: b.repo,
        text: b.text,
        parseable: b.parse === 'pass' ? true : b.parse === 'fail' ? false : undefined,
      })),
      { threads: 0 },
    );
    assert.equal(JSON.stringify(direct.clusters), JSON.stringify(fromStore.clusters));
    assert.deepEqual(direct.excluded, fromStore.excluded);
    // the cases that make the check meaningful: every kind of cluster, the exclusions
    const kinds = new Set(fromStore.clusters.map((c) => c.kind));
    assert.deepEqual([...kinds].sort(), ['exact', 'near', 'structural']);
    const why = new Map(fromStore.excluded.map((e) => [e.id, e.reason]));
    assert.match(why.get('edge.lexical.A') ?? '', /^unparseable: /);
    assert.equal(why.get('edge.docstring.A'), 'empty');
    assert.match(why.get('edge.syntax.A') ?? '', /syntax error/);
    assert.equal(why.get('edge.failed.A'), 'unparseable');
    assert.ok(fromStore.clusters.some((c) => c.members.includes('edge.twice.A') && c.members.includes('edge.twice.B')));
    // the member rows runDedup wrote from the blocks in id order are those putDedup lists
    // from the clusters: every member of the k-th cluster, and no other block
    const rows = store.db.prepare('SELECT block, cluster FROM dedup_members ORDER BY block').raw().all();
    const want = fromStore.clusters
      .flatMap((c, k) => c.members.map((m) => [m, k + 1] as [string, number]))
      .sort((a, b) => (a[0] < b[0] ? -1 : 1));
    assert.ok(want.length > 1000);
    assert.deepEqual(rows, want);
  } finally {
    store.close();
  }
});

test('a stale, corrupt or missing stored signature is recomputed and stored again, never used', async () => {
  const blocks = library(400, 5);
  const store = storeOf(blocks);
  try {
    const reference = await runDedup({ store }, { threads: 0, storedSignatures: false });
    const hashOf = (i: number) => textHash(blocks[i].text);
    const rows = new Map<string, { error: string | null; data: Uint8Array }>();
    eachDedupSignature(store, SIGNATURE_VERSION, new Set(blocks.map((b) => textHash(b.text))), (h, error, data) =>
      rows.set(h, { error, data: Uint8Array.from(data) }),
    );
    const spoil = (i: number, f: (d: Uint8Array) => Uint8Array, version = SIGNATURE_VERSION, error?: string | null) => {
      const r = rows.get(hashOf(i))!;
      putDedupSignatures(store, [
        { hash: hashOf(i), version, error: error === undefined ? r.error : error, data: f(r.data) },
      ]);
    };
    const word = (d: Uint8Array, w: number, v: number) => {
      const c = Uint8Array.from(d);
      new DataView(c.buffer).setUint32(w * 4, v, true);
      return c;
    };
    spoil(3, (d) => d, SIGNATURE_VERSION - 1); // another signature version
    spoil(4, (d) => d.subarray(0, d.length - 4)); // truncated
    spoil(5, (d) => word(d, 4, 0x12345678)); // another layout (or byte order)
    spoil(6, (d) => word(d, 5, SIGNATURE_VERSION + 1)); // version in the bytes differs from the row's
    spoil(7, (d) => word(d, 9, new DataView(d.buffer, d.byteOffset).getUint32(36, true) + 1)); // set sizes disagree
    spoil(8, (d) => word(d, 6, 7)); // flags out of range
    spoil(blocks.length - 7, (d) => d, SIGNATURE_VERSION, null); // a lexical error without its message
    // a module extracted without a signature (an older nnrag)
    const missing: Block = { id: 'late.A', repo: 'late', text: `${blocks[2].text}\n# late\n`, parse: 'pass' };
    putExtraction(store, extraction(missing, false));
    const spoiled = 8;
    const all = [...blocks, missing];
    const withStale = await runDedup({ store }, { threads: 0 });
    assert.deepEqual(withStale.signatures, { stored: all.length - spoiled, computed: spoiled });
    const withMissing = await runDedup({ store }, { threads: 0, storedSignatures: false });
    same(result(withStale), result(withMissing));
    // the late block joins its source's cluster: the reference and this run differ by it only
    assert.ok(withStale.clusters.some((c) => c.members.includes('late.A')));
    assert.equal(withStale.total, reference.total + 1);
    // the recomputed signatures were stored: the next run computes none
    const again = await runDedup({ store }, { threads: 0 });
    assert.deepEqual(again.signatures, { stored: all.length, computed: 0 });
    same(result(again), result(withStale));
  } finally {
    store.close();
  }
});

test('a changed module gets its own signature; the others stay; dedup drops the unused', async () => {
  const blocks = library(300, 9);
  const store = storeOf(blocks);
  try {
    const before = storedDedupSignatures(store, SIGNATURE_VERSION);
    const first = await runDedup({ store }, { threads: 0 });
    assert.equal(first.prunedSignatures, 0);
    // blocks[10] extracted again with another module; blocks[20] deleted; a row of an older
    // signature version of a content no block has (left by an older nnrag)
    const changed = { ...blocks[10], text: blocks[10].text.replace(/\b(\d+)\b/, (m) => String(Number(m) + 1)) };
    assert.notEqual(changed.text, blocks[10].text);
    putExtraction(store, extraction(changed));
    deleteExtraction(store, blocks[20].id);
    const gone = [textHash(blocks[10].text), textHash(blocks[20].text)];
    // (neither module is another block's too)
    for (const [k, b] of blocks.entries()) if (k !== 10 && k !== 20) assert.ok(!gone.includes(textHash(b.text)), b.id);
    const old = { hash: textHash('class Old(nn.Module):\n    pass\n'), version: SIGNATURE_VERSION - 1 };
    putDedupSignatures(store, [{ ...old, error: null, data: new Uint8Array(8) }]);
    const after = storedDedupSignatures(store, SIGNATURE_VERSION);
    assert.equal(after.size, before.size + 1);
    assert.ok(after.has(textHash(changed.text)));
    const d = await runDedup({ store }, { threads: 0 });
    assert.equal(d.signatures?.computed, 0);
    // the two contents no block has any more and the older version's row went
    assert.equal(d.prunedSignatures, 3);
    const kept = storedDedupSignatures(store, SIGNATURE_VERSION);
    assert.equal(kept.size, before.size - 1);
    for (const h of gone) assert.ok(!kept.has(h));
    assert.ok(kept.has(textHash(changed.text)));
    assert.equal(storedDedupSignatures(store, old.version).size, 0);
    // the clusters are those of the texts; the next run finds nothing to drop
    const fromTexts = await runDedup({ store }, { threads: 0, storedSignatures: false });
    same(result(d), result(fromTexts));
    const again = await runDedup({ store }, { threads: 0 });
    assert.equal(again.prunedSignatures, 0);
    assert.deepEqual(again.signatures, { stored: blocks.length - 1, computed: 0 });
    assert.equal(pruneDedupSignatures(store, SIGNATURE_VERSION), 0);
    // the whole check (no list of hashes) finds an unused row too, and keeps the others
    putDedupSignatures(store, [{ ...old, version: SIGNATURE_VERSION, error: null, data: new Uint8Array(8) }]);
    assert.equal(pruneDedupSignatures(store, SIGNATURE_VERSION), 1);
    assert.equal(storedDedupSignatures(store, SIGNATURE_VERSION).size, kept.size);
  } finally {
    store.close();
  }
});

test('signatures missing from a store are computed once (storeMissingSignatures)', async () => {
  const blocks = library(200, 2);
  const store = storeOf(blocks, false);
  try {
    const distinct = new Set(blocks.map((b) => textHash(b.text))).size;
    assert.equal(storedDedupSignatures(store, SIGNATURE_VERSION).size, 0);
    assert.equal(storeMissingSignatures(store), distinct);
    assert.equal(storeMissingSignatures(store), 0);
    const d = await runDedup({ store }, { threads: 0 });
    assert.deepEqual(d.signatures, { stored: blocks.length, computed: 0 });
    // what was stored is what extraction stores
    const want = new Map(blocks.map((b) => [textHash(b.text), encodeSignatures([b.text])[0]]));
    let n = 0;
    eachDedupSignature(store, SIGNATURE_VERSION, new Set(want.keys()), (h, error, data) => {
      assert.equal(error, want.get(h)!.error);
      assert.deepEqual(Uint8Array.from(data), Uint8Array.from(want.get(h)!.data));
      n++;
    });
    assert.equal(n, distinct);
  } finally {
    store.close();
  }
});

test("a merge takes the owner's signatures from its shard", () => {
  const blocks = library(100, 4).filter((b) => !b.id.startsWith('edge.'));
  const owner = blocks[0].repo;
  const mine = blocks.filter((b) => b.repo === owner);
  assert.ok(mine.length > 5);
  const shard = storeOf(blocks);
  const target = IndexStore.open(path.join(tempDir(), 'merged'));
  try {
    shard.replaceBlocks(
      owner,
      mine.map((b, i) => ({ id: b.id, name: 'A', module: 'x', repo: owner, path: 'x.py', line: i + 1, bases: [] })),
    );
    const file = path.join(shard.dir, 'index.sqlite');
    const mark: ShardMark = {
      repo: owner,
      universe: [owner],
      blocks: mine.length,
      finished: '',
      timings: {},
      validate: false,
    };
    const rows = mergeShardRows(target, file, mark, (_id, _s, record) => record);
    const distinct = new Set(mine.map((b) => textHash(b.text)));
    assert.equal(rows.signatures, distinct.size);
    assert.deepEqual(storedDedupSignatures(target, SIGNATURE_VERSION), distinct);
    // merging again changes nothing
    assert.equal(mergeShardRows(target, file, mark, (_id, _s, record) => record).signatures, 0);
  } finally {
    shard.close();
    target.close();
  }
});

test("`similar`'s MinHash signatures read from a stored signature equal those computed from the text", () => {
  const blocks = library(60, 8);
  let valid = 0;
  for (const b of blocks) {
    const row = dedupSignatureRow(b.text);
    const got = storedMinHash(row.data, row.error);
    const want = computeSignature(b.text);
    assert.deepEqual(got, {
      ints: want.ints,
      tokens: want.tokens,
      nearSig: want.nearSig,
      structuralSig: want.structuralSig,
    });
    if (want.nearSig) valid++;
  }
  // all but the lexical error and the docstring-only module
  assert.equal(valid, blocks.length - 2);
  // not a signature of this layout: null (the caller computes it)
  const row = dedupSignatureRow(blocks[0].text);
  assert.equal(storedMinHash(row.data.subarray(0, 40), row.error), null);
});

test('the clusters stored: members written many rows a statement, each with its cluster, a later cluster winning', () => {
  // 700 members (two full statements of rows and a remainder written one row a statement),
  // one block listed in two clusters: it keeps the later one, as one row a statement did
  const store = IndexStore.open(path.join(tempDir('nnrag-dedup-members-'), 'store'));
  try {
    const ids = Array.from({ length: 700 }, (_, i) => `r.m${String(i).padStart(4, '0')}`);
    const clusters = [0, 1, 2].map((c) => ({
      kind: 'near' as const,
      representative: ids[c * 233],
      members: ids.slice(c * 233, c === 2 ? 700 : (c + 1) * 233),
    }));
    clusters[2].members.push(ids[5]);
    putDedup(store, clusters, { total: 700 });
    assert.equal(store.db.prepare('SELECT count(*) FROM dedup_members').pluck().get(), 700);
    for (const [i, id] of ids.entries()) {
      const want = i === 5 ? 2 : Math.min(2, Math.floor(i / 233));
      assert.equal(clusterOf(store, id)!.representative, clusters[want].representative, id);
    }
    assert.equal(clusterOf(store, 'r.none'), null);
  } finally {
    store.close();
  }
});

/** A module's signature row in the layout before migration 15 (store/dedup-layout.ts,
 *  'NSG1'): the header, each set's 64 range counts (u16, by the top 6 bits of a value), the
 *  two MinHash signatures, the two sets as words. The set keys (words 0-3) are the same in
 *  both layouts; the rest from the signature computed from the text. */
function layout1Row(text: string): { error: string | null; data: Uint8Array } {
  const now = dedupSignatureRow(text);
  const sig = computeSignature(text);
  const valid = !sig.error && !sig.empty;
  const nNear = valid ? sig.nearShingles.length : 0;
  const nStruct = valid ? sig.structuralShingles.length : 0;
  const words = valid ? 14 + 64 + 256 + nNear + nStruct : 14;
  const u32 = new Uint32Array(words + (words & 1));
  u32.set(new Uint32Array(now.data.buffer, now.data.byteOffset, 4));
  u32.set([0x4e534731, SIGNATURE_VERSION, valid ? 1 : sig.empty ? 2 : 0, sig.ints, sig.tokens, nNear, nStruct], 4);
  if (valid) {
    u32[11] = parseInt(sig.exact.slice(0, 8), 16);
    u32[12] = parseInt(sig.exact.slice(8, 16), 16);
    const counts = new Uint16Array(u32.buffer, 14 * 4, 128);
    for (const v of sig.nearShingles) counts[v >>> 26]++;
    for (const v of sig.structuralShingles) counts[64 + (v >>> 26)]++;
    u32.set(sig.nearSig!, 78);
    u32.set(sig.structuralSig!, 78 + 128);
    u32.set(sig.nearShingles, 78 + 256);
    u32.set(sig.structuralShingles, 78 + 256 + nNear);
  }
  return { error: sig.error, data: new Uint8Array(u32.buffer) };
}

test('migration 15: a store of the layout before gets every signature rewritten, and the same clusters', async () => {
  const blocks = library(2400, 23);
  const dir = path.join(tempDir(), 'store');
  // a store as nnrag before migration 15 left it: signatures in dedup_sigs, layout 'NSG1'
  let store = IndexStore.open(dir);
  const hashes = [...new Set(blocks.map((b) => textHash(b.text)))];
  const byHash = new Map(blocks.map((b) => [textHash(b.text), b.text]));
  let oldBytes = 0;
  store.write(() => {
    for (const b of blocks) putExtraction(store, extraction(b, false));
    store.db.exec(
      'CREATE TABLE dedup_sigs(hash TEXT PRIMARY KEY, version INTEGER NOT NULL, error TEXT, data BLOB NOT NULL)',
    );
    const ins = store.db.prepare('INSERT INTO dedup_sigs(hash, version, error, data) VALUES (?, ?, ?, ?)');
    for (const h of hashes) {
      const r = layout1Row(byHash.get(h)!);
      oldBytes += r.data.byteLength;
      ins.run(h, SIGNATURE_VERSION, r.error, r.data);
    }
    // one row that is not of that layout: left out, computed again by the next dedup
    store.db.prepare("UPDATE dedup_sigs SET data = x'00000000000000000000000000000000' WHERE hash = ?").run(hashes[7]);
    store.db.exec('DROP TABLE dedup_signatures');
    store.db.prepare('DELETE FROM schema_migrations WHERE version = 15').run();
    store.db.pragma('user_version = 14');
  });
  store.close();
  store = IndexStore.open(dir);
  try {
    assert.equal(store.db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'dedup_sigs'").pluck().get(), 0);
    // every row transcoded is what this build writes for the module, byte for byte
    const want = new Map(hashes.map((h) => [h, dedupSignatureRow(byHash.get(h)!)]));
    let n = 0,
      newBytes = 0;
    eachDedupSignature(store, SIGNATURE_VERSION, new Set(hashes), (h, error, data) => {
      assert.equal(error, want.get(h)!.error);
      assert.deepEqual(Uint8Array.from(data), Uint8Array.from(want.get(h)!.data), h);
      newBytes += data.byteLength;
      n++;
    });
    assert.equal(n, hashes.length - 1);
    // the point of the layout: ~36% fewer bytes (generated blocks are smaller than real ones)
    assert.ok(newBytes < 0.72 * oldBytes, `${newBytes} of ${oldBytes} bytes`);
    // dedup reads them: the clusters of the texts; the row left out computed and stored
    const fromStore = await runDedup({ store }, { threads: 2 });
    const copies = blocks.filter((b) => textHash(b.text) === hashes[7]).length;
    assert.deepEqual(fromStore.signatures, { stored: blocks.length - copies, computed: copies });
    const fromTexts = await runDedup({ store }, { threads: 2, storedSignatures: false });
    same(result(fromStore), result(fromTexts));
    assert.deepEqual(new Set(fromStore.clusters.map((c) => c.kind)), new Set(['exact', 'near', 'structural']));
    // at other thresholds the band keys are not the stored ones: computed from the sets
    const opts = { nearThreshold: 0.75, structuralThreshold: 0.85, threads: 0 };
    const otherStored = await runDedup({ store }, opts);
    assert.deepEqual(otherStored.signatures, { stored: blocks.length, computed: 0 });
    same(result(otherStored), result(await runDedup({ store }, { ...opts, storedSignatures: false })));
    // (bandings other than the stored ones: the keys were computed)
    assert.notDeepEqual(chooseBands(MINHASH_K, opts.nearThreshold), STORED_NEAR_BANDS);
    assert.notDeepEqual(chooseBands(MINHASH_K, opts.structuralThreshold), STORED_STRUCT_BANDS);
  } finally {
    store.close();
  }
});
