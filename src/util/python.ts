// Python language facts the stages share, written once: the keywords, and how a relative
// import names its module.

/** Hard keywords: Python 3.12's `keyword.kwlist` (Language Reference §2.3.1). They can
 *  never be names (`import class` and `def None()` are syntax errors). */
export const PYTHON_KEYWORDS: ReadonlySet<string> = new Set([
  'False',
  'None',
  'True',
  'and',
  'as',
  'assert',
  'async',
  'await',
  'break',
  'class',
  'continue',
  'def',
  'del',
  'elif',
  'else',
  'except',
  'finally',
  'for',
  'from',
  'global',
  'if',
  'import',
  'in',
  'is',
  'lambda',
  'nonlocal',
  'not',
  'or',
  'pass',
  'raise',
  'return',
  'try',
  'while',
  'with',
  'yield',
]);

/** Soft keywords: `keyword.softkwlist` (§2.3.2): keywords only in their statements, names elsewhere. */
export const PYTHON_SOFT_KEYWORDS: ReadonlySet<string> = new Set(['_', 'case', 'match', 'type']);

/**
 * The absolute module a `from` import names (PEP 328; Language Reference §5.7): `level`
 * leading dots count up from the importing module's package (`importer` itself when it is
 * a package's `__init__`), then `module` (possibly empty: `from . import x`) is appended.
 * Null when the dots go above the top-level package.
 */
export function absoluteImport(importer: string, isPackage: boolean, level: number, module: string): string | null {
  if (level === 0) return module;
  const parts = importer.split('.');
  if (!isPackage) parts.pop();
  const up = level - 1;
  if (up > parts.length || (up === parts.length && !module)) return null;
  const base = parts.slice(0, parts.length - up);
  if (module) base.push(module);
  return base.join('.');
}

/** Every character that ends a line for Python's `str.splitlines` (\n, \r, \x0b, \x0c,
 *  \x1c–\x1e, \x85, \u2028, \u2029): the tokenizer ends a comment at \n and \r (Language
 *  Reference §2.1.2–2.1.3); editors and other readers break at the others. */
const LINE_BREAKS = /\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]/;

/** `text` with control characters (C0 but tab, DEL, C1) and the other Unicode line and
 *  paragraph separators shown as `\xNN` / `\uNNNN` escapes: safe on one line of a file
 *  or a terminal. */
export function escapeControls(text: string): string {
  return text.replace(/[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]/g, (c) => {
    const n = c.charCodeAt(0);
    return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
  });
}

/** `text` as a block of Python comment lines: split on every line break
 *  (`LINE_BREAKS`), each line's remaining control characters escaped, each line prefixed
 *  with `prefix` (`# `), so nothing in `text` can end the comment and become code. */
export function commentBlock(text: string, prefix = '# '): string {
  return text
    .split(LINE_BREAKS)
    .map((l) => `${prefix}${escapeControls(l)}`.trimEnd())
    .join('\n');
}
