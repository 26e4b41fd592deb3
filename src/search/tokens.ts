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
  const words = [...q.matchAll(WORD)].map((m) => m[0]).filter((w) => identifierParts(w).length > 0);
  if (!words.length) return { all: null, any: null, words: [] };
  const groups = words.map((w, wi) => {
    const parts = identifierParts(w);
    const last = wi === words.length - 1;
    // a prefix query scans every indexed word that starts with the term (measured 4× the
    // cost of the word itself on 10,000 blocks), so a last word that is already an indexed
    // word is matched as a word
    const term = (t: string, prefix: boolean) => quoteTerm(t) + (prefix && t.length >= 2 && !opts.isWord?.(t) ? '*' : '');
    if (parts.length === 1) return term(parts[0], last);
    const joined = parts.join('');
    const seq = parts.map((p, i) => term(p, last && i === parts.length - 1)).join(' AND ');
    return `(${term(joined, last)} OR (${seq}))`;
  });
  return {
    all: groups.join(' AND '),
    any: groups.length > 1 ? groups.join(' OR ') : null,
    words: words.map((w) => w.toLowerCase()),
  };
}
