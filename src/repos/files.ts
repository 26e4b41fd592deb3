// The Python files of a checkout and the module names Python would give them.
//
// `listPythonFiles` walks a work tree (skipping .git, hidden folders, node_modules,
// __pycache__ and virtual environments), keeps `.py` files inside the path globs, and
// reports, without failing, symlink loops, symlinks that leave the root, unreadable
// folders and files over 2 MB. A file or folder reached by several paths (symlinks) is
// listed once, under its real path when it has one, so the walk is linear in the
// repository's size.
//
// Module names follow the import system (Python language reference §5.2.1, "Regular
// packages"): a folder with `__init__.py` is a regular package, so the sys.path entry
// a file is imported from is the first ancestor folder *without* `__init__.py`.
// `timm/layers/mlp.py` with `timm/__init__.py` and `timm/layers/__init__.py` has root ''
// and module `timm.layers.mlp`; `src/transformers/models/bert/modeling_bert.py` has root
// `src`. A folder without `__init__.py` is a namespace package (PEP 420) for code run from
// a folder above it: detectPackageRoots chooses the sys.path entries the repository's own
// imports use (`models/net.py` without `models/__init__.py` is `models.net` when the
// repository's scripts import it so). `moduleNameCandidates` lists every possible name.
import { PYTHON_KEYWORDS } from '../util/python.js';
import { readdir, realpath, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { globCouldMatchBelow, pathInScope } from '../config/scope.js';

export const MAX_PY_FILE_BYTES = 2 * 1024 * 1024;
const SKIP_DIRS = new Set(['node_modules', '__pycache__', 'site-packages']);

export interface PyFile {
  /** posix path relative to the root */
  path: string;
  size: number;
  mtimeMs: number;
}

export interface FileProblem {
  path: string;
  problem: string;
}

/** Why a file could not be read. A name that is not valid UTF-8 comes back from readdir
 *  with U+FFFD in place of its bytes and then does not exist under that name: say so. */
function unreadable(e: unknown, rel: string): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' && rel.includes('\uFFFD')) return 'unreadable: its name is not valid UTF-8 (rename the file)';
  return `unreadable: ${code ?? (e as Error).message}`;
}

/** Walk `root` for `.py` files within `opts.paths` globs (all when empty). */
export async function listPythonFiles(
  root: string,
  opts: { paths?: string[] } = {},
): Promise<{ files: PyFile[]; problems: FileProblem[] }> {
  const files: PyFile[] = [];
  const problems: FileProblem[] = [];
  const patterns = opts.paths && opts.paths.length > 0 ? opts.paths : undefined;
  const realRoot = await realpath(root);
  const inside = (p: string) => p === realRoot || p.startsWith(realRoot + path.sep);

  const dirWanted = (rel: string) => !patterns || patterns.some((p) => globCouldMatchBelow(p, rel));

  // A file or folder reached by two paths is one file or folder (a repository with two
  // symlinks to each next level would otherwise be walked once per path: exponential).
  // Real entries are walked first; symlinks wait in `later` and are followed afterwards,
  // breadth first, only to what no path has reached yet, so a file keeps its real path.
  const seenDirs = new Map<string, string>([[realRoot, '.']]);
  const seenFiles = new Map<string, string>();
  const later: { abs: string; rel: string; parentReal: string }[] = [];

  const addUnique = async (abs: string, rel: string) => {
    if (patterns && !pathInScope(patterns, rel)) return;
    let st;
    try {
      st = await stat(abs);
    } catch (e) {
      problems.push({ path: rel, problem: unreadable(e, rel) });
      return;
    }
    const key = `${st.dev}:${st.ino}`;
    const first = seenFiles.get(key);
    if (first !== undefined) {
      problems.push({ path: rel, problem: `same file as ${first} (reached through a symlink)` });
      return;
    }
    seenFiles.set(key, rel);
    if (st.size > MAX_PY_FILE_BYTES) {
      problems.push({ path: rel, problem: `too large (${st.size} bytes > ${MAX_PY_FILE_BYTES})` });
      return;
    }
    files.push({ path: rel, size: st.size, mtimeMs: st.mtimeMs });
  };

  const enter = async (abs: string, rel: string, name: string, real: string) => {
    if (SKIP_DIRS.has(name)) return;
    if (existsSync(path.join(abs, 'pyvenv.cfg'))) return; // a virtual environment
    if (!dirWanted(rel)) return;
    seenDirs.set(real, rel);
    await walk(abs, rel, real);
  };

  const walk = async (abs: string, rel: string, real: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch (e) {
      problems.push({ path: rel || '.', problem: `${unreadable(e, rel)} (folder)` });
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const ent of entries) {
      const name = ent.name;
      if (name.startsWith('.')) continue; // .git, .venv, .tox, hidden files
      const childAbs = path.join(abs, name);
      const childRel = rel ? `${rel}/${name}` : name;
      if (ent.isSymbolicLink()) later.push({ abs: childAbs, rel: childRel, parentReal: real });
      else if (ent.isDirectory()) await enter(childAbs, childRel, name, path.join(real, name));
      else if (ent.isFile() && name.endsWith('.py')) await addUnique(childAbs, childRel);
    }
  };

  const follow = async (link: { abs: string; rel: string; parentReal: string }) => {
    const name = path.basename(link.rel);
    let target: string;
    try {
      target = await realpath(link.abs);
    } catch {
      if (name.endsWith('.py')) problems.push({ path: link.rel, problem: 'broken symlink' });
      return;
    }
    if (!inside(target)) {
      problems.push({ path: link.rel, problem: `symlink leaves the repository (-> ${target})` });
      return;
    }
    let st;
    try {
      st = await stat(target);
    } catch {
      return;
    }
    if (st.isDirectory()) {
      if (target === link.parentReal || link.parentReal.startsWith(target + path.sep) || target === realRoot) {
        problems.push({ path: link.rel, problem: `symlink loop (-> ${path.relative(realRoot, target) || '.'})` });
        return;
      }
      const first = seenDirs.get(target);
      if (first !== undefined) {
        problems.push({ path: link.rel, problem: `same folder as ${first} (reached through a symlink)` });
        return;
      }
      await enter(link.abs, link.rel, name, target);
    } else if (st.isFile() && name.endsWith('.py')) await addUnique(link.abs, link.rel);
  };

  await walk(root, '', realRoot);
  for (let i = 0; i < later.length; i++) await follow(later[i]);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, problems };
}

const parentOf = (dir: string) => {
  const i = dir.lastIndexOf('/');
  return i < 0 ? '' : dir.slice(0, i);
};

/** sys.path roots of a set of files, sorted and distinct ('' = repository root).
 *
 * - A folder with `__init__.py` is a regular package (Language Reference §5.2.1), so a
 *   file's *regular root* is its first ancestor folder without `__init__.py`.
 *   `hasInit(dir)` says whether `dir/__init__.py` exists (default: looked up in `files`).
 * - A folder without `__init__.py` is a namespace package (PEP 420) for code that runs
 *   from a folder above it: `python main.py` puts the script's folder on sys.path
 *   (Python documentation, "sys.path"), so in a repository run from its root,
 *   `models/net.py` (no `models/__init__.py`) is imported as `models.net`. Module names
 *   follow how the repository's own code imports them: for a regular root R other than
 *   the repository root, every folder above R up to the repository root (through
 *   identifier-named folders only) is a candidate sys.path entry, and the candidate
 *   under which the most of the repository's absolute imports (`importedNames`, read
 *   lazily) name R's modules wins. Without evidence, a folder that directly holds
 *   modules is a namespace package under the repository root (the script root); a
 *   folder that holds only regular packages (`src/pkg/__init__.py`, the src layout)
 *   is itself the sys.path entry. */
export function detectPackageRoots(
  files: readonly string[],
  hasInit?: (dir: string) => boolean,
  importedNames?: () => Iterable<string>,
): string[] {
  const set = new Set(files);
  const has = hasInit ?? ((d: string) => set.has(d ? `${d}/__init__.py` : '__init__.py'));
  const memo = new Map<string, string>();
  const rootOf = (dir: string): string => {
    const cached = memo.get(dir);
    if (cached !== undefined) return cached;
    // A folder with __init__.py is a package: its files are imported from its parent's root.
    const r = dir !== '' && has(dir) ? rootOf(parentOf(dir)) : dir;
    memo.set(dir, r);
    return r;
  };
  const groups = new Map<string, string[]>();
  for (const f of files) {
    if (!f.endsWith('.py')) continue;
    const r = rootOf(parentOf(f));
    const g = groups.get(r);
    if (g) g.push(f);
    else groups.set(r, [f]);
  }
  let imported: string[] | null = null;
  const imports = () => (imported ??= importedNames ? [...importedNames()] : []);
  const roots = new Set<string>();
  for (const [r0, group] of groups) roots.add(r0 === '' ? '' : chooseRoot(r0, group, imports));
  return [...roots].sort();
}

/** The sys.path entry for the files whose regular root is `r0` (see detectPackageRoots). */
function chooseRoot(r0: string, group: readonly string[], imports: () => string[]): string {
  // candidates: r0, then each ancestor whose path down to r0 is made of identifiers
  const cands: { root: string; prefix: string }[] = [{ root: r0, prefix: '' }];
  for (let c = r0; c !== ''; ) {
    const p = parentOf(c);
    const rel = p === '' ? r0 : r0.slice(p.length + 1);
    if (!rel.split('/').every(isIdentifier)) break;
    cands.push({ root: p, prefix: rel.split('/').join('.') });
    c = p;
  }
  if (cands.length === 1) return r0;
  // top-level names of r0: its modules and packages
  const tops = new Set<string>();
  for (const f of group) {
    const first = f.slice(r0.length + 1).split('/')[0];
    tops.add(first.endsWith('.py') ? first.slice(0, -3) : first);
  }
  const score = (prefix: string) => {
    let n = 0;
    for (const name of imports()) {
      if (prefix === '') {
        if (tops.has(name.split('.')[0])) n++;
      } else if (name.startsWith(prefix + '.') && tops.has(name.slice(prefix.length + 1).split('.')[0])) n++;
    }
    return n;
  };
  const holdsModules = group.some((f) => parentOf(f) === r0);
  const top = cands[cands.length - 1];
  const dflt = holdsModules && top.root === '' ? top : cands[0];
  let best = dflt;
  let bestScore = score(dflt.prefix);
  for (const c of cands) {
    if (c === dflt) continue;
    const sc = score(c.prefix);
    if (sc > bestScore) {
      best = c;
      bestScore = sc;
    }
  }
  return best.root;
}

const FROM_IMPORT = /^[ \t]*from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]+\(?([^#\n;]*)/gm;
const PLAIN_IMPORT = /^[ \t]*import[ \t]+([^#\n;]+)/gm;

/** Absolute module names a Python source imports (`import a.b`, `from a.b import c`
 *  gives `a.b` and `a.b.c`), read line by line with a regular expression: the evidence
 *  detectPackageRoots weighs, before any file is parsed. Relative imports are left out. */
export function importedNamesOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(FROM_IMPORT)) {
    out.push(m[1]);
    for (const part of m[2].split(',')) {
      const n = part
        .trim()
        .split(/\s+/)[0]
        ?.replace(/[()\\]/g, '');
      if (n && n !== '*' && isIdentifier(n)) out.push(`${m[1]}.${n}`);
    }
  }
  for (const m of text.matchAll(PLAIN_IMPORT)) {
    for (const part of m[1].split(',')) {
      const n = part.trim().split(/\s+/)[0];
      if (n && /^[A-Za-z_][\w.]*$/.test(n)) out.push(n);
    }
  }
  return out;
}

/** Python keywords cannot be module name parts (`import class` is a syntax error). */
const KEYWORDS = PYTHON_KEYWORDS;
/** Identifiers per the language reference §2.3 (XID_Start / XID_Continue, approximated). */
const IDENT = /^[\p{ID_Start}_][\p{ID_Continue}]*$/u;
export const isIdentifier = (s: string) => IDENT.test(s) && !KEYWORDS.has(s);

function nameUnder(relPath: string, root: string): string | null {
  if (!relPath.endsWith('.py')) return null;
  let rest: string;
  if (root === '') rest = relPath;
  else if (relPath.startsWith(`${root}/`)) rest = relPath.slice(root.length + 1);
  else return null;
  const parts = rest.slice(0, -3).split('/');
  if (parts[parts.length - 1] === '__init__') parts.pop(); // pkg/__init__.py is module `pkg`
  if (parts.length === 0) return null;
  return parts.every(isIdentifier) ? parts.join('.') : null;
}

/** Dotted module name of a file under the longest matching root, or null when that
 *  name is not importable (not `.py`, a part is not an identifier, `__init__.py` at a root). */
export function moduleNameFor(relPath: string, roots: readonly string[]): string | null {
  let best: string | null = null;
  for (const r of roots) {
    if (r === '' || relPath.startsWith(`${r}/`)) {
      if (best === null || r.length > best.length) best = r;
    }
  }
  return best === null ? null : nameUnder(relPath, best);
}

/** Every importable name of a file, one per matching root, longest root first. With
 *  PEP 420 namespace packages, `models/yolo.py` (no `models/__init__.py`) is `yolo` from
 *  root `models` and also `models.yolo` from root ''. */
export function moduleNameCandidates(relPath: string, roots: readonly string[]): string[] {
  const matching = roots.filter((r) => r === '' || relPath.startsWith(`${r}/`)).sort((a, b) => b.length - a.length);
  const out: string[] = [];
  for (const r of matching) {
    const n = nameUnder(relPath, r);
    if (n !== null && !out.includes(n)) out.push(n);
  }
  return out;
}
