// Tokens for the block search index and safe FTS5 queries.
//
// FTS5's unicode61 tokenizer splits on anything that is not a letter or a digit (so
// `qkv_bias` is already "qkv" + "bias"), but it keeps `WindowAttention` or `conv2d` as
// one token. Documents are therefore indexed with every identifier expanded: the
// camelCase / acronym / letter-digit parts plus the joined word, lower-cased
// (`WindowAttention` → "window attention windowattention", `MHSAttention` → "mhs
// attention mhsattention", `Conv2d` → "conv 2d conv2d", `qkv_bias` → "qkv bias
// qkvbias"). Queries are split the same way and every term is emitted as a quoted FTS5
// string, so no user input is ever read as FTS5 syntax (AND/OR/NOT/NEAR, `*`, `^`,
// column filters, parentheses or quotes).

const WORD = /[\p{L}\p{N}_]+/gu;

/** The parts of one identifier: `WindowAttention` → [window, attention];
 *  `HTTPServer2d` → [http, server, 2d]; `qkv_bias` → [qkv, bias]. */
export function identifierParts(word: string): string[] {
  const parts: string[] = [];
  for (const chunk of word.split(/_+/)) {
    if (!chunk) continue;
    // boundaries: lower→Upper, ACRONYM→Word (the last capital starts the next word),
    // letter→digit; a digit run keeps the lower-case letters after it (`2d`, `3x`)
    const m = chunk.match(/\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+|\p{N}+\p{Ll}*|[^\p{L}\p{N}]+/gu) ?? [chunk];
    for (const p of m) if (/[\p{L}\p{N}]/u.test(p)) parts.push(p.toLowerCase());
  }
  return parts;
}

/** Expand every identifier of a text into its parts plus the joined word. */
export function expandText(text: string): string {
  const out: string[] = [];
  for (const m of text.matchAll(WORD)) {
    const w = m[0];
    const parts = identifierParts(w);
    out.push(...parts);
    const joined = parts.join('');
    if (parts.length > 1 && joined) out.push(joined);
  }
  return out.join(' ');
}

/** Quote one term as an FTS5 string (`"` doubled, per the FTS5 query syntax). */
export function quoteTerm(t: string): string {
  return `"${t.replace(/"/g, '""')}"`;
}

export interface ParsedQuery {
  /** FTS5 MATCH expression where every query word must match, or null for an empty query */
  all: string | null;
  /** the same words where any may match (a fallback when `all` finds nothing) */
  any: string | null;
  /** the lower-cased words of the query */
  words: string[];
}

/**
 * Turn free text into FTS5 MATCH expressions. Each word becomes a group that matches the
 * joined word or all of its parts (`WindowAttention` → `("windowattention"* OR
 * ("window" "attention"*))`); the last part of the last word is a prefix query (unless
 * `isWord` says it is a whole indexed word), so a query typed halfway ("window att")
 * still finds its block.
 */
export function parseQuery(q: string, opts: { isWord?: (term: string) => boolean } = {}): ParsedQuery {
  // one word's expression is queryWords' (below): the ranked search reads the words one
  // by one, this joins them for a plain FTS5 query
  const words = queryWords(q, opts);
  if (!words.length) return { all: null, any: null, words: [] };
  const groups = words.map((w) => w.expr);
  return {
    all: groups.join(' AND '),
    any: groups.length > 1 ? groups.join(' OR ') : null,
    words: words.map((w) => w.word),
  };
}

// ---------------------------------------------------------------- related words

/**
 * Groups of words that name the same idea in neural-network code, so a query in one
 * spelling finds blocks named in another (`residual block` → ResnetBlock, `edge` → Sobel,
 * `upsample` → interpolate). General field vocabulary only (no repository's names).
 * Inflections need no entry: the index and the queries are Porter-stemmed
 * (`upsampling` = `upsample`); entries are for other words and stems Porter keeps
 * apart (`norm` / `normalization`, `detection` / `detector`).
 */
export const RELATED: readonly (readonly string[])[] = [
  ['upsample', 'upsampler', 'upscale', 'interpolate', 'interpolation', 'unpool'],
  ['downsample', 'downsampler', 'downscale', 'decimate'],
  ['residual', 'res', 'resnet', 'skip', 'shortcut'],
  ['edge', 'edges', 'sobel', 'canny', 'laplacian', 'scharr', 'prewitt'],
  ['norm', 'normalization', 'normalisation', 'normalize', 'normalise', 'normalizer'],
  ['embedding', 'embed', 'emb', 'embedder'],
  ['positional', 'position', 'pos'],
  ['attention', 'attn'],
  ['convolution', 'conv', 'convolutional'],
  ['mlp', 'feedforward', 'ffn'],
  ['activation', 'act'],
  ['detection', 'detect', 'detector'],
  ['blur', 'smooth', 'smoothing'],
  ['timestep', 'time'],
  ['rotary', 'rope'],
  ['batchnorm', 'bn'],
];

/** Words that name a structural unit of any network (a block, a layer …): they say little
 *  about what a block does, so a query's other words decide (`residual block` is about
 *  residuals). Their IDF counts 0.3 in a query, and 0.5 as an unmatched part of a name. */
export const GENERIC = new Set([
  'block',
  'blocks',
  'layer',
  'layers',
  'module',
  'modules',
  'unit',
  'stage',
  'net',
  'network',
  'model',
  'wrapper',
  'op',
  'cell',
]);

const relatedIndex = new Map<string, string[]>();
for (const g of RELATED)
  for (const w of g) relatedIndex.set(w, [...(relatedIndex.get(w) ?? []), ...g.filter((x) => x !== w)]);

/** The words related to one lower-case word (not the word itself). */
export function relatedWords(word: string): string[] {
  return [...new Set(relatedIndex.get(word.toLowerCase()) ?? [])];
}

/** One word of a query as FTS5 expressions: `expr` matches the word as written (its
 *  joined form or all of its identifier parts, a prefix when it is the last word and not
 *  an indexed word), `related` matches a related word (null when there is none). */
export interface QueryWord {
  word: string;
  expr: string;
  related: string | null;
}

/** Split free text into words and their FTS5 expressions (every term quoted: no user
 *  input is read as FTS5 syntax). */
export function queryWords(q: string, opts: { isWord?: (term: string) => boolean } = {}): QueryWord[] {
  const words = [...q.matchAll(WORD)].map((m) => m[0]).filter((w) => identifierParts(w).length > 0);
  const seen = new Set<string>();
  const out: QueryWord[] = [];
  words.forEach((w, wi) => {
    const parts = identifierParts(w);
    const joined = parts.join('');
    if (seen.has(joined)) return;
    seen.add(joined);
    const last = wi === words.length - 1;
    // a prefix query scans every indexed word that starts with the term (measured 4× the
    // cost of the word itself on 10,000 blocks), so a last word that is already an indexed
    // word is matched as a word
    const term = (t: string, prefix: boolean) =>
      quoteTerm(t) + (prefix && t.length >= 2 && !opts.isWord?.(t) ? '*' : '');
    const expr =
      parts.length === 1
        ? term(parts[0], last)
        : `(${term(joined, last)} OR (${parts.map((p, i) => term(p, last && i === parts.length - 1)).join(' AND ')}))`;
    // related words of the joined word, and of a part whose related words name the same
    // idea (`ResidualBlock` → `resnet block`)
    const rel = relatedWords(joined);
    let related: string | null = rel.length ? rel.map(quoteTerm).join(' OR ') : null;
    if (!related && parts.length > 1 && parts.some((p) => relatedWords(p).length)) {
      related = parts
        .map((p) => {
          const r = relatedWords(p);
          return r.length ? `(${[p, ...r].map(quoteTerm).join(' OR ')})` : quoteTerm(p);
        })
        .join(' AND ');
    }
    out.push({ word: joined, expr, related });
  });
  return out;
}

/** Do two lower-case words share a stem? Either is the other, or the longer starts with
 *  the shorter (≥ 3 letters) less a final `e` (`upsample` / `upsampling`, `norm` /
 *  `normalization`, `emb` / `embedding`). The index compares Porter stems; this looser test
 *  only decides how much of a block's name a query covers. */
export function sameStem(a: string, b: string): boolean {
  if (a === b) return true;
  const [s, l] = a.length <= b.length ? [a, b] : [b, a];
  if (s.length < 3 || /^\d/.test(s)) return false;
  return l.startsWith(s.endsWith('e') && s.length > 3 ? s.slice(0, -1) : s);
}

/**
 * How much of a class name the query words cover, 0–1: each part of the name counts 1
 * when a query word (or one of its identifier parts) shares its stem, 0.8 when it is a
 * related word; a generic part (GENERIC) weighs 0.5. `Residual` for "residual block" is
 * 1, `ResnetBlock` 0.87, `LinearAttention` for "attention" 0.5.
 */
export function nameCoverage(name: string, words: readonly string[]): number {
  return partsCoverer(words)(identifierParts(name));
}

/** nameCoverage of a name given by its identifier parts (a caller that keeps the parts of
 *  its names, as search does per document, splits each name once, not once per query). */
export function partsCoverer(words: readonly string[]): (parts: readonly string[]) => number {
  const qs = [...new Set(words.flatMap((w) => [w, ...identifierParts(w)]))];
  const rel = new Set(qs.flatMap(relatedWords));
  const partScore = new Map<string, number>();
  const part = (p: string) => {
    let v = partScore.get(p);
    if (v === undefined) {
      v = qs.some((q) => sameStem(p, q)) ? 1 : rel.has(p) ? 0.8 : 0;
      partScore.set(p, v);
    }
    return v;
  };
  return (parts) => {
    let got = 0;
    let all = 0;
    for (const p of parts) {
      const w = GENERIC.has(p) ? 0.5 : 1;
      all += w;
      got += part(p) * w;
    }
    return all ? got / all : 0;
  };
}
