// Scoping patterns: which repositories, which files inside them, and which symbols a
// command works on. Three small matchers share this file:
//
// * `matchGlob(pattern, path)` — path globs inside a repository (nn-rag's `paths`,
//   `--path`). Semantics (gitignore-like, but always anchored at the repository root):
//     - `*` matches any characters inside one path segment, `?` one character,
//       `[abc]` / `[!abc]` a character class; `**` as a whole segment matches zero or
//       more segments (`**/layers` matches `layers/x.py` and `a/b/layers/x.py`).
//     - A pattern that matches a *folder* matches everything below it, like a
//       gitignore pattern matching a directory: `timm` and `timm/` match
//       `timm/layers/mlp.py`; `models/*` matches `models/a.py` and also
//       `models/x/b.py` (because `*` matched the folder `x`).
//     - A trailing `/` means "the folder": `timm/` does not match a file named `timm`.
//     - A pattern whose last segment has no `.` also names a Python module file:
//       `models_vit` matches `models_vit.py` (nn-rag's configs write paths this way,
//       e.g. facebookresearch/mae lists `"models_vit.py"` and `"models_mae"`).
//     - Patterns are anchored: `models` means the top-level `models` folder, not
//       `a/models`; write `**/models` for any depth. `''`, `.` and `/` match everything.
// * `symbolMatches(patterns, qualifiedName)` — fnmatch (`*` crosses dots, as Python's
//   fnmatch.fnmatchcase) on qualified names such as `timm.layers.mlp.Mlp`. A pattern
//   without a dot is compared with the bare name (`Mlp`, `*Attention`); a pattern with a
//   dot is compared with the whole qualified name or any dotted suffix of it
//   (`mlp.Mlp`, `timm.layers.*`).
// * `repoMatches(patterns, repoName)` — fnmatch on `owner/name`; a pattern without `/`
//   may also match just `name`.

/** What a command works on; an absent or empty list means "no restriction". */
export interface Scope {
  repos?: string[];
  paths?: string[];
  symbols?: string[];
}

interface CompiledGlob {
  /** One matcher per segment; `null` stands for `**`. */
  segs: (RegExp | null)[];
  /** Pattern ended with `/`: only folders match. */
  dirOnly: boolean;
  /** Variant with `.py` appended to the last segment (module form), if applicable. */
  module: (RegExp | null)[] | null;
  /** Pattern matches everything (``, `.`, `/`, `**`). */
  all: boolean;
}

const globCache = new Map<string, CompiledGlob>();

/** Translate one fnmatch-style pattern to a regular expression source.
 *  `star` is what `*` may match (`[^/]*` for path segments, `.*` for names). */
function fnmatchSource(pat: string, star: string, one: string): string {
  let out = '';
  for (let i = 0; i < pat.length; i++) {
    const c = pat[i];
    if (c === '*') {
      while (pat[i + 1] === '*') i++;
      out += star;
    } else if (c === '?') {
      out += one;
    } else if (c === '[') {
      const close = pat.indexOf(']', i + 2);
      if (close < 0) {
        out += '\\[';
        continue;
      }
      let body = pat.slice(i + 1, close);
      let neg = false;
      if (body[0] === '!' || body[0] === '^') {
        neg = true;
        body = body.slice(1);
      }
      body = body.replace(/\\/g, '\\\\').replace(/\]/g, '\\]').replace(/\^/g, '\\^');
      out += `[${neg ? '^' : ''}${body}]`;
      i = close;
    } else if (c === '\\' && i + 1 < pat.length) {
      out += pat[++i].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    } else {
      out += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  return out;
}

function segRegex(seg: string): RegExp | null {
  if (seg === '**') return null;
  return new RegExp(`^${fnmatchSource(seg, '[^/]*', '[^/]')}$`);
}

/** Normalise a path or pattern: posix separators, no leading `./` or `/`, no doubled slashes. */
export function normalizeRelPath(p: string): string {
  let s = p.replace(/\\/g, '/').replace(/\/{2,}/g, '/');
  while (s.startsWith('./')) s = s.slice(2);
  if (s.startsWith('/')) s = s.slice(1);
  if (s === '.') s = '';
  return s;
}

function compileGlob(pattern: string): CompiledGlob {
  let c = globCache.get(pattern);
  if (c) return c;
  let p = normalizeRelPath(pattern);
  const dirOnly = p.endsWith('/');
  if (dirOnly) p = p.slice(0, -1);
  const parts = p === '' ? [] : p.split('/').filter((s) => s !== '.');
  const all = parts.length === 0 || (parts.length === 1 && parts[0] === '**');
  const segs = parts.map(segRegex);
  const last = parts[parts.length - 1];
  const module =
    !dirOnly && last !== undefined && last !== '**' && !last.includes('.')
      ? [...segs.slice(0, -1), segRegex(`${last}.py`)]
      : null;
  c = { segs, dirOnly, module, all };
  globCache.set(pattern, c);
  return c;
}

/** Epsilon closure of NFA states: a `**` at state i may be skipped. */
function closure(segs: (RegExp | null)[], states: Set<number>): Set<number> {
  const out = new Set(states);
  const stack = [...states];
  while (stack.length) {
    const i = stack.pop()!;
    if (i < segs.length && segs[i] === null && !out.has(i + 1)) {
      out.add(i + 1);
      stack.push(i + 1);
    }
  }
  return out;
}

function step(segs: (RegExp | null)[], states: Set<number>, name: string): Set<number> {
  const next = new Set<number>();
  for (const i of states) {
    if (i >= segs.length) continue;
    const m = segs[i];
    if (m === null)
      next.add(i); // `**` consumes this segment and stays
    else if (m.test(name)) next.add(i + 1);
  }
  return closure(segs, next);
}

/** Does the segment pattern match `path`, either exactly (a file) or as an ancestor folder? */
function runMatch(segs: (RegExp | null)[], dirOnly: boolean, path: string[]): boolean {
  let states = closure(segs, new Set([0]));
  for (let k = 0; k < path.length; k++) {
    states = step(segs, states, path[k]);
    if (states.size === 0) return false;
    if (states.has(segs.length)) {
      if (k < path.length - 1) return true; // matched a folder containing the path
      if (!dirOnly) return true; // matched the file itself
    }
  }
  return false;
}

/** Gitignore-like, root-anchored path glob (semantics in the file header). */
export function matchGlob(pattern: string, path: string): boolean {
  const g = compileGlob(pattern);
  if (g.all) return true;
  const segs = normalizeRelPath(path)
    .split('/')
    .filter((s) => s !== '');
  if (segs.length === 0) return false;
  if (runMatch(g.segs, g.dirOnly, segs)) return true;
  return g.module !== null && runMatch(g.module, false, segs);
}

/** Could any file below folder `dir` match `pattern`? Used to prune directory walks. */
export function globCouldMatchBelow(pattern: string, dir: string): boolean {
  const g = compileGlob(pattern);
  if (g.all) return true;
  const segs = normalizeRelPath(dir)
    .split('/')
    .filter((s) => s !== '');
  for (const pat of g.module ? [g.segs, g.module] : [g.segs]) {
    let states = closure(pat, new Set([0]));
    let ok = true;
    for (const name of segs) {
      states = step(pat, states, name);
      if (states.size === 0) {
        ok = false;
        break;
      }
      if (states.has(pat.length)) return true; // the folder (or an ancestor) itself matched
    }
    if (ok && [...states].some((i) => i < pat.length)) return true;
  }
  return false;
}

/** True when any pattern matches; an empty or absent list matches every path. */
export function pathInScope(patterns: readonly string[] | undefined, path: string): boolean {
  if (!patterns || patterns.length === 0) return true;
  return patterns.some((p) => matchGlob(p, path));
}

const nameCache = new Map<string, RegExp>();
function nameRegex(pattern: string): RegExp {
  let r = nameCache.get(pattern);
  if (!r) {
    r = new RegExp(`^${fnmatchSource(pattern, '.*', '.')}$`, 's');
    nameCache.set(pattern, r);
  }
  return r;
}

/** fnmatch of symbol patterns against a qualified name (rules in the file header).
 *  An empty pattern list matches nothing; use `inScope` for "no restriction" semantics. */
export function symbolMatches(patterns: readonly string[], qualifiedName: string): boolean {
  const parts = qualifiedName.split('.');
  const bare = parts[parts.length - 1];
  for (const p of patterns) {
    const re = nameRegex(p);
    if (!p.includes('.')) {
      if (re.test(bare)) return true;
      continue;
    }
    for (let i = 0; i < parts.length; i++) {
      if (re.test(parts.slice(i).join('.'))) return true;
    }
  }
  return false;
}

/** fnmatch on repository names; a pattern without `/` may match the last name segment. */
export function repoMatches(patterns: readonly string[], repoName: string): boolean {
  const bare = repoName.split('/').pop() ?? repoName;
  return patterns.some((p) => nameRegex(p).test(repoName) || (!p.includes('/') && nameRegex(p).test(bare)));
}

/** Is file `relPath` of repository `repoName` inside the scope? Absent lists do not restrict. */
export function inScope(scope: Scope, repoName: string, relPath: string): boolean {
  if (scope.repos && scope.repos.length > 0 && !repoMatches(scope.repos, repoName)) return false;
  return pathInScope(scope.paths, relPath);
}

/** Is a symbol inside the scope's symbol patterns? An absent or empty list does not restrict. */
export function symbolInScope(scope: Scope, qualifiedName: string): boolean {
  if (!scope.symbols || scope.symbols.length === 0) return true;
  return symbolMatches(scope.symbols, qualifiedName);
}
