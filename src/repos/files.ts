// The Python files of a checkout and the module names Python would give them.
//
// `listPythonFiles` walks a work tree (skipping .git, hidden folders, node_modules,
// __pycache__ and virtual environments), keeps `.py` files inside the path globs, and
// reports, without failing, symlink loops, symlinks that leave the root, unreadable
// folders and files over 2 MB.
//
// Module names follow the import system (Python language reference §5.2.1, "Regular
// packages"): a folder with `__init__.py` is a regular package, so the sys.path entry
// a file is imported from is the first ancestor folder *without* `__init__.py`.
// `timm/layers/mlp.py` with `timm/__init__.py` and `timm/layers/__init__.py` has root ''
// and module `timm.layers.mlp`; `src/transformers/models/bert/modeling_bert.py` has root
// `src`; a folder of loose scripts is its own root. Namespace packages (PEP 420, folders
// without `__init__.py`) make other names possible too: `moduleNameCandidates` lists them.
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

  const addFile = async (abs: string, rel: string) => {
    if (patterns && !pathInScope(patterns, rel)) return;
    let st;
    try {
      st = await stat(abs);
    } catch (e) {
      problems.push({ path: rel, problem: unreadable(e, rel) });
      return;
    }
    if (st.size > MAX_PY_FILE_BYTES) {
      problems.push({ path: rel, problem: `too large (${st.size} bytes > ${MAX_PY_FILE_BYTES})` });
      return;
    }
    files.push({ path: rel, size: st.size, mtimeMs: st.mtimeMs });
  };

  // `ancestors` holds the real paths of the folders on the current walk, for loop detection.
  const walk = async (abs: string, rel: string, ancestors: Set<string>, real: string): Promise<void> => {
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
      let isDir = ent.isDirectory();
      let isFile = ent.isFile();
      let childReal = path.join(real, name);
      if (ent.isSymbolicLink()) {
        try {
          childReal = await realpath(childAbs);
        } catch {
          if (name.endsWith('.py')) problems.push({ path: childRel, problem: 'broken symlink' });
          continue;
        }
        if (!inside(childReal)) {
          problems.push({ path: childRel, problem: `symlink leaves the repository (-> ${childReal})` });
          continue;
        }
        try {
          const st = await stat(childReal);
          isDir = st.isDirectory();
          isFile = st.isFile();
        } catch {
          continue;
        }
        if (isDir && (ancestors.has(childReal) || childReal === real)) {
          problems.push({ path: childRel, problem: `symlink loop (-> ${path.relative(realRoot, childReal) || '.'})` });
          continue;
        }
      }
      if (isDir) {
        if (SKIP_DIRS.has(name)) continue;
        if (existsSync(path.join(childAbs, 'pyvenv.cfg'))) continue; // a virtual environment
        if (!dirWanted(childRel)) continue;
        const next = new Set(ancestors);
        next.add(real);
        await walk(childAbs, childRel, next, childReal);
      } else if (isFile && name.endsWith('.py')) {
        await addFile(childAbs, childRel);
      }
    }
  };

  await walk(root, '', new Set(), realRoot);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, problems };
}

const parentOf = (dir: string) => {
  const i = dir.lastIndexOf('/');
  return i < 0 ? '' : dir.slice(0, i);
};

/** sys.path roots of a set of files: for each file, the first ancestor folder without
 *  `__init__.py` ('' = repository root). `hasInit(dir)` says whether `dir/__init__.py`
 *  exists; by default it is looked up in `files` itself. Sorted, distinct. */
export function detectPackageRoots(files: readonly string[], hasInit?: (dir: string) => boolean): string[] {
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
  const roots = new Set<string>();
  for (const f of files) {
    if (!f.endsWith('.py')) continue;
    roots.add(rootOf(parentOf(f)));
  }
  return [...roots].sort();
}

/** Python keywords cannot be module name parts (`import class` is a syntax error). */
const KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield'.split(
    ' ',
  ),
);
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
