// Dependency closure of a block: a worklist over top-level statements, starting at the
// statement that defines the target class (DESIGN.md "Resolution and closure").
//
// - Every binding of a needed name is included: all statements of the module that bind
//   it (both branches of an `if`, the whole `try` statement, every redefinition).
// - Plain import statements are never copied: an import of an interned module is
//   followed to the definition it names; an extern import is recorded and printed
//   in its original form by the emitter.
// - Reads are eager (evaluated when the statement runs) or lazy (function bodies);
//   eager reads become ordering edges, lazy ones only pull definitions in.
// - Imports nested in compound statements or function bodies that name interned
//   modules are rewritten, because relative imports cannot work in a standalone file.
// - A name that cannot be resolved is a diagnostic, never silently dropped.
import type { ImportEdge, Ref, StatementFacts } from '../parse/types.js';
import type { Corpus, CorpusModule } from './corpus.js';
import { isPlainImport, Resolver, type Target, type UnresolvedReason } from './names.js';

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
  /** order of first use, for deciding who keeps a contested name */
  seq: number;
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
}

export interface Diagnostic {
  severity: 'error' | 'warning';
  name: string;
  reason: UnresolvedReason | 'nested-module-import';
  message: string;
  module: string;
  path: string;
  repo: string;
  line: number;
}

export interface Closure {
  target: { mod: CorpusModule; className: string; node: StmtNode };
  nodes: StmtNode[];
  /** node → nodes that must be emitted before it (eager reads) */
  eager: Map<StmtNode, Set<StmtNode>>;
  bindings: Map<BindingKey, Binding>;
  uses: Use[];
  importRewrites: ImportRewrite[];
  diagnostics: Diagnostic[];
}

export class ClosureBuilder {
  constructor(
    readonly corpus: Corpus,
    readonly resolver: Resolver,
  ) {}

  build(mod: CorpusModule, className: string): Closure {
    const cls = mod.facts.classes.find((c) => c.name === className);
    if (!cls) throw new Error(`class ${className} is not defined at module level in ${mod.name}`);
    const state = new State(this.corpus, this.resolver);
    const root = state.node(mod, cls.stmt);
    // the class name itself is a binding of the emitted module
    state.defBinding(mod, className);
    while (state.queue.length) state.process(state.queue.shift()!);
    return {
      target: { mod, className, node: root },
      nodes: [...state.nodes.values()],
      eager: state.eager,
      bindings: state.bindings,
      uses: state.uses,
      importRewrites: state.rewrites,
      diagnostics: state.diagnostics,
    };
  }
}

class State {
  readonly nodes = new Map<string, StmtNode>();
  readonly queue: StmtNode[] = [];
  readonly eager = new Map<StmtNode, Set<StmtNode>>();
  readonly bindings = new Map<BindingKey, Binding>();
  readonly uses: Use[] = [];
  readonly rewrites: ImportRewrite[] = [];
  readonly diagnostics: Diagnostic[] = [];
  private seq = 0;

  constructor(
    private readonly corpus: Corpus,
    private readonly resolver: Resolver,
  ) {}

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

  defBinding(mod: CorpusModule, name: string): Binding {
    const key = `def:${mod.repo}:${mod.name}:${name}`;
    let b = this.bindings.get(key);
    if (!b) this.bindings.set(key, (b = { key, name, kind: 'def', mod, seq: this.seq++ }));
    return b;
  }

  private externBinding(local: string, t: Extract<Target, { kind: 'extern' }>): Binding {
    const key = `ext:${local}=${t.qualified}`;
    let b = this.bindings.get(key);
    if (!b) this.bindings.set(key, (b = { key, name: local, kind: 'extern', edges: [], seq: this.seq++ }));
    if (!b.edges!.some((x) => sameEdge(x.edge, t.edge, x.absModule, t.absModule))) b.edges!.push({ edge: t.edge, absModule: t.absModule });
    return b;
  }

  private builtinBinding(name: string): Binding {
    const key = `builtin:${name}`;
    let b = this.bindings.get(key);
    if (!b) this.bindings.set(key, (b = { key, name, kind: 'builtin', seq: this.seq++ }));
    return b;
  }

  /** Turn resolved targets into bindings (and pull their statements in). Returns the
   *  binding the reference should use, if any. */
  private bind(from: StmtNode, targets: Target[], local: string, eager: boolean, ref: { name: string; line: number; soft?: boolean }): Binding | null {
    let chosen: Binding | null = null;
    for (const t of targets) {
      let b: Binding | null = null;
      switch (t.kind) {
        case 'def': {
          b = this.defBinding(t.module, t.name);
          // `del name` at module level is part of the name's binding history
          for (const i of this.corpus.deletersOf(t.module, t.name)) this.node(t.module, i);
          for (const i of t.stmts) {
            const dep = this.node(t.module, i);
            if (eager && dep !== from) {
              let s = this.eager.get(from);
              if (!s) this.eager.set(from, (s = new Set()));
              s.add(dep);
            }
          }
          break;
        }
        case 'extern':
          b = this.externBinding(t.edge.kind === 'import' && !t.edge.asname ? t.absModule.split('.')[0] : local, t);
          if (t.synthesized && !ref.soft) this.diag(from, ref.name, ref.line, 'star-extern', `${ref.name} is assumed to come from \`from ${t.absModule} import *\``, 'warning');
          break;
        case 'builtin':
          b = this.builtinBinding(t.name);
          break;
        case 'module':
          if (!ref.soft) this.diag(from, ref.name, ref.line, 'module-object', `${ref.name} refers to the interned module ${t.name} itself, which a standalone file cannot provide`, 'error');
          break;
        case 'unresolved':
          if (!ref.soft) this.diag(from, ref.name, ref.line, t.reason, t.detail, 'error');
          break;
      }
      if (b && !chosen) chosen = b;
    }
    return chosen;
  }

  process(n: StmtNode): void {
    const st = n.facts;
    const src = this.corpus.source(n.mod);
    const lineOf = (offset: number) => this.corpus.lineOf(n.mod, offset);
    for (const ref of st.refs) this.processRef(n, ref, src, lineOf);
    // imports inside compound statements (try/except ImportError, if TYPE_CHECKING)
    if (!isPlainImport(st.kind) && st.imports.length) this.rewriteImports(n, st.imports, false);
    for (const ni of st.nestedImports ?? []) this.rewriteImports(n, ni.edges, true);
    for (const d of n.mod.facts.dynamic) {
      if (d.stmt === n.stmt) {
        this.diag(n, d.kind, d.line, 'dynamic', `${d.kind}() makes the names this code uses impossible to know statically`, 'warning');
      }
    }
  }

  private processRef(n: StmtNode, ref: Ref, src: string, lineOf: (o: number) => number): void {
    const { targets, consumed } = this.resolver.resolveRef(n.mod, ref);
    const resolvedTargets = ref.soft ? targets.filter((t) => t.kind !== 'unresolved' && t.kind !== 'module') : targets;
    if (!resolvedTargets.length) return;
    const end = consumed > 0 ? ref.attrEnds![consumed - 1] : ref.end;
    const b = this.bind(n, resolvedTargets, ref.name, ref.eager, { name: ref.name, line: lineOf(ref.start), soft: ref.soft });
    if (b) this.uses.push({ node: n, start: ref.start, end, original: src.slice(ref.start, end), binding: b });
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
      let interned = false;
      for (const e of group) {
        const abs = this.resolver.absoluteModule(n.mod, e);
        const isInterned =
          (e.kind === 'from' && e.level > 0) ||
          (abs !== null &&
            (this.resolver.isInterned(e.kind === 'import' && !e.asname ? abs.split('.')[0] : abs, n.mod.repo) || this.resolver.isMissingInternal(abs, n.mod.repo)));
        if (!isInterned) {
          keep.push({ edge: e, absModule: abs });
          continue;
        }
        interned = true;
        const local = e.kind === 'import' ? (e.asname ?? e.module.split('.')[0]) : e.asname ?? e.name;
        if (e.kind === 'from' && e.name === '*') {
          this.diag(n, '*', e.line, 'nested-module-import', `star import of interned module ${abs} inside a statement cannot be inlined`, 'error');
          continue;
        }
        // the import binds `local` in this statement: follow the edge itself
        const followed = this.followEdge(n, e);
        const b = this.bind(n, followed, local, !nested, { name: local, line: e.line });
        if (b) locals.push({ local, binding: b });
        else if (followed.some((t) => t.kind === 'unresolved' && t.reason === 'missing-module')) {
          // keep the failing import: the copied code then fails (or falls back) like the original
          keep.push({ edge: e, absModule: abs });
        }
      }
      // an all-extern import at module level is recorded too: its binding may be renamed
      if (interned || !nested) this.rewrites.push({ node: n, start: group[0].start, end: group[0].end, locals, keep, nested, interned });
    }
  }

  private followEdge(n: StmtNode, e: ImportEdge): Target[] {
    const abs = this.resolver.absoluteModule(n.mod, e);
    if (abs === null) return [{ kind: 'unresolved', reason: 'missing-module', detail: 'relative import beyond the top-level package' }];
    if (e.kind === 'import') return [{ kind: 'module', name: e.asname ? abs : abs.split('.')[0], repo: n.mod.repo }];
    return this.resolver.resolveAttr(abs, e.name, n.mod.repo);
  }

  private diag(n: StmtNode, name: string, line: number, reason: Diagnostic['reason'], message: string, severity: Diagnostic['severity']): void {
    const d: Diagnostic = { severity, name, reason, message, module: n.mod.name, path: n.mod.path, repo: n.mod.repo, line };
    if (!this.diagnostics.some((x) => x.name === d.name && x.line === d.line && x.path === d.path && x.reason === d.reason)) this.diagnostics.push(d);
  }
}

function sameEdge(a: ImportEdge, b: ImportEdge, absA: string, absB: string): boolean {
  if (a.kind !== b.kind || absA !== absB) return false;
  if (a.kind === 'from' && b.kind === 'from') return a.name === b.name && a.asname === b.asname;
  return a.asname === b.asname;
}
