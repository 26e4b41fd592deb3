// The state of slim's value fixpoint (values.ts, fixpoint.ts) for one block: which copied
// functions are reachable and with which parameter values (and `**kwargs` keys), which
// classes are instantiated, which module-level statements running code needs, which
// attributes running code assigns through other receivers, and the dead ranges of each
// reachable function found this round. Values and live code only grow.
import { baseClasses, classStatement } from '../../resolve/classes.js';
import type { CorpusModule } from '../../resolve/corpus.js';
import { stmtKey } from './analysis.js';
import { union, type Vals } from './atoms.js';
import type { Expr } from './expr.js';
import { fnKey, type BlockScope, type FnRef } from './scope.js';

/** A method a user of an instance may call: public, or dunder other than `__init__`. */
const isPublicMethod = (name: string) => name !== '__init__' && !/^_[^_]/.test(name);

export class ReachState {
  /** parameter values of each reachable function (null: TOP) */
  readonly params = new Map<string, Map<string, Vals>>();
  /** the keys a `**kwargs` parameter can hold, and their values (null: unknown) */
  readonly kwExtra = new Map<string, Map<string, Vals> | null>();
  readonly reachedFns = new Set<string>();
  /** instantiated classes (`cls:` atoms; `<atom>:top` once its `__init__` takes TOP) */
  readonly instantiated = new Set<string>();
  /** module-level statements (stmtKey) whose bindings running code reads */
  readonly needed = new Set<string>();
  /** attributes running code assigns otherwise than `self.x = …` (`*`: any) */
  readonly otherAttrs = new Set<string>();
  /** dead ranges of each reachable function (this round) */
  readonly deadOf = new Map<string, [number, number][]>();
  /** attributes some copied code assigns through `self` or at class level */
  readonly anySelfAssign = new Set<string>();
  /** names of property-like methods of the copied modules */
  readonly properties = new Set<string>();
  /** the argument expressions live calls pass for each parameter (function key →
   *  parameter → the caller and the expression) */
  readonly args = new Map<string, Map<string, { caller: FnRef; expr: Expr }[]>>();
  /** did this round grow anything */
  changed = false;

  constructor(readonly scope: BlockScope) {
    for (const f of scope.fns)
      for (const a of f.fn.selfAssigns) if (scope.kept(f.mod, a.pos)) this.anySelfAssign.add(a.attr);
    for (const [mod] of scope.byMod)
      for (const [, attrs] of scope.facts(mod).classAttrs) for (const a of attrs.keys()) this.anySelfAssign.add(a);
    for (const [mod] of scope.byMod) for (const a of scope.facts(mod).properties) this.properties.add(a);
  }

  isReached(f: FnRef): boolean {
    return this.reachedFns.has(fnKey(f));
  }

  /** `f` runs; `top`: with TOP parameters (forward and the other public methods: a user of
   *  the block may call them) */
  reach(f: FnRef, top: boolean): void {
    const k = fnKey(f);
    if (!this.reachedFns.has(k)) {
      this.reachedFns.add(k);
      // `self` of a method is the instance: not a value this analysis follows
      this.params.set(
        k,
        new Map(f.fn.params.map((p, i) => [p.name, i === 0 && f.fn.bound ? null : new Set<string>()])),
      );
      this.kwExtra.set(k, new Map());
      this.changed = true;
    }
    if (top || (f.fn.cls && isPublicMethod(f.fn.name))) {
      const m = this.params.get(k)!;
      for (const [n, v] of m) {
        if (v !== null) {
          m.set(n, null);
          this.changed = true;
        }
      }
      if (this.kwExtra.get(k) !== null) {
        this.kwExtra.set(k, null);
        this.changed = true;
      }
    }
  }

  /** a live call of `caller` passes `expr` for parameter `name` of function `k` */
  argument(k: string, name: string, caller: FnRef, expr: Expr): void {
    let m = this.args.get(k);
    if (!m) this.args.set(k, (m = new Map()));
    let l = m.get(name);
    if (!l) m.set(name, (l = []));
    if (!l.some((x) => x.caller === caller && x.expr === expr)) l.push({ caller, expr });
  }

  /** parameter `name` of function `k` ∪= v; whether it changed */
  setParam(k: string, name: string, v: Vals): boolean {
    const m = this.params.get(k);
    if (!m || !m.has(name)) return false;
    return grow(m, name, v);
  }

  /** a class is instantiated: the public methods of its classes run with TOP; `top`: its
   *  `__init__` too (an instance made with arguments we do not see) */
  instantiate(clsAtom: string, top: boolean): void {
    const key = `${clsAtom}${top ? ':top' : ''}`;
    const { mod, name } = this.scope.moduleOfAtom(clsAtom);
    if (!mod) return;
    if (!this.instantiated.has(key)) {
      this.instantiated.add(key);
      this.instantiated.add(clsAtom);
      this.changed = true;
    }
    // the methods of its classes (what an instance can run)
    const seen = new Set<string>();
    const walk = (m: CorpusModule, c: string, depth: number) => {
      const k = `${m.repo}:${m.name}:${c}`;
      if (seen.has(k) || depth > 12) return;
      seen.add(k);
      for (const f of this.scope.fnsOfClass(m, c)) if (isPublicMethod(f.fn.name)) this.reach(f, true);
      const cf = classStatement(m, c);
      if (cf)
        for (const bases of baseClasses(this.scope.an.resolver, m, cf))
          for (const b of bases) if (b.kind === 'class') walk(b.module, b.cls.name, depth + 1);
    };
    walk(mod, name, 0);
    if (top) {
      const init = this.scope.methodOf(mod, name, '__init__', false);
      if (init) this.reach(init, true);
    }
  }

  /** a class or function used as a value: code we do not see may call it with anything */
  useAsValue(a: string): void {
    if (a.startsWith('cls:')) this.instantiate(a, true);
    else if (a.startsWith('fn:')) {
      const [, repo, ...rest] = a.split(':');
      const name = rest.pop()!;
      const f = this.scope.fnOfAtom(repo, rest.join(':'), name);
      if (f) this.reach(f, true);
    }
  }

  /** `pos` of `f` runs: copied, not skipped, and in no dead range of `f` */
  live(f: FnRef, pos: number): boolean {
    return this.scope.kept(f.mod, pos) && !(this.deadOf.get(fnKey(f)) ?? []).some(([a, b]) => pos >= a && pos < b);
  }

  /** code outside function bodies (module level, class bodies, headers) or live code of a
   *  reachable function; a module-level assignment (`MODELS = Registry('model')`,
   *  `ConfigType = Union[…]`) runs for this analysis when running code reads what it binds
   *  (annotations do not) */
  runs(mod: CorpusModule, pos: number): boolean {
    if (!this.scope.kept(mod, pos)) return false;
    const n = this.scope.nodeAt(mod, pos);
    const lz = n && n.facts.kind === 'expression_statement' && n.facts.binds.length ? n.stmt : -1;
    if (lz >= 0 && !this.needed.has(stmtKey(mod, lz))) return false;
    // the innermost function body holding it (a method's body, or a module-level function's)
    const f = this.scope.fnAt(mod, pos);
    if (!f) return true;
    return this.reachedFns.has(fnKey(f)) && this.live(f, pos);
  }
}

/** m[k] ∪= v; whether it changed (a TOP entry stays TOP) */
export function grow(m: Map<string, Vals>, k: string, v: Vals): boolean {
  const cur = m.get(k);
  if (cur === null) return false;
  const next = union(cur ?? new Set(), v);
  if (next && cur && next.size === cur.size) return false;
  m.set(k, next);
  return true;
}
