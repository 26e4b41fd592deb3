// De-duplication of library blocks (`nnrag dedup`). Three relations, from strict to loose:
//
//  exact       identical normal form: comments, docstrings (PEP 257) and whitespace removed,
//              tokens kept verbatim (structural.ts `canonicalText`), compared by a 64-bit
//              fingerprint of the token sequence (`exactFingerprint`);
//  near        Jaccard ≥ 0.90 of token 5-gram shingle sets (identifiers and literals kept),
//              candidates from MinHash (OPH, K = 128, optimal densification) + LSH banding,
//              every candidate verified by exact Jaccard on the shingle sets;
//  structural  Jaccard ≥ 0.95 of 5-gram shingles of the structural token stream (names the
//              block binds → ID, strings → STR, floats → LIT; see structural.ts), same
//              MinHash/LSH/verification scheme. A renamed copy is a structural duplicate.
//
// Rules that keep distinct blocks apart:
//  - near and structural duplicates must have the same multiset of integer literals, so
//    `nn.Linear(64, 128)` and `nn.Linear(64, 256)` are never duplicates ("different layer
//    widths are not duplicates"); exact duplicates agree on every token anyway;
//  - empty blocks (no code token once comments/docstrings are gone) and unparseable blocks
//    never join a cluster. Unparseable = the caller says so (`parseable: false`), the
//    tokenizer finds a lexical error, or — for every block that would join a cluster and
//    whose `parseable` is unknown — tree-sitter reports a syntax error (checked only for
//    clustered blocks, which keeps the cost proportional to the duplicates; see
//    `DedupOptions.syntaxCheck`).
//
// The clusters are the connected components of exact ∪ near ∪ structural; a cluster's kind
// is the loosest relation needed to connect it. Signatures (the per-block cost) are computed
// once per module content, when the block is extracted, and kept in the store
// (`encodeSignatures`, src/store/dedup-sigs.ts): dedup decodes the stored ones and computes,
// on worker threads, only those it is not given or cannot decode as this version's.

import os from 'node:os';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { WorkerPool, type PoolWorker } from '../util/pool.js';
import { tokenize, docstringMask, structuralHashes, exactFingerprint, intsHash, codeTokenCount } from './structural.js';
import {
  shinglesInto,
  ophSignature,
  ophInto,
  jaccard,
  jaccardAtLeastIn,
  jaccardBound,
  leastIntersection,
  bandKey,
  bandKeyIn,
  chooseBands,
  mix32,
} from '../util/minhash.js';
import type { DedupCluster, DupKind } from '../records/spec.js';
import {
  MINHASH_K,
  RANGES,
  HEADER_WORDS,
  LAYOUT2_MAGIC,
  STORED_NEAR_BANDS,
  STORED_STRUCT_BANDS,
  layoutWords,
  packedWords,
  storedBandsAre,
  unpackSetInto,
  writeSignature,
} from '../store/dedup-layout.js';

/** Bump whenever tokenization, shingling or MinHash hashing changes: stored signatures of
 *  another version are not comparable and must be recomputed. */
export const SIGNATURE_VERSION = 3;
export const NEAR_THRESHOLD = 0.9;
export const STRUCTURAL_THRESHOLD = 0.95;
export const SHINGLE_K = 5;
export { MINHASH_K };
const NEAR_SEED = 0x2545f491;
const STRUCT_SEED = 0x6c8e9cf5;

export interface DedupInput {
  id: string;
  repo: string;
  text: string;
  /** result of a real parse (e.g. validation stage 1); false = never clustered */
  parseable?: boolean;
}

/** A block as dedup takes it: without its text, `DedupOptions.loadText` gives the text when
 *  it is needed (the block has no usable stored signature, or its syntax must be checked). */
export type DedupBlock = Omit<DedupInput, 'text'> & { text?: string };

/** A stored signature handed to dedup (block `index` of its input): `data` as encoded by
 *  `encodeSignatures`, `error` the lexical error stored beside it. */
export type StoredSignatureSink = (index: number, error: string | null, data: Uint8Array) => void;
/** dedup reads `data` where it is (copied first when it is not 4-byte aligned) and keeps
 *  nothing of it: its sets are unpacked into dedup's own buffers. */

export interface DedupResult {
  clusters: DedupCluster[];
  /** per block (position in the input), the place of its cluster in `clusters` (-1: none) */
  memberOf: Int32Array;
  /** number of distinct blocks: singletons (including excluded blocks) + clusters */
  uniqueCount: number;
  total: number;
  /** total: blocks of the repo; unique: blocks of the repo that stand for themselves or
   *  represent their cluster; share: unique / uniqueCount (the repo's share of the
   *  de-duplicated library); uniqueRate: unique / total */
  perRepo: Record<string, { total: number; unique: number; share: number; uniqueRate: number }>;
  /** blocks that were not compared at all, with the reason */
  excluded: { id: string; reason: string }[];
  /** wall-clock milliseconds per phase */
  timings: Record<string, number>;
  /** CPU milliseconds per phase, all threads of the process (workers work during 'signatures') */
  cpu: Record<string, number>;
  /** how many blocks tree-sitter had to parse (syntaxCheck 'tree-sitter', parseable unknown) */
  syntaxChecked: number;
  /** blocks whose signature came from `DedupOptions.stored`, and those computed here */
  signatures: { stored: number; computed: number };
  /** LSH buckets of more than EXHAUSTIVE_BUCKET members in several components, whose
   *  members were verified against witnesses only, and the largest (0: every candidate
   *  pair of every band was verified, as exhaustive banding does) */
  boundedBuckets: number;
  largestBoundedBucket: number;
}

export interface DedupOptions {
  nearThreshold?: number;
  structuralThreshold?: number;
  /** repositories in order of preference for representatives; others after, by name */
  repoPriority?: string[];
  /** worker threads for signatures (default: available parallelism, at most 8);
   *  0 = compute in this thread */
  threads?: number;
  /** 'tree-sitter' (default): blocks that would join a cluster and whose `parseable` is
   *  unknown are parsed with tree-sitter and dropped on a syntax error (measured ≈ 0.2–0.7 ms
   *  per block, so callers that know the answer — validation stage 1 — should pass
   *  `parseable`); 'lexical': rely on the tokenizer and `parseable` only */
  syntaxCheck?: 'tree-sitter' | 'lexical';
  /** stored signatures (src/store/dedup-sigs.ts): called once, hands each block's stored
   *  signature to the sink, streamed. A signature that does not decode as this version's
   *  (another SIGNATURE_VERSION or encoding, a wrong length, a foreign byte order) is not
   *  used: that block's signature is computed from its text, as is every block's that got
   *  none. The clusters are those of signatures computed from the texts. */
  stored?: (sink: StoredSignatureSink) => void;
  /** the text of a block given without one (by id) */
  loadText?: (id: string) => string;
  /** called with the signatures dedup computed (not those it was handed), encoded as
   *  `encodeSignatures` does, for the caller to store */
  computed?: (index: number, error: string | null, data: Uint8Array) => void;
}

/** Everything dedup and the "similar blocks" search need about one block. */
export interface BlockSignature {
  /** 64-bit fingerprint (hex) of the normal form; '' when the block is empty or lexically invalid */
  exact: string;
  /** hash of the sorted integer-literal multiset (0 = none) */
  ints: number;
  /** MinHash (OPH) signatures, K = 128; null when empty/invalid */
  nearSig: Uint32Array | null;
  structuralSig: Uint32Array | null;
  /** sorted, de-duplicated 32-bit shingle hashes */
  nearShingles: Uint32Array;
  structuralShingles: Uint32Array;
  /** code tokens after removing comments and docstrings */
  tokens: number;
  empty: boolean;
  /** lexical error, or syntax error when checked with tree-sitter */
  error: string | null;
}

let scratchKeep = new Uint8Array(1024);
let scratchStruct = new Uint32Array(1024);
let scratchNear = new Uint32Array(1024);
let nearSetBuf = new Uint32Array(1024);
let structSetBuf = new Uint32Array(1024);

interface Core {
  error: string | null;
  empty: boolean;
  exact: string;
  ints: number;
  tokens: number;
  /** set sizes; the sets are in nearSetBuf / structSetBuf until the next call */
  nNear: number;
  nStruct: number;
}

/** The per-block work, into scratch buffers (no per-block typed-array allocation). With
 *  `near` and `struct`, the sets are written at their ends (not appended: the caller
 *  advances `len`), else into nearSetBuf / structSetBuf. */
function signCore(text: string, near?: U32, struct?: U32): Core {
  const t = tokenize(text, true);
  if (t.error) return { error: t.error, empty: false, exact: '', ints: 0, tokens: 0, nNear: 0, nStruct: 0 };
  if (scratchKeep.length < t.n + 1) {
    const cap = (t.n + 1) * 2;
    scratchKeep = new Uint8Array(cap);
    scratchStruct = new Uint32Array(cap);
    scratchNear = new Uint32Array(cap);
    nearSetBuf = new Uint32Array(cap);
    structSetBuf = new Uint32Array(cap);
  }
  const keep = scratchKeep;
  docstringMask(t, keep);
  const code = codeTokenCount(t, keep);
  if (code === 0) return { error: null, empty: true, exact: '', ints: 0, tokens: 0, nNear: 0, nStruct: 0 };
  let m = 0;
  const hash = t.hash;
  for (let i = 0; i < t.n; i++) if (keep[i]) scratchNear[m++] = hash[i];
  near?.reserve(t.n + 1);
  struct?.reserve(t.n + 1);
  const nNear = shinglesInto(scratchNear, m, SHINGLE_K, near ? near.buf : nearSetBuf, near ? near.len : 0);
  const sm = structuralHashes(t, keep, scratchStruct);
  const nStruct = shinglesInto(
    scratchStruct,
    sm,
    SHINGLE_K,
    struct ? struct.buf : structSetBuf,
    struct ? struct.len : 0,
  );
  return {
    error: null,
    empty: false,
    exact: exactFingerprint(t, keep),
    ints: intsHash(t, keep),
    tokens: code,
    nNear,
    nStruct,
  };
}

/** Signatures of one block from the tokenizer alone (synchronous; no syntax check). */
export function computeSignature(text: string): BlockSignature {
  const c = signCore(text);
  if (c.error || c.empty) return invalidSig(c.error, c.empty);
  const nearShingles = nearSetBuf.slice(0, c.nNear);
  const structuralShingles = structSetBuf.slice(0, c.nStruct);
  return {
    exact: c.exact,
    ints: c.ints,
    nearSig: ophSignature(nearShingles, MINHASH_K, NEAR_SEED),
    structuralSig: ophSignature(structuralShingles, MINHASH_K, STRUCT_SEED),
    nearShingles,
    structuralShingles,
    tokens: c.tokens,
    empty: false,
    error: null,
  };
}

function invalidSig(error: string | null, empty: boolean): BlockSignature {
  return {
    exact: '',
    ints: 0,
    nearSig: null,
    structuralSig: null,
    nearShingles: new Uint32Array(0),
    structuralShingles: new Uint32Array(0),
    tokens: 0,
    empty,
    error,
  };
}

/** Signatures of one block, with the syntax checked by tree-sitter. */
export async function blockSignatures(text: string, opts: { syntaxCheck?: boolean } = {}): Promise<BlockSignature> {
  const sig = computeSignature(text);
  if (opts.syntaxCheck !== false && !sig.error && !sig.empty) {
    const [bad] = await syntaxErrors([text]);
    if (bad) return { ...invalidSig(bad, false), tokens: sig.tokens };
  }
  return sig;
}

/** Pairwise comparison of two signatures, with the verdict dedup would reach. */
export function similarity(
  a: BlockSignature,
  b: BlockSignature,
  opts: DedupOptions = {},
): {
  exact: boolean;
  near: number;
  structural: number;
  sameInts: boolean;
  duplicate: DupKind | null;
} {
  const ok = (s: BlockSignature) => !s.error && !s.empty;
  const near = jaccard(a.nearShingles, b.nearShingles);
  const structural = jaccard(a.structuralShingles, b.structuralShingles);
  const sameInts = a.ints === b.ints;
  const exact = ok(a) && ok(b) && a.exact === b.exact;
  let duplicate: DupKind | null = null;
  if (ok(a) && ok(b)) {
    if (exact) duplicate = 'exact';
    else if (sameInts && near >= (opts.nearThreshold ?? NEAR_THRESHOLD)) duplicate = 'near';
    else if (sameInts && structural >= (opts.structuralThreshold ?? STRUCTURAL_THRESHOLD)) duplicate = 'structural';
  }
  return { exact, near, structural, sameInts, duplicate };
}

/** tree-sitter syntax errors (null = parses cleanly) for each text, in this thread. */
export async function syntaxErrors(texts: readonly string[]): Promise<(string | null)[]> {
  const { initParser, parsePython } = await import('../parse/parser.js');
  await initParser();
  return texts.map((text) => {
    const tree = parsePython(text);
    try {
      const root = tree.rootNode;
      if (!root.hasError) return null;
      // locate the first ERROR / MISSING node for the message
      const cur = tree.walk();
      try {
        for (;;) {
          const node = cur.currentNode;
          if (node.isError || node.isMissing) {
            return `syntax error at line ${node.startPosition.row + 1}${node.isMissing ? ` (missing ${node.type})` : ''}`;
          }
          if (node.hasError && cur.gotoFirstChild()) continue;
          while (!cur.gotoNextSibling()) {
            if (!cur.gotoParent()) return 'syntax error';
          }
        }
      } finally {
        cur.delete();
      }
    } finally {
      tree.delete();
    }
  });
}

/** A signature as storable values (e.g. SQLite BLOBs): typed arrays as little-endian bytes. */
export interface SignatureRecord {
  exact: string;
  ints: number;
  tokens: number;
  empty: boolean;
  error: string | null;
  nearSig: Buffer | null;
  structuralSig: Buffer | null;
  nearShingles: Buffer;
  structuralShingles: Buffer;
}

const toBytes = (a: Uint32Array) => {
  const b = Buffer.alloc(a.length * 4);
  for (let i = 0; i < a.length; i++) b.writeUInt32LE(a[i], i * 4);
  return b;
};
const fromBytes = (b: Uint8Array) => {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const a = new Uint32Array(b.byteLength >>> 2);
  for (let i = 0; i < a.length; i++) a[i] = buf.readUInt32LE(i * 4);
  return a;
};

export function signatureToRecord(s: BlockSignature): SignatureRecord {
  return {
    exact: s.exact,
    ints: s.ints,
    tokens: s.tokens,
    empty: s.empty,
    error: s.error,
    nearSig: s.nearSig && toBytes(s.nearSig),
    structuralSig: s.structuralSig && toBytes(s.structuralSig),
    nearShingles: toBytes(s.nearShingles),
    structuralShingles: toBytes(s.structuralShingles),
  };
}

export function signatureFromRecord(r: SignatureRecord): BlockSignature {
  return {
    exact: r.exact,
    ints: r.ints,
    tokens: r.tokens,
    empty: r.empty,
    error: r.error,
    nearSig: r.nearSig && fromBytes(r.nearSig),
    structuralSig: r.structuralSig && fromBytes(r.structuralSig),
    nearShingles: fromBytes(r.nearShingles),
    structuralShingles: fromBytes(r.structuralShingles),
  };
}

/**
 * In-memory LSH index over stored signatures for "similar blocks" queries: candidates come
 * from the near and structural band buckets (same banding as dedup, without the width
 * rule), and are ranked by exact Jaccard — the larger of near and structural.
 */
export class SimilarityIndex {
  private sigs = new Map<string, BlockSignature>();
  private buckets = new Map<string, string[]>();
  private nearBands = chooseBands(MINHASH_K, NEAR_THRESHOLD);
  private structBands = chooseBands(MINHASH_K, STRUCTURAL_THRESHOLD);

  /** Bucket keys of a signature: 'n<band>:<key>' and 's<band>:<key>'. */
  private keys(sig: BlockSignature): string[] {
    const out: string[] = [];
    if (sig.nearSig)
      for (let b = 0; b < this.nearBands.b; b++) out.push(`n${b}:${bandKey(sig.nearSig, b, this.nearBands.r)}`);
    if (sig.structuralSig)
      for (let b = 0; b < this.structBands.b; b++)
        out.push(`s${b}:${bandKey(sig.structuralSig, b, this.structBands.r)}`);
    return out;
  }

  get size(): number {
    return this.sigs.size;
  }

  add(id: string, sig: BlockSignature): void {
    if (this.sigs.has(id)) throw new Error(`SimilarityIndex: duplicate id ${id}`);
    this.sigs.set(id, sig);
    for (const k of this.keys(sig)) {
      const b = this.buckets.get(k);
      if (b) b.push(id);
      else this.buckets.set(k, [id]);
    }
  }

  /**
   * Blocks similar to `sig`, best first. `exhaustive` compares against every indexed block
   * (exact, for small libraries or low thresholds); otherwise only LSH candidates, which
   * find pairs above ~0.8 Jaccard reliably.
   */
  query(
    sig: BlockSignature,
    opts: { k?: number; minScore?: number; exhaustive?: boolean; excludeId?: string } = {},
  ): {
    id: string;
    score: number;
    near: number;
    structural: number;
    exact: boolean;
    sameInts: boolean;
  }[] {
    const cands = new Set<string>();
    if (opts.exhaustive) for (const id of this.sigs.keys()) cands.add(id);
    else for (const k of this.keys(sig)) for (const id of this.buckets.get(k) ?? []) cands.add(id);
    if (opts.excludeId !== undefined) cands.delete(opts.excludeId);
    const res = [];
    for (const id of cands) {
      const o = this.sigs.get(id)!;
      const near = jaccard(sig.nearShingles, o.nearShingles);
      const structural = jaccard(sig.structuralShingles, o.structuralShingles);
      const score = Math.max(near, structural);
      if (score < (opts.minScore ?? 0)) continue;
      res.push({
        id,
        score,
        near,
        structural,
        exact: !!sig.exact && sig.exact === o.exact,
        sameInts: sig.ints === o.ints,
      });
    }
    res.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
    return res.slice(0, opts.k ?? 10);
  }
}

// ---------------------------------------------------------------------------------------
// Packed signatures: what a batch of texts yields (typed arrays, no per-block objects),
// encoded below for the store and for the trip back from a signature thread

export interface Packed {
  count: number;
  exact: string[];
  /** per block: [flags, ints, tokens] ; flags bit0 = valid, bit1 = empty */
  meta: Uint32Array;
  errors: (string | null)[];
  /** count × 2K: near then structural signature */
  sigs: Uint32Array;
  nearSets: Uint32Array;
  nearOff: Uint32Array;
  structSets: Uint32Array;
  structOff: Uint32Array;
  /** per block: `setKey` of its near and structural sets (with its integers), for
   *  collapseIdentical; computed here, on the signature threads */
  nearKeys: Float64Array;
  structKeys: Float64Array;
}

/** Growable Uint32Array. */
class U32 {
  buf: Uint32Array;
  len = 0;
  constructor(capacity: number) {
    this.buf = new Uint32Array(Math.max(1 << 10, capacity));
  }
  /** room for n more values after `len` */
  reserve(n: number): void {
    if (this.len + n > this.buf.length) {
      const b = new Uint32Array(Math.max(this.buf.length * 2, this.len + n));
      b.set(this.buf.subarray(0, this.len));
      this.buf = b;
    }
  }
}

export function packSignatures(texts: readonly string[]): Packed {
  const count = texts.length;
  const K = MINHASH_K;
  const meta = new Uint32Array(count * 3);
  const sigs = new Uint32Array(count * 2 * K);
  const exact: string[] = new Array(count);
  const errors: (string | null)[] = new Array(count).fill(null);
  // sized for the usual case (measured on the dev set's blocks: 0.145 shingles per
  // character, at most 0.21 for a block), so the buffers rarely grow by copying
  let chars = 0;
  for (const t of texts) chars += t.length;
  const near = new U32(Math.ceil(chars * 0.2));
  const struct = new U32(Math.ceil(chars * 0.17));
  const nearOff = new Uint32Array(count + 1);
  const structOff = new Uint32Array(count + 1);
  const nearKeys = new Float64Array(count);
  const structKeys = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const c = signCore(texts[i], near, struct);
    exact[i] = c.exact;
    errors[i] = c.error;
    const valid = !c.error && !c.empty;
    meta[i * 3] = (valid ? 1 : 0) | (c.empty ? 2 : 0);
    meta[i * 3 + 1] = c.ints;
    meta[i * 3 + 2] = c.tokens;
    if (valid) {
      const nb = near.buf,
        na = near.len,
        sb = struct.buf,
        sa = struct.len;
      ophInto(nb, c.nNear, K, NEAR_SEED, sigs, i * 2 * K, na);
      ophInto(sb, c.nStruct, K, STRUCT_SEED, sigs, i * 2 * K + K, sa);
      nearKeys[i] = setKey(nb, na, c.nNear, c.ints);
      structKeys[i] = setKey(sb, sa, c.nStruct, c.ints);
      near.len += c.nNear;
      struct.len += c.nStruct;
    }
    nearOff[i + 1] = near.len;
    structOff[i + 1] = struct.len;
  }
  return {
    count,
    exact,
    meta,
    errors,
    sigs,
    nearSets: near.buf,
    nearOff,
    structSets: struct.buf,
    structOff,
    nearKeys,
    structKeys,
  };
}

// ---------------------------------------------------------------------------------------
// Encoded signatures: one block's signature as bytes, what the store keeps
// (src/store/dedup-sigs.ts) and what the signature threads send back, in the layout of
// src/store/dedup-layout.ts (header, the LSH band keys of the default banding, the two
// shingle sets packed); a block starts 8-byte aligned so that its keys read as doubles.

/** Every block of `p` encoded, each at an 8-byte aligned offset of one buffer. */
export interface Encoded {
  buf: ArrayBuffer;
  /** byte offset and length of block j */
  off: Uint32Array;
  len: Uint32Array;
  errors: (string | null)[];
}

function encodePacked(p: Packed): Encoded {
  const K = MINHASH_K;
  const off = new Uint32Array(p.count);
  const len = new Uint32Array(p.count);
  let total = 0;
  for (let j = 0; j < p.count; j++) {
    // a whole number of 8-byte units, so that signatures read back to back stay aligned
    off[j] = total;
    len[j] =
      layoutWords((p.meta[j * 3] & 1) === 1, p.nearOff[j + 1] - p.nearOff[j], p.structOff[j + 1] - p.structOff[j]) * 4;
    total += len[j];
  }
  const buf = new ArrayBuffer(total);
  const u32 = new Uint32Array(buf);
  const u8 = new Uint8Array(buf);
  const keyWords = new Uint32Array(4);
  const keyPair = new Float64Array(keyWords.buffer);
  for (let j = 0; j < p.count; j++) {
    keyPair[0] = p.nearKeys[j];
    keyPair[1] = p.structKeys[j];
    const x = p.exact[j];
    writeSignature(
      {
        keyWords,
        flags: p.meta[j * 3] & 3,
        ints: p.meta[j * 3 + 1],
        tokens: p.meta[j * 3 + 2],
        exactHi: x ? parseInt(x.slice(0, 8), 16) : 0,
        exactLo: x ? parseInt(x.slice(8, 16), 16) : 0,
        near: { arr: p.nearSets, at: p.nearOff[j], n: p.nearOff[j + 1] - p.nearOff[j] },
        struct: { arr: p.structSets, at: p.structOff[j], n: p.structOff[j + 1] - p.structOff[j] },
        nearSig: { arr: p.sigs, at: j * 2 * K },
        structSig: { arr: p.sigs, at: j * 2 * K + K },
        version: SIGNATURE_VERSION,
      },
      u32,
      u8,
      off[j] >>> 2,
    );
  }
  return { buf, off, len, errors: p.errors };
}

/** The de-duplication signature of each text, encoded as the store keeps it (what
 *  `dedup` would compute for it; the syntax check is not part of it). */
export function encodeSignatures(texts: readonly string[]): { error: string | null; data: Uint8Array }[] {
  const e = encodePacked(packSignatures(texts));
  return texts.map((_, j) => ({ error: e.errors[j], data: new Uint8Array(e.buf, e.off[j], e.len[j]) }));
}

/** The stored row of one module text's signature (src/store/dedup-sigs.ts, without the
 *  content hash): what extraction writes beside the module. */
export function dedupSignatureRow(text: string): { version: number; error: string | null; data: Uint8Array } {
  const [e] = encodeSignatures([text]);
  return { version: SIGNATURE_VERSION, error: e.error, data: e.data };
}

/** The MinHash part of a stored signature (what `similar` keeps per block, as
 *  `computeSignature` gives it), or null when `data` is not a signature of this version and
 *  layout (then compute it from the text). The layout keeps the sets, not the MinHash: it
 *  is computed from them (ophInto, as the signature threads do). */
export function storedMinHash(
  data: Uint8Array,
  error: string | null,
): { ints: number; tokens: number; nearSig: Uint32Array | null; structuralSig: Uint32Array | null } | null {
  const copy = new Uint8Array((data.byteLength + 7) & ~7 || 8);
  copy.set(data);
  const u32 = new Uint32Array(copy.buffer);
  const shape = rowShape(u32, 0, data.byteLength, error);
  if (!shape) return null;
  const { valid, nNear, nStruct } = shape;
  if (minHashSets.length < nNear + nStruct) minHashSets = new Uint32Array(2 * (nNear + nStruct));
  const sets = minHashSets;
  const p = HEADER_WORDS + STORED_NEAR_BANDS.b + STORED_STRUCT_BANDS.b;
  if (
    valid &&
    (!unpackSetInto(u32, copy, p, nNear, sets, 0, null, 0) ||
      !unpackSetInto(u32, copy, p + packedWords(nNear), nStruct, sets, nNear, null, 0))
  )
    return null;
  const sig = (at: number, n: number, seed: number) => {
    if (!valid || !n) return null;
    const out = new Uint32Array(MINHASH_K);
    ophInto(sets, n, MINHASH_K, seed, out, 0, at);
    return out;
  };
  return {
    ints: u32[7],
    tokens: u32[8],
    nearSig: sig(0, nNear, NEAR_SEED),
    structuralSig: sig(nNear, nStruct, STRUCT_SEED),
  };
}
let minHashSets = new Uint32Array(4096);

/** The shape of an encoded signature `bytes` bytes from word w of u32, or null when the
 *  bytes are not a signature of this version and layout (store/dedup-layout.ts). */
function rowShape(
  u32: Uint32Array,
  w: number,
  bytes: number,
  error: string | null,
): { valid: number; empty: number; nNear: number; nStruct: number } | null {
  if (bytes < HEADER_WORDS * 4 || w * 4 + bytes > u32.byteLength) return null;
  if (u32[w + 4] !== LAYOUT2_MAGIC || u32[w + 5] !== SIGNATURE_VERSION) return null;
  const flags = u32[w + 6];
  const valid = flags & 1;
  const empty = (flags >>> 1) & 1;
  if (flags > 3 || (valid && empty)) return null;
  const nNear = u32[w + 9];
  const nStruct = u32[w + 10];
  if (!valid && (nNear || nStruct)) return null;
  if (bytes !== layoutWords(valid === 1, nNear, nStruct) * 4) return null;
  // a block that is neither valid nor empty failed to tokenize: its error is stored with it
  if (!valid && !empty && !error) return null;
  return { valid, empty, nNear, nStruct };
}

/** The blocks' shingle sets, unpacked into large buffers. A buffer is memory outside the
 *  heap, and V8 runs a full collection of the heap (at 10^6 blocks one that holds the block
 *  list: ~0.5–0.8 s of CPU each) for about every new one: buffers of 64 MB each cost 67
 *  full collections, buffers each as large as all before it (up to 1 GB) 9. So once the
 *  first buffer (64 MB) is full, the next is sized for every block still to come (`expect`
 *  takes in all), from the words a take used so far, with a margin (pages never written are
 *  never given memory by the system: the margin costs address space only); should that
 *  fall short, buffers grow as before. */
class Arena {
  private u32 = new Uint32Array(0);
  private used = 0;
  private total = 0;
  private takes = 0;
  private words = 0;
  /** the buffer and word of the room `take` gave last */
  buf = this.u32;
  at = 0;
  /** expect: how many takes there will be in all (at most), 0 when not known */
  constructor(private readonly expect = 0) {}
  /** room for `words` words (sets `buf` and `at`) */
  take(words: number): void {
    if (this.used + words > this.u32.length) {
      let size = Math.max(16 << 20, words, Math.min(this.total, 256 << 20));
      const left = this.expect - this.takes;
      if (this.total > 0 && this.takes > 0 && left > 0)
        size = Math.max(size, Math.min(ARENA_MAX, Math.ceil((this.words / this.takes) * left * 1.15) + words));
      this.u32 = new Uint32Array(size);
      this.total += size;
      this.used = 0;
    }
    this.buf = this.u32;
    this.at = this.used;
    this.used += words;
    this.words += words;
    this.takes++;
  }
}
/** The largest arena buffer, in words: just under 4 GB, the most a Buffer (sameSet's view
 *  of the bytes) can cover. */
const ARENA_MAX = 2 ** 30 - 1024;

const bandSig = new Uint32Array(MINHASH_K);

/**
 * Block g's columns of S from its encoded signature (store/dedup-layout.ts), `bytes` bytes
 * from word `w` of `u32` (`u8`: the same memory as bytes, from the same start): its set
 * keys copied into S's own arrays, its two shingle sets unpacked into `arena` and their
 * range counts counted on the way, and the LSH band keys of its two passes (S.nearBands,
 * S.structBands) copied when the row stores those of that banding, else computed from the
 * sets' MinHash. False, and the block left unset, when the bytes are not a signature of
 * this version and layout: the caller computes that block's signature instead.
 */
function putEncoded(
  S: SigStore,
  g: number,
  u32: Uint32Array,
  u8: Uint8Array,
  w: number,
  bytes: number,
  error: string | null,
  arena: Arena,
): boolean {
  const shape = rowShape(u32, w, bytes, error);
  if (!shape) return false;
  const { valid, empty, nNear, nStruct } = shape;
  const wide = countScratch;
  wide.fill(0);
  let sets = arena.buf,
    at = 0;
  if (valid) {
    // the sets, unpacked; the range counts (rangesReach) counted as they are
    arena.take(nNear + nStruct);
    sets = arena.buf;
    at = arena.at;
    const p = w + HEADER_WORDS + STORED_NEAR_BANDS.b + STORED_STRUCT_BANDS.b;
    if (
      !unpackSetInto(u32, u8, p, nNear, sets, at, wide, 0) ||
      !unpackSetInto(u32, u8, p + packedWords(nNear), nStruct, sets, at + nNear, wide, RANGES)
    )
      return false;
  }
  narrowCounts(S.nearCounts, g, wide, 0, nNear);
  narrowCounts(S.structCounts, g, wide, RANGES, nStruct);
  S.valid[g] = valid;
  S.empty[g] = empty;
  S.ints[g] = u32[w + 7];
  S.exactHi[g] = valid ? u32[w + 11] : 0;
  S.exactLo[g] = valid ? u32[w + 12] : 0;
  S.errors[g] = valid || empty ? null : error;
  // the two keys (doubles, words 0-3)
  for (let k = 0; k < 4; k++) S.keyWords[g * 4 + k] = u32[w + k];
  const put = (c: Column, off: number, len: number) => {
    c.arr[g] = sets;
    c.off[g] = off;
    c.len[g] = len;
  };
  put(S.nearSet, at, nNear);
  put(S.structSet, at + nNear, nStruct);
  if (valid) {
    const same = storedBandsAre(u32[w + 13], S.nearBands, S.structBands);
    const k = w + HEADER_WORDS;
    bandKeysOf(S.nearBands, S.nearBandKeys, g, same.near ? u32 : null, k, sets, at, nNear, NEAR_SEED);
    bandKeysOf(
      S.structBands,
      S.structBandKeys,
      g,
      same.struct ? u32 : null,
      k + STORED_NEAR_BANDS.b,
      sets,
      at + nNear,
      nStruct,
      STRUCT_SEED,
    );
  }
  return true;
}

/** The range counts of one set as unpackSetInto counts them (16 bits a range). */
const countScratch = new Uint16Array(2 * RANGES);

/**
 * Block g's range counts into its column of byte counts (`rangeBound` reads them four to a
 * word), from wide[w0, w0 + RANGES) as unpackSetInto counted them for a set of n values.
 * A set with a range of more than 127 values (thousands of values; unpackSetInto does not
 * count a set of more than 65,535 at all) gets none (`len` 0): its pairs are merged whole
 * (jaccardAtLeastIn), the same answer without the bound.
 */
function narrowCounts(c: Column<Uint8Array>, g: number, wide: Uint16Array, w0: number, n: number): void {
  const arr = c.arr[g],
    off = c.off[g];
  let sum = 0,
    max = 0;
  for (let k = 0; k < RANGES; k++) {
    const v = wide[w0 + k];
    sum += v;
    if (v > max) max = v;
    arr[off + k] = v;
  }
  c.len[g] = n > 0 && sum === n && max <= 127 ? RANGES : 0;
}

/** Block g's `bands.b` LSH band keys into `keys` from g · bands.b: copied from
 *  stored[from, …) when the row stores them, else computed from the MinHash of the set
 *  set[at, at + n). Nothing when `keys` has no room (a store without banding). */
function bandKeysOf(
  bands: { b: number; r: number },
  keys: Uint32Array,
  g: number,
  stored: Uint32Array | null,
  from: number,
  set: Uint32Array,
  at: number,
  n: number,
  seed: number,
): void {
  const b = bands.b;
  if (!b || keys.length < (g + 1) * b) return;
  if (stored) {
    for (let band = 0; band < b; band++) keys[g * b + band] = stored[from + band];
    return;
  }
  if (!n) return;
  ophInto(set, n, MINHASH_K, seed, bandSig, 0, at);
  bandKeysInto(bandSig, 0, bands, keys, g);
}

/** The LSH band keys of block g's MinHash signature sig[at, at + K): `bands.b` keys from
 *  `keys[g · bands.b]` (bandKeyIn of each band; without the integer-literal hash, which
 *  lshPairs mixes in). Nothing when `keys` has no room (a store without banding). */
function bandKeysInto(sig: Uint32Array, at: number, bands: { b: number; r: number }, keys: Uint32Array, g: number) {
  const b = bands.b;
  if (keys.length < (g + 1) * b) return;
  for (let band = 0; band < b; band++) keys[g * b + band] = bandKeyIn(sig, at, band, bands.r);
}

/** The LSH band keys of every block of a MinHash column (block i's `bands.b` keys from
 *  i · bands.b), as putEncoded computes them: what lshPairs takes. */
export function columnBandKeys(sig: Column, bands: { b: number; r: number }): Uint32Array {
  const n = sig.off.length;
  const keys = new Uint32Array(n * bands.b);
  for (let i = 0; i < n; i++) if (sig.len[i]) bandKeysInto(sig.arr[i], sig.off[i], bands, keys, i);
  return keys;
}

// (Tried: a chunk's texts sent as one joined string and their end offsets instead of one
// structured clone per text. At 10^6 it cost the main thread more, not less: the joined
// strings live on the V8 heap, and allocating them set off full collections of a heap that
// holds every text, 214 s of CPU for the signatures against 169 s.)
type Job = { type: 'sign'; id: number; texts: string[] } | { type: 'syntax'; id: number; texts: string[] };
/** A job as submitted (the pool numbers it). */
type JobBody = Job extends infer J ? (J extends unknown ? Omit<J, 'id'> : never) : never;

// Worker entry: this same module, started with workerData.nnragDedup.
if (!isMainThread && (workerData as { nnragDedup?: boolean } | null)?.nnragDedup && parentPort) {
  const port = parentPort;
  port.on('message', (job: Job) => {
    if (job.type === 'sign') {
      const e = encodePacked(packSignatures(job.texts));
      port.postMessage({ id: job.id, encoded: e }, [e.buf, e.off.buffer, e.len.buffer] as ArrayBuffer[]);
    } else {
      syntaxErrors(job.texts).then(
        (errors) => port.postMessage({ id: job.id, errors }),
        (e) => port.postMessage({ id: job.id, fail: String(e?.stack ?? e) }),
      );
    }
  });
}

/** Signature threads on the generic pool (util/pool.ts): each job goes to an idle
 *  thread; a thread that dies fails its job (the run falls back to nothing: dedup is
 *  all-or-nothing) and is replaced. */
interface DedupJob {
  msg: JobBody;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

interface DedupThread extends PoolWorker<DedupJob> {
  thread: Worker;
}

class Pool {
  private pool: WorkerPool<DedupJob, DedupThread>;
  private seq = 0;
  constructor(n: number) {
    this.pool = new WorkerPool<DedupJob, DedupThread>(
      {
        spawn: () => this.spawn(),
        lost: (job, _w, why) => job.reject(why.error),
        reject: (job) => job.reject(new Error('dedup pool closed')),
      },
      { size: n, readyOnSpawn: true },
    );
    this.pool.warm(n);
  }

  private spawn(): DedupThread {
    const thread = new Worker(new URL(import.meta.url), { workerData: { nnragDedup: true } });
    const w: DedupThread = {
      thread,
      run: (job) => thread.postMessage({ ...job.msg, id: this.seq++ }),
      kill: () => void thread.terminate(),
      close: async () => {
        await thread.terminate();
      },
    };
    thread.on('message', (m: { id: number; fail?: string }) => {
      const job = this.pool.finished(w);
      if (!job) return;
      if (m.fail) job.reject(new Error(m.fail));
      else job.resolve(m);
    });
    thread.on('error', (e) => this.pool.exited(w, e));
    thread.on('exit', (code) => this.pool.exited(w, new Error(`dedup worker exited with code ${code}`)));
    return w;
  }

  run<R>(job: JobBody): Promise<R> {
    return new Promise<R>((resolve, reject) =>
      this.pool.submit({ msg: job, resolve: resolve as (v: unknown) => void, reject }),
    );
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}

// ---------------------------------------------------------------------------------------
// Clustering

class UnionFind {
  parent: Int32Array;
  constructor(n: number) {
    this.parent = new Int32Array(n);
    for (let i = 0; i < n; i++) this.parent[i] = i;
  }
  find(x: number): number {
    const p = this.parent;
    while (p[x] !== x) {
      p[x] = p[p[x]];
      x = p[x];
    }
    return x;
  }
  union(a: number, b: number): boolean {
    const ra = this.find(a),
      rb = this.find(b);
    if (ra === rb) return false;
    if (ra < rb) this.parent[rb] = ra;
    else this.parent[ra] = rb;
    return true;
  }
}

/**
 * One per-block array of every block (a MinHash signature, a shingle set, range counts)
 * where it was unpacked or computed: block i's values are arr[i][off[i], off[i] + len[i]).
 * Read in place: the hot loops take (array, offset, length), never a typed-array view
 * (allocating one per verification was most of the clustering's garbage at 10^6).
 */
export interface Column<A extends Uint32Array | Uint16Array | Uint8Array | Float64Array = Uint32Array> {
  arr: A[];
  off: Uint32Array;
  len: Uint32Array;
}

interface SigStore {
  valid: Uint8Array;
  empty: Uint8Array;
  ints: Uint32Array;
  /** the 64-bit fingerprint of the normal form, high and low words (0 when not valid) */
  exactHi: Uint32Array;
  exactLo: Uint32Array;
  errors: (string | null)[];
  /** LSH banding of the two passes, and each block's band keys (block g's from g · b;
   *  empty when the store is not for clustering) */
  nearBands: { b: number; r: number };
  structBands: { b: number; r: number };
  nearBandKeys: Uint32Array;
  structBandKeys: Uint32Array;
  nearSet: Column;
  structSet: Column;
  nearKey: Column<Float64Array>;
  structKey: Column<Float64Array>;
  /** per-range counts of the two sets, a byte a range (len 0: none, see narrowCounts) */
  nearCounts: Column<Uint8Array>;
  structCounts: Column<Uint8Array>;
  /** the keys' and the counts' storage (block g: keys at doubles 2g, 2g + 1; counts at
   *  RANGES u16 from 2g·RANGES, near then structural), as words */
  keyWords: Uint32Array;
  countWords: Uint32Array;
}

function newSigStore(n: number, nearBands = { b: 0, r: 0 }, structBands = { b: 0, r: 0 }): SigStore {
  // every per-block typed array in one ArrayBuffer (slab): V8 runs a full collection of the
  // heap for about every 64 MB of new memory outside it, and made one at a time these ~400
  // MB at 10^6 blocks cost several (each ~0.5 s of CPU with the block list in the heap)
  const slab = new Slab();
  const u32 = (len: number) => slab.take(len * 4, (b, o) => new Uint32Array(b, o, len));
  const u8 = (len: number) => slab.take(len, (b, o) => new Uint8Array(b, o, len));
  const f64 = (len: number) => slab.take(len * 8, (b, o) => new Float64Array(b, o, len));
  const column = <A extends Uint32Array | Uint16Array | Uint8Array | Float64Array = Uint32Array>() => {
    const off = u32(n),
      len = u32(n);
    return (): Column<A> => ({ arr: new Array<A>(n), off: off(), len: len() });
  };
  const keys = f64(2 * n);
  const counts = u8(2 * RANGES * n);
  const valid = u8(n),
    empty = u8(n),
    ints = u32(n),
    exactHi = u32(n),
    exactLo = u32(n),
    nearBandKeys = u32(n * nearBands.b),
    structBandKeys = u32(n * structBands.b),
    nearSet = column(),
    structSet = column(),
    nearKeyOff = u32(n),
    nearKeyLen = u32(n),
    structKeyOff = u32(n),
    structKeyLen = u32(n),
    nearCounts = column<Uint8Array>(),
    structCounts = column<Uint8Array>();
  slab.make();
  const keyArr = keys();
  const countArr = counts();
  const S: SigStore = {
    valid: valid(),
    empty: empty(),
    ints: ints(),
    exactHi: exactHi(),
    exactLo: exactLo(),
    errors: new Array<string | null>(n).fill(null),
    nearBands,
    structBands,
    nearBandKeys: nearBandKeys(),
    structBandKeys: structBandKeys(),
    nearSet: nearSet(),
    structSet: structSet(),
    nearKey: { arr: new Array<Float64Array>(n).fill(keyArr), off: nearKeyOff(), len: nearKeyLen().fill(1) },
    structKey: { arr: new Array<Float64Array>(n).fill(keyArr), off: structKeyOff(), len: structKeyLen().fill(1) },
    nearCounts: nearCounts(),
    structCounts: structCounts(),
    keyWords: new Uint32Array(keyArr.buffer, keyArr.byteOffset, keyArr.length * 2),
    countWords: new Uint32Array(countArr.buffer, countArr.byteOffset, countArr.length >>> 2),
  };
  S.nearCounts.arr.fill(countArr);
  S.structCounts.arr.fill(countArr);
  for (let g = 0; g < n; g++) {
    S.nearKey.off[g] = 2 * g;
    S.structKey.off[g] = 2 * g + 1;
    S.nearCounts.off[g] = 2 * RANGES * g;
    S.structCounts.off[g] = 2 * RANGES * g + RANGES;
  }
  return S;
}

/** Typed arrays in one ArrayBuffer: `take` reserves room (8-byte aligned) and returns a
 *  function that makes the array once `make` has allocated the buffer. */
class Slab {
  private bytes = 0;
  private buf: ArrayBuffer | null = null;
  take<T>(bytes: number, view: (buf: ArrayBuffer, offset: number) => T): () => T {
    const at = this.bytes;
    this.bytes += (bytes + 7) & ~7;
    return () => view(this.buf!, at);
  }
  make(): void {
    this.buf = new ArrayBuffer(this.bytes);
  }
}

/**
 * One block's set as an open-addressing table, to intersect many sets with it: a probe per
 * element of the other set (the set's values are uniform hashes: the low bits index the
 * table) instead of a merge whose branches go at random. The report scores each member of
 * a cluster against its representative (at 10^6, clusters of hundreds of copies).
 * `jaccard` computes exactly what minhash.ts `jaccardIn` computes. (Not structural.ts's
 * IntSet: that one mixes its keys, which small name hashes need and these do not; through
 * it the report ran 15-30% slower.)
 */
export class SetProbe {
  // the set's values in their slots, 0 in an empty slot (the value 0 itself is `hasZero`):
  // one array read a probe. The table is cleared at each load (once per cluster).
  private keys = new Uint32Array(1024);
  private mask = 1023;
  private size = 0;
  private hasZero = 0;
  load(c: Column, x: number): void {
    const arr = c.arr[x],
      off = c.off[x],
      len = c.len[x];
    let cap = 1024;
    while (cap < len * 2) cap *= 2;
    if (cap > this.keys.length) this.keys = new Uint32Array(cap);
    const keys = this.keys;
    keys.fill(0, 0, cap);
    this.mask = cap - 1;
    this.size = len;
    this.hasZero = 0;
    const mask = this.mask;
    for (let k = off; k < off + len; k++) {
      const v = arr[k];
      if (v === 0) {
        this.hasZero = 1;
        continue;
      }
      let i = v & mask;
      while (keys[i] !== 0) i = (i + 1) & mask;
      keys[i] = v;
    }
  }
  /** Jaccard of the loaded set and block y's set (a set holds distinct values). */
  jaccard(c: Column, y: number): number {
    const arr = c.arr[y],
      off = c.off[y],
      len = c.len[y];
    if (this.size === 0 || len === 0) return 0;
    const keys = this.keys,
      mask = this.mask;
    let inter = 0;
    for (let k = off; k < off + len; k++) {
      const v = arr[k];
      if (v === 0) {
        inter += this.hasZero;
        continue;
      }
      let i = v & mask;
      for (;;) {
        const s = keys[i];
        if (s === v) {
          inter++;
          break;
        }
        if (s === 0) break;
        i = (i + 1) & mask;
      }
    }
    return inter / (this.size + len - inter);
  }
}

/**
 * Per-range counts of the blocks' shingle sets, for an exact upper bound of an
 * intersection that costs RANGES steps instead of a merge of both sets: the hash space is
 * cut into RANGES ranges by the top bits, and two sets share at most min(count in A, count
 * in B) elements of each range. Two copies of one block that differ in a few dozen
 * shingles (a renamed class, an added statement) differ by about that much in the sum, so
 * most pairs short of the threshold are refused here; a pair that passes the bound is
 * merged as before. Counted as each set is unpacked from its stored signature
 * (store/dedup-layout.ts unpackSetInto; the layout before stored them) and kept a byte a
 * range (narrowCounts); a set with a range of more than 127 elements (thousands of
 * shingles) has none and is always merged.
 */
// (RANGES: store/dedup-layout.ts, where the counts are made as a stored set is unpacked)

/** Jaccard of blocks x and y's sets in `set` reaches t: the size bound, the range bound
 *  (`counts`, read four ranges to a word from `words`: rangeBound), then the merge, range
 *  by range (`rangesReach`). */
function verified(
  x: number,
  y: number,
  set: Column,
  counts: Column<Uint8Array>,
  words: Uint32Array,
  t: number,
): boolean {
  const na = set.len[x],
    nb = set.len[y];
  if (jaccardBound(na, nb) < t) return false;
  const need = leastIntersection(na, nb, t);
  if (need > Math.min(na, nb)) return false;
  if (na > 0 && nb > 0 && counts.len[x] !== 0 && counts.len[y] !== 0) {
    const bx = counts.off[x],
      by = counts.off[y];
    const ub = rangeBound(words, bx >>> 2, by >>> 2);
    if (ub < need) return false;
    return rangesReach(set.arr[x], set.off[x], counts.arr[x], bx, set.arr[y], set.off[y], counts.arr[y], by, ub - need);
  }
  return jaccardAtLeastIn(set.arr[x], set.off[x], na, set.arr[y], set.off[y], nb, t);
}

/**
 * The range bound Σ min(c[k], d[k]) of two sets' RANGES byte counts, each a value of at
 * most 127 (narrowCounts), from words wx and wy of `words` (four counts a word, in the
 * platform's byte order: the sum does not depend on which byte is which range). Four
 * minimums at once (SWAR): a lane of (a | 0x80) − b is 128 + a − b, between 1 and 255 (no
 * borrow from the next lane), whose top bit says a ≥ b; the minimums' bytes are summed in
 * two 16-bit lanes (at most 16 · 2 · 127 each). At 10^6 the bound is computed for ~18
 * million pairs: a loop over 64 16-bit counts was a third of the verifications' time.
 */
export function rangeBound(words: Uint32Array, wx: number, wy: number): number {
  let acc = 0;
  for (let k = 0; k < RANGES >>> 2; k++) {
    const a = words[wx + k] | 0,
      b = words[wy + k] | 0;
    const ge = ((((a | 0x80808080) - b) | 0) & 0x80808080) >>> 7;
    const m = Math.imul(ge, 0xff);
    const mn = (b & m) | (a & ~m);
    acc += (mn & 0x00ff00ff) + ((mn >>> 8) & 0x00ff00ff);
  }
  return (acc & 0xffff) + (acc >>> 16);
}

/**
 * Whether two sorted sets a[ao...] and b[bo...], cut into RANGES ranges by their counts
 * (c[co + k], d[do + k]: the elements of range k, RangeCounts), share at least
 * ub − slack elements, where ub = Σ min(c[k], d[k]) (the range bound). Merged range by
 * range: range k shares at most min(c[k], d[k]) elements, so once the ranges merged so far
 * fall short of their bound by more than `slack`, the rest cannot make it up and the answer
 * is no (the intersection is at most ub minus that shortfall). Exact: the same answer as a
 * merge of the whole sets (jaccardAtLeastIn) with need = ub − slack. The pairs verified at
 * 10^6 are mostly renamed copies just under the threshold, whose whole merge failed only
 * near its end; their shortfall builds up evenly over the ranges, so they are refused after
 * a part of them.
 */
export function rangesReach(
  a: Uint32Array,
  ao: number,
  c: Uint8Array,
  co: number,
  b: Uint32Array,
  bo: number,
  d: Uint8Array,
  dof: number,
  slack: number,
): boolean {
  let i = ao,
    j = bo,
    short = 0;
  for (let k = 0; k < RANGES; k++) {
    const u = c[co + k],
      v = d[dof + k];
    const ea = i + u,
      eb = j + v;
    let inter = 0;
    while (i < ea && j < eb) {
      const x = a[i],
        y = b[j];
      if (x === y) {
        inter++;
        i++;
        j++;
      } else if (x < y) i++;
      else j++;
    }
    short += (u < v ? u : v) - inter;
    if (short > slack) return false;
    i = ea;
    j = eb;
  }
  return true;
}

/** Hash of a sorted shingle set set[at, at + len) and the integer-literal hash, as a double (53
 *  bits). Only a bucket key: equal keys are confirmed element by element (collapseIdentical),
 *  so one multiply a lane per element is enough (a full mix per element was the third
 *  largest cost of the signature threads); the elements are already well-mixed hashes. */
function setKey(set: Uint32Array, at: number, len: number, ints: number): number {
  let h1 = mix32(ints ^ 0x9e3779b9);
  let h2 = mix32(len);
  for (let i = at; i < at + len; i++) {
    const x = set[i];
    h1 = Math.imul(h1 ^ x, 0x9e3779b1);
    h2 = Math.imul(h2 ^ x, 0x01000193);
  }
  return mix32(h1) * 0x200000 + (mix32(h2 ^ len) & 0x1fffff);
}

function sameSet(c: Column, x: number, y: number): boolean {
  const n = c.len[x];
  if (n !== c.len[y]) return false;
  const a = c.arr[x],
    b = c.arr[y];
  const ax = c.off[x],
    by = c.off[y];
  if (n < 64) {
    for (let i = 0; i < n; i++) if (a[ax + i] !== b[by + i]) return false;
    return true;
  }
  // a long set compared by memcmp (Buffer#compare of the two ranges, no view made): at 10^6
  // blocks collapseIdentical confirms ~10^6 identical structural sets of ~550 values,
  // which the loop above compared at ~1 ns a value
  return bytesOf(b).compare(bytesOf(a), ax * 4, (ax + n) * 4, by * 4, (by + n) * 4) === 0;
}

/** The bytes of an arena buffer (or any set's array) as a Buffer, made once per array. */
const byteViews = new WeakMap<Uint32Array, Buffer>();
function bytesOf(a: Uint32Array): Buffer {
  let v = byteViews.get(a);
  if (!v) {
    v = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    byteViews.set(a, v);
  }
  return v;
}

/**
 * The exact groups: blocks with the same normal-form fingerprint (64 bits), except those
 * `excluded`, grouped by an open-addressing table of the first block of each fingerprint
 * (a Map keyed by the fingerprint's hex string cost a string per block and its hashing).
 * Sets headOf[i] (the group's first block, -1 for an excluded block) and groupSize[head];
 * returns the heads in block order.
 */
function exactGroups(
  S: SigStore,
  n: number,
  excluded: (i: number) => boolean,
  headOf: Int32Array,
  groupSize: Int32Array,
): Int32Array {
  let bits = 10;
  while (bits < 30 && 1 << bits < n * 2) bits++;
  const mask = (1 << bits) - 1;
  const table = new Int32Array(mask + 1).fill(-1);
  const heads = new Int32Array(n);
  const hi = S.exactHi,
    lo = S.exactLo;
  let m = 0;
  headOf.fill(-1);
  groupSize.fill(0);
  for (let i = 0; i < n; i++) {
    if (excluded(i)) continue;
    let slot = mix32(hi[i] ^ Math.imul(lo[i], 0x9e3779b1)) & mask;
    for (;;) {
      const g = table[slot];
      if (g < 0) {
        table[slot] = i;
        heads[m++] = i;
        headOf[i] = i;
        break;
      }
      if (hi[g] === hi[i] && lo[g] === lo[i]) {
        headOf[i] = g;
        break;
      }
      slot = (slot + 1) & mask;
    }
    groupSize[headOf[i]]++;
  }
  return heads.slice(0, m);
}

/**
 * Nodes with identical shingle sets and integer literals collapse to one (the first): they
 * collide in every band and verify at Jaccard 1, and every other node's verdict against
 * them is the same, so joining them at once and banding one of them gives the components
 * exhaustive banding gives (a renamed copy's structural set equals its source's: 10^6
 * renamed copies of 435 blocks band as ~10^3 nodes in the structural pass). The sets'
 * hashes come from the signature threads; equal hashes are confirmed element by element.
 * `same[i]`, when given, is set to the node whose set node i's equals (i itself if none).
 */
function collapseIdentical(
  nodes: Int32Array,
  set: Column,
  keys: Column<Float64Array>,
  ints: Uint32Array,
  join: (a: number, b: number) => void,
  same?: Int32Array,
): Int32Array {
  // the first node of each distinct (set, integers), in an open-addressing table keyed by
  // the set's hash (a Map of 10^6 double keys, and arrays for its rare collisions, cost
  // more); a slot's node is compared element by element, so equal keys of different sets
  // only probe on
  let bits = 10;
  while (bits < 30 && 1 << bits < nodes.length * 2) bits++;
  const mask = (1 << bits) - 1;
  const table = new Int32Array(mask + 1).fill(-1);
  const out = new Int32Array(nodes.length);
  let m = 0;
  for (const i of nodes) {
    const k = keys.arr[i][keys.off[i]];
    // the key's low 21 bits are the set's second hash (setKey)
    let slot = mix32((k % 0x200000) | 0) & mask;
    let f = -1;
    for (;;) {
      const g = table[slot];
      if (g < 0) break;
      if (keys.arr[g][keys.off[g]] === k && ints[g] === ints[i] && sameSet(set, g, i)) {
        f = g;
        break;
      }
      slot = (slot + 1) & mask;
    }
    if (same) same[i] = f >= 0 ? f : i;
    if (f >= 0) {
      join(f, i);
      continue;
    }
    table[slot] = i;
    out[m++] = i;
  }
  return out.slice(0, m);
}

const RADIX = 1 << 16;

/**
 * pos[0, n): the positions 0 … n − 1 sorted by key[position], equal keys by position: two
 * stable counting passes of 16 bits (low half, then high half) through `tmp`; `count` has
 * RADIX + 1 entries. The order a sort of the doubles key · 2^21 + position gives (what
 * lshPairs sorted before: at 10^6 nodes ~80 ms a band, 16 bands, and a division and a
 * remainder of a double for every position read).
 */
export function radixOrder(key: Uint32Array, n: number, pos: Int32Array, tmp: Int32Array, count: Uint32Array): void {
  count.fill(0);
  for (let p = 0; p < n; p++) count[(key[p] & 0xffff) + 1]++;
  for (let d = 1; d <= RADIX; d++) count[d] += count[d - 1];
  for (let p = 0; p < n; p++) tmp[count[key[p] & 0xffff]++] = p;
  count.fill(0);
  for (let p = 0; p < n; p++) count[(key[p] >>> 16) + 1]++;
  for (let d = 1; d <= RADIX; d++) count[d] += count[d - 1];
  for (let x = 0; x < n; x++) {
    const p = tmp[x];
    pos[count[key[p] >>> 16]++] = p;
  }
}

/** Buckets up to this size are verified pairwise (every pair of members in different
 *  components, as before); larger ones (thousands of copies of one block) are bounded. */
export const EXHAUSTIVE_BUCKET = 256;
/** In a larger bucket each member is verified against one member (the first seen) of at
 *  most this many other components of the bucket. */
export const BUCKET_WITNESSES = 16;

/**
 * LSH over `nodes`: for each band, group nodes whose band key (mixed with the integer-literal
 * hash, which verification requires to be equal anyway) collides, and hand candidate pairs
 * of a bucket to `visit` (which verifies and unions), streamed, never stored. Buckets are
 * found by sorting the positions by key (radixOrder), which is much faster than a Map for 10^5
 * nodes. A bucket whose members are all in one component already is skipped (its pairs
 * could add nothing); one of at most EXHAUSTIVE_BUCKET members hands over every pair of
 * members in different components (the components are those of exhaustive banding); a
 * larger one hands each member's pairs with one witness per other component, at most
 * BUCKET_WITNESSES components (bounded work: a member that belongs to a big component
 * joins it through its first witness; at worst a link only a non-witness member carries
 * is missed in this band, found in another band or not at all).
 */
export function lshPairs(
  nodes: Int32Array,
  bandKeys: Uint32Array,
  ints: Uint32Array,
  bands: { b: number; r: number },
  find: (i: number) => number,
  visit: (x: number, y: number) => void,
  stats: { bounded: number; largest: number },
): void {
  const n = nodes.length;
  if (n < 2) return;
  // pos: the positions (in `nodes`) of one band sorted by their key, then position
  // (radixOrder); keyAt: each position's key in that band
  // (with `keys` and `how` below, in one ArrayBuffer: ~90 MB at 10^6 nodes, see Slab)
  const B = bands.b;
  const slab = new Slab();
  const posOf = slab.take(n * 4, (b, o) => new Int32Array(b, o, n));
  const keyAtOf = slab.take(n * 4, (b, o) => new Uint32Array(b, o, n));
  const tmpOf = slab.take(n * 4, (b, o) => new Int32Array(b, o, n));
  const keysOf = slab.take(n * B * 4, (b, o) => new Uint32Array(b, o, n * B));
  const howOf = slab.take(n * B, (b, o) => new Uint8Array(b, o, n * B));
  slab.make();
  const pos = posOf();
  const keyAt = keyAtOf();
  const tmp = tmpOf();
  const radix = new Uint32Array(RADIX + 1);
  const wit = new Int32Array(BUCKET_WITNESSES);
  // Buckets handed over pairwise, by a hash of their members (positions in `nodes`, in
  // order). The same members colliding again in another band (copies of one block agree on
  // most bands) propose the same pairs: those in different components were verified and
  // failed (else they would be one component now), and fail again. Skipping such a bucket
  // gives exactly the components its visit would.
  const seen = new Map<number, Int32Array[]>();
  const seenBucket = (a: number, b: number): boolean => {
    let h1 = mix32(b - a);
    let h2 = 0x811c9dc5;
    for (let x = a; x < b; x++) {
      const p = pos[x];
      h1 = mix32(h1 ^ p);
      h2 = Math.imul(h2 ^ p, 0x01000193);
    }
    const key = (h1 >>> 0) * 0x200000 + ((h2 >>> 0) & 0x1fffff);
    const same = seen.get(key);
    if (same)
      for (const m of same) {
        if (m.length !== b - a) continue;
        let eq = true;
        for (let x = a; x < b && eq; x++) eq = m[x - a] === pos[x];
        if (eq) return true;
      }
    const m = new Int32Array(b - a);
    for (let x = a; x < b; x++) m[x - a] = pos[x];
    if (same) same.push(m);
    else seen.set(key, [m]);
    return false;
  };
  // Each position's key in every band so far, and how its bucket there settled pairs.
  // EXHAUSTIVE: the bucket was handed over pairwise (at most EXHAUSTIVE_BUCKET members); a
  // pair that shared such a bucket in an earlier band was settled there: verified (and
  // failed, or they are one component now), or skipped because it was one component
  // already, or its bucket repeated one that was verified. WITNESS: the position was a
  // witness of its larger (bounded) bucket; every later member of that bucket (a larger
  // position: a bucket is in position order) was verified against it, or was in its
  // component then (a witness is never dropped, so it was in `wit` at that member's turn).
  // Proposing a settled pair again could change nothing; it is not proposed (before, the
  // lossy memo of failed pairs caught most such repeats, a cache miss each: at 10^6 the
  // same member met the same witnesses of its block's bucket in nearly every band). So no
  // pair is handed to `visit` twice (every pair verified was settled in its band), and
  // `visit` keeps no memo of the pairs that failed: at 10^6 the memo, looked up for each of
  // the 18.4 million pairs verified, found none of them (one cache miss each into a table of
  // 128 MB, and one more to add each pair that failed).
  const keys = keysOf();
  const how = howOf();
  const EXHAUSTIVE = 1,
    WITNESS = 2;
  const settled = (p: number, q: number, band: number): boolean => {
    const bp = p * B,
      bq = q * B;
    for (let k = 0; k < band; k++) {
      if (keys[bp + k] !== keys[bq + k]) continue;
      const hp = how[bp + k];
      if (hp & EXHAUSTIVE) return true;
      // one bucket, bounded: the later member met the earlier one if that was a witness
      if (p < q ? hp & WITNESS : how[bq + k] & WITNESS) return true;
    }
    return false;
  };
  // every band's key of a node, with its integer-literal hash mixed in (the band keys of
  // each block's signature, `bandKeys`, are computed where the signature is read: the
  // MinHash is not kept)
  for (let p = 0; p < n; p++) {
    const i = nodes[p];
    const x = ints[i];
    for (let band = 0; band < B; band++) keys[p * B + band] = mix32(bandKeys[i * B + band] ^ x);
  }
  for (let band = 0; band < bands.b; band++) {
    for (let p = 0; p < n; p++) keyAt[p] = keys[p * B + band];
    radixOrder(keyAt, n, pos, tmp, radix);
    let a = 0;
    while (a < n) {
      const k = keyAt[pos[a]];
      let b = a + 1;
      while (b < n && keyAt[pos[b]] === k) b++;
      if (b - a > 1 && b - a <= EXHAUSTIVE_BUCKET) for (let x = a; x < b; x++) how[pos[x] * B + band] = EXHAUSTIVE;
      if (b - a > 1) {
        const r0 = find(nodes[pos[a]]);
        let one = true;
        for (let x = a + 1; x < b && one; x++) one = find(nodes[pos[x]]) === r0;
        if (one || (b - a <= EXHAUSTIVE_BUCKET && seenBucket(a, b))) {
          // nothing to hand over
        } else if (b - a <= EXHAUSTIVE_BUCKET) {
          for (let x = a; x < b; x++) {
            const qx = pos[x];
            const px = nodes[qx];
            for (let y = x + 1; y < b; y++) {
              const qy = pos[y];
              if (band > 0 && settled(qx, qy, band)) continue;
              visit(px, nodes[qy]);
            }
          }
        } else {
          stats.bounded++;
          stats.largest = Math.max(stats.largest, b - a);
          let nw = 0;
          for (let x = a; x < b; x++) {
            const qx = pos[x];
            const px = nodes[qx];
            let seen = false;
            for (let k = 0; k < nw; k++) {
              const qw = wit[k];
              const w = nodes[qw];
              if (find(w) !== find(px) && !(band > 0 && settled(qx, qw, band))) visit(px, w);
              if (find(w) === find(px)) seen = true;
            }
            if (!seen && nw < BUCKET_WITNESSES) {
              wit[nw++] = qx;
              how[qx * B + band] = WITNESS;
            }
          }
        }
      }
      a = b;
    }
  }
}

/** Each block's repository as its rank among the repositories: those of `prio` (name →
 *  place) by their place, then every other in name order (`<`), after them. */
function repoRanks(blocks: readonly DedupBlock[], prio: ReadonlyMap<string, number>): Int32Array {
  const others = new Set<string>();
  for (const b of blocks) if (!prio.has(b.repo)) others.add(b.repo);
  const order = [...others].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let top = 0;
  for (const p of prio.values()) top = Math.max(top, p + 1);
  const rankOf = new Map<string, number>(prio);
  order.forEach((r, i) => {
    rankOf.set(r, top + i);
  });
  const rank = new Int32Array(blocks.length);
  let last: string | undefined;
  let lastRank = 0;
  for (let i = 0; i < blocks.length; i++) {
    const r = blocks[i].repo;
    if (r !== last) {
      last = r;
      lastRank = rankOf.get(r)!;
    }
    rank[i] = lastRank;
  }
  return rank;
}

/** De-duplicate blocks. See the file header for the rules. */
export async function dedup(blocks: readonly DedupBlock[], opts: DedupOptions = {}): Promise<DedupResult> {
  const timings: Record<string, number> = {};
  const cpu: Record<string, number> = {};
  let t0 = performance.now();
  let c0 = process.cpuUsage();
  const tick = (name: string) => {
    const t = performance.now();
    const c = process.cpuUsage();
    timings[name] = Math.round((t - t0) * 10) / 10;
    cpu[name] = Math.round((c.user - c0.user + c.system - c0.system) / 100) / 10;
    t0 = t;
    c0 = c;
  };
  const n = blocks.length;
  const nearThr = opts.nearThreshold ?? NEAR_THRESHOLD;
  const structThr = opts.structuralThreshold ?? STRUCTURAL_THRESHOLD;
  const threads = opts.threads ?? Math.min(8, os.availableParallelism?.() ?? os.cpus().length);
  // threads are started on first use: for at least 2000 signatures to compute, or more
  // than 200 syntax checks
  const useWorkers = threads > 0 && n >= 2000;
  const pools: Pool[] = [];
  const getPool = () => (pools[0] ??= new Pool(threads));
  try {
    // 1. signatures: the stored ones the caller hands over, decoded in place; the others
    //    (none stored, or not decodable as this version's) computed from the texts
    const nearBands = chooseBands(MINHASH_K, nearThr);
    const structBands = chooseBands(MINHASH_K, structThr);
    const S = newSigStore(n, nearBands, structBands);
    const have = new Uint8Array(n);
    let storedCount = 0;
    // every block's sets, unpacked from the stored or computed signatures
    const arena = new Arena(n);
    if (opts.stored) {
      let scratch = new Uint32Array(1024);
      let scratch8 = new Uint8Array(scratch.buffer);
      opts.stored((i, error, data) => {
        if (i < 0 || i >= n || have[i]) return;
        // read where the caller has it (copied to an aligned scratch if it is not 4-byte
        // aligned), its sets unpacked into large buffers: the caller's buffer (one per row
        // from SQLite) is garbage at once (kept as the block's storage, 10^6 of them cost 42
        // times what 10^5 cost)
        let u32: Uint32Array;
        let u8: Uint8Array = data;
        if ((data.byteOffset & 3) === 0) u32 = new Uint32Array(data.buffer, data.byteOffset, data.byteLength >>> 2);
        else {
          if (scratch.length * 4 < data.byteLength + 3) {
            scratch = new Uint32Array((data.byteLength >>> 1) + 4);
            scratch8 = new Uint8Array(scratch.buffer);
          }
          scratch8.set(data);
          u32 = scratch;
          u8 = scratch8;
        }
        if (putEncoded(S, i, u32, u8, 0, data.byteLength, error, arena)) {
          have[i] = 1;
          storedCount++;
        }
      });
    }
    const todo: number[] = [];
    for (let i = 0; i < n; i++) if (!have[i]) todo.push(i);
    const textOf = (i: number): string => {
      const t = blocks[i].text ?? opts.loadText?.(blocks[i].id);
      if (t === undefined) throw new Error(`dedup: no text and no stored signature for ${blocks[i].id}`);
      return t;
    };
    const take = (idx: readonly number[], e: Encoded) => {
      const u32 = new Uint32Array(e.buf);
      const u8 = new Uint8Array(e.buf);
      idx.forEach((i, j) => {
        if (!putEncoded(S, i, u32, u8, e.off[j] >>> 2, e.len[j], e.errors[j], arena))
          throw new Error(`dedup: a signature computed for ${blocks[i].id} does not decode`);
        opts.computed?.(i, e.errors[j], new Uint8Array(e.buf, e.off[j], e.len[j]));
      });
    };
    if (useWorkers && todo.length >= 2000) {
      const pool = getPool();
      const chunk = Math.max(500, Math.ceil(todo.length / (threads * 8)));
      const jobs: Promise<void>[] = [];
      for (let s = 0; s < todo.length; s += chunk) {
        const idx = todo.slice(s, s + chunk);
        jobs.push(
          pool.run<{ encoded: Encoded }>({ type: 'sign', texts: idx.map(textOf) }).then((r) => take(idx, r.encoded)),
        );
      }
      await Promise.all(jobs);
    } else if (todo.length) {
      take(todo, encodePacked(packSignatures(todo.map(textOf))));
    }
    tick('signatures');

    const excludedReason = (i: number): string | null => {
      if (blocks[i].parseable === false) return 'unparseable';
      if (S.empty[i]) return 'empty';
      if (!S.valid[i]) return `unparseable: ${S.errors[i] ?? 'lexical error'}`;
      return null;
    };
    const bad = new Map<number, string>();
    for (let i = 0; i < n; i++) {
      const r = excludedReason(i);
      if (r) bad.set(i, r);
    }

    // 2. exact groups: head = first member; only heads take part in near/structural.
    //    headOf[i]: the head of block i's group (-1: excluded), groupSize[h] the size of
    //    head h's group; heads in the order of their blocks
    const headOf = new Int32Array(n);
    const groupSize = new Int32Array(n);
    let heads: Int32Array = new Int32Array(0);
    let ufNear = new UnionFind(n);
    let ufAll = new UnionFind(n);
    const lshStats = { bounded: 0, largest: 0 };
    // per head: the head whose near (structural) set its set equals, found by collapseIdentical
    const nearSame = new Int32Array(n);
    const structSame = new Int32Array(n);
    const cluster = () => {
      heads = exactGroups(S, n, (i) => bad.has(i), headOf, groupSize);
      ufNear = new UnionFind(n);
      ufAll = new UnionFind(n);
      // near: exact Jaccard of token shingles
      nearSame.fill(-1);
      structSame.fill(-1);
      const nearNodes = collapseIdentical(
        heads,
        S.nearSet,
        S.nearKey,
        S.ints,
        (a, b) => {
          ufNear.union(a, b);
          ufAll.union(a, b);
        },
        nearSame,
      );
      lshPairs(
        nearNodes,
        S.nearBandKeys,
        S.ints,
        nearBands,
        (i) => ufNear.find(i),
        (x, y) => {
          if (S.ints[x] !== S.ints[y] || ufNear.find(x) === ufNear.find(y)) return;
          if (verified(x, y, S.nearSet, S.nearCounts, S.countWords, nearThr)) {
            ufNear.union(x, y);
            ufAll.union(x, y);
          }
        },
        lshStats,
      );
      // structural: exact Jaccard of structural shingles
      const structNodes = collapseIdentical(
        heads,
        S.structSet,
        S.structKey,
        S.ints,
        (a, b) => ufAll.union(a, b),
        structSame,
      );
      lshPairs(
        structNodes,
        S.structBandKeys,
        S.ints,
        structBands,
        (i) => ufAll.find(i),
        (x, y) => {
          if (S.ints[x] !== S.ints[y] || ufAll.find(x) === ufAll.find(y)) return;
          if (verified(x, y, S.structSet, S.structCounts, S.countWords, structThr)) ufAll.union(x, y);
        },
        lshStats,
      );
    };
    cluster();
    tick('cluster');

    let syntaxChecked = 0;
    // 3. syntax check of every head that is in a cluster (exact group ≥ 2 or linked);
    //    identical normal forms parse identically, so one check covers an exact group.
    if ((opts.syntaxCheck ?? 'tree-sitter') === 'tree-sitter') {
      const size = new Map<number, number>();
      for (const h of heads) {
        const r = ufAll.find(h);
        size.set(r, (size.get(r) ?? 0) + 1);
      }
      // blocks the caller already parsed (parseable: true) are trusted; an exact group
      // needs one check only if none of its members is known to parse
      const trusted = new Uint8Array(n);
      for (let i = 0; i < n; i++) if (headOf[i] >= 0 && blocks[i].parseable === true) trusted[headOf[i]] = 1;
      const check: number[] = [];
      for (const h of heads) {
        if (trusted[h]) continue;
        if (groupSize[h] > 1 || size.get(ufAll.find(h))! > 1) check.push(h);
      }
      let errors: (string | null)[];
      if (check.length === 0) errors = [];
      else if (useWorkers && check.length > 200) {
        const pool = getPool();
        const per = Math.ceil(check.length / (threads * 2));
        const jobs: Promise<{ errors: (string | null)[] }>[] = [];
        for (let s = 0; s < check.length; s += per) {
          jobs.push(pool.run({ type: 'syntax', texts: check.slice(s, s + per).map(textOf) }));
        }
        errors = (await Promise.all(jobs)).flatMap((r) => r.errors);
      } else {
        errors = await syntaxErrors(check.map(textOf));
      }
      const failedHead = new Map<number, string>();
      check.forEach((h, j) => {
        const e = errors[j];
        if (e) failedHead.set(h, e);
      });
      const found = failedHead.size > 0;
      if (found)
        for (let i = 0; i < n; i++) {
          const e = headOf[i] >= 0 ? failedHead.get(headOf[i]) : undefined;
          if (e) bad.set(i, `unparseable: ${e}`);
        }
      syntaxChecked = check.length;
      tick('syntax');
      if (found) {
        // re-cluster without the unparseable blocks (all endpoints of the new edges were
        // checked above, because they were in clusters then too)
        cluster();
        tick('recluster');
      }
    }

    // 4. final clusters: exact members join their head
    for (let i = 0; i < n; i++)
      if (headOf[i] >= 0 && headOf[i] !== i) {
        ufAll.union(headOf[i], i);
        ufNear.union(headOf[i], i);
      }
    const prio = new Map((opts.repoPriority ?? []).map((r, i) => [r, i]));
    let idOrder = true;
    for (let i = 1; i < n && idOrder; i++) idOrder = blocks[i - 1].id < blocks[i].id;
    // The representative: the block of the most preferred repository (repoPriority's order,
    // then the others by name), then of the least id. Each block's repository as its rank
    // in that order (the repositories of the priority list first, then every other by
    // name), so that a comparison is of two integers (at 10^6 blocks, two Map lookups of
    // strings a member cost ~1.5 s); the ids compared as their positions when the blocks
    // are in id order.
    const rank = repoRanks(blocks, prio);
    const better = (a: number, b: number) => {
      const pa = rank[a],
        pb = rank[b];
      if (pa !== pb) return pa < pb;
      return idOrder ? a < b : blocks[a].id < blocks[b].id;
    };
    const comp = new Map<number, number[]>();
    for (let i = 0; i < n; i++) {
      if (bad.has(i)) continue;
      const r = ufAll.find(i);
      const c = comp.get(r);
      if (c) c.push(i);
      else comp.set(r, [i]);
    }
    const isRep = new Uint8Array(n).fill(1);
    const clusters: DedupCluster[] = [];
    // each cluster's members (block positions), in its members' order
    const clusterMembers: number[][] = [];
    const nearProbe = new SetProbe();
    const structProbe = new SetProbe();
    // A member's Jaccard with the representative is that of any block with the same set:
    // computed once per set in a cluster (10^6 renamed copies of a few hundred blocks have
    // a few hundred distinct structural sets). Members that are not heads (exact copies)
    // take their head's set when it is element for element theirs.
    const nearMemo = new Map<number, number>();
    const structMemo = new Map<number, number>();
    const score = (probe: SetProbe, set: Column, same: Int32Array, memo: Map<number, number>, m: number) => {
      const h = headOf[m];
      const k = h >= 0 && same[h] >= 0 && (h === m || sameSet(set, m, h)) ? same[h] : -1;
      if (k < 0) return probe.jaccard(set, m);
      let v = memo.get(k);
      if (v === undefined) {
        v = probe.jaccard(set, k);
        memo.set(k, v);
      }
      return v;
    };
    for (const members of comp.values()) {
      if (members.length < 2) continue;
      let rep = members[0];
      for (const m of members) if (better(m, rep)) rep = m;
      for (const m of members) if (m !== rep) isRep[m] = 0;
      let kind: DupKind = 'exact';
      const h0 = headOf[members[0]];
      if (members.some((m) => headOf[m] !== h0)) {
        const r0 = ufNear.find(members[0]);
        kind = members.every((m) => ufNear.find(m) === r0) ? 'near' : 'structural';
      }
      // members are in block order: in id order already when the blocks are (as the store
      // lists them)
      const sorted = idOrder
        ? members
        : [...members].sort((a, b) => (blocks[a].id < blocks[b].id ? -1 : blocks[a].id > blocks[b].id ? 1 : 0));
      const round = (v: number) => Math.round(v * 10000) / 10000;
      // every member against the representative: its sets are probed, not merged
      nearProbe.load(S.nearSet, rep);
      structProbe.load(S.structSet, rep);
      nearMemo.clear();
      structMemo.clear();
      clusterMembers.push(sorted);
      clusters.push({
        kind,
        representative: blocks[rep].id,
        members: sorted.map((m) => blocks[m].id),
        scores: sorted.map((m) => ({
          id: blocks[m].id,
          exact: headOf[m] === headOf[rep],
          near: round(score(nearProbe, S.nearSet, nearSame, nearMemo, m)),
          structural: round(score(structProbe, S.structSet, structSame, structMemo, m)),
        })),
      });
    }
    // clusters by representative; memberOf[i]: the place of block i's cluster there
    const order = clusters.map((_, k) => k);
    order.sort((a, b) => {
      const ra = clusters[a].representative,
        rb = clusters[b].representative;
      return ra < rb ? -1 : ra > rb ? 1 : 0;
    });
    const memberOf = new Int32Array(n).fill(-1);
    order.forEach((k, j) => {
      for (const m of clusterMembers[k]) memberOf[m] = j;
    });
    const byRep = order.map((k) => clusters[k]);
    let uniqueCount = 0;
    const perRepo: DedupResult['perRepo'] = {};
    for (let i = 0; i < n; i++) {
      const r = (perRepo[blocks[i].repo] ??= { total: 0, unique: 0, share: 0, uniqueRate: 0 });
      r.total++;
      if (isRep[i]) {
        r.unique++;
        uniqueCount++;
      }
    }
    for (const r of Object.values(perRepo)) {
      r.share = uniqueCount ? r.unique / uniqueCount : 0;
      r.uniqueRate = r.total ? r.unique / r.total : 0;
    }
    const excluded = [...bad.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([i, reason]) => ({ id: blocks[i].id, reason }));
    tick('report');
    return {
      clusters: byRep,
      memberOf,
      uniqueCount,
      total: n,
      perRepo,
      excluded,
      timings,
      cpu,
      syntaxChecked,
      signatures: { stored: storedCount, computed: n - storedCount },
      boundedBuckets: lshStats.bounded,
      largestBoundedBucket: lshStats.largest,
    };
  } finally {
    await pools[0]?.close();
  }
}
