// Computed keys of slim emission (docs/ARCHITECTURE.md "Slim emission"): an option dict
// (syntax.ts) keeps only the entries whose keys the code that stays reaches with a string
// literal, and a caller who passes another name gets the KeyError the header explains; but
// a lookup `d[k]`, `d.get(k, …)` or `d.pop(k, …)` whose key the code builds itself (an
// f-string, `''.join(parts)`, `'{}_{}'.format(…)`, `str(x)`) asks for an entry no literal
// names, so slim.ts keeps such a dict whole instead of failing validation with that
// KeyError. A key is built when its expression is, following local names through their
// live assignments and parameters through the argument expressions of the live calls
// that reach them (a parameter no call we see passes, the user's argument, is not);
// string methods that only normalise (`lower`, `upper`, `strip`, `replace`, `split`, …)
// keep their receiver's verdict. Other expressions (operators, subscripts, calls the
// analysis does not follow) are not taken as built: their options stay pruned as before,
// and validation decides.
import type { Expr } from './expr.js';
import type { Evaluator } from './evaluator.js';
import type { ReachState } from './reach.js';
import { fnKey, type BlockScope, type FnRef } from './scope.js';

const NORMALISE = new Set(['lower', 'upper', 'casefold', 'strip', 'lstrip', 'rstrip', 'replace', 'title', 'split']);
const BUILD = new Set(['join', 'format', 'format_map']);

/** The module-level definitions (stmtKey) that a running lookup with a computed key reads. */
export function computedLookups(scope: BlockScope, st: ReachState, ev: Evaluator): Set<string> {
  const out = new Set<string>();
  for (const [mod] of scope.byMod) {
    for (const l of scope.facts(mod).lookups) {
      if (!st.runs(mod, l.pos)) continue;
      const stmts = scope.denotedStmts(mod, l.obj);
      if (!stmts || stmts.every((k) => out.has(k))) continue;
      const f = l.direct ? scope.fnAt(mod, l.pos) : undefined;
      const computed = f ? isComputed(st, ev, f, l.key, l.pos, 0) : l.key.k !== 'lit';
      if (computed) for (const k of stmts) out.add(k);
    }
  }
  return out;
}

function isComputed(st: ReachState, ev: Evaluator, f: FnRef, e: Expr, pos: number, depth: number): boolean {
  if (depth > 8) return false;
  switch (e.k) {
    case 'lit':
    case 'attr':
      return false;
    case 'coll':
      return e.atom === 'obj:str'; // an f-string, or a string with escapes
    case 'top':
      return false; // an operator, a subscript, …: not followed
    case 'bool':
      return isComputed(st, ev, f, e.l, pos, depth + 1) || isComputed(st, ev, f, e.r, pos, depth + 1);
    case 'cond':
      return isComputed(st, ev, f, e.body, pos, depth + 1) || isComputed(st, ev, f, e.orelse, pos, depth + 1);
    case 'call': {
      if (e.fn.k === 'attr' && NORMALISE.has(e.fn.attr)) return isComputed(st, ev, f, e.fn.obj, pos, depth + 1);
      if (e.fn.k === 'attr' && BUILD.has(e.fn.attr)) return true;
      if (e.fn.k !== 'name' || e.fn.id !== 'str') return false;
      const v = ev.evalIn(f, e.fn, pos, 0);
      return !!v && v.size === 1 && v.has('b:str');
    }
    case 'name': {
      const p = f.fn.params.find((x) => x.name === e.id);
      if (p)
        for (const a of st.args.get(fnKey(f))?.get(e.id) ?? [])
          if (isComputed(st, ev, a.caller, a.expr, a.expr.k === 'name' ? a.expr.start : pos, depth + 1)) return true;
      for (const a of f.fn.assigns.get(e.id) ?? []) {
        if (!st.live(f, a.pos) || (a.end ?? a.pos) > pos) continue;
        if (a.value && isComputed(st, ev, f, a.value, a.pos, depth + 1)) return true;
      }
      return false;
    }
    default:
      return false;
  }
}
