// Reachability with values for slim emission (docs/ARCHITECTURE.md "Slim emission"): a
// small abstract evaluation of the `if` tests of the functions a block's closure copies,
// over the values its parameters can take (defaults, literal arguments at the block's call
// sites, the arguments the faithful module was validated with, and the arguments the
// copied code itself passes to the functions and classes it calls). A clause whose test
// never holds at those values (or that an earlier always-true clause shadows), and the
// statements after an `if` that always leaves the function, are replaced by one marked
// `raise ValueError(…)` naming the test, so a caller who passes such a value gets a clear
// error; the side of a conditional expression (§6.13) its test never takes becomes an
// expression that raises the same way; the definitions only they read drop out of the
// closure.
//
// Values are finite sets of atoms (None, booleans, numbers, strings, corpus classes and
// functions, extern objects, opaque truthy objects and collections) or TOP (unknown). The
// evaluation is non-relational (each name ranges over its set independently) and
// order-aware: a name's value at a test is its parameter value and the assignments before
// the test (or anywhere in a loop that encloses it). What is evaluated (Python semantics,
// Language Reference §6.10–6.11 and the builtins `isinstance`/`issubclass`): `is None`,
// `is not None`, `==`, `!=`, `<`/`<=`/`>`/`>=` of numbers, `in`/`not in` a literal
// tuple/list/set, truthiness, `not`, `and`/`or` (which return an operand), `isinstance`,
// `issubclass`, `x.lower()` (None, a bool or a number has none: only strings go on),
// `copy.deepcopy(x)`, the returns of known copied functions, `'k' in kwargs` and
// `kwargs.pop/get('k', d)`. Everything else (other calls, subscripts, tensor attributes,
// `torch.jit.is_scripting()`, `self.training`) is TOP, so branches on tensor values, the
// train/eval mode or scripting are never decided.
//
// Which code runs and with which values is a least fixpoint over the closure: the block's
// class is instantiated (its `__init__` takes its defaults, call-site literals and
// validated arguments; a required parameter is TOP, the user passes anything, unless every
// known call gives it a literal: then it takes their kinds, strings and None as they are,
// numbers and booleans as `t:int`/`t:float`/`t:bool`); live calls
// in reachable code reach module-level functions and `__init__`/`_private` methods with
// their argument values; a function or class used as a value (passed on, `partial(f, …)`,
// a default `norm_layer=BatchNorm2d`) can be called by code we do not see, so its
// parameters are TOP (except the value of a local name the function only calls and
// tests, `c = c or ConvNormAct; c(…)`: its calls reach it with their arguments,
// FnFacts.confined), and so are those of `forward` and every other public method (a user
// of the block may call them). `self.x` is the union of the live `self.x = …` of
// reachable methods (TOP when running code also assigns `.x` otherwise). Soundness is not
// claimed beyond that: the pipeline keeps slim only when it passes every stage faithful
// passed.
//
// The analysis, by concept: atoms.ts (value sets), expr.ts and facts.ts (what a module's
// functions hold, read once per module by analysis.ts, which owns every memo that does not
// depend on the block), scope.ts (what the block's closure copies), evaluator.ts and
// typetests.ts (the value of an expression), reach.ts and fixpoint.ts (the least fixpoint),
// output.ts (the prunes), lookups.ts (computed keys), entry.ts (the calls of the block from
// outside).
import type { Closure } from '../../resolve/closure.js';
import type { CorpusModule } from '../../resolve/corpus.js';
import type { SlimAnalysis } from './analysis.js';
import type { EntryCall } from './entry.js';
import { Evaluator } from './evaluator.js';
import { runFixpoint } from './fixpoint.js';
import { computedLookups } from './lookups.js';
import { prunesOf, type ValuePrune } from './output.js';
import { ReachState } from './reach.js';
import { BlockScope } from './scope.js';

export type { EntryCall } from './entry.js';
export { entryCallFromArgs, entryCallFromText, literalAtom } from './entry.js';
export type { ValuePrune } from './output.js';

/** The value-unreachable branches of the closure's copied functions (`prunes`), and the
 *  module-level definitions (stmtKey) that running code looks up with a computed key
 *  (`computed`, lookups.ts; empty when there is no fixpoint in time). */
export function valuePrunes(
  an: SlimAnalysis,
  closure: Closure,
  skipOf: (mod: CorpusModule, stmt: number) => readonly (readonly [number, number])[],
  entry: { calls: readonly EntryCall[] },
): { prunes: ValuePrune[]; computed: Set<string> } {
  const scope = new BlockScope(an, closure, skipOf);
  const st = new ReachState(scope);
  const ev = new Evaluator(scope, st);
  const dead = runFixpoint(scope, st, ev, closure, entry);
  return dead
    ? { prunes: prunesOf(an, scope.fns, dead), computed: computedLookups(scope, st, ev) }
    : { prunes: [], computed: new Set() };
}
