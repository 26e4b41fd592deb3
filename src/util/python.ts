// Python language facts the stages share, written once: the keywords, and how a relative
// import names its module.

/** Hard keywords: Python 3.12's `keyword.kwlist` (Language Reference §2.3.1). They can
 *  never be names (`import class` and `def None()` are syntax errors). */
export const PYTHON_KEYWORDS: ReadonlySet<string> = new Set([
  'False', 'None', 'True', 'and', 'as', 'assert', 'async', 'await', 'break', 'class', 'continue',
  'def', 'del', 'elif', 'else', 'except', 'finally', 'for', 'from', 'global', 'if', 'import', 'in',
  'is', 'lambda', 'nonlocal', 'not', 'or', 'pass', 'raise', 'return', 'try', 'while', 'with', 'yield',
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
