// The evaluator of slim's value analysis (values.ts): the atoms (atoms.ts) an expression of
// a copied function can be at a position, at the current state of the fixpoint (reach.ts).
// Python semantics (Language Reference §6.10–6.11, §6.13 and the builtins
// `isinstance`/`issubclass`): names (parameter values and the assignments before the
// position, or anywhere in an enclosing loop), `self.x` (the live `self.x = …` of reachable
// methods), `not`, `and`/`or` (which return an operand), conditional expressions,
// comparisons, the returns of known copied functions, `'k' in kwargs`,
// `kwargs.pop/get('k', d)`, `copy.deepcopy(x)`, `x.lower()`; everything else is TOP. Also:
// the callees of a call (a function, a class's `__init__`, `super().m`, `Cls.m(self, …)`,
// `obj.m(…)` on the instantiated classes).
import {
  NONE,
  TF,
  boolSet,
  builtinType,
  eqAtoms,
  identityAtoms,
  orderAtoms,
  truth,
  union,
  type Vals,
} from './atoms.js';
import type { CallExpr, Expr } from './expr.js';
import type { FnFacts, Param } from './facts.js';
import type { ReachState } from './reach.js';
import { fnKey, moduleFn, type BlockScope, type FnRef } from './scope.js';
import { TypeTests } from './typetests.js';

/** A callee of a call: the function that runs, whether its first parameter is bound, the
 *  class it instantiates, and whether it is only one of the methods `obj.m` may be. */
export type Callee = { fn: FnRef; bound: boolean; cls?: string; fuzzy?: boolean };

export class Evaluator {
  /** `self.x` values this round (a cycle reads TOP) */
  readonly selfAttrCache = new Map<string, Vals>();
  private readonly types: TypeTests;

  constructor(
    private readonly scope: BlockScope,
    private readonly st: ReachState,
  ) {
    this.types = new TypeTests(scope);
  }

  evalIn(f: FnRef, e: Expr, pos: number, depth: number): Vals {
    if (depth > 24) return null;
    switch (e.k) {
      case 'lit':
        return new Set([e.atom]);
      case 'coll':
        return new Set([e.atom]);
      case 'top':
        return null;
      case 'name': {
        const d = this.scope.denote(f.mod, e);
        if (d !== undefined) return d;
        return this.nameValue(f, e.id, pos, depth);
      }
      case 'attr': {
        if (e.obj.k === 'name' && e.obj.id === 'self' && f.fn.bound && f.fn.params[0]?.name === 'self')
          return this.selfAttr(e.attr, depth);
        const d = this.scope.denote(f.mod, e);
        if (d === undefined && e.obj.k === 'name') {
          const v = this.instanceAttr(f, e.obj, e.attr, pos, depth);
          if (v !== undefined) return v;
        }
        return d === undefined ? null : d;
      }
      case 'not': {
        const v = this.evalIn(f, e.e, pos, depth + 1);
        if (!v) return null;
        const out = new Set<string>();
        for (const a of v) {
          const t = truth(a);
          if (t === null) return null;
          out.add(t ? 'False' : 'True');
        }
        return out;
      }
      case 'bool': {
        // `a or b` is a if a is true else b; `a and b` is a if a is false else b
        const l = this.evalIn(f, e.l, pos, depth + 1);
        if (!l) return null;
        let out: Vals = new Set();
        let needR = false;
        for (const a of l) {
          const t = truth(a);
          if (t === null) return null;
          if ((e.op === 'or') === t) out.add(a);
          else needR = true;
        }
        if (needR) out = union(out, this.evalIn(f, e.r, pos, depth + 1));
        return out;
      }
      case 'cond': {
        const t = this.evalIn(f, e.test, pos, depth + 1);
        const ts = t ? [...t].map(truth) : [null];
        let out: Vals = new Set();
        if (ts.some((x) => x !== false)) out = union(out, this.evalIn(f, e.body, pos, depth + 1));
        if (ts.some((x) => x !== true)) out = union(out, this.evalIn(f, e.orelse, pos, depth + 1));
        return out;
      }
      case 'cmp':
        return this.compare(f, e, pos, depth);
      case 'call':
        return this.callValue(f, e, pos, depth);
      case 'seq':
        return new Set([e.items.length ? `obj:${e.kind}` : `empty:${e.kind}`]);
      case 'unpack':
        return e.value.k === 'call' ? this.returned(f, e.value, depth, e) : null;
      case 'dict':
        return new Set([e.items.length ? 'obj:dict' : 'empty:dict']);
    }
  }
  /** what a call of a copied function returns: the union of its live `return`s (None
   *  when it can end without one); `pick`: the element of a returned tuple */
  returned(f: FnRef, c: CallExpr, depth: number, pick?: { index: number; n: number }): Vals {
    if (depth > 16) return null;
    const callees = this.calleesOf(f, c);
    // only calls whose callee is known (`obj.m(…)` may be any object's m)
    if (!callees.length || callees.some((x) => x.cls || x.fuzzy || !this.st.reachedFns.has(fnKey(x.fn)))) return null;
    let out: Vals = new Set();
    for (const { fn } of callees) {
      if (fn.fn.fallsOff || fn.fn.returns.some((r) => !r.value)) {
        if (pick) return null;
        out = union(out, NONE);
      }
      for (const r of fn.fn.returns) {
        if (!r.value || !this.st.live(fn, r.pos)) continue;
        if (pick) {
          if (r.value.k !== 'seq' || r.value.items.length !== pick.n) return null;
          out = union(out, this.evalIn(fn, r.value.items[pick.index], r.pos, depth + 1));
        } else out = union(out, this.evalIn(fn, r.value, r.pos, depth + 1));
        if (!out) return null;
      }
    }
    return out;
  }
  /** some live code changes the object `id` holds */
  mutatedLive(f: FnRef, id: string): boolean {
    return (f.fn.mutated.get(id) ?? []).some((pos) => this.st.live(f, pos));
  }
  /** the keys and values of a local name bound only to dicts of literal keys */
  localDict(f: FnRef, id: string, pos: number, depth = 0): Map<string, Vals> | null {
    if (depth > 8) return null;
    // a parameter that is None (or an empty dict) adds no keys: `**None` raises, so a
    // call that works splats what the body assigned
    const p = f.fn.params.find((x) => x.name === id);
    if (p) {
      const pv = p.kind === 'pos' || p.kind === 'kwonly' ? this.st.params.get(fnKey(f))?.get(id) : null;
      if (!pv || [...pv].some((v) => v !== 'None' && v !== 'empty:dict')) return null;
    }
    const as = (f.fn.assigns.get(id) ?? []).filter(
      (a) =>
        this.st.live(f, a.pos) &&
        ((a.end ?? a.pos) <= pos || f.fn.loops.some(([s, t]) => s <= a.pos && a.pos < t && s <= pos && pos < t)),
    );
    if (!as.length) return null;
    const out = new Map<string, Vals>();
    for (const a of as) {
      const v = a.value;
      let items: [string, Expr][] | null = null;
      if (v?.k === 'dict') items = v.items;
      else if (
        v?.k === 'call' &&
        v.fn.k === 'name' &&
        v.fn.id === 'dict' &&
        !v.args.length &&
        !v.star &&
        !v.kwsplat.length
      )
        items = v.kw;
      if (!items) return null;
      for (const [k, x] of items) {
        if (k !== '**') {
          out.set(k, union(out.get(k) ?? new Set(), this.evalIn(f, x, a.pos, 1)));
          continue;
        }
        // `**other`: a dict of known keys, or `**(x or {})` where x is None
        const inner = this.dictShape(f, x, a.pos, depth + 1);
        if (!inner) return null;
        for (const [ik, iv] of inner) out.set(ik, union(out.get(ik) ?? new Set(), iv));
      }
    }
    return out;
  }
  /** the keys and values of a dict expression, or null when unknown */
  dictShape(f: FnRef, x: Expr, pos: number, depth: number): Map<string, Vals> | null {
    if (depth > 8) return null;
    if (x.k === 'dict' && x.items.every(([k]) => k !== '**'))
      return new Map(x.items.map(([k, v]) => [k, this.evalIn(f, v, pos, 1)]));
    if (x.k === 'coll' && x.atom === 'empty:dict') return new Map();
    if (x.k === 'name')
      return this.kwKeys(f, x.id) ?? (this.mutatedLive(f, x.id) ? null : this.localDict(f, x.id, pos, depth + 1));
    if (x.k === 'bool' && x.op === 'or') {
      // `a or b`: a when a is truthy; only a None/empty a is followed (to b)
      const l = this.evalIn(f, x.l, pos, 1);
      if (!l || [...l].some((v) => truth(v) !== false)) return null;
      return this.dictShape(f, x.r, pos, depth + 1);
    }
    return null;
  }
  /** the keys a `**kwargs` parameter can hold, or null when unknown */
  kwKeys(f: FnRef, id: string): Map<string, Vals> | null {
    const p = f.fn.params.find((x) => x.name === id && x.kind === 'kwstar');
    if (!p || (f.fn.assigns.get(id) ?? []).some((a) => this.st.live(f, a.pos))) return null;
    const known = this.st.kwExtra.get(fnKey(f));
    if (!known) return null;
    const adds = f.fn.kwAdds.filter((a) => this.st.live(f, a.pos));
    if (!adds.length) return known;
    if (adds.some((a) => a.key === null)) return null;
    const out = new Map(known);
    for (const a of adds) out.set(a.key!, null);
    return out;
  }
  nameValue(f: FnRef, id: string, pos: number, depth: number): Vals {
    const p = f.fn.params.find((x) => x.name === id);
    let out: Vals = new Set();
    if (p) {
      const k = fnKey(f);
      if (p.kind === 'star') out = new Set(['obj:tuple', 'empty:tuple']);
      else if (p.kind === 'kwstar') out = new Set(['obj:dict', 'empty:dict']);
      else {
        const m = this.st.params.get(k);
        out = m && m.has(id) ? m.get(id)! : null;
      }
    }
    const as = f.fn.assigns.get(id);
    if (!p && !as) return null; // a free name the facts do not resolve (class-scope, builtins)
    for (const a of as ?? []) {
      if (!out) return null;
      if (!this.st.live(f, a.pos)) continue;
      if ((a.end ?? a.pos) > pos && !f.fn.loops.some(([s, t]) => s <= a.pos && a.pos < t && s <= pos && pos < t))
        continue;
      if (!a.value) return null;
      out = union(out, this.evalIn(f, a.value, a.pos, depth + 1));
    }
    return out;
  }
  selfAttr(attr: string, depth: number): Vals {
    if (
      !this.st.anySelfAssign.has(attr) ||
      this.st.otherAttrs.has(attr) ||
      this.st.otherAttrs.has('*') ||
      this.st.otherAttrs.has('*nn') ||
      this.st.properties.has(attr)
    )
      return null;
    if (this.selfAttrCache.has(attr)) return this.selfAttrCache.get(attr)!;
    this.selfAttrCache.set(attr, null); // a cycle reads TOP
    let out: Vals = new Set();
    for (const f of this.scope.fns) {
      if (!this.st.reachedFns.has(fnKey(f))) continue;
      for (const a of f.fn.selfAssigns) {
        if (a.attr !== attr || !this.st.live(f, a.pos)) continue;
        out = a.value ? union(out, this.evalIn(f, a.value, a.pos, depth + 1)) : null;
        if (!out) break;
      }
      if (!out) break;
    }
    // class-level values of the copied classes
    for (const [mod] of this.scope.byMod) {
      for (const [, attrs] of this.scope.facts(mod).classAttrs) {
        if (!attrs.has(attr)) continue;
        const v = attrs.get(attr);
        out = v && (v.k === 'lit' || v.k === 'coll') ? union(out, new Set([v.atom])) : null;
      }
    }
    this.selfAttrCache.set(attr, out);
    return out;
  }
  compare(f: FnRef, e: Expr & { k: 'cmp' }, pos: number, depth: number): Vals {
    const l = this.evalIn(f, e.l, pos, depth + 1);
    if ((e.op === 'in' || e.op === 'not in') && e.r.k === 'name' && e.l.k === 'lit' && e.l.atom.startsWith('s:')) {
      // `'key' in kwargs`: a key no caller passes is not there
      const keys = this.kwKeys(f, e.r.id);
      if (!keys) return TF(null);
      return keys.has(e.l.atom.slice(2)) ? TF(null) : boolSet(new Set([false]), e.op === 'not in');
    }
    if (e.op === 'in' || e.op === 'not in') {
      if (!l || e.r.k !== 'seq') return TF(null);
      const items: string[] = [];
      for (const it of e.r.items) {
        const v = this.evalIn(f, it, pos, depth + 1);
        if (!v || v.size !== 1) return TF(null);
        items.push([...v][0]);
      }
      const res = new Set<boolean>();
      for (const a of l) {
        const known = items.every((b) => eqAtoms(a, b) !== null);
        if (!known) return TF(null);
        res.add(items.some((b) => eqAtoms(a, b)));
      }
      return boolSet(res, e.op === 'not in');
    }
    const r = this.evalIn(f, e.r, pos, depth + 1);
    if (!l || !r) return TF(null);
    const res = new Set<boolean>();
    for (const a of l) {
      for (const b of r) {
        let v: boolean | null;
        if (e.op === 'is' || e.op === 'is not')
          v =
            a === 'None' || b === 'None'
              ? a === b
              : a.startsWith('cls:') || a.startsWith('fn:') || b.startsWith('cls:') || b.startsWith('fn:')
                ? identityAtoms(a, b)
                : null;
        else if (e.op === '==' || e.op === '!=') v = eqAtoms(a, b);
        else v = orderAtoms(a, b, e.op);
        if (v === null) return TF(null);
        res.add(v);
      }
    }
    return boolSet(res, e.op === 'is not' || e.op === '!=');
  }
  callValue(f: FnRef, e: CallExpr, pos: number, depth: number): Vals {
    const fname = e.fn.k === 'name' ? e.fn.id : e.fn.k === 'attr' ? e.fn.attr : '';
    const callee = e.fn.k === 'name' || e.fn.k === 'attr' ? this.scope.denote(f.mod, e.fn) : undefined;
    const isB = (n: string) => callee instanceof Set && callee.size === 1 && callee.has(`b:${n}`);
    if ((isB('isinstance') || isB('issubclass')) && e.args.length === 2 && !e.kw.length && !e.star) {
      const obj = this.evalIn(f, e.args[0], pos, depth + 1);
      const types = e.args[1].k === 'seq' ? e.args[1].items : [e.args[1]];
      const tv: string[] = [];
      for (const t of types) {
        const v = this.evalIn(f, t, pos, depth + 1);
        if (!v || v.size !== 1) return TF(null);
        tv.push([...v][0]);
      }
      if (!obj) return TF(null);
      const res = new Set<boolean>();
      for (const a of obj) {
        const vs = tv.map((t) => (isB('isinstance') ? this.types.isInstance(a, t) : this.types.isSubclass(a, t)));
        if (vs.some((v) => v === true)) res.add(true);
        else if (vs.every((v) => v === false)) res.add(false);
        else return TF(null);
      }
      return boolSet(res, false);
    }
    if ((isB('dict') || isB('list') || isB('tuple') || isB('set')) && !e.star && !e.kwsplat.length) {
      const kind = [...(callee as Set<string>)][0].slice(2);
      return new Set([
        e.args.length || e.kw.length
          ? kind === 'dict' && !e.kw.length && e.args.length
            ? 'obj'
            : `obj:${kind}`
          : `empty:${kind}`,
      ]);
    }
    // copy.deepcopy(x) / copy.copy(x) is x as far as these tests go
    if (
      callee instanceof Set &&
      callee.size === 1 &&
      /^x:copy\.(deep)?copy$/.test([...callee][0]) &&
      e.args.length === 1
    )
      return this.evalIn(f, e.args[0], pos, depth + 1);
    // kwargs.pop('k', d) / kwargs.get('k', d): the values callers pass for k, or d
    if (
      e.fn.k === 'attr' &&
      (fname === 'pop' || fname === 'get') &&
      e.fn.obj.k === 'name' &&
      e.args.length >= 1 &&
      e.args.length <= 2 &&
      e.args[0].k === 'lit' &&
      e.args[0].atom.startsWith('s:')
    ) {
      const keys = this.kwKeys(f, e.fn.obj.id);
      if (keys) {
        const k = e.args[0].atom.slice(2);
        let out: Vals = keys.has(k) ? keys.get(k)! : new Set();
        out = union(
          out,
          e.args.length === 2 ? this.evalIn(f, e.args[1], pos, depth + 1) : fname === 'get' ? NONE : new Set(),
        );
        return out;
      }
    }
    // `C()` of a plain class (scope.ts plainClass): an instance whose attributes are the
    // class-level values
    if (callee instanceof Set && callee.size === 1 && !e.args.length && !e.kw.length && !e.star && !e.kwsplat.length) {
      const a = [...callee][0];
      if (a.startsWith('cls:')) {
        const { mod, name } = this.scope.moduleOfAtom(a);
        if (mod && this.scope.plainClass(mod, name)) return new Set([`i0:${a.slice(4)}`]);
      }
    }
    if (e.fn.k === 'call' || e.fn.k === 'name' || e.fn.k === 'attr') {
      const r = this.returned(f, e, depth);
      if (r) return r;
    }
    if (e.fn.k === 'attr' && fname === 'lower' && !e.args.length) {
      const v = this.evalIn(f, e.fn.obj, pos, depth + 1);
      if (!v) return null;
      const out = new Set<string>();
      for (const a of v) {
        // None, a bool or a number has no `lower`: the call raises AttributeError, so
        // no value of the name goes on from here but its strings
        if (['NoneType', 'bool', 'int', 'float'].includes(builtinType(a) ?? '')) continue;
        if (!a.startsWith('s:')) return null;
        out.add(a.toLowerCase());
      }
      return out;
    }
    return null;
  }

  /** a parameter's default, evaluated where the `def` runs */
  evalDefault(f: FnRef, p: Param): Vals {
    return p.def ? this.evalIn(f, p.def, f.fn.start, 0) : null;
  }

  // callees of a call: a function, a class's __init__, `super().m`, `Cls.m(self, …)`,
  // `obj.m(…)` (the methods named m of the instantiated classes)
  // memoised per call until the instantiated classes grow (what `obj.m(…)` may reach)
  private readonly calleeMemo = new Map<Expr, { fn: FnFacts; stamp: number; out: Callee[] }>();
  /** `x.attr` of a local name `x` whose values are all `i0:` instances: the class-level
   *  values of attr (null when one is unknown, or when copied code assigns `.attr`
   *  otherwise); undefined when x holds anything else */
  instanceAttr(f: FnRef, obj: Expr & { k: 'name' }, attr: string, pos: number, depth: number): Vals | undefined {
    if (obj.id === 'self' || depth > 16) return undefined;
    const v = this.nameValue(f, obj.id, pos, depth + 1);
    // None has no such attribute: reading it raises AttributeError, so only the instances
    // go on (a name is its parameter's value and every assignment before: `layers =
    // layers or LayerFn()` holds the None default too)
    const insts = v ? [...v].filter((a) => a !== 'None') : [];
    if (!insts.length || insts.some((a) => !a.startsWith('i0:'))) return undefined;
    if (this.assignedOtherwise(attr)) return null;
    let out: Vals = new Set();
    for (const a of insts) {
      const { mod, name } = this.scope.moduleOfAtom(a);
      const ca = mod ? this.scope.classAttr(mod, name, attr) : null;
      if (!ca || !ca.value) return null;
      out = union(out, this.evalIn(moduleFn(ca.mod, 0), ca.value, 0, depth + 1));
      if (!out) return null;
    }
    return out;
  }

  /** copied code assigns `.attr` through `self` or another receiver (or any attribute) */
  private assignedOtherwise(attr: string): boolean {
    if (this.st.otherAttrs.has(attr) || this.st.otherAttrs.has('*')) return true;
    return this.scope.fns.some((f) => f.fn.selfAssigns.some((a) => a.attr === attr && this.scope.kept(f.mod, a.pos)));
  }

  calleesOf(f: FnRef, c: CallExpr): Callee[] {
    // `x.attr(…)` of an instance of a plain class: the class-level value of attr (values
    // grow every round)
    if (c.fn.k === 'attr' && c.fn.obj.k === 'name' && this.scope.denote(f.mod, c.fn.obj) === undefined) {
      const v = this.instanceAttr(f, c.fn.obj, c.fn.attr, c.start, 0);
      if (v) return this.resolveCallee(v, []);
    }
    // a call through a local name: what the name holds there (values grow every round)
    if (c.fn.k === 'name' && f.fn.confined.has(c.fn.id)) {
      const v = this.nameValue(f, c.fn.id, c.start, 0);
      return v ? this.resolveCallee(v, []) : [];
    }
    const m = this.calleeMemo.get(c);
    if (m && m.fn === f.fn && m.stamp === this.st.instantiated.size) return m.out;
    const out = this.calleesOfCall(f, c);
    this.calleeMemo.set(c, { fn: f.fn, stamp: this.st.instantiated.size, out });
    return out;
  }
  calleesOfCall(f: FnRef, c: CallExpr): Callee[] {
    const out: Callee[] = [];
    if (c.fn.k === 'name') {
      const d = this.scope.denote(f.mod, c.fn);
      return d ? this.resolveCallee(d, out) : out;
    }
    if (c.fn.k !== 'attr') return out;
    const m = c.fn.attr;
    const obj = c.fn.obj;
    if (obj.k === 'call' && obj.fn.k === 'name' && obj.fn.id === 'super') {
      if (f.fn.cls) {
        const r = this.scope.methodOf(f.mod, f.fn.cls, m, true);
        if (r) out.push({ fn: r, bound: true });
      }
      return out;
    }
    const whole = this.scope.denote(f.mod, c.fn);
    if (whole) return this.resolveCallee(whole, out);
    const d = this.scope.denote(f.mod, obj);
    if (d && d.size === 1 && [...d][0].startsWith('cls:')) {
      const { mod, name } = this.scope.moduleOfAtom([...d][0]);
      const r = mod ? this.scope.methodOf(mod, name, m, false) : null;
      if (r) out.push({ fn: r, bound: false });
      return out;
    }
    if (d !== undefined) return out; // an extern object, a module: nothing of ours
    for (const a of this.st.instantiated) {
      if (a.endsWith(':top')) continue;
      const { mod, name } = this.scope.moduleOfAtom(a);
      const r = mod ? this.scope.methodOf(mod, name, m, false) : null;
      if (r && !out.some((x) => x.fn === r)) out.push({ fn: r, bound: true, fuzzy: true });
    }
    return out;
  }
  resolveCallee(d: Set<string>, out: Callee[]): Callee[] {
    for (const a of d) {
      const kind = a.slice(0, a.indexOf(':'));
      if (kind !== 'cls' && kind !== 'fn') continue;
      const { mod, name } = this.scope.moduleOfAtom(a);
      if (!mod) continue;
      if (kind === 'cls') {
        const r = this.scope.methodOf(mod, name, '__init__', false);
        out.push({ fn: r ?? (null as unknown as FnRef), bound: true, cls: a });
      } else {
        const r = this.scope.fnOfAtom(mod.repo, mod.name, name);
        if (r) out.push({ fn: r, bound: false });
      }
    }
    return out;
  }
}
