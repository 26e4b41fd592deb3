// The stored signature layout (src/store/dedup-layout.ts): the shingle sets packed and
// unpacked exactly, with the range counts the layout before stored; a damaged bitmap
// refused; the stored band keys those of dedup's default thresholds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  HEADER_WORDS,
  MINHASH_K,
  RANGES,
  STORED_NEAR_BANDS,
  STORED_STRUCT_BANDS,
  layoutWords,
  packedWords,
  unpackSetInto,
  writeSignature,
} from '../../src/store/dedup-layout.js';
import { bandKeyIn, chooseBands } from '../../src/util/minhash.js';
import { NEAR_THRESHOLD, STRUCTURAL_THRESHOLD } from '../../src/library/dedup.js';

/** n distinct sorted 32-bit values from a seeded generator, with 0 and 2^32 − 1 when asked. */
function sortedSet(n: number, seed: number, ends = false): Uint32Array {
  let s = seed >>> 0;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
  const v = new Set<number>(ends ? [0, 0xffffffff] : []);
  while (v.size < n) v.add(next());
  return Uint32Array.from([...v].sort((a, b) => a - b));
}

function row(near: Uint32Array, struct: Uint32Array) {
  const words = layoutWords(true, near.length, struct.length);
  const u32 = new Uint32Array(words);
  const u8 = new Uint8Array(u32.buffer);
  const sig = sortedSet(2 * MINHASH_K, 99);
  writeSignature(
    {
      keyWords: [1, 2, 3, 4],
      flags: 1,
      ints: 5,
      tokens: 6,
      exactHi: 7,
      exactLo: 8,
      near: { arr: near, at: 0, n: near.length },
      struct: { arr: struct, at: 0, n: struct.length },
      nearSig: { arr: sig, at: 0 },
      structSig: { arr: sig, at: MINHASH_K },
      version: 3,
    },
    u32,
    u8,
    0,
  );
  return { u32, u8, sig, sets: HEADER_WORDS + STORED_NEAR_BANDS.b + STORED_STRUCT_BANDS.b };
}

test('packed sets unpack to the same values, with the range counts of the layout before', () => {
  for (const [nNear, nStruct] of [
    [1, 1],
    [2, 300],
    [557, 3],
    [5000, 4100],
    [70_000, 1],
  ]) {
    const near = sortedSet(nNear, nNear, nNear > 1);
    const struct = sortedSet(nStruct, nStruct + 7, nStruct > 2);
    const { u32, u8, sig, sets } = row(near, struct);
    // the stored band keys are the MinHash's
    for (let b = 0; b < STORED_NEAR_BANDS.b; b++)
      assert.equal(u32[HEADER_WORDS + b], bandKeyIn(sig, 0, b, STORED_NEAR_BANDS.r));
    for (let b = 0; b < STORED_STRUCT_BANDS.b; b++)
      assert.equal(u32[HEADER_WORDS + STORED_NEAR_BANDS.b + b], bandKeyIn(sig, MINHASH_K, b, STORED_STRUCT_BANDS.r));
    const out = new Uint32Array(nNear + nStruct);
    const counts = new Uint16Array(2 * RANGES);
    assert.ok(unpackSetInto(u32, u8, sets, nNear, out, 0, counts, 0));
    assert.ok(unpackSetInto(u32, u8, sets + packedWords(nNear), nStruct, out, nNear, counts, RANGES));
    assert.deepEqual(out.subarray(0, nNear), near);
    assert.deepEqual(out.subarray(nNear), struct);
    // the counts by the top 6 bits, as the layout before stored them; none for a set of
    // more than 65,535 values
    const want = new Uint16Array(2 * RANGES);
    if (nNear <= 0xffff) for (const v of near) want[v >>> 26]++;
    for (const v of struct) want[RANGES + (v >>> 26)]++;
    assert.deepEqual(counts, want, `${nNear}, ${nStruct}`);
  }
  // ~25.5 bits a value for sets of the size of a block's (~550), against 32
  assert.ok(packedWords(550) * 32 < 550 * 25.6);
});

test('a damaged bitmap is refused', () => {
  const near = sortedSet(600, 3);
  const { u32, sets } = row(near, sortedSet(10, 4));
  const out = new Uint32Array(600);
  const spoilt = (f: (c: Uint32Array) => void) => {
    const c = Uint32Array.from(u32);
    f(c);
    return unpackSetInto(c, new Uint8Array(c.buffer), sets, 600, out, 0, null, 0);
  };
  assert.ok(spoilt(() => {}));
  // a value's bit lost; one too many; a value moved past top byte 255
  const first = (c: Uint32Array) => {
    let q = sets;
    while (!c[q]) q++;
    return q;
  };
  assert.equal(
    spoilt((c) => {
      const q = first(c);
      c[q] &= c[q] - 1;
    }),
    false,
  );
  assert.equal(
    spoilt((c) => {
      const q = first(c);
      c[q] |= ~c[q] & (c[q] + 1);
    }),
    false,
  );
  const words = (600 + 256 + 31) >>> 5;
  assert.equal(
    spoilt((c) => {
      // the last value's bit (the lowest set bit of the last word that has one, bits
      // counting from the most significant) moved to the bitmap's last position
      let q = sets + words - 1;
      while (!c[q]) q--;
      c[q] &= c[q] - 1;
      c[sets + words - 1] |= 1;
    }),
    false,
  );
});

test("the stored band keys are those of dedup's default thresholds", () => {
  assert.deepEqual(chooseBands(MINHASH_K, NEAR_THRESHOLD), STORED_NEAR_BANDS);
  assert.deepEqual(chooseBands(MINHASH_K, STRUCTURAL_THRESHOLD), STORED_STRUCT_BANDS);
});
