// What slim's value analysis (values.ts) sees of one block's closure: the copied statements
// and the code of them that stays (skip ranges), the copied functions and methods with
// their indexes, what a name or attribute chain of the copied code denotes, and method
// lookup through the bases (depth first, as the resolver's class facts give them).
import type { Ref } from '../../parse/types.js';
import type { Closure, StmtNode } from '../../resolve/closure.js';
import { baseClasses, classStatement } from '../../resolve/classes.js';
import type { CorpusModule } from '../../resolve/corpus.js';
import { stmtKey, type SlimAnalysis } from './analysis.js';
import type { Vals } from './atoms.js';
import type { Expr } from './expr.js';
import { newFnFacts, type FnFacts, type ModFacts } from './facts.js';

/** A copied function or method. */
export interface FnRef {
  mod: CorpusModule;
  fn: FnFacts;
}

export const fnKey = (r: FnRef) => `${r.mod.repo}:${r.mod.name}:${r.fn.cls ?? ''}.${r.fn.name}:${r.fn.start}`;

/** A stand-in function for code outside function bodies at `pos` (module level, class
 *  bodies): no parameters, no locals. */
export function moduleFn(mod: CorpusModule, pos: number): FnRef {
  return {
    mod,
    fn: newFnFacts({ stmt: -1, cls: null, name: '', start: pos, end: pos, bodyStart: pos, params: [], bound: false }),
  };
}

/** The parts of a class atom `cls:<repo>:<module>:<name>` (or `fn:`). */
export function atomParts(a: string): { repo: string; module: string; name: string } {
  const [repo, ...rest] = a.slice(a.indexOf(':') + 1).split(':');
  const name = rest.pop()!;
  return { repo, module: rest.join(':'), name };
}

export class BlockScope {
  /** the copied statements of each module */
  readonly byMod = new Map<CorpusModule, Map<number, StmtNode>>();
  private readonly sortedNodes = new Map<CorpusModule, StmtNode[]>();
  private readonly skipCache = new Map<StmtNode, readonly (readonly [number, number])[]>();
  /** the copied functions and methods (that stay) */
  readonly fns: FnRef[] = [];
  readonly fnByName = new Map<string, FnRef>();
  private readonly fnByMethod = new Map<string, FnRef>();
  private readonly fnsByClass = new Map<string, FnRef[]>();
  private readonly fnsByMod = new Map<CorpusModule, FnRef[]>();
  private readonly refAt = new Map<CorpusModule, Map<number, { ref: Ref; stmt: number }>>();
  private readonly methodMemo = new Map<string, FnRef | null>();
  private readonly plainMemo = new Map<string, boolean>();

  constructor(
    readonly an: SlimAnalysis,
    closure: Closure,
    private readonly skipOf: (mod: CorpusModule, stmt: number) => readonly (readonly [number, number])[],
  ) {
    for (const n of closure.nodes) {
      let m = this.byMod.get(n.mod);
      if (!m) this.byMod.set(n.mod, (m = new Map()));
      m.set(n.stmt, n);
    }
    for (const [m, nodes] of this.byMod)
      this.sortedNodes.set(
        m,
        [...nodes.values()].sort((a, b) => a.facts.start - b.facts.start),
      );
    for (const [mod, nodes] of this.byMod)
      for (const fn of this.facts(mod).fns)
        if (nodes.has(fn.stmt) && this.kept(mod, fn.start)) this.fns.push({ mod, fn });
    this.index();
  }

  /** indexes of the copied functions (first of a name wins, as a search in order would) */
  private index(): void {
    for (const f of this.fns) {
      const mk = `${f.mod.repo}\0${f.mod.name}\0${f.fn.cls ?? ''}\0${f.fn.name}\0${f.fn.stmt}`;
      if (!this.fnByMethod.has(mk)) this.fnByMethod.set(mk, f);
      if (!f.fn.cls) {
        const nk = `${f.mod.repo}\0${f.mod.name}\0${f.fn.name}`;
        if (!this.fnByName.has(nk)) this.fnByName.set(nk, f);
      } else {
        const ck = `${f.mod.repo}\0${f.mod.name}\0${f.fn.cls}`;
        let l = this.fnsByClass.get(ck);
        if (!l) this.fnsByClass.set(ck, (l = []));
        l.push(f);
      }
    }
    for (const f of this.fns) {
      let l = this.fnsByMod.get(f.mod);
      if (!l) this.fnsByMod.set(f.mod, (l = []));
      l.push(f);
    }
    for (const l of this.fnsByMod.values()) l.sort((a, b) => a.fn.start - b.fn.start);
  }

  facts(mod: CorpusModule): ModFacts {
    return this.an.facts(mod);
  }

  /** the copied statement holding `pos` (statements do not overlap) */
  nodeAt(mod: CorpusModule, pos: number): StmtNode | undefined {
    return spanAt(this.sortedNodes.get(mod), pos, (n) => n.facts);
  }

  /** is this offset of `mod` in the code that stays */
  kept(mod: CorpusModule, pos: number): boolean {
    // the copied statement holding `pos`, then its skipped ranges
    const n = this.nodeAt(mod, pos);
    if (!n) return false;
    let sk = this.skipCache.get(n);
    if (!sk) this.skipCache.set(n, (sk = this.skipOf(mod, n.stmt)));
    return !sk.some(([a, b]) => pos >= a && pos < b);
  }

  /** the function (module-level, or a method) whose body (or whole definition) holds `pos` */
  fnAt(mod: CorpusModule, pos: number, from: 'body' | 'def' = 'body'): FnRef | undefined {
    const f = spanAt(this.fnsByMod.get(mod), pos, (r) => r.fn);
    return f && (from === 'body' ? f.fn.bodyStart : f.fn.start) <= pos ? f : undefined;
  }

  fnsOfClass(mod: CorpusModule, cls: string): FnRef[] {
    return this.fnsByClass.get(`${mod.repo}\0${mod.name}\0${cls}`) ?? [];
  }

  /** the module-level function a `fn:` atom names, when copied */
  fnOfAtom(repo: string, module: string, name: string): FnRef | undefined {
    return this.fnByName.get(`${repo}\0${module}\0${name}`);
  }

  private refOf(mod: CorpusModule, pos: number): { ref: Ref; stmt: number } | undefined {
    let m = this.refAt.get(mod);
    if (!m) {
      this.refAt.set(mod, (m = new Map()));
      for (const [stmt] of this.byMod.get(mod) ?? [])
        for (const r of mod.facts.statements[stmt].refs) m.set(r.start, { ref: r, stmt });
    }
    return m.get(pos);
  }

  /** a name or attribute chain at `pos` that reads a module-level binding: what it denotes
   *  (undefined: a local name) */
  denote(mod: CorpusModule, e: Expr): Vals | undefined {
    const c = this.chainRef(mod, e);
    if (!c) return undefined; // a local name
    const { ref, chain } = c;
    if (chain.length > (ref.attrs ?? []).length) return null;
    const { targets, consumed } = this.an.resolveChain(mod, ref, chain);
    if (targets.length !== 1) return null;
    return this.an.atomOfTarget(targets[0], chain.slice(consumed));
  }

  /** a name or attribute chain that starts with a reference of the copied code (not a
   *  local name): the reference and the chain of attributes after it */
  private chainRef(mod: CorpusModule, e: Expr): { ref: Ref; chain: string[] } | undefined {
    const chain: string[] = [];
    let x: Expr = e;
    while (x.k === 'attr') {
      chain.unshift(x.attr);
      x = x.obj;
    }
    if (x.k !== 'name') return undefined;
    const r = this.refOf(mod, x.start);
    return r ? { ref: r.ref, chain } : undefined;
  }

  /** the module-level statements (stmtKey) a name or attribute chain of the copied code
   *  denotes, when it denotes one definition; else undefined */
  denotedStmts(mod: CorpusModule, e: Expr): string[] | undefined {
    const c = this.chainRef(mod, e);
    if (!c || c.chain.length > (c.ref.attrs ?? []).length) return undefined;
    const chain = c.chain;
    const { targets, consumed } = this.an.resolveChain(mod, c.ref, chain);
    if (targets.length !== 1 || consumed !== chain.length || targets[0].kind !== 'def') return undefined;
    const t = targets[0];
    return t.stmts.map((i) => stmtKey(t.module, i));
  }

  /** A plain class (for `i0:` instances): its bases, recursively, are classes of the corpus
   *  (no extern base, no keyword such as `metaclass=`), none defines `__bool__`, `__len__`,
   *  `__getattr__`, `__getattribute__`, `__new__` or `__init_subclass__`, and the only
   *  decorator is `@dataclass` (whose `__init__` gives each field its class-level default). */
  plainClass(mod: CorpusModule, cls: string, depth = 0): boolean {
    const key = `${mod.repo}\0${mod.name}\0${cls}`;
    const memo = this.plainMemo.get(key);
    if (memo !== undefined) return memo;
    this.plainMemo.set(key, false); // a cycle is not plain
    const cf = classStatement(mod, cls);
    let ok =
      !!cf && depth <= 12 && !cf.members.some((m) => /^__(bool|len|getattr|getattribute|new|init_subclass)__$/.test(m));
    if (ok && cf) {
      const st = mod.facts.statements[cf.stmt];
      const head = this.an.corpus.source(mod).slice(st.start, st.end).split('\n');
      for (const l of head) {
        const t = l.trim();
        if (!t.startsWith('@')) break;
        if (!/^@(dataclasses\.)?dataclass(\(.*\))?$/.test(t)) ok = false;
      }
      if (cf.bases.some((b) => !b.name || b.text.includes('='))) ok = false;
      for (const bases of ok ? baseClasses(this.an.resolver, mod, cf) : []) {
        if (
          bases.length !== 1 ||
          bases[0].kind !== 'class' ||
          !this.plainClass(bases[0].module, bases[0].cls.name, depth + 1)
        )
          ok = false;
      }
    }
    this.plainMemo.set(key, ok);
    return ok;
  }

  /** The class-level value of `attr` for an instance of class `cls` (the first class in a
   *  depth-first walk of the bases that assigns it in its body): its module and expression;
   *  null when a class defines it otherwise (a method) or none does. */
  classAttr(mod: CorpusModule, cls: string, attr: string, depth = 0): { mod: CorpusModule; value: Expr | null } | null {
    const cf = classStatement(mod, cls);
    if (!cf || depth > 12) return null;
    const attrs = this.facts(mod).classAttrs.get(cls);
    if (attrs?.has(attr)) return { mod, value: attrs.get(attr)! };
    if (cf.members.includes(attr)) return null;
    for (const bases of baseClasses(this.an.resolver, mod, cf)) {
      for (const b of bases) {
        if (b.kind !== 'class') continue;
        const r = this.classAttr(b.module, b.cls.name, attr, depth + 1);
        if (r) return r;
      }
    }
    return null;
  }

  /** MRO-ish lookup: the first class in a depth-first walk of the bases defining `name` */
  methodOf(mod: CorpusModule, cls: string, name: string, skipSelf: boolean, depth = 0): FnRef | null {
    if (depth > 12) return null;
    if (depth === 0) {
      const key = `${mod.repo}\0${mod.name}\0${cls}\0${name}\0${skipSelf}`;
      let r = this.methodMemo.get(key);
      if (r === undefined) this.methodMemo.set(key, (r = this.methodLookup(mod, cls, name, skipSelf, 0)));
      return r;
    }
    return this.methodLookup(mod, cls, name, skipSelf, depth);
  }

  private methodLookup(mod: CorpusModule, cls: string, name: string, skipSelf: boolean, depth: number): FnRef | null {
    const cf = classStatement(mod, cls);
    if (!cf) return null;
    if (!skipSelf) {
      const f = this.fnByMethod.get(`${mod.repo}\0${mod.name}\0${cls}\0${name}\0${cf.stmt}`);
      if (f) return f;
      if (cf.members.includes(name)) return null; // defined but not copied (or not a plain def)
    }
    for (const bases of baseClasses(this.an.resolver, mod, cf)) {
      for (const b of bases) {
        if (b.kind !== 'class') continue;
        const r = this.methodOf(b.module, b.cls.name, name, false, depth + 1);
        if (r) return r;
      }
    }
    return null;
  }

  /** the module of a `cls:`/`fn:` atom and its definition's name */
  moduleOfAtom(a: string): { mod: CorpusModule | undefined; name: string } {
    const { repo, module, name } = atomParts(a);
    return { mod: this.an.corpus.module(module, repo) ?? undefined, name };
  }
}

/** The item of `sorted` (ordered by start, spans not overlapping) whose [start, end)
 *  holds `pos`, by binary search. */
function spanAt<T>(
  sorted: readonly T[] | undefined,
  pos: number,
  span: (t: T) => { start: number; end: number },
): T | undefined {
  if (!sorted) return undefined;
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const s = span(sorted[mid]);
    if (s.end <= pos) lo = mid + 1;
    else if (s.start > pos) hi = mid - 1;
    else return sorted[mid];
  }
  return undefined;
}
