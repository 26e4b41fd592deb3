// The corpus as the resolver sees it: every indexed module under its absolute module
// name (what Python would import), with its FileFacts and a way to read its source.
//
// Each repository is its own import universe (Language Reference §5.3 "Searching",
// §5.5 "The Path Based Finder"): code of repository R runs with R's package roots first
// on sys.path and the other indexed repositories after it, as installed packages, in
// priority order (lower number first). The path based finder takes a top-level name
// from the first sys.path entry that has it as a module or a regular package, and then
// finds its submodules only in that package's `__path__`; only when no entry has it as
// a module or regular package do the namespace portions of every entry merge (PEP 420,
// "Specification"). A top-level name the importing repository has itself (a module, a
// package, a namespace folder) is looked up in it only. So `models.common` imported by
// yolov9 is yolov9's file even when yolov5 is indexed too. Modules outside a repository's configured `paths` are found
// through an OnDemand loader (src/resolve/ondemand.ts) when one is attached: `paths`
// scope discovery, not what a closure may read.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FileFacts, ImportEdge } from '../parse/types.js';
import { parsePython, parserReady, type Node } from '../parse/parser.js';
import type { IndexedRepo } from '../store/store.js';
import { NnragError } from '../util/errors.js';
import { decodePython, gitBlobId } from '../indexer/source.js';
import { lineIndex, lineStarts } from '../util/lines.js';

export interface CorpusModule {
  /** absolute module name, e.g. `timm.layers.mlp`; a package is named by its folder */
  name: string;
  repo: string;
  /** posix path relative to the repository root */
  path: string;
  isPackage: boolean;
  blob: string;
  facts: FileFacts;
  /** read on demand outside the configured paths: resolved against, never discovered */
  support?: boolean;
}

/** The absolute module names an import edge of `mod` may load: `from a.b import c` loads
 *  a.b and maybe the submodule a.b.c; a relative import is taken from mod's package
 *  (Language Reference §5.7, PEP 328). */
export function importTargets(mod: CorpusModule, e: ImportEdge): string[] {
  if (e.kind === 'import') return [e.module];
  let base = e.module;
  if (e.level > 0) {
    const parts = mod.name.split('.');
    const pkg = mod.isPackage ? parts : parts.slice(0, -1);
    const up = pkg.slice(0, Math.max(0, pkg.length - (e.level - 1)));
    base = [...up, ...(e.module ? e.module.split('.') : [])].join('.');
  }
  return e.name === '*' || !base ? [base].filter(Boolean) : [base, `${base}.${e.name}`];
}

/** Finds modules of a repository that the index does not hold (outside its `paths`). */
export interface ModuleLoader {
  /** The module `name` of `repo` read and indexed now, or null when it does not exist. */
  load(repo: IndexedRepo, name: string): { module: CorpusModule; text?: string } | null;
  /** Does `repo` have a folder (a PEP 420 namespace portion) for this module name? */
  hasFolder(repo: IndexedRepo, name: string): boolean;
}

export class Corpus {
  readonly repos = new Map<string, IndexedRepo>();
  /** repository names by priority (lower number first), then name */
  private readonly order: string[];
  private readonly byRepo = new Map<string, Map<string, CorpusModule>>();
  /** per repository, every package prefix of its module names (namespace portions) */
  private readonly prefixes = new Map<string, Set<string>>();
  private readonly sources = new Map<string, string>();
  /** name → statement indexes binding it, per module (lazily built) */
  private readonly binders = new Map<CorpusModule, Map<string, number[]>>();
  private readonly lookups = new Map<string, CorpusModule | null>();
  private readonly loaded = new Map<string, CorpusModule | null>();
  private readonly folders = new Map<string, boolean>();
  private readonly universes = new Map<string, string[]>();
  private readonly packageNames = new Map<string, boolean>();
  private loader: ModuleLoader | null = null;

  constructor(repos: IndexedRepo[], modules: CorpusModule[]) {
    for (const r of repos) {
      this.repos.set(r.name, r);
      this.byRepo.set(r.name, new Map());
      this.prefixes.set(r.name, new Set());
    }
    // nn-rag priority: lower numbers are preferred
    this.order = repos
      .map((r) => r.name)
      .sort((a, b) => this.repos.get(a)!.priority - this.repos.get(b)!.priority || a.localeCompare(b));
    for (const m of modules) this.add(m);
  }

  private add(m: CorpusModule, text?: string): void {
    let mods = this.byRepo.get(m.repo);
    if (!mods) {
      this.byRepo.set(m.repo, (mods = new Map()));
      this.prefixes.set(m.repo, new Set());
    }
    mods.set(m.name, m);
    const pre = this.prefixes.get(m.repo)!;
    const parts = m.name.split('.');
    for (let i = 1; i < parts.length; i++) pre.add(parts.slice(0, i).join('.'));
    if (text !== undefined) this.sources.set(`${m.repo}\0${m.path}`, text);
  }

  /** The attached on-demand loader, if any. */
  get moduleLoader(): ModuleLoader | null {
    return this.loader;
  }

  /** Attach the on-demand loader (modules of a repository outside its `paths`). */
  setLoader(loader: ModuleLoader | null): void {
    this.loader = loader;
    this.lookups.clear();
    this.packageNames.clear();
    this.folders.clear();
  }

  /** Repositories in the import universe of `repo`: itself first, then the others by
   *  priority (as installed packages); without `repo`, all of them by priority. */
  universe(repo?: string): string[] {
    if (repo === undefined || !this.repos.has(repo)) return this.order;
    let u = this.universes.get(repo);
    if (!u) this.universes.set(repo, (u = [repo, ...this.order.filter((r) => r !== repo)]));
    return u;
  }

  /** Does `repo` know the top-level package of `name` from its indexed files? */
  private repoKnowsTop(repo: string, name: string): boolean {
    const top = name.split('.')[0];
    return !!this.byRepo.get(repo)?.has(top) || !!this.prefixes.get(repo)?.has(top);
  }

  /** Module `name` of repository `repo` itself: indexed, else read on demand when `disk`
   *  allows it (the importing repository's own modules, or a package the repository is
   *  indexed for). */
  private inRepo(repo: string, name: string, disk: boolean): CorpusModule | undefined {
    const m = this.byRepo.get(repo)?.get(name);
    if (m) return m;
    if (!this.loader || !(disk || this.repoKnowsTop(repo, name))) return undefined;
    const key = `${repo}\0${name}`;
    let hit = this.loaded.get(key);
    if (hit === undefined) {
      const r = this.repos.get(repo);
      const got = r ? this.loader.load(r, name) : null;
      hit = got ? { ...got.module, support: true } : null;
      if (hit) this.add(hit, got!.text);
      this.loaded.set(key, hit);
    }
    return hit ?? undefined;
  }

  /** Does `repo` hold `name` as a folder (a regular package or a namespace portion)? */
  private hasPortion(repo: string, name: string, disk: boolean): boolean {
    if (this.prefixes.get(repo)?.has(name)) return true;
    const r = this.repos.get(repo);
    if (!this.loader || !r || !(disk || this.repoKnowsTop(repo, name))) return false;
    const key = `${repo}\0${name}`;
    let hit = this.folders.get(key);
    if (hit === undefined) this.folders.set(key, (hit = this.loader.hasFolder(r, name)));
    return hit;
  }

  /** The module Python would import under this name from code of repository `repo`
   *  (see the header: a top-level name the repository has is its own; otherwise the first
   *  other repository that has it as a module or regular package owns it, else namespace
   *  portions merge). Without `repo`, the universe is every repository by priority. */
  module(name: string, repo?: string): CorpusModule | undefined {
    const key = `${repo ?? ''}\0${name}`;
    const hit = this.lookups.get(key);
    if (hit !== undefined) return hit ?? undefined;
    const found = this.lookup(name, repo);
    this.lookups.set(key, found ?? null);
    return found;
  }

  private lookup(name: string, repo?: string): CorpusModule | undefined {
    const dot = name.indexOf('.');
    const top = dot < 0 ? name : name.slice(0, dot);
    let uni = this.universe(repo);
    if (repo !== undefined && this.repos.has(repo)) {
      // the repository's own sys.path entry comes first (`python main.py` puts its folder
      // first): a top-level name it has (module, package, namespace folder) is looked up
      // in it only. (Python would let another entry's regular package win over a
      // namespace folder of the script's own; a repository's code never means another
      // repository's package by its own folder's name.)
      if (this.ownsTop(repo, top)) return this.inRepo(repo, name, true);
      uni = uni.slice(1);
    }
    for (const r of uni) {
      const owner = this.inRepo(r, top, false);
      if (!owner) continue;
      if (dot < 0) return owner;
      // §5.4.2 / §5.5: submodules of a module or regular package come from its __path__ only
      return owner.isPackage ? this.inRepo(r, name, false) : undefined;
    }
    // PEP 420: no entry has it as a module or regular package: its portions merge
    for (const r of uni) {
      if (!this.hasPortion(r, top, false)) continue;
      const m = this.inRepo(r, name, false);
      if (m) return m;
    }
    return undefined;
  }

  /** The module `name` of repository `repo` itself (a block's own module). */
  ownModule(repo: string, name: string): CorpusModule | undefined {
    return this.inRepo(repo, name, true);
  }

  /** The indexed modules named `name`, one per repository that has it, by priority. */
  modulesNamed(name: string): CorpusModule[] {
    const out: CorpusModule[] = [];
    for (const r of this.order) {
      const m = this.byRepo.get(r)!.get(name);
      if (m && !m.support) out.push(m);
    }
    return out;
  }

  /** Every indexed module of every repository (not those read on demand): what
   *  discovery looks at. */
  modules(): CorpusModule[] {
    const out: CorpusModule[] = [];
    for (const r of this.order) for (const m of this.byRepo.get(r)!.values()) if (!m.support) out.push(m);
    return out;
  }

  /** Does the repository itself have this top-level name (module, package, folder)? */
  private ownsTop(repo: string, top: string): boolean {
    return !!this.inRepo(repo, top, true) || this.hasPortion(repo, top, true);
  }

  /** A namespace package (PEP 420) or regular package exists under this name in the
   *  universe of `repo`. */
  isPackageName(name: string, repo?: string): boolean {
    const key = `${repo ?? ''}\0${name}`;
    let hit = this.packageNames.get(key);
    if (hit === undefined) this.packageNames.set(key, (hit = this.packageNameUncached(name, repo)));
    return hit;
  }

  private packageNameUncached(name: string, repo?: string): boolean {
    if (this.module(name, repo)?.isPackage) return true;
    if (repo !== undefined && this.repos.has(repo) && this.ownsTop(repo, name.split('.')[0]))
      return this.hasPortion(repo, name, true);
    return this.universe(repo).some((r) => this.hasPortion(r, name, r === repo));
  }

  /** Is the top-level package of this (absolute) module name known in the universe of
   *  `repo` (indexed, or on disk for the repository itself)? */
  knowsTopLevel(name: string, repo?: string): boolean {
    const top = name.split('.')[0];
    return !!this.module(top, repo) || this.isPackageName(top, repo);
  }

  /** Statement indexes of `mod` that bind `name` at module scope. A function that
   *  rebinds the name through `global` counts only when no statement binds it when the
   *  module runs: the name is defined without calling that function. */
  bindersOf(mod: CorpusModule, name: string): number[] {
    let map = this.binders.get(mod);
    if (!map) {
      const direct = new Map<string, number[]>();
      const viaGlobal = new Map<string, number[]>();
      mod.facts.statements.forEach((st, i) => {
        const g = st.globalBinds;
        for (const n of st.binds) {
          const target = g?.includes(n) ? viaGlobal : direct;
          const l = target.get(n);
          if (l) l.push(i);
          else target.set(n, [i]);
        }
      });
      for (const [n, l] of viaGlobal) if (!direct.has(n)) direct.set(n, l);
      map = direct;
      this.binders.set(mod, map);
    }
    return map.get(name) ?? [];
  }

  private readonly lineStarts = new Map<CorpusModule, number[]>();

  /** 1-based line of an offset in the module's source. */
  lineOf(mod: CorpusModule, offset: number): number {
    let starts = this.lineStarts.get(mod);
    if (!starts) this.lineStarts.set(mod, (starts = lineStarts(this.source(mod))));
    return lineIndex(starts, offset) + 1;
  }

  private readonly deleters = new Map<CorpusModule, Map<string, number[]>>();

  /** Statement indexes of `mod` that `del` the name at module scope. */
  deletersOf(mod: CorpusModule, name: string): number[] {
    let map = this.deleters.get(mod);
    if (!map) {
      map = new Map();
      mod.facts.statements.forEach((st, i) => {
        for (const n of st.deletes ?? []) {
          const l = map!.get(n);
          if (l) l.push(i);
          else map!.set(n, [i]);
        }
      });
      this.deleters.set(mod, map);
    }
    return map.get(name) ?? [];
  }

  private readonly mutators = new Map<CorpusModule, Map<string, number[]>>();

  /** Statement indexes of `mod` that mutate the module-level name in place without
   *  binding it: an expression statement that begins with the name followed by `.` or
   *  `[` (`R.register_module('BN', module=nn.BatchNorm2d)`, `R[k] = v`, `R.attr = v`,
   *  `R.update(...)`), and a `for` over a literal list or tuple whose body is only such
   *  statements on one name (`for m in [nn.ReLU, nn.ELU]: R.register_module(module=m)`,
   *  see literalLoopMutates). Module-level statements run in order at import (Language
   *  Reference §7.1), so they are part of the state the binding has once its module is
   *  imported. */
  mutatorsOf(mod: CorpusModule, name: string): number[] {
    let map = this.mutators.get(mod);
    if (!map) {
      map = new Map();
      const src = mod.facts.statements.some((st) => st.kind === 'expression_statement' || st.kind === 'for_statement')
        ? this.source(mod)
        : '';
      const add = (name: string, i: number) => {
        const l = map!.get(name);
        if (l) l.push(i);
        else map!.set(name, [i]);
      };
      mod.facts.statements.forEach((st, i) => {
        if (st.kind === 'for_statement' && !st.deletes?.length) {
          const loop = literalLoopMutates(src.slice(st.start, st.end));
          // the loop variable is bound by this loop only: a read of it (the body's own)
          // would otherwise copy every other statement that binds it too
          if (loop && mod.facts.statements.every((o, j) => j === i || !o.binds.includes(loop.target)))
            add(loop.name, i);
          return;
        }
        if (st.kind !== 'expression_statement' || st.binds.length || st.deletes?.length) return;
        let first: (typeof st.refs)[number] | undefined;
        for (const r of st.refs) if (!first || r.start < first.start) first = r;
        if (!first || first.start !== st.start || first.soft) return;
        const next = src[first.end];
        if (next !== '.' && next !== '[') return;
        add(first.name, i);
      });
      this.mutators.set(mod, map);
    }
    return map.get(name) ?? [];
  }

  /** Absolute path of a module's file. */
  filePath(mod: CorpusModule): string {
    const repo = this.repos.get(mod.repo);
    if (!repo) throw new NnragError(`unknown repository ${mod.repo}`);
    return path.join(repo.root, ...mod.path.split('/'));
  }

  /** The module's source text, checked against the indexed blob id: offsets in the
   *  facts are only valid for that exact content. */
  source(mod: CorpusModule): string {
    const key = `${mod.repo}\0${mod.path}`;
    let text = this.sources.get(key);
    if (text === undefined) {
      const file = this.filePath(mod);
      let buf: Buffer;
      try {
        buf = readFileSync(file);
      } catch (e) {
        throw new NnragError(`cannot read ${file}: ${(e as Error).message}; re-run \`nnrag index\``, 'stale-index');
      }
      if (gitBlobId(buf) !== mod.blob) {
        throw new NnragError(`${file} changed since it was indexed; re-run \`nnrag index\``, 'stale-index');
      }
      text = decodePython(buf).text;
      this.sources.set(key, text);
    }
    return text;
  }
}

/** The name a module-level `for` statement mutates and its loop variable, or null: `for <name> in <list or
 *  tuple display>:` (Language Reference §8.3; the display's items names, attributes and
 *  constants, so the loop runs a fixed number of times with nothing else executed) whose
 *  body, without an `else` clause, is only expression statements that each begin with the
 *  same name followed by `.` or `[` (`R.register_module(module=m)`), never the loop
 *  variable. Copied whole with that name, as a plain mutating statement is; the loop
 *  variable it binds at module level comes with it, as in the original. Needs the parser
 *  (tree-sitter); without it, no loop is taken. */
export function literalLoopMutates(text: string): { name: string; target: string } | null {
  if (!parserReady() || !/^for\b/.test(text)) return null;
  const tree = parsePython(text);
  try {
    const loop = tree.rootNode.namedChildren[0];
    if (loop?.type !== 'for_statement' || tree.rootNode.namedChildren.length !== 1) return null;
    const left = loop.childForFieldName('left');
    const right = loop.childForFieldName('right');
    const body = loop.childForFieldName('body');
    if (left?.type !== 'identifier' || !right || !body || loop.childForFieldName('alternative')) return null;
    if (right.type !== 'list' && right.type !== 'tuple') return null;
    const plain = (n: Node): boolean =>
      n.type === 'identifier' ||
      n.type === 'string' ||
      n.type === 'integer' ||
      n.type === 'float' ||
      n.type === 'true' ||
      n.type === 'false' ||
      n.type === 'none' ||
      (n.type === 'attribute' && n.childForFieldName('object') !== null && plain(n.childForFieldName('object')!));
    if (!right.namedChildren.every((n) => n !== null && (n.type === 'comment' || plain(n)))) return null;
    let name: string | null = null;
    for (const st of body.namedChildren) {
      if (!st || st.type === 'comment') continue;
      if (st.type !== 'expression_statement' || st.namedChildren.length !== 1) return null;
      // the leftmost name of the statement: R in `R.f(...)`, `R[k] = v`, `R.a.b = v`
      let head: Node | null = st.namedChildren[0];
      if (head && (head.type === 'assignment' || head.type === 'augmented_assignment')) {
        const target: Node | null = head.childForFieldName('left');
        if (target?.type !== 'subscript' && target?.type !== 'attribute') return null;
        head = target;
      }
      while (head && head.type !== 'identifier') {
        if (head.type === 'call') head = head.childForFieldName('function');
        else if (head.type === 'attribute') head = head.childForFieldName('object');
        else if (head.type === 'subscript') head = head.childForFieldName('value');
        else return null;
      }
      // the name is followed by `.` or `[` (a mutation of it, not a call of it)
      const after = head ? text[head.endIndex] : undefined;
      if (!head || (after !== '.' && after !== '[') || head.text === left.text) return null;
      if (name !== null && name !== head.text) return null;
      name = head.text;
    }
    return name === null ? null : { name, target: left.text };
  } finally {
    tree.delete();
  }
}
