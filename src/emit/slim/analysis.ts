// The block-independent part of slim emission (docs/ARCHITECTURE.md "Slim emission"), one
// object per resolver (the workspace keeps one beside each resolver it caches): per module,
// its slim syntax (syntax.ts) and its value facts (facts.ts), both read off one parse of
// the module; what references denote (attribute chains, per statement: StmtRefs); and the
// verdicts on registries, decorators and registration calls. Every block of a run, and
// every rebuild of a block's closure, asks these again: they are computed once here, and
// nothing is memoised at module level.
import { parsePython } from '../../parse/parser.js';
import type { Ref } from '../../parse/types.js';
import { classStatement } from '../../resolve/classes.js';
import type { Corpus, CorpusModule } from '../../resolve/corpus.js';
import type { Resolver, Target } from '../../resolve/names.js';
import { lineIndex, lineStarts } from '../../util/lines.js';
import { NONE, type Vals } from './atoms.js';
import type { ShapeMemo } from './decorators.js';
import { moduleFacts, type ModFacts } from './facts.js';
import { moduleSyntax, type ModuleSyntax } from './syntax.js';

/** Per statement, what its references denote (block-independent; the block's closure only
 *  filters by what it keeps): the atoms of value uses and the statements reads need. */
export interface StmtRefs {
  /** value uses: a reference whose longest denoting prefix is not exactly a call's callee */
  uses: { pos: number; atoms: string[] }[];
  /** every definition statement a reference reads (`repo:module:stmt`) */
  reads: { pos: number; keys: string[] }[];
}

/** The key of a top-level statement across modules. */
export const stmtKey = (mod: CorpusModule, stmt: number) => `${mod.repo}:${mod.name}:${stmt}`;

export class SlimAnalysis {
  private readonly modules = new WeakMap<CorpusModule, { syntax: ModuleSyntax; facts: ModFacts }>();
  private readonly chains = new WeakMap<CorpusModule, Map<string, { targets: Target[]; consumed: number }>>();
  private readonly refs = new WeakMap<CorpusModule, Map<number, StmtRefs>>();
  private readonly verdicts = new WeakMap<CorpusModule, Map<object, boolean>>();
  /** function shapes of decorators.ts */
  readonly shapes: ShapeMemo = new Map();

  constructor(
    readonly corpus: Corpus,
    readonly resolver: Resolver,
  ) {}

  /** A module's slim syntax and value facts: one parse (the parser must be ready). */
  private module(mod: CorpusModule): { syntax: ModuleSyntax; facts: ModFacts } {
    let m = this.modules.get(mod);
    if (m) return m;
    const src = this.corpus.source(mod);
    const starts = lineStarts(src);
    const tree = parsePython(src);
    try {
      m = {
        syntax: moduleSyntax(mod, src, tree.rootNode),
        facts: moduleFacts(mod, tree.rootNode, (i) => lineIndex(starts, i) + 1),
      };
    } finally {
      tree.delete();
    }
    this.modules.set(mod, m);
    return m;
  }

  syntax(mod: CorpusModule): ModuleSyntax {
    return this.module(mod).syntax;
  }

  facts(mod: CorpusModule): ModFacts {
    return this.module(mod).facts;
  }

  /** A verdict on one site of a module (a registry, a decorator, a registration call),
   *  computed once. */
  verdict(mod: CorpusModule, site: object, compute: () => boolean): boolean {
    let memo = this.verdicts.get(mod);
    if (!memo) this.verdicts.set(mod, (memo = new Map()));
    let r = memo.get(site);
    if (r === undefined) memo.set(site, (r = compute()));
    return r;
  }

  /** What a reference denotes with the attribute chain `chain` (a prefix of its own). */
  resolveChain(mod: CorpusModule, ref: Ref, chain: readonly string[]): { targets: Target[]; consumed: number } {
    let m = this.chains.get(mod);
    if (!m) this.chains.set(mod, (m = new Map()));
    const key = `${ref.start}\0${ref.name}\0${chain.join('.')}`;
    let r = m.get(key);
    if (!r)
      m.set(
        key,
        (r = this.resolver.resolveRef(mod, {
          ...ref,
          attrs: [...chain],
          attrEnds: (ref.attrEnds ?? []).slice(0, chain.length),
        })),
      );
    return r;
  }

  /** The atoms a resolution target is with the attribute chain `rest` after it. */
  atomOfTarget(t: Target, rest: string[]): Vals {
    if (t.kind === 'builtin') {
      if (rest.length) return null;
      if (t.name === 'None') return NONE;
      if (t.name === 'True' || t.name === 'False') return new Set([t.name]);
      return new Set([`b:${t.name}`]);
    }
    if (t.kind === 'extern') return new Set([`x:${[t.qualified, ...rest].join('.')}`]);
    if (t.kind === 'def' && !rest.length) {
      const st = t.module.facts.statements;
      if (t.stmts.length === 1) {
        const kind = st[t.stmts[0]].kind;
        const def = kind === 'decorated_definition' ? this.defKind(t.module, t.stmts[0]) : kind;
        if (def === 'class_definition' && classStatement(t.module, t.name))
          return new Set([`cls:${t.module.repo}:${t.module.name}:${t.name}`]);
        if (def === 'function_definition') return new Set([`fn:${t.module.repo}:${t.module.name}:${t.name}`]);
      }
    }
    return null;
  }

  private defKind(mod: CorpusModule, stmt: number): string | null {
    const f = this.facts(mod).fns.find((x) => x.stmt === stmt && !x.cls);
    if (f) return 'function_definition';
    return mod.facts.classes.some((c) => c.stmt === stmt && !c.nested) ? 'class_definition' : null;
  }

  /** What the references of a statement denote (StmtRefs). */
  stmtRefs(mod: CorpusModule, stmt: number): StmtRefs {
    let m = this.refs.get(mod);
    if (!m) this.refs.set(mod, (m = new Map()));
    let out = m.get(stmt);
    if (out) return out;
    out = { uses: [], reads: [] };
    const mf = this.facts(mod);
    const ta = mf.typeArgs;
    for (const r of mod.facts.statements[stmt].refs) {
      if (ta.some(([a, b]) => r.start >= a && r.start < b)) continue;
      // the longest prefix of the chain that denotes a definition: called when the
      // call's callee is exactly that chain, else a value use (passed on, or the
      // receiver of a method call such as `Cls.from_config(…)`)
      const attrs = r.attrs ?? [];
      for (let n = attrs.length; n >= 0; n--) {
        const { targets, consumed } = this.resolveChain(mod, r, attrs.slice(0, n));
        if (targets.length !== 1) continue;
        const v = this.atomOfTarget(targets[0], attrs.slice(consumed, n));
        if (!v) continue;
        const end = n ? (r.attrEnds ?? [])[n - 1] : r.end;
        if (mf.calleeSpans.get(r.start) !== end && v.size) out.uses.push({ pos: r.start, atoms: [...v] });
        break;
      }
      const { targets } = this.resolveChain(mod, r, attrs);
      const keys = targets.flatMap((t) => (t.kind === 'def' ? t.stmts.map((i) => stmtKey(t.module, i)) : []));
      if (keys.length) out.reads.push({ pos: r.start, keys });
    }
    m.set(stmt, out);
    return out;
  }

  /** Does [a, b) of statement `stmt` read a definition of the corpus. */
  readsDefs(mod: CorpusModule, stmt: number, a: number, b: number): boolean {
    return mod.facts.statements[stmt].refs.some((r) => {
      if (r.start < a || r.start >= b) return false;
      const { targets } = this.resolveChain(mod, r, r.attrs ?? []);
      return targets.some((t) => t.kind === 'def');
    });
  }
}
