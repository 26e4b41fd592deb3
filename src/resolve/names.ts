// Name resolution across the corpus: what does name N mean in module M?
//
// Python rules implemented (Language Reference §5 "The import system", §4.2):
// - a module-scope read of N resolves to the statements of M that bind N; an import
//   binding is followed to the binding in the imported module;
// - `from P import x` first looks for the attribute x of P (a binding in P/__init__.py,
//   re-exports included), then for the submodule P.x (§5.4.2 / §7.11);
// - `import a.b.c` binds `a` (the top-level package); `import a.b as c` binds the
//   submodule a.b to c;
// - relative imports (`from ..x import y`, PEP 328) resolve against the importing
//   module's package (the module itself when it is a package's __init__);
// - `from X import *` binds X.__all__ when X defines it literally, else every name of
//   X not starting with an underscore (§7.11); star re-exports are computed by a
//   fixpoint so star-import cycles terminate;
// - names not bound in M come from builtins (`len`, `super`, …) or module dunders;
// - a namespace package (PEP 420) is any folder that holds indexed modules;
// - every lookup of a module by name happens in the import universe of the repository
//   of the importing module (Corpus.module(name, repo), §5.5): its own modules first,
//   then the other indexed repositories as installed packages. A relative import
//   (PEP 328) names a module of the importing module's own package, so it stays in
//   that repository whatever the universe holds.
// Nothing is ever resolved by guessing a bare name elsewhere in the corpus.
import { absoluteImport } from '../util/python.js';
import { importBinds, type ImportEdge, type Ref } from '../parse/types.js';
import { BUILTINS, MODULE_DUNDERS } from './builtins.js';
import type { Corpus, CorpusModule } from './corpus.js';
import type { UnresolvedReason } from '../records/block.js';

/** What a name refers to. */
export type Target =
  /** the module-level binding(s) of `name` in an interned module (non-import statements) */
  | { kind: 'def'; module: CorpusModule; name: string; stmts: number[] }
  /** an interned module object (`from . import layers`, `import timm.layers as L`) */
  | { kind: 'module'; name: string; repo: string }
  /** an extern import: kept verbatim in the emitted module */
  | { kind: 'extern'; edge: ImportEdge; absModule: string; qualified: string; synthesized?: boolean }
  | { kind: 'builtin'; name: string }
  | { kind: 'unresolved'; reason: UnresolvedReason; detail: string };

export interface ResolveOptions {
  /** module-name patterns forced extern even when indexed (`torch.package`'s extern) */
  extern?: string[];
  /** when given, only indexed modules matching these patterns are interned; every
   *  other module is extern (`torch.package`'s intern) */
  intern?: string[];
  /** top-level modules importable in the validation environment, when known: an
   *  interned package used as a module object (`torchvision.__version__`) keeps its
   *  `import` extern when it is importable there */
  importable?: readonly string[];
}

/** fnmatch-style match of a dotted module name: `timm.*`, `mmcv`, `a.b.**`. */
export function modulePatternMatches(pattern: string, name: string): boolean {
  if (pattern === name) return true;
  if (!/[*?]/.test(pattern)) return name.startsWith(pattern + '.');
  const re = new RegExp(
    '^' +
      pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*\*/g, '\0')
        .replace(/\*/g, '[^.]*')
        .replace(/\0/g, '.*')
        .replace(/\?/g, '.') +
      '(\\..*)?$',
  );
  return re.test(name);
}

export class Resolver {
  private readonly memo = new Map<CorpusModule, Map<string, Target[]>>();
  private readonly inProgress = new Set<string>();
  private readonly exportsMemo = new Map<string, Set<string> | null>();

  constructor(
    readonly corpus: Corpus,
    private readonly opts: ResolveOptions = {},
  ) {}

  /** Is this absolute module name interned (indexed and not forced extern) for code of
   *  repository `repo`? */
  isInterned(name: string, repo: string): boolean {
    if (this.forcedExtern(name)) return false;
    return !!this.corpus.module(name, repo) || this.corpus.isPackageName(name, repo);
  }

  /** Is this top-level module importable in the validation environment? null: unknown. */
  importable(top: string): boolean | null {
    if (!this.opts.importable) return null;
    this.importableSet ??= new Set(this.opts.importable);
    return this.importableSet.has(top);
  }

  private importableSet: Set<string> | null = null;
  private readonly failingMemo = new Map<string, string | null>();

  /** The extern top-level module whose absence makes importing the interned module
   *  `name` fail in the validation environment, or null (it imports there, or the
   *  environment is unknown). Importing `a.b.c` first runs the `__init__` of `a` and
   *  `a.b`, then `a.b.c` (the import system, Python reference §5.4); a plain import
   *  statement at the top level of any of them that names an extern the environment
   *  lacks raises ImportError, and interned modules those statements import are
   *  followed the same way. Imports inside `try`/`if` are not counted: they may be
   *  guarded or skipped. */
  failingImport(name: string, repo: string): string | null {
    if (!this.opts.importable) return null; // the environment is unknown
    const key = `${repo}\0${name}`;
    if (this.failingMemo.has(key)) return this.failingMemo.get(key)!;
    this.failingMemo.set(key, null); // an import cycle imports (the module is in sys.modules)
    let found: string | null = null;
    const parts = name.split('.');
    for (let i = 1; i <= parts.length && !found; i++) {
      const mod = this.corpus.module(parts.slice(0, i).join('.'), repo);
      if (!mod) continue;
      for (const st of mod.facts.statements) {
        if (found) break;
        if (!isPlainImport(st.kind)) continue;
        for (const e of st.imports) {
          const abs = this.absoluteModule(mod, e);
          if (abs === null || abs === '__future__') continue;
          const top = abs.split('.')[0];
          if (this.isInterned(abs, mod.repo) || (e.kind === 'import' && this.isInterned(top, mod.repo))) {
            found = this.failingImport(abs, mod.repo);
          } else if (!this.isMissingInternal(abs, mod.repo) && this.importable(top) === false) found = top;
          if (found) break;
        }
      }
    }
    this.failingMemo.set(key, found);
    return found;
  }

  forcedExtern(name: string): boolean {
    if (this.opts.extern?.some((p) => modulePatternMatches(p, name))) return true;
    return (
      !!this.opts.intern?.length &&
      !this.opts.intern.some((p) => modulePatternMatches(p, name) || modulePatternMatches(name, p))
    );
  }

  /** An absolute import whose top-level package is indexed but whose module is not. */
  isMissingInternal(name: string, repo: string): boolean {
    if (this.forcedExtern(name)) return false;
    return this.corpus.knowsTopLevel(name, repo);
  }

  /** PEP 328: the absolute module an import edge names, or null when it goes above the top. */
  absoluteModule(from: CorpusModule, edge: ImportEdge): string | null {
    if (edge.kind === 'import') return edge.module;
    return absoluteImport(from.name, from.isPackage, edge.level, edge.module);
  }

  /** Everything `name` may mean at module scope of `mod`. */
  resolveName(mod: CorpusModule, name: string): Target[] {
    let m = this.memo.get(mod);
    if (!m) this.memo.set(mod, (m = new Map()));
    const hit = m.get(name);
    if (hit) return hit;
    const key = `${mod.repo}\0${mod.name}\0${name}`;
    if (this.inProgress.has(key))
      return [{ kind: 'unresolved', reason: 'cycle', detail: `${name} is imported in a cycle through ${mod.name}` }];
    this.inProgress.add(key);
    try {
      const out = this.resolveNameUncached(mod, name);
      m.set(name, out);
      return out;
    } finally {
      this.inProgress.delete(key);
    }
  }

  private resolveNameUncached(mod: CorpusModule, name: string): Target[] {
    const stmts = this.corpus.bindersOf(mod, name);
    const out: Target[] = [];
    const defs: number[] = [];
    for (const i of stmts) {
      const st = mod.facts.statements[i];
      if (isPlainImport(st.kind)) {
        for (const e of st.imports) {
          if (importBinds(e) === name) out.push(...this.followEdge(mod, e));
        }
      } else defs.push(i);
    }
    if (defs.length) out.unshift({ kind: 'def', module: mod, name, stmts: defs });
    if (out.length) return out;
    // not bound in the module: star imports, then builtins and module dunders
    const star = this.fromStars(mod, name, new Set());
    if (star) return star;
    if (BUILTINS.has(name) || MODULE_DUNDERS.has(name) || (name === '__path__' && mod.isPackage))
      return [{ kind: 'builtin', name }];
    const ext = this.externStar(mod, name);
    if (ext) return [ext];
    return [{ kind: 'unresolved', reason: 'undefined', detail: `${name} is not defined in ${mod.name}` }];
  }

  /** Follow one import edge that binds a name (also used by the closure to tell what
   *  an import inside a compound statement binds). */
  followEdge(mod: CorpusModule, e: ImportEdge): Target[] {
    const abs = this.absoluteModule(mod, e);
    if (abs === null)
      return [
        {
          kind: 'unresolved',
          reason: 'missing-module',
          detail: `relative import beyond the top-level package in ${mod.name}`,
        },
      ];
    const repo = mod.repo;
    if (e.kind === 'import') {
      if (e.asname) {
        if (this.isInterned(abs, repo)) return [{ kind: 'module', name: abs, repo }];
      } else {
        const top = abs.split('.')[0];
        if (this.isInterned(top, repo)) {
          if (!this.isInterned(abs, repo))
            return [{ kind: 'unresolved', reason: 'missing-module', detail: `module ${abs} does not exist` }];
          return [{ kind: 'module', name: top, repo }];
        }
      }
      if (this.isMissingInternal(abs, repo))
        return [{ kind: 'unresolved', reason: 'missing-module', detail: `module ${abs} does not exist` }];
      const qualified = e.asname ? abs : abs.split('.')[0];
      return [{ kind: 'extern', edge: e, absModule: abs, qualified }];
    }
    // a package importing its own submodule (`from . import x` or `from pkg import x` in
    // pkg/__init__.py) binds the submodule (§5.4.2 "Submodules"): following the
    // attribute would only find this very import again
    const ownDefs = () => this.corpus.bindersOf(mod, e.name).some((i) => !isPlainImport(mod.facts.statements[i].kind));
    if (
      mod.isPackage &&
      abs === mod.name &&
      e.name !== '*' &&
      this.isInterned(`${abs}.${e.name}`, repo) &&
      !ownDefs()
    ) {
      return [{ kind: 'module', name: `${abs}.${e.name}`, repo }];
    }
    if (this.isInterned(abs, repo)) return this.resolveAttr(abs, e.name, repo);
    // a relative import names a module of this package: missing unless forced extern
    if ((e.level > 0 && !this.forcedExtern(abs)) || this.isMissingInternal(abs, repo)) {
      return [{ kind: 'unresolved', reason: 'missing-module', detail: `module ${abs} does not exist` }];
    }
    return [{ kind: 'extern', edge: e, absModule: abs, qualified: `${abs}.${e.name}` }];
  }

  /** The attribute `attr` of the interned module `modName` as code of repository `repo`
   *  imports it (binding, then submodule). */
  resolveAttr(modName: string, attr: string, repo: string): Target[] {
    const mod = this.corpus.module(modName, repo);
    if (mod && this.corpus.bindersOf(mod, attr).length) return this.resolveName(mod, attr);
    const sub = `${modName}.${attr}`;
    if (this.isInterned(sub, repo)) return [{ kind: 'module', name: sub, repo }];
    if (mod) {
      const star = this.fromStars(mod, attr, new Set());
      if (star) return star;
      const ext = this.externStar(mod, attr);
      if (ext) return [ext];
    }
    if (this.corpus.knowsTopLevel(sub, repo) && !mod)
      return [{ kind: 'unresolved', reason: 'missing-module', detail: `module ${sub} does not exist` }];
    return [{ kind: 'unresolved', reason: 'undefined', detail: `${attr} is not defined in ${modName}` }];
  }

  /** The module-level star imports of `mod` with the absolute module they name. */
  private *starImports(mod: CorpusModule): Generator<{ edge: ImportEdge; abs: string; interned: boolean }> {
    for (const st of mod.facts.statements) {
      for (const e of st.imports) {
        if (e.kind !== 'from' || e.name !== '*') continue;
        const abs = this.absoluteModule(mod, e);
        if (abs) yield { edge: e, abs, interned: this.isInterned(abs, mod.repo) };
      }
    }
  }

  /** A name provided by an interned star import of `mod`. */
  private fromStars(mod: CorpusModule, name: string, seen: Set<string>): Target[] | null {
    for (const { abs, interned } of this.starImports(mod)) {
      if (interned && this.exports(abs, mod.repo, seen)?.has(name)) return this.resolveAttr(abs, name, mod.repo);
    }
    return null;
  }

  /** A name that can only come from a star import of an extern module. */
  private externStar(mod: CorpusModule, name: string): Target | null {
    for (const { edge, abs, interned } of this.starImports(mod)) {
      if (interned || (edge.kind === 'from' && edge.level > 0)) continue;
      // the star import itself is kept in its original form
      return { kind: 'extern', edge, absModule: abs, qualified: `${abs}.${name}`, synthesized: true };
    }
    return null;
  }

  /** Names `from modName import *` binds (§7.11), or null when unknown. Cycles of star
   *  imports are cut by `seen` (each module contributes once: a fixpoint). */
  exports(modName: string, repo: string, seen: Set<string> = new Set()): Set<string> | null {
    const mod = this.corpus.module(modName, repo);
    if (!mod) return null;
    const key = `${mod.repo}\0${mod.name}`;
    if (this.exportsMemo.has(key)) return this.exportsMemo.get(key)!;
    if (mod.facts.all) {
      const s = new Set(mod.facts.all);
      this.exportsMemo.set(key, s);
      return s;
    }
    if (seen.has(key)) return new Set();
    seen.add(key);
    const out = new Set<string>();
    for (const st of mod.facts.statements) for (const n of st.binds) if (!n.startsWith('_')) out.add(n);
    for (const { abs, interned } of this.starImports(mod)) {
      if (!interned) continue;
      const sub = this.exports(abs, mod.repo, seen);
      if (sub) for (const n of sub) if (!n.startsWith('_')) out.add(n);
    }
    // only memoise results not truncated by a cycle
    if (seen.size === 1) this.exportsMemo.set(key, out);
    seen.delete(key);
    return out;
  }

  /** Resolve a reference with its attribute chain: `layers.mlp.Mlp` where `layers` is
   *  an interned module resolves through the chain. `consumed` says how many
   *  attributes were part of the resolution (the rest are ordinary attribute reads). */
  resolveRef(mod: CorpusModule, ref: Ref): { targets: Target[]; consumed: number } {
    let targets = sameModule(this.resolveName(mod, ref.name));
    let consumed = 0;
    const attrs = ref.attrs ?? [];
    while (targets.length === 1 && targets[0].kind === 'module' && consumed < attrs.length) {
      const attr = attrs[consumed];
      if (attr.startsWith('__') && attr.endsWith('__')) break; // module.__name__ and friends
      targets = sameModule(this.resolveAttr(targets[0].name, attr, targets[0].repo));
      consumed++;
    }
    return { targets, consumed };
  }
}

/** Several imports binding one name to the same module (`import a.b` and `import a.c`
 *  both bind the package `a`, §7.11) are one module target. */
function sameModule(targets: Target[]): Target[] {
  if (targets.length < 2 || !targets.every((t) => t.kind === 'module')) return targets;
  const [first] = targets as Extract<Target, { kind: 'module' }>[];
  return targets.every((t) => t.kind === 'module' && t.name === first.name && t.repo === first.repo)
    ? [first]
    : targets;
}

export function isPlainImport(kind: string): boolean {
  return kind === 'import_statement' || kind === 'import_from_statement' || kind === 'future_import_statement';
}
