// The byte layout of a stored de-duplication signature (table `dedup_signatures`,
// migration 15; src/library/dedup.ts writes and reads it, src/store/dedup-sigs.ts keeps the
// rows). One module content's signature, native byte order (the magic, read in the other
// order, refuses a row of a machine of the other order), 8-byte aligned:
//   f64 nearKey, f64 structKey                          (words 0-3: setKey of the two sets)
//   u32 MAGIC, SIGNATURE_VERSION, flags (bit0 valid, bit1 empty), ints, tokens,
//       nNear, nStruct, exact (two words), bands         (words 4-13: HEADER_WORDS = 14)
// and, for a valid block only:
//   u32 nearBandKeys[b], structBandKeys[b']             (the LSH band keys of STORED_BANDS)
//   the near set, then the structural set, each packed (`packSetInto`).
// `bands` names the banding of the stored keys (b | r << 8 for the near pass, the same for
// the structural pass from bit 16).
//
// What changed from the layout before (migration 13, table `dedup_sigs`, magic 'NSG1', 5.65
// KB a block at 10^6): the two MinHash signatures (1 KB) are gone, the band keys dedup read
// them for are stored instead (104 bytes; any other banding is computed from the sets, of
// which the MinHash is a function); the 64 range counts of each set (256 bytes) are
// counted again while a set is unpacked; each set is packed at ~25.5 bits an element
// instead of 32. At 10^6 blocks dedup's read was mostly the page cache (5.6 GB of rows in a
// 15 GB store): `transcodeLayout1` rewrites an old row without its module text.
import type Database from 'better-sqlite3';
import { bandKeyIn } from '../util/minhash.js';

/** MinHash length of a signature (dedup.ts MINHASH_K). */
export const MINHASH_K = 128;
/** Range counts of a set (dedup.ts RangeCounts): the top 6 bits of an element. */
export const RANGES = 64;
/** The banding whose keys a row stores: that of dedup's default thresholds (dedup.ts
 *  NEAR_THRESHOLD 0.90 → 16 × 8, STRUCTURAL_THRESHOLD 0.95 → 10 × 12, by chooseBands;
 *  a test checks they agree). Dedup at other thresholds computes its keys from the sets. */
export const STORED_NEAR_BANDS = { b: 16, r: 8 };
export const STORED_STRUCT_BANDS = { b: 10, r: 12 };
/** This layout's magic ('NSG2'); LAYOUT1_MAGIC ('NSG1') is the layout before migration 15. */
export const LAYOUT2_MAGIC = 0x4e534732;
export const LAYOUT1_MAGIC = 0x4e534731;
export const HEADER_WORDS = 14;

const bandsWord = () =>
  STORED_NEAR_BANDS.b | (STORED_NEAR_BANDS.r << 8) | (STORED_STRUCT_BANDS.b << 16) | (STORED_STRUCT_BANDS.r << 24);

/**
 * Words of a packed set of n sorted distinct 32-bit values. The top byte of each value in
 * unary (Elias–Fano with 24 low bits: value i sets bit (its top byte) + i of a bitmap of
 * n + 256 bits, most significant bit of a word first), then the low 24 bits of each value,
 * 3 bytes (least significant first). Shingles are uniform hashes: ~550 a set, so ~25.5
 * bits a value against 32.
 */
export function packedWords(n: number): number {
  return n ? ((n + 256 + 31) >>> 5) + ((3 * n + 3) >>> 2) : 0;
}

/** Words of a row: HEADER_WORDS for a block that is not valid, else with its keys and sets;
 *  always even (rows stay 8-byte aligned back to back). */
export function layoutWords(valid: boolean, nNear: number, nStruct: number): number {
  const w = valid
    ? HEADER_WORDS + STORED_NEAR_BANDS.b + STORED_STRUCT_BANDS.b + packedWords(nNear) + packedWords(nStruct)
    : HEADER_WORDS;
  return w + (w & 1);
}

/** Pack set[at, at + n) (sorted, distinct) at word w of u32 (u8: the same memory as bytes;
 *  the words are zero). */
function packSetInto(set: Uint32Array, at: number, n: number, u32: Uint32Array, u8: Uint8Array, w: number): void {
  if (!n) return;
  const lows = (w + ((n + 256 + 31) >>> 5)) * 4;
  for (let i = 0; i < n; i++) {
    const v = set[at + i];
    const bit = (v >>> 24) + i;
    u32[w + (bit >>> 5)] |= 0x80000000 >>> (bit & 31);
    u8[lows + 3 * i] = v & 0xff;
    u8[lows + 3 * i + 1] = (v >>> 8) & 0xff;
    u8[lows + 3 * i + 2] = (v >>> 16) & 0xff;
  }
}

/** Set bits of a 32-bit word. */
function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/**
 * Unpack the set of n values packed at word w of u32 into out[at, at + n), counting its
 * values per range into counts[co, co + RANGES) (zeroed by the caller; not counted for a
 * set of more than 65,535 values, whose counts could overflow: such a set has none, as
 * before). False when the bitmap does not hold n values of top bytes up to 255 (a damaged
 * row; out[at, at + n) may have been written). The order of the values is not checked
 * again (the layout before did not check it either; SQLite guards the bytes): a check per
 * value made the loop ~60% slower.
 */
export function unpackSetInto(
  u32: Uint32Array,
  u8: Uint8Array,
  w: number,
  n: number,
  out: Uint32Array,
  at: number,
  counts: Uint16Array | null,
  co: number,
): boolean {
  if (!n) return true;
  const words = (n + 256 + 31) >>> 5;
  let ones = 0;
  for (let q = 0; q < words; q++) ones += popcount(u32[w + q]);
  if (ones !== n) return false;
  const lows = (w + words) * 4;
  const count = counts !== null && n <= 0xffff;
  // int32 arithmetic throughout (a value of 2^31 or more is negative here, and stored as
  // its uint32 by the typed array): as doubles the loop ran at ~8 ns a value
  let i = 0;
  let top = 0;
  for (let q = 0; q < words; q++) {
    let x = u32[w + q] | 0;
    const base = q * 32;
    while (x !== 0) {
      const z = Math.clz32(x);
      x &= 0x7fffffff >>> z;
      // value i's bit is at (its top byte) + i; the top bytes never decrease
      top = base + z - i;
      const b = lows + 3 * i;
      out[at + i] = (top << 24) | u8[b] | (u8[b + 1] << 8) | (u8[b + 2] << 16);
      if (count) counts![co + (top >>> 2)]++;
      i++;
    }
  }
  return top <= 255;
}

/** One signature's parts, to write in this layout. */
export interface SignatureParts {
  /** the two set keys as their 4 words (doubles' bytes) */
  keyWords: ArrayLike<number>;
  flags: number;
  ints: number;
  tokens: number;
  exactHi: number;
  exactLo: number;
  /** the two sets (sorted, distinct), each arr[at, at + n) */
  near: { arr: Uint32Array; at: number; n: number };
  struct: { arr: Uint32Array; at: number; n: number };
  /** the two MinHash signatures (STORED_*_BANDS keys are computed from them), each
   *  arr[at, at + MINHASH_K) */
  nearSig: { arr: Uint32Array; at: number };
  structSig: { arr: Uint32Array; at: number };
  version: number;
}

/** Write one signature at word w of u32 / u8 (zeroed memory of layoutWords words). */
export function writeSignature(p: SignatureParts, u32: Uint32Array, u8: Uint8Array, w: number): void {
  const valid = (p.flags & 1) === 1;
  for (let k = 0; k < 4; k++) u32[w + k] = p.keyWords[k];
  u32[w + 4] = LAYOUT2_MAGIC;
  u32[w + 5] = p.version;
  u32[w + 6] = p.flags & 3;
  u32[w + 7] = p.ints;
  u32[w + 8] = p.tokens;
  u32[w + 9] = valid ? p.near.n : 0;
  u32[w + 10] = valid ? p.struct.n : 0;
  u32[w + 11] = p.exactHi;
  u32[w + 12] = p.exactLo;
  u32[w + 13] = valid ? bandsWord() : 0;
  if (!valid) return;
  let at = w + HEADER_WORDS;
  for (let band = 0; band < STORED_NEAR_BANDS.b; band++)
    u32[at++] = bandKeyIn(p.nearSig.arr, p.nearSig.at, band, STORED_NEAR_BANDS.r);
  for (let band = 0; band < STORED_STRUCT_BANDS.b; band++)
    u32[at++] = bandKeyIn(p.structSig.arr, p.structSig.at, band, STORED_STRUCT_BANDS.r);
  packSetInto(p.near.arr, p.near.at, p.near.n, u32, u8, at);
  packSetInto(p.struct.arr, p.struct.at, p.struct.n, u32, u8, at + packedWords(p.near.n));
}

/** Whether a row's stored band keys are of the banding `bands` asks for (near, structural). */
export function storedBandsAre(
  bandsWordValue: number,
  near: { b: number; r: number },
  struct: { b: number; r: number },
) {
  return {
    near: (bandsWordValue & 0xffff) === (near.b | (near.r << 8)),
    struct: bandsWordValue >>> 16 === (struct.b | (struct.r << 8)),
  };
}

/**
 * A row of the layout before migration 15 ('NSG1': header, two u16 range counts of 64, two
 * MinHash signatures of 128 words, the two sets as words) in this layout, or null when the
 * bytes are not such a row (the next dedup computes that signature from the module text).
 * The keys, header values and sets are the same; the band keys come from the stored MinHash.
 */
export function transcodeLayout1(data: Uint8Array): Uint8Array | null {
  const bytes = data.byteLength;
  if (bytes < HEADER_WORDS * 4 || bytes & 7) return null;
  const old = new Uint32Array(bytes >>> 2);
  new Uint8Array(old.buffer).set(data);
  if (old[4] !== LAYOUT1_MAGIC) return null;
  const flags = old[6];
  const valid = flags & 1;
  if (flags > 3 || (valid && flags & 2)) return null;
  const nNear = valid ? old[9] : 0;
  const nStruct = valid ? old[10] : 0;
  const oldWords = valid ? HEADER_WORDS + RANGES + 2 * MINHASH_K + nNear + nStruct : HEADER_WORDS;
  if (bytes !== (oldWords + (oldWords & 1)) * 4) return null;
  const words = layoutWords(valid === 1, nNear, nStruct);
  const u32 = new Uint32Array(words);
  const u8 = new Uint8Array(u32.buffer);
  const sig = HEADER_WORDS + RANGES;
  const sets = sig + 2 * MINHASH_K;
  writeSignature(
    {
      keyWords: old.subarray(0, 4),
      flags,
      ints: old[7],
      tokens: old[8],
      exactHi: old[11],
      exactLo: old[12],
      near: { arr: old, at: sets, n: nNear },
      struct: { arr: old, at: sets + nNear, n: nStruct },
      nearSig: { arr: old, at: sig },
      structSig: { arr: old, at: sig + MINHASH_K },
      version: old[5],
    },
    u32,
    u8,
    0,
  );
  return u8;
}

/**
 * Migration 15's rewrite: every row of `dedup_sigs` (the layout before) into
 * `dedup_signatures` in this layout, in rowid order, 1,000 rows a statement's read (the
 * reading statement cannot stay open while the same connection writes); rows that do not
 * transcode are left out (recomputed from their module by the next dedup). Returns how
 * many rows were written and left out. The caller drops `dedup_sigs`.
 */
export function transcodeDedupRows(db: Database.Database): { written: number; dropped: number } {
  const read = db.prepare(
    'SELECT rowid, hash, version, error, data FROM dedup_sigs WHERE rowid > ? ORDER BY rowid LIMIT 1000',
  );
  const ins = db.prepare('INSERT OR REPLACE INTO dedup_signatures(hash, version, error, data) VALUES (?, ?, ?, ?)');
  let last = -1;
  let written = 0,
    dropped = 0;
  for (;;) {
    const rows = read.raw().all(last) as [number, string, number, string | null, Uint8Array][];
    if (!rows.length) return { written, dropped };
    for (const [rowid, hash, version, error, data] of rows) {
      last = rowid;
      const t = transcodeLayout1(data);
      if (!t) {
        dropped++;
        continue;
      }
      ins.run(hash, version, error, Buffer.from(t.buffer, t.byteOffset, t.byteLength));
      written++;
    }
  }
}
