// Dependency closure of a block: a worklist over top-level statements, starting at the
// statement that defines the target class (docs/ARCHITECTURE.md "Resolution and closure").
//
// - Every binding of a needed name is included: all statements of the module that bind
//   it (both branches of an `if`, the whole `try` statement, every redefinition).
// - Plain import statements are never copied: an import of an interned module is
//   followed to the definition it names; an extern import is recorded and printed
//   in its original form by the emitter.
// - Reads are eager (evaluated when the statement runs) or lazy (function bodies);
//   eager reads become ordering edges, lazy ones only pull definitions in. A read of
//   another module's name sees its final value (the module ran to the end before the
//   import returned), so it follows every statement binding it; a read of the module's
//   own name sees the bindings before it (§4.2.2: names are looked up when the statement
//   runs), so it follows those and precedes the later ones. Eager reads of the same
//   definition of one module keep their original order as a soft edge (one may mutate
//   what the other reads: registries), dropped by the emitter if it would close a cycle.
// - Imports nested in compound statements or function bodies that name interned
//   modules are rewritten, because relative imports cannot work in a standalone file.
// - A name that cannot be resolved is a diagnostic, never silently dropped.
// - A config's `type` string in copied code naming a class registered in a registry the
//   copy holds (`R.build(dict(type='X'))` with `@R.register_module() class X`) is a lazy
//   read of that class (registry.ts): the original's registry imports the package that
//   registers it.
// - Bindings are identified by what they denote, not by their text: a module-level name
//   that a compound statement binds only through imports (`try: import torch.distributed.nn`,
//   which binds `torch`, Language Reference §7.11) is the same binding as the module or
//   definition those imports name, when every binding of the name denotes that one thing;
//   its slot is recorded in `aliases` so the emitter neither claims nor renames it apart.
import { importBinds, type ImportEdge, type Ref, type StatementFacts } from '../parse/types.js';
import { classStatement, resolveBase } from './classes.js';
import type { Corpus, CorpusModule } from './corpus.js';
import { isPlainImport, Resolver, type Target } from './names.js';
import { registrations, type Registration } from './registry.js';
import type { Diagnostic } from '../records/block.js';

/** Byte ranges (`[start, end)` offsets of the module's source) of top-level statement
 *  `stmt` of `mod` that the emitted module leaves out. */
export type SkipRanges = (mod: CorpusModule, stmt: number) => readonly (readonly [number, number])[] | undefined;

/** A module of another indexed repository that the validation environment has installed
 *  with the same bytes (the distribution whose RECORD lists its file). */
export interface InstalledSource {
  distribution: string;
  version: string;
}

export interface BuildOptions {
  skip?: SkipRanges;
  /** slim emission's package boundary: the installed distribution providing `mod` (a
   *  module of another repository than the block's) with the indexed file's very bytes,
   *  else null or a reason it is not (`{ copied }`) */
  installed?: (mod: CorpusModule) => InstalledSource | { copied: string } | null;
  /** usage roots: module-level definitions the block's code never names that the
   *  validated arguments do (`norm_layer=FrozenBatchNorm2d`), pulled in as if the
   *  block read them lazily, so that its usage line can build them (pipeline.ts) */
  roots?: readonly RootDef[];
}

/** A module-level definition by its module and name. */
export interface RootDef {
  mod: CorpusModule;
  name: string;
}

/** A usage root the closure holds: the definition and the binding it got. */
export interface UsageRoot {
  mod: CorpusModule;
  name: string;
  binding: Binding;
}

/** A module of another repository the closure reached: imported from its installed
 *  distribution, or copied and why. */
export interface PackageUse {
  repo: string;
  module: string;
  distribution?: string;
  version?: string;
  /** copied (not imported): why */
  copied?: string;
}

/** A top-level statement of an interned module that the closure copies. */
export interface StmtNode {
  mod: CorpusModule;
  stmt: number;
  facts: StatementFacts;
  /** order in which the worklist reached it (the target is 0) */
  seq: number;
}

/** What a name in the emitted module stands for: one key per distinct thing. */
export type BindingKey = string;

export interface Binding {
  key: BindingKey;
  /** the name it would like to keep */
  name: string;
  kind: 'def' | 'extern' | 'builtin';
  /** def: the module whose namespace bound it */
  mod?: CorpusModule;
  /** extern: the import edges that bind it (all printed for `import a.b` forms) */
  edges?: { edge: ImportEdge; absModule: string }[];
  /** extern: the dotted name it denotes (`import a.b` → `a`, `import a.b as c` → `a.b`,
   *  `from a import b` → `a.b`) */
  qualified?: string;
  /** extern: the attribute chains the copied code reads through it (`packaging.version.parse`
   *  → `['version', 'parse']`), for the submodules it must import itself (emit/submodules.ts) */
  attrChains?: string[][];
  /** order of first use, for deciding who keeps a contested name */
  seq: number;
  /** module-level names of the original modules that denote this binding (for the
   *  validator's namespace stage): `name` in `mod` is the same object when the original
   *  runs. A name bound only in the body of `if TYPE_CHECKING:` is none of them: it is
   *  unbound at run time (PEP 484), so a binding reached only through one has none */
  origins?: { mod: CorpusModule; name: string }[];
}

/** A reference inside a copied statement and the binding it was resolved to. */
export interface Use {
  node: StmtNode;
  start: number;
  /** end of the resolved part (name plus consumed module attributes) */
  end: number;
  /** text the original code had there */
  original: string;
  binding: Binding;
  /** an attribute chain replaced by one name: the names local where it stands */
  shadows?: string[];
}

/** A nested/compound import of interned modules, replaced by assignments. */
export interface ImportRewrite {
  node: StmtNode;
  start: number;
  end: number;
  /** local name → binding it must refer to; extern (and unresolvable) edges are kept */
  locals: { local: string; binding: Binding }[];
  keep: { edge: ImportEdge; absModule: string | null }[];
  /** the import sits in a function body (affects how same-name imports are rewritten) */
  nested: boolean;
  /** some edge names an interned module (else only a rename can change the text) */
  interned: boolean;
  /** `import a.b as m` of an interned module used as a value (`vars(m)`): `m` is bound
   *  to a `types.ModuleType` named like the module and holding the copied members */
  modules?: ModuleNamespace[];
}

/** A module object the copy rebuilds: a `types.ModuleType(module)` whose namespace holds
 *  `members` (attribute name → the binding of its copied or imported definition). */
export interface ModuleNamespace {
  local: string;
  module: string;
  /** the extern binding of `import types` */
  types: Binding;
  members: { name: string; binding: Binding }[];
}

export interface Closure {
  target: { mod: CorpusModule; className: string; node: StmtNode };
  nodes: StmtNode[];
  /** node → nodes that must be emitted before it (eager reads; a later rebinding of a
   *  name the node reads eagerly in its own module is after it) */
  eager: Map<StmtNode, Set<StmtNode>>;
  /** node → nodes it should follow when possible (earlier eager readers of the same
   *  definition of its module) */
  soft: Map<StmtNode, Set<StmtNode>>;
  bindings: Map<BindingKey, Binding>;
  uses: Use[];
  importRewrites: ImportRewrite[];
  diagnostics: Diagnostic[];
  /** `repo:module:name` of a module-level name bound only by imports → the binding it
   *  denotes (one binding, not a second claim on the name) */
  aliases: Map<string, Binding>;
  /** with `BuildOptions.installed`: the modules of other repositories the block reached,
   *  by repository and module name (sorted) */
  packages: PackageUse[];
  /** the usage roots (BuildOptions.roots) that resolved to a definition */
  usageRoots: UsageRoot[];
}

/** Key of a module-level name of an interned module (as used by `aliases`). */
export function slotKey(mod: CorpusModule, name: string): string {
  return `${mod.repo}:${mod.name}:${name}`;
}

export class ClosureBuilder {
  constructor(
    readonly corpus: Corpus,
    readonly resolver: Resolver,
  ) {}

  /** `opts.skip`: byte ranges of a statement whose code the emitted module leaves out
   *  (slim emission, src/emit/slim): references inside them pull nothing in. */
  build(mod: CorpusModule, className: string, opts: BuildOptions = {}): Closure {
    const cls = classStatement(mod, className);
    if (!cls) throw new Error(`class ${className} is not defined at module level in ${mod.name}`);
    // a definition imported from its installed module because it reads its own file
    // (ownFileReader) runs the installed module's code, whose globals hold the installed
    // objects: a class the copy needs that the installed module also binds is the
    // installed one too (sharedWithInstalled), or the two copies of one class fail the
    // installed code's isinstance tests. Which modules are installed is known only once
    // the closure is built: it is built again while that adds classes (a few rounds).
    let shared = new Set<string>();
    for (let round = 0; ; round++) {
      const state = this.buildState(mod, className, cls.stmt, opts, shared);
      const more = round < 3 ? state.sharedWithInstalled(shared, slotKey(mod, className)) : shared;
      if (more.size === shared.size) return this.result(state, mod, className, cls.stmt);
      shared = more;
    }
  }

  private buildState(
    mod: CorpusModule,
    className: string,
    clsStmt: number,
    opts: BuildOptions,
    shared: ReadonlySet<string>,
  ): State {
    const state = new State(this.corpus, this.resolver, opts.skip, opts.installed, mod.repo, shared);
    const root = state.node(mod, clsStmt);
    // the class name itself is a binding of the emitted module
    state.defBinding(mod, className);
    const usageRoots: UsageRoot[] = [];
    for (const r of opts.roots ?? []) {
      const b = state.usageRoot(root, r.mod, r.name);
      if (b) usageRoots.push({ mod: r.mod, name: r.name, binding: b });
    }
    // names looked up through a registry the copy holds pull their classes in, which may
    // bring further registries and names (registry.ts): to a fixed point
    do {
      while (state.queue.length) state.process(state.queue.shift()!);
    } while (state.registeredByName());
    state.aliasSlots();
    state.usageRootsFound = usageRoots;
    return state;
  }

  private result(state: State, mod: CorpusModule, className: string, clsStmt: number): Closure {
    const root = state.node(mod, clsStmt);
    const usageRoots = state.usageRootsFound;
    return {
      target: { mod, className, node: root },
      nodes: [...state.nodes.values()],
      eager: state.eager,
      soft: state.softOrder(),
      bindings: state.bindings,
      uses: state.uses,
      importRewrites: state.rewrites,
      diagnostics: state.diagnostics,
      aliases: state.aliases,
      packages: [...state.packages.values()].sort(
        (a, b) => a.repo.localeCompare(b.repo) || a.module.localeCompare(b.module),
      ),
      usageRoots,
    };
  }
}

class State {
  readonly nodes = new Map<string, StmtNode>();
  readonly queue: StmtNode[] = [];
  readonly eager = new Map<StmtNode, Set<StmtNode>>();
  /** slot → statements of its own module that read it eagerly */
  private readonly ownReaders = new Map<string, Set<StmtNode>>();
  readonly bindings = new Map<BindingKey, Binding>();
  readonly uses: Use[] = [];
  readonly rewrites: ImportRewrite[] = [];
  readonly diagnostics: Diagnostic[] = [];
  readonly aliases = new Map<string, Binding>();
  readonly packages = new Map<string, PackageUse>();
  /** extern bindings of definitions imported from installed packages (`installedDef`) */
  private readonly installedBindings = new Set<Binding>();
  private seq = 0;
  /** config `type` strings of copied code that name a registered class, not yet matched to a
   *  registry the copy holds (registry.ts) */
  private named: { node: StmtNode; text: string; line: number }[] = [];
  /** `slotKey`-style key of a registration's receiver → the binding key it denotes */
  private readonly receivers = new Map<string, string | null>();
  /** modules some definitions of which are imported from their installed module because
   *  they read their own file (ownFileReader) */
  private readonly installedReaders = new Set<CorpusModule>();
  /** the usage roots (BuildOptions.roots) that resolved to a definition */
  usageRootsFound: UsageRoot[] = [];

  constructor(
    private readonly corpus: Corpus,
    private readonly resolver: Resolver,
    private readonly skip?: SkipRanges,
    private readonly installed?: BuildOptions['installed'],
    private readonly ownRepo?: string,
    /** `slotKey`s of definitions imported from their installed module because an
     *  installed module the copy imports binds them too (sharedWithInstalled) */
    private readonly shared: ReadonlySet<string> = new Set(),
  ) {}

  /** The classes the copy would copy that a module imported from its installed package
   *  (installedReaders) binds at module level, itself or by import: an object has
   *  one identity (Language Reference §3.1), and the installed module's code sees its own
   *  globals, so `isinstance(aggr, Aggregation)` in installed code is false for an instance
   *  of a copied `Aggregation`. Returns `known` with those added (`slotKey`s; never `root`,
   *  the block's own class). */
  sharedWithInstalled(known: ReadonlySet<string>, root: string): Set<string> {
    const out = new Set(known);
    if (!this.installedReaders.size) return out;
    const wanted = new Set<string>();
    for (const m of this.installedReaders)
      for (const st of m.facts.statements)
        for (const name of st.binds) {
          const id = this.identity(this.resolver.resolveName(m, name), name);
          // classes: what isinstance and issubclass test by identity (a copied function
          // behaves as the installed one does)
          if (id?.target.kind === 'def' && classStatement(id.target.module, id.target.name))
            wanted.add(slotKey(id.target.module, id.target.name));
        }
    for (const b of this.bindings.values()) {
      if (b.kind !== 'def' || !b.mod) continue;
      const key = slotKey(b.mod, b.name);
      // the block's own class is what the copy is for: always copied
      if (key !== root && wanted.has(key) && this.resolver.importable(b.mod.name.split('.')[0]) === true) out.add(key);
    }
    return out;
  }

  node(mod: CorpusModule, stmt: number): StmtNode {
    const key = `${mod.repo}\0${mod.name}\0${stmt}`;
    let n = this.nodes.get(key);
    if (!n) {
      n = { mod, stmt, facts: mod.facts.statements[stmt], seq: this.nodes.size };
      this.nodes.set(key, n);
      this.queue.push(n);
    }
    return n;
  }

  /** `node` must be emitted after `dep`. */
  private after(node: StmtNode, dep: StmtNode): void {
    let s = this.eager.get(node);
    if (!s) this.eager.set(node, (s = new Set()));
    s.add(dep);
  }

  /** Soft order: eager readers of one definition of their own module, in original order. */
  softOrder(): Map<StmtNode, Set<StmtNode>> {
    const soft = new Map<StmtNode, Set<StmtNode>>();
    for (const readers of this.ownReaders.values()) {
      const l = [...readers].sort((a, b) => a.stmt - b.stmt);
      for (let i = 1; i < l.length; i++) {
        let s = soft.get(l[i]);
        if (!s) soft.set(l[i], (s = new Set()));
        s.add(l[i - 1]);
      }
    }
    return soft;
  }

  /** The binding of definition `name` of `mod`; `runtime` false when it is reached only
   *  through a name bound under `if TYPE_CHECKING:` (then `mod.name` is no origin yet:
   *  the copy binds it for type checkers only, as the original where it is read). */
  defBinding(mod: CorpusModule, name: string, runtime = true): Binding {
    const key = `def:${slotKey(mod, name)}`;
    let b = this.bindings.get(key);
    if (!b) this.bindings.set(key, (b = { key, name, kind: 'def', mod, seq: this.seq++, origins: [] }));
    if (runtime) addOrigin(b, mod, name);
    return b;
  }

  /** The binding of an extern target; `print` adds its edge to the imports the emitter
   *  prints (plain top-level imports only: an import inside a compound statement stays
   *  in its statement). */
  private externBinding(local: string, t: Extract<Target, { kind: 'extern' }>, print = true): Binding {
    const key = externKey(local, t);
    let b = this.bindings.get(key);
    if (!b)
      this.bindings.set(
        key,
        (b = {
          key,
          name: key.slice(4, key.indexOf('=')),
          kind: 'extern',
          edges: [],
          qualified: t.qualified,
          seq: this.seq++,
        }),
      );
    if (print && !b.edges!.some((x) => sameEdge(x.edge, t.edge, x.absModule, t.absModule)))
      b.edges!.push({ edge: t.edge, absModule: t.absModule });
    return b;
  }

  /** The statements of `stmts` bind `name` only through import edges (no assignment,
   *  def, class, `global` or `del` of it): those edges, else null. */
  private importOnly(mod: CorpusModule, name: string, stmts: number[]): ImportEdge[] | null {
    if (this.corpus.deletersOf(mod, name).length) return null;
    const edges: ImportEdge[] = [];
    for (const i of stmts) {
      const st = mod.facts.statements[i];
      if (st.globalBinds?.includes(name) || st.bindSpans.some((s) => s.name === name)) return null;
      const es = st.imports.filter((e) => importBinds(e) === name);
      if (!es.length) return null;
      edges.push(...es);
    }
    return edges;
  }

  /** The one thing every target denotes, following import-only bindings through the
   *  imports that make them (`import torch` and `try: import torch.utils.checkpoint` both
   *  denote the module `torch`); null when they denote different or unknown things. */
  private identity(targets: Target[], local: string, depth = 0): { key: string; target: Target } | null {
    let out: { key: string; target: Target } | null = null;
    for (const t of targets) {
      const parts: { key: string; target: Target }[] = [];
      if (t.kind === 'extern') parts.push({ key: externKey(local, t), target: t });
      else if (t.kind === 'def') {
        const edges = this.importOnly(t.module, t.name, t.stmts);
        if (!edges) parts.push({ key: `def:${slotKey(t.module, t.name)}`, target: t });
        else {
          if (depth > 16) return null;
          for (const e of edges) {
            const r = this.identity(this.resolver.followEdge(t.module, e), local, depth + 1);
            if (!r) return null;
            parts.push(r);
          }
        }
      } else return null;
      for (const p of parts) {
        if (!out) out = p;
        else if (out.key !== p.key) return null;
      }
    }
    return out;
  }

  private bindingFor(id: { target: Target }, local: string, runtime: boolean): Binding {
    const t = id.target;
    if (t.kind === 'extern') return this.externBinding(local, t, false);
    if (t.kind === 'def') return this.defBinding(t.module, t.name, runtime);
    throw new Error(`no binding for a ${t.kind} target`);
  }

  /** When every binding of `targets` denotes one thing and some are import-only slots:
   *  that thing (a definition of another repository's installed module is imported from
   *  it, `installedDef`). */
  private sameThing(targets: Target[], local: string, line: number): Binding | null {
    if (!targets.some((t) => t.kind === 'def' && this.importOnly(t.module, t.name, t.stmts))) return null;
    const id = this.identity(targets, local);
    if (!id) return null;
    const t = id.target;
    return (
      (t.kind === 'def' ? this.installedDef(t.module, t.name, line) : null) ??
      this.bindingFor(id, local, !this.typeCheckingOnly(targets))
    );
  }

  /** Every target is a name its module binds only by imports in the body of
   *  `if TYPE_CHECKING:`, which never runs (typing.TYPE_CHECKING is False at run time,
   *  PEP 484): the name is unbound when the original runs, bound for type checkers only
   *  (and read in string annotations, which are not evaluated, PEP 563). It denotes
   *  what the import names for a type checker (the copy keeps the statement, so one
   *  name serves both), but it is no origin of that binding at run time. */
  private typeCheckingOnly(targets: Target[]): boolean {
    return (
      targets.length > 0 &&
      targets.every(
        (t) => t.kind === 'def' && !!this.importOnly(t.module, t.name, t.stmts)?.every((e) => e.typeChecking),
      )
    );
  }

  /** After the worklist: every name a copied statement binds only through imports is
   *  an alias of the binding it denotes, when that is one thing. */
  aliasSlots(): void {
    for (const n of this.nodes.values()) {
      for (const name of n.facts.binds) {
        const key = slotKey(n.mod, name);
        if (this.aliases.has(key) || this.bindings.has(`def:${key}`)) continue;
        const targets = this.resolver.resolveName(n.mod, name);
        if (!targets.some((t) => t.kind === 'def' && t.module === n.mod && t.stmts.includes(n.stmt))) continue;
        const b = this.sameThing(targets, name, 0);
        // a name the copy binds by a kept import of an installed package is that import's
        if (!b || this.installedBindings.has(b)) continue;
        this.aliases.set(key, b);
        if (!this.typeCheckingOnly(targets)) addOrigin(b, n.mod, name);
      }
    }
  }

  /** `__file__` is the path of the file a module was loaded from (Language Reference
   *  §5.4.4, importlib's module attributes): a definition whose code reads its module's
   *  `__file__` — to find what lies beside it, a compiled extension, a template, a
   *  config — reads the standalone module's path once copied, and finds nothing there.
   *  When the module's package is importable in the validation environment, the
   *  definition is imported from the installed module instead of copied (an extern
   *  binding, `from pkg.mod import name`), with a warning; else it is copied, and the
   *  warning says what its `__file__` now means. Returns the extern binding, or null. */
  private ownFileReader(
    from: StmtNode,
    t: Extract<Target, { kind: 'def' }>,
    local: string,
    ref: { line: number; soft?: boolean },
  ): Binding | null {
    if (ref.soft) return null;
    const readers = fileReaders(t.module);
    if (!readers.size || !t.stmts.some((i) => readers.has(i))) return null;
    if (from.mod === t.module && t.stmts.includes(from.stmt)) return null;
    const top = t.module.name.split('.')[0];
    const installed = this.resolver.importable(top) === true && t.module.name !== '__main__';
    const where = `${t.module.name}.${t.name}`;
    if (!installed) {
      const why =
        this.resolver.importable(top) === false
          ? `${top} is not importable in the validation environment`
          : `whether ${top} is installed in the validation environment is unknown here`;
      this.diag(
        from,
        t.name,
        ref.line,
        'module-file',
        `${where} reads its module's __file__, which in the copy is the standalone module's path (${why}, so it is copied)`,
        'warning',
      );
      return null;
    }
    this.diag(
      from,
      t.name,
      ref.line,
      'module-file',
      `${where} reads its module's __file__ (files beside it): imported from the ${top} installed in the validation environment, not copied`,
      'warning',
    );
    this.installedReaders.add(t.module);
    const edge: ImportEdge = {
      kind: 'from',
      module: t.module.name,
      level: 0,
      name: t.name,
      asname: local === t.name ? null : local,
      line: ref.line,
      start: 0,
      end: 0,
    };
    return this.externBinding(local, {
      kind: 'extern',
      edge,
      absModule: t.module.name,
      qualified: `${t.module.name}.${t.name}`,
    });
  }

  /** The package boundary (slim emission): a module of another repository than the
   *  block's that the validation environment has installed with the indexed file's very
   *  bytes is that repository as its users have it, so what the block needs from it is
   *  imported (`from pkg.mod import name`, the definition's own module: Language Reference
   *  §7.11 binds the object that module's namespace holds) instead of copied. The block's
   *  own repository is always copied. Records, per module of another repository, whether
   *  it was imported (distribution, version) or copied (why). */
  private installedOf(mod: CorpusModule): InstalledSource | null {
    if (!this.installed || mod.repo === this.ownRepo || mod.name === '__main__') return null;
    const key = `${mod.repo}\0${mod.name}`;
    const seen = this.packages.get(key);
    if (seen) return seen.copied === undefined ? { distribution: seen.distribution!, version: seen.version! } : null;
    const r = this.installed(mod);
    const use: PackageUse =
      r && !('copied' in r)
        ? { repo: mod.repo, module: mod.name, distribution: r.distribution, version: r.version }
        : { repo: mod.repo, module: mod.name, copied: r ? r.copied : 'not installed in the validation environment' };
    this.packages.set(key, use);
    return use.copied === undefined ? { distribution: use.distribution!, version: use.version! } : null;
  }

  /** The extern binding importing definition `name` of `mod` from its installed
   *  distribution, when the package boundary applies to it (`installedOf`); a name the
   *  module deletes again cannot be imported from it. */
  private installedDef(mod: CorpusModule, name: string, line: number): Binding | null {
    if (this.corpus.deletersOf(mod, name).length) return null;
    if (!this.shared.has(slotKey(mod, name)) && !this.installedOf(mod)) return null;
    const edge: ImportEdge = { kind: 'from', module: mod.name, level: 0, name, asname: null, line, start: 0, end: 0 };
    const b = this.externBinding(name, { kind: 'extern', edge, absModule: mod.name, qualified: `${mod.name}.${name}` });
    this.installedBindings.add(b);
    addOrigin(b, mod, name);
    return b;
  }

  /** Every target of an import edge is a definition (or module) of another repository's
   *  installed module: the import can stay as written, absolute, and runs the installed
   *  package's code where the original ran it (lazily in a function body). */
  private installedEdge(targets: Target[]): boolean {
    if (!this.installed || !targets.length) return false;
    return targets.every((t) => {
      if (t.kind === 'def') return !this.corpus.deletersOf(t.module, t.name).length && !!this.installedOf(t.module);
      if (t.kind === 'module') {
        const m = this.corpus.module(t.name, t.repo ?? this.ownRepo ?? '');
        return !!m && !!this.installedOf(m);
      }
      return false;
    });
  }

  private builtinBinding(name: string): Binding {
    const key = `builtin:${name}`;
    let b = this.bindings.get(key);
    if (!b) this.bindings.set(key, (b = { key, name, kind: 'builtin', seq: this.seq++ }));
    return b;
  }

  /** Turn resolved targets into bindings (and pull their statements in). Returns the
   *  binding the reference should use, if any, whether it is the only thing the
   *  targets denote, and whether the name is bound when the original runs. */
  private bind(
    from: StmtNode,
    targets: Target[],
    local: string,
    eager: boolean,
    ref: { name: string; line: number; soft?: boolean },
  ): { chosen: Binding | null; unique: boolean; runtime: boolean } {
    const same = this.sameThing(targets, local, ref.line);
    // one definition of another repository's installed module: imported, not copied
    const sameInstalled = same && this.installedBindings.has(same) ? same : null;
    const runtime = !this.typeCheckingOnly(targets);
    let chosen: Binding | null = same;
    const distinct = new Set<Binding>();
    for (const t of targets) {
      let b: Binding | null = null;
      switch (t.kind) {
        case 'def': {
          if (sameInstalled) {
            b = sameInstalled;
            break;
          }
          const installed = same
            ? null
            : (this.installedDef(t.module, t.name, ref.line) ?? this.ownFileReader(from, t, local, ref));
          if (installed) {
            b = installed;
            break;
          }
          b = same ?? this.defBinding(t.module, t.name, runtime);
          // `del name` at module level is part of the name's binding history
          for (const i of this.corpus.deletersOf(t.module, t.name)) this.node(t.module, i);
          // and a module-level statement that mutates it in place (`R.register_module(…)`)
          // is part of its state at import (§7.1): a copy that reads it sees it
          for (const i of this.corpus.mutatorsOf(t.module, t.name)) this.node(t.module, i);
          for (const i of t.stmts) {
            const dep = this.node(t.module, i);
            if (eager && dep !== from) {
              // the module's own name: the read sees the bindings before it, and a later
              // rebinding must not run first (when none comes before, keep them all)
              const own = t.module === from.mod && t.stmts.some((j) => j <= from.stmt);
              if (own && i > from.stmt) this.after(dep, from);
              else this.after(from, dep);
            }
          }
          if (eager && t.module === from.mod) {
            const key = slotKey(t.module, t.name);
            let r = this.ownReaders.get(key);
            if (!r) this.ownReaders.set(key, (r = new Set()));
            r.add(from);
          }
          break;
        }
        case 'extern':
          b = this.externBinding(local, t);
          if (t.synthesized && !ref.soft)
            this.diag(
              from,
              ref.name,
              ref.line,
              'star-extern',
              `${ref.name} is assumed to come from \`from ${t.absModule} import *\``,
              'warning',
            );
          break;
        case 'builtin':
          b = this.builtinBinding(t.name);
          break;
        case 'module': {
          // the module object itself (`torchvision.__version__`, a module passed as a
          // value): a copy holds some of its definitions, never the module. When the
          // package is importable in the validation environment, its import stays
          // extern (the installed module, §5.3); else, when an import of this module
          // binds the name, the module is rebuilt from its copied names (moduleValue);
          // else the reference cannot work
          const top = t.name.split('.')[0];
          let rebuilt = false;
          if (this.installedEdge([t]) || this.resolver.importable(top)) {
            const edge: ImportEdge = {
              kind: 'import',
              module: t.name,
              asname: local === t.name || (local === top && t.name === top) ? null : local,
              line: ref.line,
              start: 0,
              end: 0,
            };
            b = this.externBinding(local, {
              kind: 'extern',
              edge,
              absModule: t.name,
              qualified: edge.asname ? t.name : top,
            });
          } else if (!ref.soft) {
            // else the module rebuilt from its copied names, where the import binds it
            b = this.moduleValue(from, local, t, eager, ref.line);
            rebuilt = !!b;
          }
          if (!ref.soft && !rebuilt) this.moduleObject(from, ref.name, ref.line, t.name, !!b);
          break;
        }
        case 'unresolved':
          if (!ref.soft) this.diag(from, ref.name, ref.line, t.reason, t.detail, 'error');
          break;
      }
      if (b) distinct.add(b);
      if (b && !chosen) chosen = b;
    }
    return { chosen, unique: !!chosen && (!!same || distinct.size === 1), runtime };
  }

  /** A usage root: the module-level name `name` of `mod` resolved and bound as a lazy
   *  read of the target's statement (it pulls the definition in, orders nothing); null
   *  when it resolves to no definition or import. */
  usageRoot(from: StmtNode, mod: CorpusModule, name: string, line = 0): Binding | null {
    const targets = this.resolver.resolveName(mod, name).filter((t) => t.kind === 'def' || t.kind === 'extern');
    if (!targets.length) return null;
    return this.bind(from, targets, name, false, { name, line, soft: true }).chosen;
  }

  /** A config's `type` string in copied code that names a class registered in a registry the copy holds
   *  (a copied definition: its binding is in the closure) is a lazy reference to that
   *  class (registry.ts): the class is pulled in as if read in a function body. Returns
   *  whether new statements were queued. */
  registeredByName(): boolean {
    const before = this.queue.length;
    const regs = registrations(this.corpus);
    this.named = this.named.filter(({ node, text, line }) => {
      let matched = false;
      for (const r of regs.get(text) ?? []) {
        const key = this.receiverKey(r);
        if (!key || this.bindings.get(key)?.kind !== 'def') continue;
        this.usageRoot(node, r.mod, r.cls, line);
        matched = true;
      }
      return !matched;
    });
    return this.queue.length > before;
  }

  /** The binding key of the registry a registration's receiver denotes in its module (a
   *  module-level definition, through imports), or null. */
  private receiverKey(r: Registration): string | null {
    const k = `${slotKey(r.mod, r.receiver.text)}`;
    let v = this.receivers.get(k);
    if (v === undefined) {
      const { targets, consumed } = resolveBase(this.resolver, r.mod, r.receiver);
      const id = consumed === r.receiver.attrs.length ? this.identity(targets, r.receiver.name!) : null;
      v = id && id.target.kind === 'def' ? id.key : null;
      this.receivers.set(k, v);
    }
    return v;
  }

  process(n: StmtNode): void {
    const st = n.facts;
    const src = this.corpus.source(n.mod);
    const lineOf = (offset: number) => this.corpus.lineOf(n.mod, offset);
    const skipped = this.skip?.(n.mod, n.stmt);
    const kept = (offset: number) => !skipped?.some(([a, b]) => offset >= a && offset < b);
    for (const ref of st.refs) if (kept(ref.start)) this.processRef(n, ref, src, lineOf);
    // imports inside compound statements (try/except ImportError, if TYPE_CHECKING)
    if (!isPlainImport(st.kind) && st.imports.length)
      this.rewriteImports(
        n,
        st.imports.filter((e) => kept(e.start)),
        false,
      );
    for (const ni of st.nestedImports ?? []) if (kept(ni.start)) this.rewriteImports(n, ni.edges, true);
    if (st.typeNames) {
      const regs = registrations(this.corpus);
      for (const s of st.typeNames)
        if (kept(s.start) && regs.has(s.text)) this.named.push({ node: n, text: s.text, line: lineOf(s.start) });
    }
    for (const d of n.mod.facts.dynamic) {
      if (d.stmt === n.stmt) {
        this.diag(
          n,
          d.kind,
          d.line,
          'dynamic',
          `${d.kind}() makes the names this code uses impossible to know statically`,
          'warning',
        );
      }
    }
  }

  private processRef(n: StmtNode, ref: Ref, src: string, lineOf: (o: number) => number): void {
    const { targets, consumed } = this.resolver.resolveRef(n.mod, ref);
    const resolvedTargets = ref.soft ? targets.filter((t) => t.kind !== 'unresolved' && t.kind !== 'module') : targets;
    if (!resolvedTargets.length) return;
    const end = consumed > 0 ? ref.attrEnds![consumed - 1] : ref.end;
    const {
      chosen: b,
      unique,
      runtime,
    } = this.bind(n, resolvedTargets, ref.name, ref.eager, {
      name: ref.name,
      line: lineOf(ref.start),
      soft: ref.soft,
    });
    // the reading module's own module-level mutations of the name it imported
    // (`from mmengine.registry import MODELS`, then `MODELS.register_module('BN', …)`)
    // run when that module is imported (§7.1): copied with the read, which observes them.
    // The name itself denotes the object (not a module whose attribute does): a copied
    // definition, or an object an extern `from … import` binds (§7.11: the object itself,
    // an installed package's registry the reading module fills; a module bound by `import
    // m` is left alone, its module-level calls are the process's settings, not this state)
    if (
      consumed === 0 &&
      (b?.kind === 'def' ||
        (b?.kind === 'extern' && resolvedTargets.some((t) => t.kind === 'extern' && t.edge.kind === 'from')))
    )
      for (const i of this.corpus.mutatorsOf(n.mod, ref.name)) this.node(n.mod, i);
    if (!b) return;
    // the attributes read through an extern binding: a submodule among them may need its
    // own import in the copy (emit/submodules.ts, Language Reference §5.4.2)
    const rest = ref.attrs?.slice(consumed);
    if (b.kind === 'extern' && rest?.length) {
      const chains = (b.attrChains ??= []);
      if (!chains.some((c) => c.length === rest.length && c.every((x, i) => x === rest[i]))) chains.push(rest);
    }
    this.uses.push({
      node: n,
      start: ref.start,
      end,
      original: src.slice(ref.start, end),
      binding: b,
      ...(consumed > 0 && ref.shadows ? { shadows: ref.shadows } : {}),
    });
    // the module-level name read here denotes the binding (unless it is bound to
    // several things, or the reference goes through module attributes, or it is bound
    // only under `if TYPE_CHECKING:` and so unbound when the original runs)
    if (unique && runtime && consumed === 0 && b.kind !== 'builtin') addOrigin(b, n.mod, ref.name);
  }

  /** Imports that are not plain top-level import statements: extern edges stay as
   *  they are, edges into interned modules are replaced by the definitions. */
  private rewriteImports(n: StmtNode, edges: ImportEdge[], nested: boolean): void {
    const byStmt = new Map<number, ImportEdge[]>();
    for (const e of edges) {
      const l = byStmt.get(e.start);
      if (l) l.push(e);
      else byStmt.set(e.start, [e]);
    }
    for (const group of byStmt.values()) {
      const locals: ImportRewrite['locals'] = [];
      const keep: ImportRewrite['keep'] = [];
      const modules: ModuleNamespace[] = [];
      let interned = false;
      for (const e of group) {
        const abs = this.resolver.absoluteModule(n.mod, e);
        // the body of `if TYPE_CHECKING:` never runs (typing.TYPE_CHECKING is False at
        // run time, PEP 484): its imports bind nothing the original binds when it runs,
        // only names for type checkers. They stay where they are, written absolute (for
        // a type checker where the package is installed), and nothing they name is copied.
        if (e.typeChecking) {
          keep.push({ edge: e, absModule: abs });
          if (e.kind === 'from' && e.level > 0) interned = true;
          continue;
        }
        const isInterned =
          (e.kind === 'from' && e.level > 0) ||
          (abs !== null &&
            (this.resolver.isInterned(e.kind === 'import' && !e.asname ? abs.split('.')[0] : abs, n.mod.repo) ||
              this.resolver.isMissingInternal(abs, n.mod.repo)));
        if (!isInterned) {
          keep.push({ edge: e, absModule: abs });
          continue;
        }
        const local = e.kind === 'import' ? (e.asname ?? e.module.split('.')[0]) : (e.asname ?? e.name);
        // A guarded import (`try: from .fused import op` / `except ImportError: op = None`)
        // of an interned module that cannot import in the validation environment fails in
        // the original there and runs the handler. Copying the module's definitions would
        // hoist its failing extern import to the top of the standalone module, unguarded,
        // so the import stays as written: it fails, and the handler runs, as in the original.
        const failing = e.guarded && abs !== null ? this.resolver.failingImport(abs, n.mod.repo) : null;
        if (failing) {
          keep.push({ edge: e, absModule: abs });
          // written absolute (a relative import cannot work in a standalone file): where
          // the package is installed, the copy then imports it as the original does
          if (e.kind === 'from' && e.level > 0) interned = true;
          this.diag(
            n,
            local,
            e.line,
            'guarded-import',
            `the guarded import of ${abs} is kept as written: ${abs} needs ${failing}, which the validation environment cannot import, so the import fails and its handler runs, as in the original`,
            'warning',
          );
          continue;
        }
        // an import of another repository's installed package stays as written (absolute)
        if (!(e.kind === 'from' && e.name === '*') && this.installedEdge(this.followEdge(n, e))) {
          keep.push({ edge: e, absModule: abs });
          if (e.kind === 'from' && e.level > 0) interned = true;
          continue;
        }
        interned = true;
        if (e.kind === 'from' && e.name === '*') {
          this.diag(
            n,
            '*',
            e.line,
            'nested-module-import',
            `star import of interned module ${abs} inside a statement cannot be inlined`,
            'error',
          );
          continue;
        }
        // the import binds `local` in this statement: follow the edge itself
        const followed = this.followEdge(n, e);
        if (followed.length === 1 && followed[0].kind === 'module') {
          // a module object (`import pkg.sub as sub` in a function, then `vars(sub)`):
          // rebuilt as a module holding the copied definitions it needs (moduleNamespace)
          const ns = this.moduleNamespace(n, group[0], local, followed[0], nested);
          if (ns) {
            modules.push(ns);
            continue;
          }
          // else no copy can be that module, so the import stays, absolute, where it was
          // (lazy in a function body, as in the original)
          keep.push({ edge: e, absModule: abs });
          this.moduleObject(
            n,
            local,
            e.line,
            followed[0].name,
            this.resolver.importable(followed[0].name.split('.')[0]) === true,
          );
          continue;
        }
        const { chosen: b } = this.bind(n, followed, local, !nested, { name: local, line: e.line });
        if (b) locals.push({ local, binding: b });
        else if (followed.some((t) => t.kind === 'unresolved' && t.reason === 'missing-module')) {
          // keep the failing import: the copied code then fails (or falls back) like the original
          keep.push({ edge: e, absModule: abs });
        }
      }
      // an all-extern import at module level is recorded too: its binding may be renamed
      if (interned || !nested)
        this.rewrites.push({
          node: n,
          start: group[0].start,
          end: group[0].end,
          locals,
          keep,
          nested,
          interned,
          ...(modules.length ? { modules } : {}),
        });
    }
  }

  /** A module bound by an import (`import a.b as m`, Language Reference §7.11: `m` is the
   *  module object a.b itself) whose statement uses `m` as a value (`vars(m)`,
   *  `getattr(m, name)`, passed on), not only through `m.attr` lookups: a copy holds the
   *  module's definitions, never the module, so `m` becomes a `types.ModuleType` of the
   *  same `__name__` whose namespace holds them. The names: every attribute read as
   *  `m.attr` when that is all the statement does with `m`, else every name the module
   *  binds at its top level and exports (`vars()` and `getattr` may read any of them);
   *  its submodules and names bound only for type checkers are left out. Null when the
   *  module has no file of its own (a namespace package) or an attribute the code reads
   *  cannot be copied: the import then stays, with the diagnostic of `moduleObject`. */
  private moduleNamespace(
    n: StmtNode,
    imp: ImportEdge,
    local: string,
    t: Extract<Target, { kind: 'module' }>,
    nested: boolean,
  ): ModuleNamespace | null {
    const needed = attributeUses(this.corpus.source(n.mod), n.facts, imp, local);
    const plan = this.namespaceMembers(t, needed);
    return plan && this.bindNamespace(n, imp.line, local, plan, !nested, !!needed);
  }

  /** The names a rebuilt module holds with what each resolves to: `needed` (attributes
   *  the code reads: null when one cannot be copied), else every name the module binds at
   *  its top level or exports, less those that cannot be copied (a submodule, a
   *  `__future__` feature, a name bound for type checkers only). Null when the module has
   *  no file of its own (a namespace package). Binds nothing. */
  private namespaceMembers(
    t: Extract<Target, { kind: 'module' }>,
    needed: Set<string> | null,
    skipSubmodules = false,
  ): { module: CorpusModule; members: { name: string; targets: Target[] }[] } | null {
    const mod = this.corpus.module(t.name, t.repo);
    if (!mod) return null;
    const names = new Set<string>();
    if (needed) for (const a of needed) names.add(a);
    else {
      for (const st of mod.facts.statements) for (const b of st.binds) names.add(b);
      for (const x of this.resolver.exports(mod.name, mod.repo) ?? []) names.add(x);
    }
    const members: { name: string; targets: Target[] }[] = [];
    for (const name of [...names].sort()) {
      const targets = this.resolver.resolveAttr(mod.name, name, mod.repo);
      const copiable =
        targets.length > 0 &&
        targets.every(
          (x) =>
            x.kind === 'def' ||
            x.kind === 'builtin' ||
            (x.kind === 'extern' && x.absModule !== '__future__' && !x.edge.typeChecking),
        ) &&
        !this.typeCheckingOnly(targets);
      if (copiable) members.push({ name, targets });
      else if (skipSubmodules && targets.every((x) => x.kind === 'module')) continue;
      else if (needed) return null; // the code reads it: the namespace would lack it
    }
    return { module: mod, members };
  }

  /** Binds the members of a rebuilt module from statement `n` (eagerly at module level)
   *  and says so in a `module-object` warning. */
  private bindNamespace(
    n: StmtNode,
    line: number,
    local: string,
    plan: { module: CorpusModule; members: { name: string; targets: Target[] }[] },
    eager: boolean,
    onlyRead: boolean,
  ): ModuleNamespace {
    const members: ModuleNamespace['members'] = [];
    for (const { name, targets } of plan.members) {
      const { chosen } = this.bind(n, targets, name, eager, { name, line });
      if (chosen) members.push({ name, binding: chosen });
    }
    const types = this.externBinding('types', {
      kind: 'extern',
      edge: { kind: 'import', module: 'types', asname: null, line, start: 0, end: 0 },
      absModule: 'types',
      qualified: 'types',
    });
    this.diag(
      n,
      local,
      line,
      'module-object',
      `${local} is the module ${plan.module.name} itself, used as a value: the copy binds it to a module of that name holding ${onlyRead ? 'the attributes the code reads' : 'every name the module binds'} (${members.length}, copied)`,
      'warning',
    );
    return { local, module: plan.module.name, types, members };
  }

  /** A module-level name of `from.mod` bound by a plain import statement to the interned
   *  module `t` (`from . import ops`, `import pkg.ops as ops`: Language Reference §7.11)
   *  and read as a value (`getattr(ops, name)`): that import statement is copied,
   *  rewritten to build the module (moduleNamespace's rule, with every name it binds),
   *  and the name is its binding. Null when the name is bound otherwise too, or reached
   *  through another module's attribute. */
  private moduleValue(
    from: StmtNode,
    local: string,
    t: Extract<Target, { kind: 'module' }>,
    eager: boolean,
    line: number,
  ): Binding | null {
    const mod = from.mod;
    let stmt = -1;
    for (const i of this.corpus.bindersOf(mod, local)) {
      const st = mod.facts.statements[i];
      if (!isPlainImport(st.kind) || this.corpus.deletersOf(mod, local).length) return null;
      for (const e of st.imports) {
        if (importBinds(e) !== local) continue;
        const f = this.resolver.followEdge(mod, e);
        if (f.length !== 1 || f[0].kind !== 'module' || f[0].name !== t.name) return null;
        stmt = i;
      }
    }
    if (stmt < 0) return null;
    const key = `def:${slotKey(mod, local)}`;
    let b = this.bindings.get(key);
    if (!b) {
      // what the module's other statements read of it: attribute chains through modules
      // were followed to their definitions already, so its submodules are not needed
      const needed = moduleAttributeUses(this.corpus.source(mod), mod, local);
      const plan = this.namespaceMembers(t, needed, !!needed);
      if (!plan) return null;
      const node = this.node(mod, stmt);
      b = this.defBinding(mod, local);
      const st = mod.facts.statements[stmt];
      const ns = this.bindNamespace(node, line, local, plan, true, !!needed);
      this.rewrites.push({
        node,
        start: st.start,
        end: st.end,
        locals: [],
        keep: [],
        nested: false,
        interned: true,
        modules: [ns],
      });
    }
    if (eager) {
      const node = this.node(mod, stmt);
      if (node !== from) this.after(from, node);
    }
    return b;
  }

  private followEdge(n: StmtNode, e: ImportEdge): Target[] {
    const abs = this.resolver.absoluteModule(n.mod, e);
    if (abs === null)
      return [{ kind: 'unresolved', reason: 'missing-module', detail: 'relative import beyond the top-level package' }];
    if (e.kind === 'import') return [{ kind: 'module', name: e.asname ? abs : abs.split('.')[0], repo: n.mod.repo }];
    return this.resolver.resolveAttr(abs, e.name, n.mod.repo);
  }

  /** The diagnostic of a module object of an interned package: a warning when its import
   *  is kept for the installed package, an error saying why it cannot work otherwise. */
  private moduleObject(n: StmtNode, name: string, line: number, module: string, kept: boolean): void {
    const top = module.split('.')[0];
    const can = this.resolver.importable(top);
    if (kept) {
      this.diag(
        n,
        name,
        line,
        'module-object',
        `${name} is the module ${module} itself: its import is kept, of the ${top} installed in the validation environment`,
        'warning',
      );
      return;
    }
    const why =
      can === false
        ? `${top} is not importable in the validation environment`
        : `whether ${top} is installed in the validation environment is unknown here`;
    this.diag(
      n,
      name,
      line,
      'module-object',
      `${name} refers to the interned module ${module} itself, which a standalone file cannot provide (${why})`,
      'error',
    );
  }

  private diag(
    n: StmtNode,
    name: string,
    line: number,
    reason: Diagnostic['reason'],
    message: string,
    severity: Diagnostic['severity'],
  ): void {
    const d: Diagnostic = {
      severity,
      name,
      reason,
      message,
      module: n.mod.name,
      path: n.mod.path,
      repo: n.mod.repo,
      line,
    };
    if (
      !this.diagnostics.some(
        (x) => x.name === d.name && x.line === d.line && x.path === d.path && x.reason === d.reason,
      )
    )
      this.diagnostics.push(d);
  }
}

/** The statements of a module that read its `__file__` (computed once per module: the
 *  check runs for every reference bound to one of its definitions). */
const fileReadersMemo = new WeakMap<CorpusModule, Set<number>>();
function fileReaders(mod: CorpusModule): Set<number> {
  let r = fileReadersMemo.get(mod);
  if (!r) {
    r = new Set();
    mod.facts.statements.forEach((st, i) => {
      if (st.refs.some((x) => x.name === '__file__')) r!.add(i);
    });
    fileReadersMemo.set(mod, r);
  }
  return r;
}

/** How the top-level statement `st` uses the name `local` an import inside it binds:
 *  the attribute names when every other occurrence is an attribute lookup `local.attr`,
 *  else null (used as a value: `vars(local)`, `getattr(local, …)`, passed on, or bound
 *  to something else too). Read from the text, with the import statements inside it left
 *  out (`imp` and the others); an occurrence inside a string or comment only widens the
 *  answer to null. */
function attributeUses(src: string, st: StatementFacts, imp: ImportEdge | null, local: string): Set<string> | null {
  let text = src.slice(st.start, st.end);
  const blank = (a: number, b: number) => {
    const i = Math.max(0, a - st.start);
    const j = Math.min(text.length, b - st.start);
    if (j > i) text = text.slice(0, i) + ' '.repeat(j - i) + text.slice(j);
  };
  if (imp) blank(imp.start, imp.end);
  for (const e of st.imports) if (!isPlainImport(st.kind)) blank(e.start, e.end);
  for (const ni of st.nestedImports ?? []) blank(ni.start, ni.end);
  const esc = local.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`(?<![\\w.])${esc}(?!\\w)(\\s*\\.\\s*([A-Za-z_]\\w*))?`, 'g');
  const attrs = new Set<string>();
  for (const m of text.matchAll(re)) {
    if (!m[2]) return null;
    attrs.add(m[2]);
  }
  return attrs;
}

/** `attributeUses` over every statement of a module but its plain import statements
 *  (which bind the name): the attributes read as `local.attr`, or null when a statement
 *  uses `local` as a value. */
function moduleAttributeUses(src: string, mod: CorpusModule, local: string): Set<string> | null {
  const attrs = new Set<string>();
  for (const st of mod.facts.statements) {
    if (isPlainImport(st.kind) || !src.slice(st.start, st.end).includes(local)) continue;
    const a = attributeUses(src, st, null, local);
    if (!a) return null;
    for (const x of a) attrs.add(x);
  }
  return attrs;
}

function externKey(local: string, t: Extract<Target, { kind: 'extern' }>): BindingKey {
  // `import a.b.c` binds `a` whatever name it is reached by (§7.11)
  return `ext:${t.edge.kind === 'import' && !t.edge.asname ? t.absModule.split('.')[0] : local}=${t.qualified}`;
}

function addOrigin(b: Binding, mod: CorpusModule, name: string): void {
  const list = (b.origins ??= []);
  if (!list.some((o) => o.mod === mod && o.name === name)) list.push({ mod, name });
}

function sameEdge(a: ImportEdge, b: ImportEdge, absA: string, absB: string): boolean {
  if (a.kind !== b.kind || absA !== absB) return false;
  if (a.kind === 'from' && b.kind === 'from') return a.name === b.name && a.asname === b.asname;
  return a.asname === b.asname;
}
