// Submodules an emitted module imports itself: importing a submodule binds it as an
// attribute of its parent package (Language Reference §5.4.2 "Submodules"), so
// `import packaging` followed by `packaging.version.parse(...)` works in the original only
// because some other import of its process loaded `packaging.version`. The copy lacks
// that other import; when the copied code reads an attribute `P.sub` of an extern module
// P, `sub` is a submodule of P, and neither P's `__init__` binds `sub` nor the imports
// the emitted module makes load `P.sub` (following the imports of P's own package's
// modules that those run at their top level), the copy gets `import P.sub`.
//
// What a module binds and imports is read from its source: the indexed module when the
// package is indexed, else the validation environment's installed file (InstalledFiles
// `locate`). A module whose source is not known (an extension module, a package not
// found) decides nothing: no import is added for it. An attribute the `__init__` binds
// itself (an assignment, a def, an import of something else) is not the submodule, and
// a package with a module `__getattr__` (PEP 562: loads submodules lazily), one that
// fills its namespace dynamically (`globals()`, `setattr`, `exec`, `import_module`), or
// a star import that may bind the name is left alone.
import type { InstalledFiles } from '../environment/installed.js';
import { readFileSync } from 'node:fs';
import { bindSource } from '../parse/binder.js';
import { parserReady } from '../parse/parser.js';
import { importBinds, type FileFacts, type ImportEdge } from '../parse/types.js';
import type { Binding, Closure } from '../resolve/closure.js';
import type { Corpus } from '../resolve/corpus.js';
import { absoluteImport } from '../util/python.js';

/** A module's source facts as a lookup finds them; `facts` null when it exists without
 *  readable source (an extension module, a namespace folder). */
export interface ModuleSource {
  isPackage: boolean;
  facts: FileFacts | null;
}

export type ModuleLookup = (name: string) => ModuleSource | null;

/** How attribute `name` of a module is found once the module is imported. */
type Attribute =
  /** a submodule its `__init__` does not import: present only if something loaded it */
  | 'submodule'
  /** a submodule its `__init__` (or a star import of it) imports itself */
  | 'loaded'
  /** something else its `__init__` binds, or unknown: nothing to import */
  | 'other';

/** The submodule analysis over one module lookup (memoised: one per environment and
 *  repository universe). */
export class Submodules {
  private readonly sources = new Map<string, ModuleSource | null>();
  private readonly loadedMemo = new Map<string, ReadonlySet<string>>();

  constructor(private readonly lookup: ModuleLookup) {}

  private source(name: string): ModuleSource | null {
    let s = this.sources.get(name);
    if (s === undefined) this.sources.set(name, (s = this.lookup(name)));
    return s;
  }

  /** The absolute modules one import edge of module `mod` loads: every package on the
   *  way (§5.4: `import a.b.c` imports a, a.b, a.b.c), and for `from m import n` the
   *  submodule m.n when there is one (§7.11: the attribute, else the submodule). */
  private edgeLoads(mod: string, isPackage: boolean, e: ImportEdge): string[] {
    const base = e.kind === 'import' ? e.module : absoluteImport(mod, isPackage, e.level, e.module);
    if (!base) return [];
    const parts = base.split('.');
    const out = parts.map((_, i) => parts.slice(0, i + 1).join('.'));
    if (e.kind === 'from' && e.name !== '*' && this.source(`${base}.${e.name}`)) out.push(`${base}.${e.name}`);
    return out;
  }

  /** Modules of `start`'s top-level package that importing `start` loads: its packages'
   *  `__init__` and its own top-level imports, followed through the package's modules
   *  they load (imports in function bodies run later and are not followed; imports
   *  under `if TYPE_CHECKING:` never run, PEP 484). Another package's imports are not
   *  followed: what they load of this package is not counted (an import too many, never
   *  one too few). */
  loadedBy(start: string): ReadonlySet<string> {
    const memo = this.loadedMemo.get(start);
    if (memo) return memo;
    const top = start.split('.')[0];
    const parts = start.split('.');
    const seen = new Set<string>();
    const queue = parts.map((_, i) => parts.slice(0, i + 1).join('.'));
    for (const q of queue) seen.add(q);
    while (queue.length) {
      const m = queue.shift()!;
      const src = this.source(m);
      if (!src?.facts) continue;
      for (const st of src.facts.statements) {
        if (st.guard === 'type-checking') continue;
        for (const e of st.imports) {
          if (e.typeChecking) continue;
          for (const l of this.edgeLoads(m, src.isPackage, e)) {
            if (seen.has(l) || l.split('.')[0] !== top) continue;
            seen.add(l);
            queue.push(l);
          }
        }
      }
    }
    this.loadedMemo.set(start, seen);
    return seen;
  }

  /** How attribute `name` of module `mod` is found after `import mod`. */
  attribute(mod: string, name: string): Attribute {
    if (name.startsWith('__') && name.endsWith('__')) return 'other';
    const src = this.source(mod);
    if (!src?.facts || !src.isPackage) return 'other';
    // a package that fills its namespace dynamically (`globals()`, `setattr` on itself,
    // `exec`, `importlib.import_module`) has attributes no reading of its source knows
    if (src.facts.dynamic.length) return 'other';
    const sub = `${mod}.${name}`;
    if (!this.source(sub)) return 'other';
    let loaded = false;
    for (const st of src.facts.statements) {
      if (st.guard === 'type-checking') continue;
      // a module `__getattr__` (PEP 562) may load submodules on first access
      if (st.binds.includes('__getattr__')) return 'other';
      for (const e of st.imports) {
        if (e.typeChecking || e.kind !== 'from' || e.name !== '*') continue;
        // `from x import *` binds x's public names or its `__all__` (§7.11)
        const from = absoluteImport(mod, true, e.level, e.module);
        const f = from ? this.source(from)?.facts : null;
        if (!f) return 'other';
        if (f.all ? f.all.includes(name) : f.statements.some((s) => s.binds.includes(name))) return 'other';
      }
      if (!st.binds.includes(name)) {
        if (st.imports.some((e) => !e.typeChecking && this.edgeLoads(mod, true, e).includes(sub))) loaded = true;
        continue;
      }
      // bound by this statement: only an import of the submodule itself keeps it the module
      if (st.bindSpans.some((s) => s.name === name) || st.globalBinds?.includes(name)) return 'other';
      const edges = st.imports.filter((e) => importBinds(e) === name);
      if (!edges.length) return 'other';
      for (const e of edges) {
        const denotes =
          e.kind === 'import'
            ? e.asname
              ? e.module
              : e.module.split('.')[0]
            : `${absoluteImport(mod, true, e.level, e.module)}.${e.name}`;
        if (denotes !== sub) return 'other';
      }
      loaded = true;
    }
    return loaded ? 'loaded' : 'submodule';
  }

  /** Whether `name` is a module whose source is known (a module or package to read). */
  isModule(name: string): boolean {
    return !!this.source(name);
  }

  /** The submodules to import so that reading `attrs` through module `mod` finds them,
   *  given the modules the emitted module's imports load (`loadedOf`, asked only when a
   *  submodule is read, extended by what these imports load). Only the deepest of a chain is returned (`import a.b.c` loads
   *  a.b too). */
  needed(mod: string, attrs: readonly string[], loadedOf: () => Set<string>): string[] {
    const out: string[] = [];
    let cur = mod;
    for (const a of attrs) {
      const kind = this.attribute(cur, a);
      if (kind === 'other') break;
      const sub = `${cur}.${a}`;
      const loaded = kind === 'submodule' ? loadedOf() : null;
      if (loaded && !loaded.has(sub)) {
        const last = out[out.length - 1];
        if (last !== undefined && sub.startsWith(`${last}.`)) out.pop();
        out.push(sub);
        for (const l of this.loadedBy(sub)) loaded.add(l);
      }
      cur = sub;
    }
    return out;
  }
}

/** Parsed installed files, per environment (its InstalledFiles). */
const installedFacts = new WeakMap<InstalledFiles, Map<string, ModuleSource | null>>();

/** The source of a module of the validation environment, parsed once per environment;
 *  null when it has none there or the parser is not ready (nothing is decided then). */
function installedSource(installed: InstalledFiles, name: string): ModuleSource | null {
  let memo = installedFacts.get(installed);
  if (!memo) installedFacts.set(installed, (memo = new Map()));
  if (memo.has(name)) return memo.get(name)!;
  let out: ModuleSource | null = null;
  const loc = installed.locate(name);
  if (loc) {
    let facts: FileFacts | null = null;
    if (loc.file && parserReady()) {
      try {
        facts = bindSource(readFileSync(loc.file, 'utf8'));
      } catch {
        facts = null;
      }
    }
    out = { isPackage: loc.isPackage, facts };
  }
  memo.set(name, out);
  return out;
}

/** The module lookup of a block of repository `repo`: the indexed module of its import
 *  universe first (corpus.ts), else the environment's installed file. */
export function moduleLookup(corpus: Corpus, repo: string, installed?: InstalledFiles): ModuleLookup {
  return (name) => {
    const m = corpus.module(name, repo);
    if (m) return { isPackage: m.isPackage, facts: m.facts };
    if (corpus.isPackageName(name, repo)) return { isPackage: true, facts: null };
    return installed ? installedSource(installed, name) : null;
  };
}

/** Per extern binding of the closure that the emitted module imports at its top, the
 *  submodules it must import so that the attribute chains its copied code reads through
 *  it find them (`Submodules.needed`), given what every top-level import of the emitted
 *  module (and every import kept in a copied compound statement) loads. */
export function submoduleImports(closure: Closure, sub: Submodules): Map<Binding, string[]> {
  const out = new Map<Binding, string[]>();
  const wanted = [...closure.bindings.values()].filter(
    (b) => b.kind === 'extern' && b.attrChains?.length && b.qualified && b.edges?.some((e) => !e.edge.typeChecking),
  );
  if (!wanted.length) return out;
  // the modules the emitted module's own imports load
  const starts = new Set<string>();
  const edgeStarts = (edge: ImportEdge, abs: string) => {
    starts.add(abs);
    if (edge.kind === 'from' && edge.name !== '*' && sub.isModule(`${abs}.${edge.name}`))
      starts.add(`${abs}.${edge.name}`);
  };
  for (const b of closure.bindings.values())
    if (b.kind === 'extern') for (const e of b.edges ?? []) if (!e.edge.typeChecking) edgeStarts(e.edge, e.absModule);
  for (const r of closure.importRewrites)
    if (!r.nested) for (const k of r.keep) if (k.absModule && !k.edge.typeChecking) edgeStarts(k.edge, k.absModule);
  const loadedOf = new Map<string, Set<string>>();
  const loaded = (top: string) => {
    let l = loadedOf.get(top);
    if (!l) {
      loadedOf.set(top, (l = new Set()));
      for (const s of starts) if (s.split('.')[0] === top) for (const m of sub.loadedBy(s)) l.add(m);
    }
    return l;
  };
  for (const b of wanted) {
    const mod = b.qualified!;
    // `from a import b` denotes the submodule a.b only when a's `__init__` binds nothing else by that name
    const fromEdge = b.edges!.every((e) => e.edge.kind === 'from');
    if (fromEdge) {
      const dot = mod.lastIndexOf('.');
      if (dot < 0 || sub.attribute(mod.slice(0, dot), mod.slice(dot + 1)) === 'other') continue;
    }
    const l = () => loaded(mod.split('.')[0]);
    const mods: string[] = [];
    for (const chain of b.attrChains!) for (const m of sub.needed(mod, chain, l)) if (!mods.includes(m)) mods.push(m);
    // `import a.b.c` loads a.b too: keep the deepest
    const deepest = mods.filter((m) => !mods.some((o) => o.startsWith(`${m}.`)));
    if (deepest.length) out.set(b, deepest.sort());
  }
  return out;
}

/** One analysis per corpus, repository and environment: the environment's parsed files
 *  are shared by every block of a run. */
const analyses = new WeakMap<Corpus, Map<string, { installed: InstalledFiles | undefined; sub: Submodules }[]>>();

export function submodulesFor(corpus: Corpus, repo: string, installed?: InstalledFiles): Submodules {
  let byRepo = analyses.get(corpus);
  if (!byRepo) analyses.set(corpus, (byRepo = new Map()));
  let list = byRepo.get(repo);
  if (!list) byRepo.set(repo, (list = []));
  let hit = list.find((x) => x.installed === installed);
  if (!hit) list.push((hit = { installed, sub: new Submodules(moduleLookup(corpus, repo, installed)) }));
  return hit.sub;
}
