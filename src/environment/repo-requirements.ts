// What a repository says it needs: its declared requirements, read from the files Python
// packaging defines, never by running them.
//
// - `requirements*.txt` and `requirements/*.txt` (pip's requirements-file format: one PEP 508
//   requirement a line, `#` comments, `-r`/`--requirement` includes followed, other
//   options such as `-e`, `--index-url` skipped; a file of requirements/ that neither a
//   root requirements file nor the packaging names is an extra of its own when they
//   declare the install requirements);
// - `setup.py`: the `install_requires=` and `extras_require=` arguments of the setup call,
//   read from the tree-sitter syntax tree (list literals of strings, a module-level name
//   bound to one, or a call whose string argument names a requirements file, as
//   `parse_requirements('requirements/runtime.txt')` does);
// - `setup.cfg`: `[options] install_requires` and `[options.extras_require]` (setuptools'
//   declarative configuration, dangling lists one requirement a line);
// - `pyproject.toml`: `[project] dependencies` and `[project.optional-dependencies]`
//   (PEP 621), arrays of strings;
// - `environment.yml` / `environment.yaml` (conda): the `dependencies:` list, and its
//   `pip:` sub-list.
// Each requirement says where it came from (file and line) and its group: `install`,
// `optional:<extra>` or `dev` (requirements files named for tests, docs, builds).
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { parsePython, type Node } from '../parse/parser.js';
import { meetsSpecifier } from './requirements.js';
import { normalizeDistName } from './names.js';
import { aptCandidates } from './apt.js';
import { TORCH_FAMILY } from './as-of.js';

/** Debian's candidate versions on the host, all null when apt could not be asked. */
async function hostCandidates(pkgs: string[]): Promise<Map<string, string | null>> {
  return (await aptCandidates(pkgs)) ?? new Map(pkgs.map((p) => [p, null]));
}

export interface DeclaredRequirement {
  /** distribution name as written */
  name: string;
  /** PEP 503 normalised name */
  key: string;
  /** the whole PEP 508 requirement as written (specifiers, extras, markers) */
  spec: string;
  /** posix path relative to the repository root */
  file: string;
  line: number;
  group: string;
}

/** The distribution name of a PEP 508 requirement, or null when the line is not one. */
export function pep508Name(req: string): string | null {
  const m = /^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[|[<>=!~;@ ]|$)/.exec(req);
  return m ? m[1] : null;
}

const DEV_FILE = /(^|[-_/.])(dev|test|tests|testing|doc|docs|build|lint|ci|readthedocs)([-_/.]|$)/i;
const OPTIONAL_FILE = /(^|\/)(requirements[-_])?optional/i;

/** The group a requirements file's name gives its lines (`requirements/tests.txt` → dev,
 *  `requirements/optional.txt` → optional), else `inherited` (an included file keeps the
 *  group of the file that includes it). */
function fileGroup(rel: string, inherited: string): string {
  return DEV_FILE.test(rel) ? 'dev' : OPTIONAL_FILE.test(rel) ? 'optional:optional' : inherited;
}

/** Every requirement a repository declares, in file order. */
export function readDeclaredRequirements(root: string): DeclaredRequirement[] {
  const out: DeclaredRequirement[] = [];
  const seenFiles = new Set<string>();
  const add = (spec: string, file: string, line: number, group: string) => {
    const s = spec.trim();
    const name = pep508Name(s);
    if (!name) return;
    out.push({ name, key: normalizeDistName(name), spec: s, file, line, group });
  };
  const readTxt = (rel: string, group: string, depth = 0) => {
    if (seenFiles.has(rel) || depth > 8) return;
    seenFiles.add(rel);
    const abs = path.join(root, rel);
    let text: string;
    try {
      text = readFileSync(abs, 'utf8');
    } catch {
      return;
    }
    text.split(/\r?\n/).forEach((raw, i) => {
      const line = raw.replace(/(^|\s)#.*$/, '').trim();
      if (!line) return;
      const inc = /^(?:-r|--requirement)\s*=?\s*(\S+)/.exec(line);
      if (inc) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(rel), inc[1]));
        readTxt(target, fileGroup(target, group), depth + 1);
        return;
      }
      if (line.startsWith('-')) return; // -e, -c, --index-url, …
      add(line, rel, i + 1, group);
    });
  };

  // requirements files at the root and in a requirements/ folder
  const txt: string[] = [];
  for (const f of safeList(root)) if (/^requirements.*\.txt$/i.test(f)) txt.push(f);
  if (isDir(path.join(root, 'requirements')))
    for (const f of safeList(path.join(root, 'requirements'))) if (f.endsWith('.txt')) txt.push(`requirements/${f}`);
  // a requirements.txt that only includes others is read first, so included files keep its
  // group; then the files of requirements/ that the packaging names (setup.py's
  // `parse_requirements('requirements/runtime.txt')`, `extras_require={'mim':
  // parse_requirements('requirements/mminstall.txt')}`), by their names' groups
  const rootTxt = txt.filter((f) => !f.includes('/')).sort();
  const nested = txt.filter((f) => f.includes('/')).sort();
  for (const f of rootTxt) readTxt(f, fileGroup(f, 'install'));
  const packaging = ['setup.py', 'setup.cfg', 'pyproject.toml']
    .map((f) => {
      try {
        return readFileSync(path.join(root, f), 'utf8');
      } catch {
        return '';
      }
    })
    .join('\n');
  for (const f of nested) if (packaging.includes(f)) readTxt(f, fileGroup(f, 'install'));
  if (existsSync(path.join(root, 'setup.py'))) readSetupPy(root, add, readTxt);
  if (existsSync(path.join(root, 'setup.cfg'))) readSetupCfg(root, add);
  if (existsSync(path.join(root, 'pyproject.toml'))) readPyproject(root, add);
  for (const f of ['environment.yml', 'environment.yaml'])
    if (existsSync(path.join(root, f))) readCondaEnv(root, f, add);
  // a file of requirements/ that neither a root requirements file nor the packaging names
  // is an extra of its own when they declare the install requirements: `pip install .` and
  // `pip install -r requirements.txt` never install it (mmpose's requirements/poseval.txt,
  // a git URL); only when nothing else declares them is it the install requirements
  const declaresInstall = out.some((d) => d.group === 'install');
  for (const f of nested)
    readTxt(f, fileGroup(f, declaresInstall ? `optional:${path.posix.basename(f, '.txt')}` : 'install'));
  return out;
}

type Add = (spec: string, file: string, line: number, group: string) => void;

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

// ------------------------------------------------------------------ setup.py

/** The value of a Python string literal node (no f-strings; implicit concatenation joined). */
function stringValue(n: Node, src: string): string | null {
  if (n.type === 'concatenated_string') {
    const parts = n.namedChildren.map((c) => (c ? stringValue(c, src) : null));
    return parts.every((p) => p !== null) ? parts.join('') : null;
  }
  if (n.type !== 'string') return null;
  if (n.namedChildren.some((c) => c?.type === 'interpolation')) return null;
  let text = '';
  for (const c of n.namedChildren) if (c?.type === 'string_content') text += src.slice(c.startIndex, c.endIndex);
  return text;
}

function readSetupPy(root: string, add: Add, readTxt: (rel: string, group: string) => void): void {
  const src = readFileSync(path.join(root, 'setup.py'), 'utf8');
  const tree = parsePython(src);
  try {
    // module-level `NAME = [ ... ]` lists, for `install_requires=NAME`
    const lists = new Map<string, Node>();
    for (const st of tree.rootNode.namedChildren) {
      const a = st?.type === 'expression_statement' ? st.namedChildren[0] : null;
      if (a?.type === 'assignment') {
        const left = a.childForFieldName('left');
        const right = a.childForFieldName('right');
        if (left?.type === 'identifier' && right) lists.set(left.text, right);
      }
    }
    const lineOf = (n: Node) => n.startPosition.row + 1;
    const values = (n: Node | null, group: string): void => {
      if (!n) return;
      if (n.type === 'identifier' && lists.has(n.text)) {
        values(lists.get(n.text)!, group);
        return;
      }
      if (n.type === 'list' || n.type === 'tuple') {
        for (const c of n.namedChildren) {
          if (!c) continue;
          const s = stringValue(c, src);
          if (s !== null) add(s, 'setup.py', lineOf(c), group);
        }
        return;
      }
      if (n.type === 'binary_operator') {
        values(n.childForFieldName('left'), group);
        values(n.childForFieldName('right'), group);
        return;
      }
      if (n.type === 'call') {
        // a helper that reads a requirements file: its string argument names the file
        for (const arg of n.childForFieldName('arguments')?.namedChildren ?? []) {
          const s = arg ? stringValue(arg, src) : null;
          if (s && /\.txt$/.test(s)) readTxt(path.posix.normalize(s), group);
        }
      }
    };
    const visit = (n: Node) => {
      if (n.type === 'keyword_argument') {
        const name = n.childForFieldName('name')?.text;
        const value = n.childForFieldName('value');
        if (name === 'install_requires') values(value, 'install');
        else if (name === 'extras_require' && value?.type === 'dictionary') {
          for (const pair of value.namedChildren) {
            if (pair?.type !== 'pair') continue;
            const k = pair.childForFieldName('key');
            const extra = k ? stringValue(k, src) : null;
            if (extra !== null) values(pair.childForFieldName('value'), `optional:${extra}`);
          }
        }
      }
      for (const c of n.namedChildren) if (c) visit(c);
    };
    visit(tree.rootNode);
  } finally {
    tree.delete();
  }
}

// ------------------------------------------------------------------ setup.cfg

function readSetupCfg(root: string, add: Add): void {
  const lines = readFileSync(path.join(root, 'setup.cfg'), 'utf8').split(/\r?\n/);
  let section = '';
  let key: string | null = null;
  lines.forEach((raw, i) => {
    const line = raw.replace(/(^|\s)[#;].*$/, '');
    const sec = /^\s*\[([^\]]+)\]/.exec(line);
    if (sec) {
      section = sec[1].trim();
      key = null;
      return;
    }
    const kv = /^([A-Za-z0-9_.-]+)\s*[=:]\s*(.*)$/.exec(line);
    if (kv && !/^\s/.test(raw)) {
      key = kv[1].trim();
      const v = kv[2].trim();
      if (v) value(v, i + 1);
      return;
    }
    if (/^\s+\S/.test(line) && key) value(line.trim(), i + 1);
  });
  function value(v: string, line: number) {
    if (section === 'options' && key === 'install_requires') add(v, 'setup.cfg', line, 'install');
    else if (section === 'options.extras_require' && key) add(v, 'setup.cfg', line, `optional:${key}`);
  }
}

// ------------------------------------------------------------------ pyproject.toml

/** PEP 621 `[project] dependencies` and `[project.optional-dependencies]`: TOML arrays of
 *  strings (basic and literal strings), possibly over several lines. */
function readPyproject(root: string, add: Add): void {
  const text = readFileSync(path.join(root, 'pyproject.toml'), 'utf8');
  const lines = text.split(/\r?\n/);
  let table = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const t = /^\s*\[([^[\]]+)\]\s*(#.*)?$/.exec(line);
    if (t) {
      table = t[1].trim();
      continue;
    }
    const kv = /^\s*("?[A-Za-z0-9_.-]+"?)\s*=\s*\[(.*)$/.exec(line);
    if (!kv) continue;
    const key = kv[1].replace(/"/g, '');
    let group: string | null = null;
    if (table === 'project' && key === 'dependencies') group = 'install';
    else if (table === 'project.optional-dependencies') group = `optional:${key}`;
    if (!group) continue;
    // collect the array to its closing bracket (outside strings)
    let rest = kv[2];
    let j = i;
    for (;;) {
      for (const m of rest.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'/g))
        add(m[1] ?? m[2], 'pyproject.toml', j + 1, group);
      if (/\]\s*(#.*)?$/.test(rest.replace(/"(?:[^"\\]|\\.)*"|'[^']*'/g, '')) || j + 1 >= lines.length) break;
      rest = lines[++j];
    }
    i = j;
  }
}

// ------------------------------------------------------------------ environment.yml

function readCondaEnv(root: string, file: string, add: Add): void {
  const lines = readFileSync(path.join(root, file), 'utf8').split(/\r?\n/);
  let inDeps = false;
  let depsIndent = -1;
  let pipIndent = -1;
  lines.forEach((raw, i) => {
    const line = raw.replace(/\s#.*$/, '');
    if (/^dependencies\s*:/.test(line)) {
      inDeps = true;
      return;
    }
    if (!inDeps) return;
    if (/^\S/.test(line)) {
      inDeps = false;
      return;
    }
    const item = /^(\s*)-\s*(.+)$/.exec(line);
    if (!item) return;
    const indent = item[1].length;
    if (depsIndent < 0) depsIndent = indent;
    const v = item[2].trim();
    if (/^pip\s*:/.test(v)) {
      pipIndent = indent;
      return;
    }
    if (pipIndent >= 0 && indent > pipIndent) {
      add(v, file, i + 1, 'install');
      return;
    }
    pipIndent = -1;
    // conda specs: name, name=version, name>=version, channel::name
    const conda = v.replace(/^[\w.-]+::/, '');
    const name = /^([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(conda)?.[1];
    if (!name || name === 'python' || name === 'pip') return;
    add(conda.replace(/^([A-Za-z0-9][A-Za-z0-9._-]*)=(?!=)/, '$1=='), file, i + 1, 'install');
  });
}

// ------------------------------------------------------------------ Debian

// ------------------------------------------------------- imports of torch's family

/** The top-level modules of torch's family other than torch (`torchvision`, `torchaudio`):
 *  each is the distribution of that name. */
const FAMILY_MODULES = TORCH_FAMILY.filter((d) => d !== 'torch');

/**
 * The modules of torch's family other than torch that the Python files of a repository's
 * packages import anywhere (`packages`: folders or module files relative to its root, the
 * top-level packages the store indexes; every file under them, not only the indexed
 * ones), sorted. PyTorch installs its family with torch (pytorch.org's command is
 * `pip install torch torchvision`), so repositories import them without declaring them
 * (mmocr's datasets module imports torchvision; its requirements name neither), and a
 * module outside the indexed paths is still imported at run time: a registry imports
 * every module of its scope (mmengine's `locations`). Import statements only (Language
 * Reference 7.11, the `import` statement: `import M`, `import M.sub as x`, `from M.sub
 * import n`; relative imports are the package's own), read from the syntax tree, in any
 * block (a lazy import in a function is still made at run time); a file with no line that
 * may import one is not parsed. `modules`: those looked for (not a repository's own).
 */
export function torchFamilyImports(root: string, packages: string[], modules = FAMILY_MODULES): string[] {
  const found = new Set<string>();
  if (!modules.length) return [];
  // a line that may import one (`import os, torchvision` included), confirmed on the tree
  const named = new RegExp(`^[ \\t]*(?:import|from)[ \\t][^\\n]*\\b(?:${modules.join('|')})\\b`, 'm');
  const read = (file: string) => {
    let src: string;
    try {
      src = readFileSync(file, 'utf8');
    } catch {
      return;
    }
    if (!named.test(src)) return;
    const tree = parsePython(src);
    try {
      for (const st of tree.rootNode.descendantsOfType(['import_statement', 'import_from_statement'])) {
        if (!st) continue;
        const mods =
          st.type === 'import_statement'
            ? st.namedChildren.map((c) => (c?.type === 'aliased_import' ? c.childForFieldName('name') : c))
            : [st.childForFieldName('module_name')];
        for (const m of mods) {
          if (m?.type !== 'dotted_name') continue; // a relative import is the package's own
          const top = m.text.split('.')[0];
          if (modules.includes(top)) found.add(top);
        }
      }
    } finally {
      tree.delete();
    }
  };
  const walk = (abs: string, depth: number) => {
    if (depth > 12) return;
    let st;
    try {
      st = statSync(abs);
    } catch {
      return;
    }
    if (st.isFile()) {
      if (abs.endsWith('.py')) read(abs);
      return;
    }
    if (!st.isDirectory()) return;
    for (const f of safeList(abs)) if (!f.startsWith('.') && f !== '__pycache__') walk(path.join(abs, f), depth + 1);
  };
  for (const p of new Set(packages)) walk(path.join(root, ...p.split('/').filter(Boolean)), 0);
  return [...found].sort();
}

/** dh-python's table of PyPI distributions whose Debian package is not python3-<name>. */
const DH_PYTHON_FALLBACK = '/usr/share/dh-python/dist/cpython3_fallback';
let fallback: Map<string, string> | null = null;

/** The Debian package that ships a distribution: dh-python's fallback table (installed with
 *  the `dh-python` package), else Debian's Python policy name `python3-<name>` (lower case,
 *  `_` and `.` as `-`). */
export function debianPackageFor(dist: string): string {
  if (!fallback) {
    fallback = new Map();
    try {
      for (const line of readFileSync(DH_PYTHON_FALLBACK, 'utf8').split('\n')) {
        const [d, pkg] = line.trim().split(/\s+/);
        if (d && pkg) fallback.set(normalizeDistName(d), pkg);
      }
    } catch {
      /* dh-python not installed: the policy name only */
    }
  }
  return fallback.get(normalizeDistName(dist)) ?? `python3-${dist.toLowerCase().replace(/[_.]+/g, '-')}`;
}

/** The declared requirements a validation environment installs for a repository: its
 *  install group, and a requirement of any other group (an extra, a requirements file of
 *  its own) whose distribution the repository's blocks import. The import says the code
 *  needs it at run time; the declaration says which distribution and which versions (a
 *  repository may name what its code imports only in an extra, as detectron2's `all`
 *  extra names timm). Of several declarations of one distribution outside the install
 *  group the first of an extra wins over a development file's. */
export function environmentRequirements(
  declared: readonly DeclaredRequirement[],
  importedDistributions: Iterable<string>,
): DeclaredRequirement[] {
  const install = declared.filter((d) => d.group === 'install');
  const have = new Set(install.map((d) => d.key));
  const imported = new Set([...importedDistributions].map(normalizeDistName));
  const rank = (d: DeclaredRequirement) => (d.group.startsWith('optional:') ? 0 : 1);
  const extra = new Map<string, DeclaredRequirement>();
  for (const d of declared) {
    if (have.has(d.key) || !imported.has(d.key)) continue;
    const prev = extra.get(d.key);
    if (!prev || rank(d) < rank(prev)) extra.set(d.key, d);
  }
  return [...install, ...extra.values()];
}

export interface RepoRequirements {
  repo: string;
  /** what the repository's packaging files declare */
  declared: DeclaredRequirement[];
  /** top-level third-party modules the emitted blocks of this repository import */
  imports: { module: string; blocks: number; distribution: string; declared: boolean; importable?: boolean }[];
  /** distribution (PEP 503 key) → Debian package (dh-python's table or the policy name) */
  debian: Record<string, string>;
}

/** Declared requirements and imports of the emitted blocks, per repository. `distributionOf`
 *  maps a top-level import name to its distribution (from the validation environment). */
export function repositoryRequirements(
  repos: { name: string; root: string }[],
  blocks: { repo: string; externs: string[] }[],
  distributionOf: (importName: string) => string,
  isStdlib: (importName: string) => boolean,
  importable?: (importName: string) => boolean,
): RepoRequirements[] {
  return repos.map((r) => {
    const declared = readDeclaredRequirements(r.root);
    const keys = new Set(declared.map((d) => d.key));
    const counts = new Map<string, number>();
    for (const b of blocks) {
      if (b.repo !== r.name) continue;
      for (const m of new Set(b.externs.map((e) => e.split('.')[0]).filter((e) => e && !isStdlib(e))))
        counts.set(m, (counts.get(m) ?? 0) + 1);
    }
    const imports = [...counts]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([module, n]) => {
        const distribution = distributionOf(module);
        const row = { module, blocks: n, distribution, declared: keys.has(normalizeDistName(distribution)) };
        return importable ? { ...row, importable: importable(module) } : row;
      });
    const debian: Record<string, string> = {};
    for (const d of declared) debian[d.key] = debianPackageFor(d.name);
    for (const i of imports) debian[normalizeDistName(i.distribution)] = debianPackageFor(i.distribution);
    return { repo: r.name, declared, imports, debian };
  });
}

export interface EnvironmentGap {
  distribution: string;
  /** installed in another version than a repository declares (`torch>=2.0` with torch
   *  1.13): the version installed and the requirement, with where it was declared */
  version?: { installed: string; required: string; file: string; line: number };
  /** repositories whose blocks import it (`import`) or that declare it (`declared`) */
  neededBy: { repo: string; why: 'import' | 'declared'; blocks?: number }[];
  debian: string;
  /** Debian's candidate version, null when Debian has no such package */
  candidate: string | null;
}

/** What the validation environment lacks for the stored repositories: distributions their
 *  blocks import or their packaging declares (install group), not installed there, with the
 *  Debian package that would add each; and declared requirements whose installed version
 *  (`versions`, PEP 503 key → version) does not meet the declared specifiers, torch
 *  included (`torch>=2.0` on torch 1.13). `installed` holds PEP 503 keys. */
export async function environmentGaps(
  reqs: RepoRequirements[],
  installed: Set<string>,
  versions: Map<string, string> = new Map(),
): Promise<EnvironmentGap[]> {
  const gaps = new Map<string, EnvironmentGap>();
  const need = (dist: string, repo: string, why: 'import' | 'declared', blocks?: number) => {
    const key = normalizeDistName(dist);
    if (installed.has(key)) return;
    let g = gaps.get(key);
    if (!g) gaps.set(key, (g = { distribution: dist, neededBy: [], debian: debianPackageFor(dist), candidate: null }));
    if (!g.neededBy.some((n) => n.repo === repo && n.why === why))
      g.neededBy.push({ repo, why, ...(blocks ? { blocks } : {}) });
  };
  // a distribution whose module imports is there, whatever name its package registered
  // (Debian's python3-opencv provides cv2 without an opencv-python dist-info)
  const present = new Set(installed);
  for (const r of reqs) for (const i of r.imports) if (i.importable) present.add(normalizeDistName(i.distribution));
  for (const r of reqs) {
    for (const i of r.imports) if (!i.importable) need(i.distribution, r.repo, 'import', i.blocks);
    for (const d of r.declared) {
      if (d.group !== 'install' || /;/.test(d.spec)) continue;
      if (!present.has(d.key)) need(d.name, r.repo, 'declared');
      else {
        const have = versions.get(d.key);
        if (have && !meetsSpecifier(have, d.spec)) {
          const key = `${d.key}@version`;
          let g = gaps.get(key);
          if (!g)
            gaps.set(
              key,
              (g = {
                distribution: d.name,
                neededBy: [],
                debian: debianPackageFor(d.name),
                candidate: null,
                version: { installed: have, required: d.spec, file: d.file, line: d.line },
              }),
            );
          if (!g.neededBy.some((n) => n.repo === r.repo)) g.neededBy.push({ repo: r.repo, why: 'declared' });
        }
      }
    }
  }
  const cands = await hostCandidates([...new Set([...gaps.values()].filter((g) => !g.version).map((g) => g.debian))]);
  for (const g of gaps.values()) if (!g.version) g.candidate = cands.get(g.debian) ?? null;
  // what blocks import first, then by how many blocks
  const weight = (g: EnvironmentGap) =>
    g.neededBy.reduce((a, n) => a + (n.why === 'import' ? 1000 + (n.blocks ?? 0) : 1), 0);
  return [...gaps.values()].sort((a, b) => weight(b) - weight(a) || a.distribution.localeCompare(b.distribution));
}
