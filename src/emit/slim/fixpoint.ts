// The fixpoint of slim's value analysis (values.ts): which code runs and with which values,
// a least fixpoint over the block's closure. The block's class is instantiated (its
// `__init__` takes its defaults, call-site literals and validated arguments, seedEntry); a
// live call in reachable code reaches its callee with the argument values (a class's
// `__init__`, and makes its methods reachable); a function or class used as a value in
// live code is reachable with TOP parameters; code outside function bodies (module level,
// class bodies, decorators, defaults) always runs; each round, the dead ranges of the
// reachable functions (deadRanges) are what their tests never take at the current values.
// Values and live code only grow.
import type { Closure } from '../../resolve/closure.js';
import type { CorpusModule } from '../../resolve/corpus.js';
import { kindOf, truth, union, type Vals } from './atoms.js';
import type { EntryCall } from './entry.js';
import type { Callee, Evaluator } from './evaluator.js';
import type { CallExpr } from './expr.js';
import type { Clause, CondSite, IfSite } from './facts.js';
import { grow, type ReachState } from './reach.js';
import { fnKey, moduleFn, type BlockScope, type FnRef } from './scope.js';

/** What of a reachable function no value reaches: its dead ranges, the `if` clauses (and
 *  the code after an `if` none of whose live clauses falls through) and the sides of
 *  conditional expressions. */
export interface DeadCode {
  dead: [number, number][];
  prunes: { site: IfSite; clauses: Clause[]; rest: boolean }[];
  conds: { site: CondSite; part: 'body' | 'orelse' }[];
}

/** The rounds after which the analysis gives up (and prunes nothing). */
const MAX_ROUNDS = 40;

/** The dead code of each reachable function at the fixpoint, or null when there is none
 *  within MAX_ROUNDS. */
export function runFixpoint(
  scope: BlockScope,
  st: ReachState,
  ev: Evaluator,
  closure: Closure,
  entry: { calls: readonly EntryCall[] },
): Map<string, DeadCode> | null {
  seedEntry(scope, st, ev, closure, entry);
  const fixed = staticFacts(scope);
  const finalPrunes = new Map<string, DeadCode>();
  for (let round = 0; ; round++) {
    st.changed = false;
    ev.selfAttrCache.clear();
    // attributes written otherwise by running code (only grows): before the tests read them
    for (const [mod] of scope.byMod) {
      for (const a of scope.facts(mod).otherAttrAssigns) {
        if (st.otherAttrs.has(a.attr) || !st.runs(mod, a.pos)) continue;
        st.otherAttrs.add(a.attr);
        st.changed = true;
      }
    }
    ev.selfAttrCache.clear();
    finalPrunes.clear();
    for (const f of scope.fns) if (st.isReached(f)) finalPrunes.set(fnKey(f), deadRanges(scope, st, ev, f));
    runOutside(scope, st, ev, fixed);
    for (const caller of scope.fns) {
      const ck = fnKey(caller);
      if (!st.reachedFns.has(ck)) continue;
      for (const call of caller.fn.calls) {
        if (!st.live(caller, call.start)) continue;
        for (const x of ev.calleesOf(caller, call)) propagateCall(st, ev, caller, ck, call, x);
      }
    }
    if (!st.changed) break;
    if (round >= MAX_ROUNDS) return null; // no fixpoint in time: prune nothing
  }
  return finalPrunes;
}

/** the block's __init__ takes its defaults, call-site literals and validated arguments */
function seedEntry(
  scope: BlockScope,
  st: ReachState,
  ev: Evaluator,
  closure: Closure,
  entry: { calls: readonly EntryCall[] },
): void {
  const target = closure.target;
  const entryInit = scope.methodOf(target.mod, target.className, '__init__', false);
  const entryVals = new Map<string, Vals>();
  if (entryInit) {
    const ps = entryInit.fn.params.slice(entryInit.fn.bound ? 1 : 0);
    // a required parameter is TOP: the user passes anything
    for (const p of ps)
      entryVals.set(p.name, p.def && p.kind !== 'star' && p.kind !== 'kwstar' ? new Set<string>() : null);
    // a required parameter that every known call (call sites, validated arguments) gives
    // a literal takes those values' kinds: the strings and None as they are (the options
    // the block is built with), numbers and booleans as "some int/float/bool" (a caller
    // may pass any size or flag), so type tests are decided and value tests are not
    const kinds = new Set<string>();
    const given = (c: EntryCall, i: number, name: string): Set<string> | undefined =>
      c.keywords.find(([k]) => k === name)?.[1] ?? (ps[i]?.kind === 'pos' ? c.positional[i] : undefined);
    ps.forEach((p, i) => {
      if (p.def || (p.kind !== 'pos' && p.kind !== 'kwonly') || !entry.calls.length) return;
      const seen = entry.calls.map((c) => given(c, i, p.name));
      if (seen.some((v) => !v || !v.size)) return;
      entryVals.set(p.name, new Set(seen.flatMap((v) => [...v!].map(kindOf))));
      kinds.add(p.name);
    });
    const extra = new Map<string, Vals>();
    for (const c of entry.calls) {
      c.positional.forEach((a, i) => {
        const p = ps[i];
        if (p && p.kind === 'pos' && entryVals.get(p.name) && !kinds.has(p.name))
          entryVals.set(p.name, union(entryVals.get(p.name)!, a));
      });
      for (const [k, a] of c.keywords) {
        if (entryVals.has(k)) {
          if (entryVals.get(k) && !kinds.has(k)) entryVals.set(k, union(entryVals.get(k)!, a));
        } else extra.set(k, union(extra.get(k) ?? new Set(), a));
      }
    }
    st.reach(entryInit, false);
    const k = fnKey(entryInit);
    for (const p of ps) {
      const v = entryVals.get(p.name);
      st.setParam(k, p.name, v ? (p.def ? union(v, ev.evalDefault(entryInit, p)) : v) : null);
    }
    if (entryInit.fn.bound) st.setParam(k, entryInit.fn.params[0].name, null);
    st.kwExtra.set(k, ps.some((p) => p.kind === 'kwstar') ? extra : null);
  }
  st.instantiate(`cls:${target.mod.repo}:${target.mod.name}:${target.className}`, false);
}

/** What code outside the analysed function bodies does, fixed for the block: value uses and
 *  definition reads of the code that stays, calls not followed argument by argument, and
 *  the positions that are the value of a confined local (FnFacts.confined). */
interface StaticFacts {
  uses: { mod: CorpusModule; pos: number; atoms: string[] }[];
  reads: { mod: CorpusModule; pos: number; keys: string[] }[];
  opaque: { mod: CorpusModule; call: CallExpr; ctx: FnRef }[];
  confinedPos: Map<CorpusModule, Map<number, { f: FnRef; name: string }>>;
  /** the positions of the class-level values of plain classes (`conv_norm_act =
   *  ConvNormAct` in a dataclass): attribute name */
  classAttrPos: Map<CorpusModule, Map<number, string>>;
}

function staticFacts(scope: BlockScope): StaticFacts {
  const analysed = new Set<number>();
  for (const f of scope.fns) for (const c of f.fn.calls) analysed.add(c.start);
  const out: StaticFacts = { uses: [], reads: [], opaque: [], confinedPos: new Map(), classAttrPos: new Map() };
  for (const [mod, nodes] of scope.byMod) {
    for (const [stmt] of nodes) {
      const sr = scope.an.stmtRefs(mod, stmt);
      for (const u of sr.uses) if (scope.kept(mod, u.pos)) out.uses.push({ mod, pos: u.pos, atoms: u.atoms });
      for (const r of sr.reads) if (scope.kept(mod, r.pos)) out.reads.push({ mod, pos: r.pos, keys: r.keys });
    }
  }
  for (const [mod] of scope.byMod) {
    for (const c of scope.facts(mod).allCalls) {
      if (analysed.has(c.start) || !scope.kept(mod, c.start)) continue;
      out.opaque.push({ mod, call: c, ctx: scope.fnAt(mod, c.start, 'def') ?? moduleFn(mod, c.start) });
    }
  }
  for (const f of scope.fns) {
    for (const [name, ps] of f.fn.confined) {
      let m = out.confinedPos.get(f.mod);
      if (!m) out.confinedPos.set(f.mod, (m = new Map()));
      for (const p of ps) m.set(p, { f, name });
    }
  }
  for (const [mod] of scope.byMod) {
    for (const [cls, attrs] of scope.facts(mod).classAttrs) {
      if (!scope.plainClass(mod, cls)) continue;
      for (const [attr, v] of attrs) {
        if (v?.k !== 'name' && v?.k !== 'attr') continue;
        let m = out.classAttrPos.get(mod);
        if (!m) out.classAttrPos.set(mod, (m = new Map()));
        m.set(v.start, attr);
      }
    }
  }
  return out;
}

/** A class-level value of a plain class is confined when running code reads the attribute
 *  only by calling it through local names that hold instances of plain classes
 *  (`layers = layers or LayerFn()`, then `layers.conv_norm_act(…)`): those calls reach it
 *  with their arguments (Evaluator.calleesOf), so the class-level value is no use as a
 *  value of its own. */
function attrConfined(scope: BlockScope, st: ReachState, ev: Evaluator, fixed: StaticFacts, attr: string): boolean {
  for (const [mod] of scope.byMod)
    if (scope.facts(mod).attrValues.some((a) => a.attr === attr && st.runs(mod, a.pos))) return false;
  for (const o of fixed.opaque)
    if (o.call.fn.k === 'attr' && o.call.fn.attr === attr && st.runs(o.mod, o.call.start)) return false;
  for (const f of scope.fns) {
    if (!st.isReached(f)) continue;
    for (const c of f.fn.calls) {
      if (c.fn.k !== 'attr' || c.fn.attr !== attr || !st.live(f, c.start)) continue;
      const obj = c.fn.obj;
      if (obj.k !== 'name' || scope.denote(f.mod, obj) !== undefined || !ev.instanceAttr(f, obj, attr, c.start, 0))
        return false;
    }
  }
  return true;
}

/** code outside function bodies, and the live code of reachable functions: the statements
 *  it reads are needed, the definitions it uses as values reachable with TOP, the callees
 *  of its opaque calls too */
function runOutside(scope: BlockScope, st: ReachState, ev: Evaluator, fixed: StaticFacts): void {
  for (const r of fixed.reads) {
    if (!st.runs(r.mod, r.pos)) continue;
    for (const k of r.keys) {
      if (st.needed.has(k)) continue;
      st.needed.add(k);
      st.changed = true;
    }
  }
  for (const u of fixed.uses) {
    if (!st.runs(u.mod, u.pos)) continue;
    // the value of a confined local: only the function's own calls of that name run it,
    // with their arguments, unless one of them sees an unknown value
    const c = fixed.confinedPos.get(u.mod)?.get(u.pos);
    if (
      c &&
      !(
        st.isReached(c.f) &&
        c.f.fn.calls.some(
          (call) =>
            call.fn.k === 'name' &&
            call.fn.id === c.name &&
            st.live(c.f, call.start) &&
            !ev.nameValue(c.f, c.name, call.start, 0),
        )
      )
    )
      continue;
    const ca = fixed.classAttrPos.get(u.mod)?.get(u.pos);
    if (ca !== undefined && attrConfined(scope, st, ev, fixed, ca)) continue;
    for (const a of u.atoms) st.useAsValue(a);
  }
  for (const o of fixed.opaque) {
    if (!st.runs(o.mod, o.call.start)) continue;
    opaqueCall(st, ev, o.ctx, o.call);
  }
}

/** a call the analysis does not follow argument by argument (module level, class bodies,
 *  nested functions, lambdas): its callees take TOP */
function opaqueCall(st: ReachState, ev: Evaluator, ctxFn: FnRef, c: CallExpr): void {
  // an instance of a class the code does not name (`cls(…)`, `self.__class__(…)`,
  // `type(self)(…)`): every instantiated class's __init__ may run with anything
  if (
    (c.fn.k === 'name' && c.fn.id === 'cls') ||
    (c.fn.k === 'attr' && c.fn.attr === '__class__') ||
    (c.fn.k === 'call' && c.fn.fn.k === 'name' && c.fn.fn.id === 'type')
  ) {
    for (const a of [...st.instantiated]) if (!a.endsWith(':top')) st.instantiate(a, true);
  }
  for (const x of ev.calleesOf(ctxFn, c)) {
    if (x.cls) st.instantiate(x.cls, true);
    else st.reach(x.fn, true);
  }
}

/** a live call of a reachable function (`caller`, its key `ck`) reaches callee `x` with
 *  the values of its arguments (positional, keyword, `**kwargs` passed on) */
function propagateCall(st: ReachState, ev: Evaluator, caller: FnRef, ck: string, call: CallExpr, x: Callee): void {
  if (x.cls) {
    st.instantiate(x.cls, false);
    if (!x.fn) return;
  }
  const fn = x.fn;
  st.reach(fn, false);
  const k = fnKey(fn);
  const ps = fn.fn.params.slice(x.bound && fn.fn.bound ? 1 : 0);
  if (!x.bound && fn.fn.bound && !call.args.length) return;
  const given = new Set<string>();
  const pos = ps.filter((p) => p.kind === 'pos');
  call.args.forEach((a, i) => {
    const p = pos[i];
    if (p) {
      given.add(p.name);
      st.argument(k, p.name, caller, a);
      st.changed = st.setParam(k, p.name, ev.evalIn(caller, a, call.start, 0)) || st.changed;
    }
  });
  for (const [name, a] of call.kw) {
    if (ps.some((p) => p.name === name && p.kind !== 'star' && p.kind !== 'kwstar')) {
      given.add(name);
      st.argument(k, name, caller, a);
      st.changed = st.setParam(k, name, ev.evalIn(caller, a, call.start, 0)) || st.changed;
    } else {
      const kx = st.kwExtra.get(k);
      if (kx) st.changed = grow(kx, name, ev.evalIn(caller, a, call.start, 0)) || st.changed;
    }
  }
  // **kwargs passed on: the caller's own **kwargs carries its known keys
  let splat: Map<string, Vals> | null = new Map();
  for (const sp of call.kwsplat) {
    const own = sp.k === 'name' ? caller.fn.params.find((p) => p.name === sp.id && p.kind === 'kwstar') : undefined;
    const assigned = sp.k === 'name' && (caller.fn.assigns.get(sp.id) ?? []).some((a) => st.live(caller, a.pos));
    let kx = own && !assigned ? st.kwExtra.get(ck) : null;
    // a local dict of literal keys (`dd = {'device': device, 'dtype': dtype}`)
    if (!own && sp.k === 'name' && !ev.mutatedLive(caller, sp.id)) kx = ev.localDict(caller, sp.id, call.start);
    if (!kx) splat = null;
    else if (splat) for (const [n, v] of kx) splat.set(n, union(splat.get(n) ?? new Set(), v));
  }
  for (const p of ps) {
    if (given.has(p.name) || p.kind === 'star' || p.kind === 'kwstar') continue;
    if ((call.star && p.kind === 'pos') || !splat) {
      st.changed = st.setParam(k, p.name, null) || st.changed;
      continue;
    }
    let v: Vals = new Set();
    if (splat.has(p.name)) v = union(v, splat.get(p.name)!);
    v = union(v, p.def ? ev.evalDefault(fn, p) : splat.has(p.name) ? new Set() : null);
    st.changed = st.setParam(k, p.name, v) || st.changed;
  }
  if (!splat) {
    if (st.kwExtra.get(k) !== null) st.changed = true;
    st.kwExtra.set(k, null);
  } else {
    const kx = st.kwExtra.get(k);
    if (kx) {
      for (const [n, v] of splat) {
        if (ps.some((p) => p.name === n)) continue;
        st.changed = grow(kx, n, v) || st.changed;
      }
    }
  }
}

/** the dead ranges of `f` at the current values: clause bodies no value reaches, and
 *  the code after an `if` none of whose live clauses falls through */
export function deadRanges(scope: BlockScope, st: ReachState, ev: Evaluator, f: FnRef): DeadCode {
  const dead: [number, number][] = [];
  const prunes: DeadCode['prunes'] = [];
  const conds: DeadCode['conds'] = [];
  const k = fnKey(f);
  st.deadOf.set(k, dead); // nested sites see the dead ranges found so far
  for (const site of f.fn.ifs) {
    if (!scope.kept(f.mod, site.start) || dead.some(([a, b]) => site.start >= a && site.start < b)) continue;
    let reachable = true; // some value gets to this clause
    let fallthrough = false;
    const pruned: Clause[] = [];
    for (const c of site.clauses) {
      if (!reachable) {
        pruned.push(c);
        continue;
      }
      let mayTrue = true;
      let mayFalse = false;
      if (c.test) {
        const v = ev.evalIn(f, c.test, site.start, 0);
        const ts = v ? [...v].map(truth) : [null];
        mayTrue = ts.some((t) => t !== false);
        mayFalse = ts.some((t) => t !== true);
      }
      if (!mayTrue) pruned.push(c);
      else if (!c.exits) fallthrough = true;
      reachable = mayFalse;
    }
    // no `else`, and the last test may be false: the `if` falls through
    if (reachable) fallthrough = true;
    for (const c of pruned) dead.push([c.bodyStart, c.bodyEnd]);
    const rest = !fallthrough && !!site.rest;
    if (rest) dead.push([site.rest!.start, site.rest!.end]);
    if (pruned.length || rest) prunes.push({ site, clauses: pruned, rest });
  }
  // `a if t else b`: the operand whose side of the test no value reaches
  for (const site of f.fn.conds) {
    if (!scope.kept(f.mod, site.start) || dead.some(([a, b]) => site.start >= a && site.start < b)) continue;
    const v = ev.evalIn(f, site.test, site.start, 0);
    const ts = v ? [...v].map(truth) : [null];
    const part = !ts.some((t) => t !== false) ? 'body' : !ts.some((t) => t !== true) ? 'orelse' : null;
    if (!part) continue;
    dead.push(site[part]);
    conds.push({ site, part });
  }
  return { dead, prunes, conds };
}
