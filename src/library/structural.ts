// Token streams of Python source for de-duplication: a fast hand-written tokenizer
// (Python Language Reference §2 "Lexical analysis") and the three views dedup compares:
//
//  - exact:      every token's text, comments and docstrings dropped, whitespace reduced to
//                the logical-line structure (NEWLINE / INDENT / DEDENT tokens);
//  - near:       the same token stream, hashed token by token (for 5-gram shingles);
//  - structural: the same stream with *identifiers bound inside the block* (class/def names,
//                parameters, assignment/for/with/except targets, `self.<attr>` attributes the
//                block assigns or defines) abstracted to `ID`, strings to `STR` and float/complex
//                literals to `LIT`. Names the block does not bind (builtins, import aliases such as
//                `nn`, attribute names such as `Linear`, keyword-argument names of calls) and
//                *integer literals* (layer widths, kernel sizes) keep their text.
//
// Why tokens and not tree-sitter here: the parse tree is a function of the token-kind
// sequence, so the abstracted token stream carries the AST shape (which node types, how
// they nest through brackets and INDENT/DEDENT). Measured on this machine, tree-sitter
// (wasm) needs ~0.3–0.5 ms per 50-line block just to parse, i.e. 15–25 s for 100,000 blocks
// on 2 cores, while this tokenizer handles the whole signature pipeline in well under that
// budget. Syntax validity is still decided by a real parser: the caller's `parseable` (from
// validation, i.e. CPython), else tree-sitter for every block that would join a cluster (see
// dedup.ts); this tokenizer rejects lexically broken input (unterminated strings, unbalanced
// brackets, inconsistent dedent, stray characters) itself.
//
// Width rule ("different layer widths are not duplicates"): dedup also compares the multiset
// of integer literals (`intsHash`); near and structural duplicates must have equal multisets.

import { PYTHON_KEYWORDS } from '../util/python.js';
import { fnv1a, mix32 } from '../util/minhash.js';

export enum T {
  NAME = 1,
  KEYWORD = 2,
  INT = 3,
  NUMBER = 4, // float / imaginary
  STRING = 5,
  OP = 6,
  NEWLINE = 7,
  INDENT = 8,
  DEDENT = 9,
}

/** Hard keywords (Python 3.12 `keyword.kwlist`). Soft keywords (match, case, type, _) are names. */
export const KEYWORDS = PYTHON_KEYWORDS;

/** Tokens of one source text in parallel arrays (no per-token objects). */
export interface Tokens {
  src: string;
  n: number;
  kind: Uint8Array;
  start: Int32Array;
  end: Int32Array;
  /** 32-bit FNV-1a hash of the token text (NEWLINE/INDENT/DEDENT: fixed constants;
   *  integers: of their canonical decimal text) */
  hash: Uint32Array;
  /** a second, independent 32-bit hash of the same text */
  hash2: Uint32Array;
  /** bracket depth at the token (before it, for an opening bracket) */
  depth: Int32Array;
  /** first lexical error, or null */
  error: string | null;
}

const H_NEWLINE = fnv1a('\u0000NEWLINE');
const H_INDENT = fnv1a('\u0000INDENT');
const H_DEDENT = fnv1a('\u0000DEDENT');
export const H_ID = fnv1a('\u0000ID');
export const H_STR = fnv1a('\u0000STR');
export const H_LIT = fnv1a('\u0000LIT');

const STRING_PREFIXES = new Set(['r', 'u', 'b', 'br', 'rb', 'f', 'fr', 'rf']);

/** ASCII identifier characters [A-Za-z0-9_] (non-ASCII code units count as identifier
 *  characters: in valid source they only occur in names, strings and comments). */
const ID_CHAR = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  ID_CHAR[c] = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || (c >= 48 && c <= 57) ? 1 : 0;
}

function isIdStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c > 127;
}
function isIdChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || (c >= 48 && c <= 57) || c > 127;
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

class Buf {
  cap = 0;
  kind = new Uint8Array(0);
  start = new Int32Array(0);
  end = new Int32Array(0);
  hash = new Uint32Array(0);
  hash2 = new Uint32Array(0);
  depth = new Int32Array(0);
  ensure(n: number): void {
    if (n <= this.cap) return;
    const cap = Math.max(n, this.cap * 2, 1024);
    const grow = <A extends Uint8Array | Int32Array | Uint32Array>(a: A, C: new (n: number) => A): A => {
      const b = new C(cap);
      b.set(a);
      return b;
    };
    this.kind = grow(this.kind, Uint8Array);
    this.start = grow(this.start, Int32Array);
    this.end = grow(this.end, Int32Array);
    this.hash = grow(this.hash, Uint32Array);
    this.hash2 = grow(this.hash2, Uint32Array);
    this.depth = grow(this.depth, Int32Array);
    this.cap = cap;
  }
}

/** Second, independent 32-bit token hash (multiply-rotate over code units), so that the
 *  exact fingerprint is 64 bits wide. */
export function hash2Range(s: string, start: number, end: number): number {
  let h = 0x3c6ef372;
  for (let i = start; i < end; i++) {
    h = Math.imul(h ^ s.charCodeAt(i), 0x9e3779b1);
    h = (h << 13) | (h >>> 19);
  }
  return mix32(h ^ Math.imul(end - start, 0x85ebca6b));
}

/**
 * A fixed set of 32-bit keys with an int value each, as an open-addressing table (linear
 * probing): a lookup is a few typed-array reads, where a Map of numbers hashes a heap
 * number (a lookup per name token of every block: a fifth of the tokenizer's time).
 */
class U32Table {
  private keys: Uint32Array;
  private vals: Int32Array;
  private mask: number;
  constructor(entries: readonly (readonly [number, number])[]) {
    let size = 16;
    while (size < entries.length * 4) size *= 2;
    this.keys = new Uint32Array(size);
    this.vals = new Int32Array(size).fill(-1);
    this.mask = size - 1;
    for (const [k, v] of entries) {
      let i = U32Table.slot(k >>> 0) & this.mask;
      while (this.vals[i] >= 0 && this.keys[i] !== k >>> 0) i = (i + 1) & this.mask;
      this.keys[i] = k >>> 0;
      this.vals[i] = v;
    }
  }
  private static slot(k: number): number {
    return Math.imul(k ^ (k >>> 16), 0x45d9f3b) >>> 16;
  }
  /** the value of key k (a uint32), or -1 */
  get(k: number): number {
    const keys = this.keys,
      vals = this.vals,
      mask = this.mask;
    let i = U32Table.slot(k) & mask;
    for (;;) {
      const v = vals[i];
      if (v < 0 || keys[i] === k) return v;
      i = (i + 1) & mask;
    }
  }
}

/**
 * A set of small non-negative integers (< 2^31) cleared in O(1) (a generation stamp per
 * slot), for the names one block binds: a JS Set's add/has per name token of every block,
 * and its clear per block, were a fifth of the structural view's time.
 */
class IntSet {
  private keys = new Int32Array(1024);
  private gens = new Uint32Array(1024);
  private gen = 1;
  private count = 0;
  clear(): void {
    this.count = 0;
    if (++this.gen === 0xffffffff) {
      this.gens.fill(0);
      this.gen = 1;
    }
  }
  has(k: number): boolean {
    const keys = this.keys,
      gens = this.gens,
      mask = keys.length - 1,
      gen = this.gen;
    let i = IntSet.slot(k) & mask;
    for (;;) {
      if (gens[i] !== gen) return false;
      if (keys[i] === k) return true;
      i = (i + 1) & mask;
    }
  }
  add(k: number): void {
    if ((this.count + 1) * 2 > this.keys.length) this.grow();
    const keys = this.keys,
      gens = this.gens,
      mask = keys.length - 1,
      gen = this.gen;
    let i = IntSet.slot(k) & mask;
    for (;;) {
      if (gens[i] !== gen) {
        gens[i] = gen;
        keys[i] = k;
        this.count++;
        return;
      }
      if (keys[i] === k) return;
      i = (i + 1) & mask;
    }
  }
  private static slot(k: number): number {
    const x = Math.imul(k, 0x9e3779b1);
    return x ^ (x >>> 16);
  }
  private grow(): void {
    const old = this.keys,
      oldGens = this.gens,
      gen = this.gen;
    this.keys = new Int32Array(old.length * 2);
    this.gens = new Uint32Array(old.length * 2);
    this.count = 0;
    for (let i = 0; i < old.length; i++) if (oldGens[i] === gen) this.add(old[i]);
  }
}

/** Keywords by FNV-1a hash (verified against the text on a hit). */
const KW_LIST = [...KEYWORDS];
const KW_BY_HASH = new U32Table(KW_LIST.map((k, i) => [fnv1a(k), i]));

/**
 * Tokenize Python source. Comments and blank lines are dropped; NEWLINE/INDENT/DEDENT
 * follow the reference tokenizer (implicit line joining inside brackets, backslash
 * continuation, tabs to the next multiple of 8). With `reuse`, the arrays are scratch
 * buffers overwritten by the next call (the hot path of dedup); otherwise they are copies.
 * Checked token-for-token against CPython's `tokenize` module on all of timm (test).
 */
export function tokenize(src: string, reuse = false): Tokens {
  const B = reuse ? sharedBuf : new Buf();
  B.ensure(Math.max(64, src.length >> 2));
  let n = 0;
  let error: string | null = null;
  const len = src.length;
  let pos = 0;
  const indents: number[] = [0];
  const brackets: number[] = [];
  let atLineStart = true;
  let lineHasTokens = false;

  // append a token whose hashes are computed from its text src[s, e)
  const push = (k: number, s: number, e: number) => {
    if (n >= B.cap) B.ensure(n + 1);
    let h = 0x811c9dc5;
    let g = 0x3c6ef372;
    for (let i = s; i < e; i++) {
      const c = src.charCodeAt(i);
      h = Math.imul(h ^ c, 0x01000193);
      g = Math.imul(g ^ c, 0x9e3779b1);
      g = (g << 13) | (g >>> 19);
    }
    B.kind[n] = k;
    B.start[n] = s;
    B.end[n] = e;
    B.hash[n] = h >>> 0;
    B.hash2[n] = mix32(g ^ Math.imul(e - s, 0x85ebca6b));
    B.depth[n] = brackets.length;
    n++;
  };
  const pushFixed = (k: number, at: number, h: number) => {
    if (n >= B.cap) B.ensure(n + 1);
    B.kind[n] = k;
    B.start[n] = at;
    B.end[n] = at;
    B.hash[n] = h;
    B.hash2[n] = h;
    B.depth[n] = brackets.length;
    n++;
  };
  // skip a UTF-8 BOM
  if (src.charCodeAt(0) === 0xfeff) pos = 1;

  while (pos < len) {
    if (atLineStart && brackets.length === 0) {
      // measure indentation of a new logical line
      let col = 0;
      while (pos < len) {
        const c = src.charCodeAt(pos);
        if (c === 32) col++;
        else if (c === 9) col = (col & ~7) + 8;
        else if (c === 12) col = 0;
        else break;
        pos++;
      }
      if (pos >= len) break;
      const c = src.charCodeAt(pos);
      if (c === 10 || c === 13 || c === 35) {
        // blank or comment-only line: no NEWLINE, no indentation change
        while (pos < len && src.charCodeAt(pos) !== 10) pos++;
        pos++;
        continue;
      }
      const top = indents[indents.length - 1];
      if (col > top) {
        indents.push(col);
        pushFixed(T.INDENT, pos, H_INDENT);
      } else if (col < top) {
        while (indents.length > 1 && indents[indents.length - 1] > col) {
          indents.pop();
          pushFixed(T.DEDENT, pos, H_DEDENT);
        }
        if (indents[indents.length - 1] !== col) {
          error = `inconsistent dedent at offset ${pos}`;
          break;
        }
      }
      atLineStart = false;
      lineHasTokens = false;
    }
    const c = src.charCodeAt(pos);
    if (c === 32 || c === 9 || c === 12) {
      pos++;
      continue;
    }
    if (c === 10 || c === 13) {
      if (c === 13 && src.charCodeAt(pos + 1) === 10) pos++;
      pos++;
      if (brackets.length === 0) {
        if (lineHasTokens) pushFixed(T.NEWLINE, pos, H_NEWLINE);
        atLineStart = true;
      }
      continue;
    }
    if (c === 35) {
      while (pos < len && src.charCodeAt(pos) !== 10 && src.charCodeAt(pos) !== 13) pos++;
      continue;
    }
    if (c === 92) {
      // explicit line joining (§2.1.5): backslash must end the physical line
      const d = src.charCodeAt(pos + 1);
      if (d === 10) {
        pos += 2;
        continue;
      }
      if (d === 13) {
        pos += src.charCodeAt(pos + 2) === 10 ? 3 : 2;
        continue;
      }
      error = `unexpected character after line continuation at offset ${pos}`;
      break;
    }
    lineHasTokens = true;
    const s = pos;
    if (isIdStart(c)) {
      // scan the name and compute both token hashes in the same loop
      let h = Math.imul(0x811c9dc5 ^ c, 0x01000193);
      let g = Math.imul(0x3c6ef372 ^ c, 0x9e3779b1);
      g = (g << 13) | (g >>> 19);
      pos++;
      for (; pos < len; pos++) {
        const d = src.charCodeAt(pos);
        if (d < 128 ? ID_CHAR[d] === 0 : false) break;
        h = Math.imul(h ^ d, 0x01000193);
        g = Math.imul(g ^ d, 0x9e3779b1);
        g = (g << 13) | (g >>> 19);
      }
      const q = src.charCodeAt(pos);
      if ((q === 34 || q === 39) && pos - s <= 2 && STRING_PREFIXES.has(src.slice(s, pos).toLowerCase())) {
        const e = scanString(src, pos);
        if (e < 0) {
          error = `unterminated string at offset ${s}`;
          break;
        }
        pos = e;
        push(T.STRING, s, pos);
        continue;
      }
      h >>>= 0;
      const ki = pos - s <= 8 ? KW_BY_HASH.get(h) : -1;
      const kw = ki >= 0 ? KW_LIST[ki] : undefined;
      if (n >= B.cap) B.ensure(n + 1);
      B.kind[n] = kw !== undefined && kw.length === pos - s && src.startsWith(kw, s) ? T.KEYWORD : T.NAME;
      B.start[n] = s;
      B.end[n] = pos;
      B.hash[n] = h;
      // same as push(): the second hash is seeded with the length, so fold it in here
      B.hash2[n] = mix32(g ^ Math.imul(pos - s, 0x85ebca6b));
      B.depth[n] = brackets.length;
      n++;
      continue;
    }
    if (c === 34 || c === 39) {
      const e = scanString(src, pos);
      if (e < 0) {
        error = `unterminated string at offset ${s}`;
        break;
      }
      pos = e;
      push(T.STRING, s, pos);
      continue;
    }
    if (isDigit(c) || (c === 46 && isDigit(src.charCodeAt(pos + 1)))) {
      const r = scanNumber(src, pos);
      pos = r.end;
      if (r.int) {
        push(T.INT, s, pos);
        if (!plainDecimal(src, s, pos)) {
          // non-canonical spelling (0x40, 6_4, 00): hash the canonical decimal text
          const t = intText(src, s, pos);
          B.hash[n - 1] = fnv1a(t);
          B.hash2[n - 1] = hash2Range(t, 0, t.length);
        }
      } else push(T.NUMBER, s, pos);
      continue;
    }
    // operators and delimiters, longest match (§2.5, §2.6)
    const c1 = src.charCodeAt(pos + 1);
    let opLen = 1;
    switch (c) {
      case 40:
      case 91:
      case 123: // ( [ {
        push(T.OP, s, s + 1);
        brackets.push(c);
        pos++;
        continue;
      case 41:
      case 93:
      case 125: {
        // ) ] }
        const open = brackets.pop();
        if (open !== (c === 41 ? 40 : c - 2)) {
          error = `unmatched ${src[pos]} at offset ${pos}`;
          break;
        }
        push(T.OP, s, s + 1);
        pos++;
        continue;
      }
      case 44:
      case 59:
      case 126: // , ; ~
        break;
      case 46: // . ...
        if (c1 === 46 && src.charCodeAt(pos + 2) === 46) opLen = 3;
        break;
      case 58:
      case 61: // : := = ==
        if (c1 === 61) opLen = 2;
        break;
      case 33: // !=
        if (c1 === 61) opLen = 2;
        else opLen = 0;
        break;
      case 45: // - -> -=
        if (c1 === 62 || c1 === 61) opLen = 2;
        break;
      case 43:
      case 37:
      case 38:
      case 124:
      case 94:
      case 64: // + % & | ^ @  (X=)
        if (c1 === 61) opLen = 2;
        break;
      case 42:
      case 47:
      case 60:
      case 62: // * / < > : doubled, X=, doubled X=
        if (c1 === c) opLen = src.charCodeAt(pos + 2) === 61 ? 3 : 2;
        else if (c1 === 61) opLen = 2;
        break;
      default:
        opLen = 0;
    }
    if (error) break;
    if (opLen === 0) {
      error = `invalid character ${JSON.stringify(src[pos])} at offset ${pos}`;
      break;
    }
    pos += opLen;
    push(T.OP, s, pos);
  }
  if (!error && brackets.length > 0) error = 'unclosed bracket at end of input';
  if (!error) {
    if (lineHasTokens && n > 0 && B.kind[n - 1] !== T.NEWLINE) pushFixed(T.NEWLINE, len, H_NEWLINE);
    while (indents.length > 1) {
      indents.pop();
      pushFixed(T.DEDENT, len, H_DEDENT);
    }
  }
  const out: Tokens = {
    src,
    n,
    error,
    kind: B.kind,
    start: B.start,
    end: B.end,
    hash: B.hash,
    hash2: B.hash2,
    depth: B.depth,
  };
  if (!reuse) {
    out.kind = B.kind.slice(0, n);
    out.start = B.start.slice(0, n);
    out.end = B.end.slice(0, n);
    out.hash = B.hash.slice(0, n);
    out.hash2 = B.hash2.slice(0, n);
    out.depth = B.depth.slice(0, n);
  }
  return out;
}
const sharedBuf = new Buf();

function plainDecimal(src: string, s: number, e: number): boolean {
  if (e - s > 1 && src.charCodeAt(s) === 48) return false;
  for (let i = s; i < e; i++) {
    const c = src.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** End offset of the string literal whose opening quote is at `q`, or -1 if unterminated.
 *  A backslash always keeps the next character in the literal (also in raw strings, §2.4.1). */
function scanString(src: string, q: number): number {
  const quote = src.charCodeAt(q);
  const len = src.length;
  const triple = src.charCodeAt(q + 1) === quote && src.charCodeAt(q + 2) === quote;
  let p = q + (triple ? 3 : 1);
  while (p < len) {
    const c = src.charCodeAt(p);
    if (c === 92) {
      p += 2;
      continue;
    }
    if (c === quote) {
      if (!triple) return p + 1;
      if (src.charCodeAt(p + 1) === quote && src.charCodeAt(p + 2) === quote) return p + 3;
    } else if (!triple && (c === 10 || c === 13)) {
      return -1;
    }
    p++;
  }
  return -1;
}

/** Scan a numeric literal (§2.4.5–2.4.7); `int` is true for integer literals. */
function scanNumber(src: string, p: number): { end: number; int: boolean } {
  const len = src.length;
  const c0 = src.charCodeAt(p);
  const c1 = src.charCodeAt(p + 1) | 32;
  if (c0 === 48 && (c1 === 120 || c1 === 111 || c1 === 98)) {
    p += 2;
    while (p < len && isIdChar(src.charCodeAt(p))) p++;
    return { end: p, int: true };
  }
  let int = true;
  while (p < len && (isDigit(src.charCodeAt(p)) || src.charCodeAt(p) === 95)) p++;
  if (src.charCodeAt(p) === 46) {
    int = false;
    p++;
    while (p < len && (isDigit(src.charCodeAt(p)) || src.charCodeAt(p) === 95)) p++;
  }
  const e = src.charCodeAt(p) | 32;
  if (e === 101) {
    const s = src.charCodeAt(p + 1);
    const q = s === 43 || s === 45 ? p + 2 : p + 1;
    if (isDigit(src.charCodeAt(q))) {
      int = false;
      p = q;
      while (p < len && (isDigit(src.charCodeAt(p)) || src.charCodeAt(p) === 95)) p++;
    }
  }
  if ((src.charCodeAt(p) | 32) === 106) {
    int = false;
    p++;
  }
  return { end: p, int };
}

/** Canonical text of an integer literal: underscores removed, lower case, decimal when it
 *  fits a double exactly (so `0x40`, `64` and `6_4` are the same width). */
export function intText(src: string, s: number, e: number): string {
  let t = src.slice(s, e).replace(/_/g, '').toLowerCase();
  if (t.length > 1 && t[0] === '0' && (t[1] === 'x' || t[1] === 'o' || t[1] === 'b')) {
    const v = parseInt(t.slice(2), t[1] === 'x' ? 16 : t[1] === 'o' ? 8 : 2);
    if (Number.isSafeInteger(v)) t = String(v);
  } else if (t.length > 1) {
    t = t.replace(/^0+(?=\d)/, '');
  }
  return t;
}

// ---------------------------------------------------------------------------------------
// Docstrings (PEP 257): a string-literal expression statement that is the first statement
// of a module, class or function body. We drop it from every view, in the common layout
// where it is on its own logical line. f-strings and bytes are not docstrings.

function isDocString(t: Tokens, i: number): boolean {
  const c = t.src.charCodeAt(t.start[i]) | 32;
  if (c === 102 || c === 98) return false; // f"..." / b"..."
  const c2 = t.src.charCodeAt(t.start[i] + 1) | 32;
  if (c === 114 && (c2 === 102 || c2 === 98)) return false; // rf / rb
  return true;
}

const HK_DEF = fnv1a('def');
const HK_CLASS = fnv1a('class');
const HK_ASYNC = fnv1a('async');
const HK_FOR = fnv1a('for');
const HK_IN = fnv1a('in');
const HK_AS = fnv1a('as');
const HK_LAMBDA = fnv1a('lambda');
const HK_IMPORT = fnv1a('import');
const HK_FROM = fnv1a('from');
const HN_SELF = fnv1a('self');
const HN_CLS = fnv1a('cls');
const HO_DOT = fnv1a('.');
const HO_LPAR = fnv1a('(');
const HO_LSQB = fnv1a('[');
const HO_COMMA = fnv1a(',');
const HO_STAR = fnv1a('*');
const HO_DSTAR = fnv1a('**');
const HO_EQ = fnv1a('=');
const HO_COLON = fnv1a(':');
const HO_WALRUS = fnv1a(':=');
const HO_AT = fnv1a('@');
/** augmented assignment operators (§7.2.1) */
const HO_AUG = new U32Table(
  ['+=', '-=', '*=', '/=', '//=', '%=', '@=', '&=', '|=', '^=', '>>=', '<<=', '**='].map((o) => [fnv1a(o), 1]),
);

/**
 * Mark tokens to keep (1) or drop (0, docstring statements). Returns the number kept.
 */
export function docstringMask(t: Tokens, keep: Uint8Array): number {
  const { n, kind, hash } = t;
  keep.fill(1, 0, n);
  let kept = n;
  // `expectDoc` is true at the first statement of the module, and at the first statement
  // after the INDENT that follows a `def`/`class` header line.
  let expectDoc = true;
  let headerIsDef = false; // the logical line that just ended started with def/class
  let lineStart = true;
  for (let i = 0; i < n; i++) {
    const k = kind[i];
    if (k === T.INDENT) {
      if (headerIsDef) expectDoc = true;
      continue;
    }
    if (k === T.DEDENT) {
      expectDoc = false;
      continue;
    }
    if (lineStart) {
      lineStart = false;
      // first token of a logical line
      if (expectDoc && k === T.STRING) {
        let j = i;
        while (j < n && kind[j] === T.STRING) j++;
        if (j < n && kind[j] === T.NEWLINE) {
          let doc = true;
          for (let m = i; m < j; m++) if (!isDocString(t, m)) doc = false;
          if (doc) {
            for (let m = i; m <= j; m++) keep[m] = 0;
            kept -= j - i + 1;
            i = j;
            lineStart = true;
            expectDoc = false;
            headerIsDef = false;
            continue;
          }
        }
      }
      expectDoc = false;
      headerIsDef =
        k === T.KEYWORD &&
        (hash[i] === HK_DEF || hash[i] === HK_CLASS || (hash[i] === HK_ASYNC && i + 1 < n && hash[i + 1] === HK_DEF));
    }
    if (k === T.NEWLINE) lineStart = true;
  }
  return kept;
}

// ---------------------------------------------------------------------------------------
// Bound names (for identifier abstraction in the structural view). A token-level
// approximation of Python's binding rules (Language Reference §4.2.1): names bound by
// `def`/`class`, parameters (also of lambdas), assignment / augmented / annotated
// assignment targets, `for` targets (statements and comprehensions), `with … as`,
// `except … as`, walrus targets (PEP 572); plus attributes the block assigns through
// `self.<attr> = …` (or defines as methods). Import bindings are deliberately *not*
// abstracted: `nn`, `F`, `torch` name external APIs, and a copy renames its own names, not
// its imports. Keyword-argument names in calls (`bias=False`) name the callee's parameters
// and keep their text. Names are compared by their 32-bit hash.

const ROLE_BIND = 1; // a binding occurrence: always ID
const ROLE_KWARG = 2; // keyword-argument name in a call: keep text
let roleBuf = new Uint8Array(1024);
const boundSet = new IntSet();
const attrSet = new IntSet();
const KEY_MASK = 0x3fffffff;

/**
 * Structural token hashes: `out[j]` for the j-th kept token. Returns the count.
 */
export function structuralHashes(t: Tokens, keep: Uint8Array, out: Uint32Array): number {
  const { n, kind, depth, hash } = t;
  if (roleBuf.length < n) roleBuf = new Uint8Array(n * 2);
  const role = roleBuf;
  role.fill(0, 0, n);
  // keys are the low 30 bits of the name hash (small integers: no boxing in the Set)
  const bound = boundSet;
  const attrs = attrSet;
  bound.clear();
  attrs.clear();
  const isOp = (i: number, h: number) => i >= 0 && i < n && kind[i] === T.OP && hash[i] === h;
  const isKw = (i: number, h: number) => i >= 0 && i < n && kind[i] === T.KEYWORD && hash[i] === h;
  const bind = (i: number) => {
    role[i] = ROLE_BIND;
    bound.add(hash[i] & KEY_MASK);
  };
  const isSelf = (i: number) =>
    i >= 0 && kind[i] === T.NAME && (hash[i] === HN_SELF || hash[i] === HN_CLS) && !isOp(i - 1, HO_DOT);

  // pass 1: logical lines
  let a = 0;
  while (a < n) {
    while (a < n && (kind[a] === T.INDENT || kind[a] === T.DEDENT || kind[a] === T.NEWLINE || !keep[a])) a++;
    if (a >= n) break;
    let b = a;
    while (b < n && kind[b] !== T.NEWLINE) b++;
    // the logical line is [a, b)
    const first = a;
    const isImport = isKw(first, HK_IMPORT) || isKw(first, HK_FROM);
    let defAt = -1;
    if (isKw(first, HK_DEF) || isKw(first, HK_CLASS)) defAt = first;
    else if (isKw(first, HK_ASYNC) && isKw(first + 1, HK_DEF)) defAt = first + 1;
    else if (isOp(first, HO_AT)) defAt = -2; // decorator line
    if (defAt >= 0 && defAt + 1 < b && kind[defAt + 1] === T.NAME) {
      bind(defAt + 1);
      if (hash[defAt] === HK_DEF) {
        // parameters: names one bracket deeper than `def`, right after ( , * **
        const d0 = depth[defAt];
        for (let i = defAt + 2; i < b; i++) {
          if (kind[i] === T.NAME && depth[i] === d0 + 1) {
            const p = i - 1;
            if (isOp(p, HO_LPAR) || isOp(p, HO_COMMA) || isOp(p, HO_STAR) || isOp(p, HO_DSTAR)) bind(i);
          }
        }
      }
    }
    if (!isImport) {
      // assignment targets: everything before the last top-level `=` or augmented operator;
      // annotated targets `x: T` / `self.x: T`
      let targetEnd = -1;
      const d0 = depth[first];
      if (defAt === -1) {
        for (let i = first; i < b; i++) {
          if (kind[i] === T.OP && depth[i] === d0 && (hash[i] === HO_EQ || HO_AUG.get(hash[i]) > 0)) targetEnd = i;
        }
        if (kind[first] === T.NAME && isOp(first + 1, HO_COLON)) targetEnd = Math.max(targetEnd, first + 1);
        if (isSelf(first) && isOp(first + 1, HO_DOT) && isOp(first + 3, HO_COLON))
          targetEnd = Math.max(targetEnd, first + 3);
      }
      for (let i = first; i < targetEnd; i++) {
        if (kind[i] !== T.NAME) continue;
        if (isOp(i - 1, HO_DOT)) {
          if (i - 2 >= first && isSelf(i - 2)) attrs.add(hash[i] & KEY_MASK);
          continue;
        }
        if (depth[i] !== d0 && !isOp(i - 1, HO_LPAR) && !isOp(i - 1, HO_COMMA)) continue;
        if (isOp(i + 1, HO_DOT) || isOp(i + 1, HO_LSQB) || isOp(i + 1, HO_LPAR)) continue;
        bind(i);
      }
      for (let i = first; i < b; i++) {
        const k = kind[i];
        if (k === T.KEYWORD) {
          const h = hash[i];
          if (h === HK_FOR) {
            // for-targets (statement or comprehension) up to the matching `in`
            for (let j = i + 1; j < b && !(isKw(j, HK_IN) && depth[j] === depth[i]); j++) {
              if (kind[j] === T.NAME && !isOp(j - 1, HO_DOT)) bind(j);
            }
          } else if (h === HK_AS) {
            if (i + 1 < b && kind[i + 1] === T.NAME) bind(i + 1);
          } else if (h === HK_LAMBDA) {
            for (let j = i + 1; j < b && !(isOp(j, HO_COLON) && depth[j] === depth[i]); j++) {
              if (
                kind[j] === T.NAME &&
                (isKw(j - 1, HK_LAMBDA) || isOp(j - 1, HO_COMMA) || isOp(j - 1, HO_STAR) || isOp(j - 1, HO_DSTAR))
              )
                bind(j);
            }
          }
        } else if (k === T.OP) {
          if (hash[i] === HO_WALRUS && i - 1 >= first && kind[i - 1] === T.NAME) bind(i - 1);
        } else if (
          k === T.NAME &&
          role[i] === 0 &&
          depth[i] > 0 &&
          isOp(i + 1, HO_EQ) &&
          (isOp(i - 1, HO_LPAR) || isOp(i - 1, HO_COMMA))
        ) {
          role[i] = ROLE_KWARG;
        }
      }
    }
    a = b + 1;
  }

  // pass 2: map tokens
  let m = 0;
  for (let i = 0; i < n; i++) {
    if (!keep[i]) continue;
    const k = kind[i];
    let h: number;
    if (k === T.NAME) {
      const r = role[i];
      if (r === ROLE_BIND) h = H_ID;
      else if (r === ROLE_KWARG) h = hash[i];
      else if (i > 0 && kind[i - 1] === T.OP && hash[i - 1] === HO_DOT) {
        h = isSelf(i - 2) && (attrs.has(hash[i] & KEY_MASK) || bound.has(hash[i] & KEY_MASK)) ? H_ID : hash[i];
      } else h = bound.has(hash[i] & KEY_MASK) ? H_ID : hash[i];
    } else if (k === T.STRING) h = H_STR;
    else if (k === T.NUMBER) h = H_LIT;
    else h = hash[i];
    out[m++] = h;
  }
  return m;
}

/** Canonical text of the kept tokens (the "exact" normal form, for display and tests):
 *  tokens separated by a space, logical lines by '\n', INDENT/DEDENT as '\u0001>' / '\u0001<'. */
export function canonicalText(t: Tokens, keep: Uint8Array): string {
  const parts: string[] = [];
  for (let i = 0; i < t.n; i++) {
    if (!keep[i]) continue;
    switch (t.kind[i]) {
      case T.NEWLINE:
        parts.push('\n');
        break;
      case T.INDENT:
        parts.push('\u0001>');
        break;
      case T.DEDENT:
        parts.push('\u0001<');
        break;
      case T.INT:
        parts.push(intText(t.src, t.start[i], t.end[i]));
        break;
      default:
        parts.push(t.src.slice(t.start[i], t.end[i]));
    }
  }
  return parts.join(' ');
}

/** 64-bit fingerprint (16 hex digits) of the normal form: two independent 32-bit hashes
 *  chained over the kept tokens' (kind, text hash) pairs. Equal normal forms always give
 *  equal fingerprints; different ones collide with probability ≈ 2^-64 per pair. */
export function exactFingerprint(t: Tokens, keep: Uint8Array): string {
  let a = 0x811c9dc5,
    b = 0x3c6ef372;
  for (let i = 0; i < t.n; i++) {
    if (!keep[i]) continue;
    a = Math.imul(a ^ t.hash[i], 0xcc9e2d51);
    a = ((a << 15) | (a >>> 17)) ^ t.kind[i];
    b = Math.imul(b ^ t.hash2[i], 0x1b873593);
    b = ((b << 13) | (b >>> 19)) + t.kind[i];
  }
  a = mix32(a);
  b = mix32(b);
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

/** 32-bit hash of the sorted multiset of integer literals among the kept tokens
 *  (0 when there are none). Near/structural duplicates must agree on it. */
export function intsHash(t: Tokens, keep: Uint8Array): number {
  if (intsBuf.length < t.n) intsBuf = new Uint32Array(t.n * 2);
  let k = 0;
  for (let i = 0; i < t.n; i++) if (keep[i] && t.kind[i] === T.INT) intsBuf[k++] = t.hash[i];
  if (k === 0) return 0;
  // a typed array sorts numerically without a comparator call per comparison
  const vals = intsBuf.subarray(0, k).sort();
  let h = 0x811c9dc5;
  for (let i = 0; i < k; i++) h = mix32(h ^ vals[i]);
  return h >>> 0 || 1;
}
let intsBuf = new Uint32Array(256);

/** Number of kept tokens that are real code (not NEWLINE/INDENT/DEDENT). */
export function codeTokenCount(t: Tokens, keep: Uint8Array): number {
  let c = 0;
  for (let i = 0; i < t.n; i++) if (keep[i] && t.kind[i] < T.NEWLINE) c++;
  return c;
}
