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
import type { Node } from 'web-tree-sitter';
import { parsePython } from '../../parse/parser.js';
import type { Ref } from '../../parse/types.js';
import type { Closure, StmtNode } from '../../resolve/closure.js';
import { baseClasses, classStatement } from '../../resolve/classes.js';
import type { Corpus, CorpusModule } from '../../resolve/corpus.js';
import type { Resolver, Target } from '../../resolve/names.js';
import { lineIndex, lineStarts } from '../../util/lines.js';

// ---------------------------------------------------------------- expressions

/** A compact expression tree (tree-sitter nodes do not outlive the parse). */
type Expr =
  | { k: 'name'; id: string; start: number }
  | { k: 'attr'; obj: Expr; attr: string; start: number; end: number }
  | { k: 'lit'; atom: string }
  | { k: 'not'; e: Expr }
  | { k: 'bool'; op: 'and' | 'or'; l: Expr; r: Expr }
  | { k: 'cmp'; op: string; l: Expr; r: Expr }
  | { k: 'call'; fn: Expr; args: Expr[]; kw: [string, Expr][]; star: boolean; kwsplat: Expr[]; start: number }
  | { k: 'seq'; items: Expr[]; kind: 'tuple' | 'list' | 'set' }
  | { k: 'coll'; atom: string }
  | { k: 'cond'; body: Expr; test: Expr; orelse: Expr }
  | { k: 'unpack'; value: Expr; index: number; n: number }
  | { k: 'dict'; items: [string, Expr][] }
  | { k: 'top' };

const TOP_E: Expr = { k: 'top' };

function toExpr(n: Node | null | undefined): Expr {
  if (!n) return TOP_E;
  switch (n.type) {
    case 'identifier':
      return { k: 'name', id: n.text, start: n.startIndex };
    case 'none':
      return { k: 'lit', atom: 'None' };
    case 'true':
      return { k: 'lit', atom: 'True' };
    case 'false':
      return { k: 'lit', atom: 'False' };
    case 'integer':
    case 'float': {
      const v = Number(n.text.replace(/_/g, ''));
      return Number.isFinite(v) ? { k: 'lit', atom: `n:${n.type === 'integer' ? 'i' : 'f'}:${v}` } : TOP_E;
    }
    case 'string': {
      let out = '';
      for (const c of n.namedChildren) {
        if (!c) continue;
        if (c.type === 'interpolation') return { k: 'coll', atom: 'obj:str' };
        if (c.type === 'escape_sequence') return { k: 'coll', atom: 'obj:str' };
        if (c.type === 'string_content') out += c.text;
      }
      return { k: 'lit', atom: `s:${out}` };
    }
    case 'parenthesized_expression':
      return toExpr(n.namedChildren.find((x) => x && x.type !== 'comment'));
    case 'attribute': {
      const obj = n.childForFieldName('object');
      const attr = n.childForFieldName('attribute');
      return attr ? { k: 'attr', obj: toExpr(obj), attr: attr.text, start: n.startIndex, end: n.endIndex } : TOP_E;
    }
    case 'not_operator':
      return { k: 'not', e: toExpr(n.childForFieldName('argument')) };
    case 'boolean_operator': {
      const op = n.children.find((x) => x && !x.isNamed)?.type;
      if (op !== 'and' && op !== 'or') return TOP_E;
      return { k: 'bool', op, l: toExpr(n.childForFieldName('left')), r: toExpr(n.childForFieldName('right')) };
    }
    case 'comparison_operator': {
      const ops = n.children.filter((x) => x && !x.isNamed).map((x) => x!.type);
      const operands = n.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
      if (operands.length !== 2) return TOP_E;
      // `is not` / `not in` come as two tokens
      const op = ops.join(' ');
      return { k: 'cmp', op, l: toExpr(operands[0]), r: toExpr(operands[1]) };
    }
    case 'call': {
      const fn = n.childForFieldName('function');
      const argl = n.childForFieldName('arguments');
      const out: Expr = { k: 'call', fn: toExpr(fn), args: [], kw: [], star: false, kwsplat: [], start: n.startIndex };
      if (argl?.type !== 'argument_list') return { ...out, star: true };
      for (const a of argl.namedChildren) {
        if (!a || a.type === 'comment') continue;
        if (a.type === 'keyword_argument') out.kw.push([a.childForFieldName('name')?.text ?? '', toExpr(a.childForFieldName('value'))]);
        else if (a.type === 'list_splat') out.star = true;
        else if (a.type === 'dictionary_splat') out.kwsplat.push(toExpr(a.namedChildren.find((x) => x && x.type !== 'comment')));
        else out.args.push(toExpr(a));
      }
      return out;
    }
    case 'tuple':
    case 'expression_list': // `return a, b`
    case 'list':
    case 'set': {
      const kind = n.type === 'expression_list' ? 'tuple' : (n.type as 'tuple' | 'list' | 'set');
      const items = n.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
      if (items.some((x) => x.type === 'list_splat')) return { k: 'coll', atom: `obj:${kind}` };
      return { k: 'seq', items: items.map(toExpr), kind };
    }
    case 'dictionary': {
      const items = n.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
      const pairs: [string, Expr][] = [];
      for (const it of items) {
        if (it.type === 'dictionary_splat') {
          pairs.push(['**', toExpr(it.namedChildren.find((x) => x && x.type !== 'comment'))]);
          continue;
        }
        const k = it.type === 'pair' ? toExpr(it.childForFieldName('key')) : null;
        if (k?.k !== 'lit' || !k.atom.startsWith('s:')) return { k: 'coll', atom: items.length ? 'obj:dict' : 'empty:dict' };
        pairs.push([k.atom.slice(2), toExpr(it.childForFieldName('value'))]);
      }
      return { k: 'dict', items: pairs };
    }
    case 'conditional_expression': {
      const parts = n.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
      return parts.length === 3 ? { k: 'cond', body: toExpr(parts[0]), test: toExpr(parts[1]), orelse: toExpr(parts[2]) } : TOP_E;
    }
    default:
      return TOP_E;
  }
}

// ---------------------------------------------------------------- per-module facts

interface Clause {
  kind: 'if' | 'elif' | 'else';
  test: Expr | null;
  testText: string;
  bodyStart: number;
  bodyEnd: number;
  startLine: number;
  endLine: number;
  /** the body's last statement is `return` or `raise` */
  exits: boolean;
  /** the body is only `raise`/`pass`/`assert`/docstring statements (nothing to prune) */
  trivial: boolean;
}

interface IfSite {
  start: number;
  clauses: Clause[];
  /** the statements after the `if` in its block */
  rest: { start: number; end: number; startLine: number; endLine: number } | null;
}

/** A conditional expression `body if test else orelse` (Language Reference §6.13). */
interface CondSite {
  /** where the test starts (the body starts where the expression does, and may be the
   *  range pruned already) */
  start: number;
  test: Expr;
  testText: string;
  body: [number, number];
  orelse: [number, number];
  lines: { body: [number, number]; orelse: [number, number] };
}

interface Assign {
  pos: number;
  /** where the statement ends: it binds after its right-hand side ran (a read inside
   *  the right-hand side sees the value before) */
  end?: number;
  /** null: a form not evaluated (tuple target, augmented, `for`, `with … as`, …) */
  value: Expr | null;
}

interface Param {
  name: string;
  kind: 'pos' | 'kwonly' | 'star' | 'kwstar';
  def: Expr | null;
}

interface FnFacts {
  stmt: number;
  cls: string | null;
  name: string;
  start: number;
  end: number;
  /** where the body starts (the header's defaults run when the `def` does) */
  bodyStart: number;
  params: Param[];
  /** first parameter is bound (a method that is not a staticmethod) */
  bound: boolean;
  assigns: Map<string, Assign[]>;
  loops: [number, number][];
  ifs: IfSite[];
  conds: CondSite[];
  calls: (Expr & { k: 'call' })[];
  selfAssigns: { attr: string; pos: number; value: Expr | null }[];
  /** `return` statements (value null: a bare `return`) */
  returns: { pos: number; value: Expr | null }[];
  /** the body can end without a `return` (its last statement is no `return`/`raise`) */
  fallsOff: boolean;
  /** the `**kwargs` parameter gains keys in the body (`kw[k] = …`, `kw.setdefault`, `kw.update`) */
  kwAdds: { pos: number; key: string | null }[];
  /** local names whose object the body changes (`d[k] = …`, `d.update(…)`, `d.setdefault(…)`): where */
  mutated: Map<string, number[]>;
  /** local names (and parameters) whose value never leaves the function: the body only
   *  calls them, tests them (`x is None`, `if x`, `not x`) or re-binds them to an
   *  expression of themselves (`x = x or C`); name → the positions of the names and
   *  attribute chains that are its value (a default, or an assignment's right-hand side
   *  through `or`/`and`/a conditional). A class or function used there is only called
   *  by the body's own calls of the name, with their arguments. */
  confined: Map<string, number[]>;
}

interface ModFacts {
  fns: FnFacts[];
  /** attributes assigned through a receiver other than `self` (`m.x = …`), via
   *  augmented/tuple targets, or by `setattr` (`*`: a computed name): where; their
   *  `self.x` values are TOP when that code runs */
  otherAttrAssigns: { attr: string; pos: number }[];
  /** the type arguments of `isinstance`/`issubclass` (a class named there is not used as
   *  a value: nothing calls it) */
  typeArgs: [number, number][];
  /** class-body assignments `x = …`: class name → attr → values */
  classAttrs: Map<string, Map<string, Expr | null>>;
  /** attribute reads not in call position (`self.f` passed on): method names that escape */
  attrValues: { attr: string; pos: number }[];
  /** callee start → end of every call (a ref spanning exactly that is a call, not a value use) */
  calleeSpans: Map<number, number>;
  /** every call of the module (those outside the analysed function bodies make their
   *  callees' parameters unknown) */
  allCalls: (Expr & { k: 'call' })[];
  /** methods defined under a property-like decorator (their name as an attribute is TOP) */
  properties: Set<string>;
}

const factsCache = new WeakMap<CorpusModule, ModFacts>();

function modFacts(mod: CorpusModule, src: string): ModFacts {
  let f = factsCache.get(mod);
  if (!f) factsCache.set(mod, (f = analyze(mod, src)));
  return f;
}

const SCOPES = new Set(['function_definition', 'class_definition', 'lambda']);
const LOOPS = new Set(['for_statement', 'while_statement']);
const TRIVIAL = new Set(['raise_statement', 'pass_statement', 'assert_statement', 'comment']);

function analyze(mod: CorpusModule, src: string): ModFacts {
  const starts = lineStarts(src);
  const lineOf = (i: number) => lineIndex(starts, i) + 1;
  const stmts = mod.facts.statements;
  const stmtAt = (offset: number): number => stmts.findIndex((s) => s.start <= offset && offset < s.end);
  const out: ModFacts = { fns: [], otherAttrAssigns: [], typeArgs: [], classAttrs: new Map(), attrValues: [], calleeSpans: new Map(), allCalls: [], properties: new Set() };
  const tree = parsePython(src);
  try {
    const root = tree.rootNode;
    const defOf = (n: Node): { def: Node; decorators: string[] } | null => {
      if (n.type === 'decorated_definition') {
        const def = n.childForFieldName('definition');
        return def ? { def, decorators: n.namedChildren.filter((d) => d?.type === 'decorator').map((d) => d!.text) } : null;
      }
      return n.type === 'function_definition' || n.type === 'class_definition' ? { def: n, decorators: [] } : null;
    };
    for (const top of root.namedChildren) {
      if (!top) continue;
      const d = defOf(top);
      if (!d) continue;
      const stmt = stmtAt(top.startIndex);
      if (d.def.type === 'function_definition') out.fns.push(fnFacts(d.def, d.decorators, stmt, null));
      else {
        const cname = d.def.childForFieldName('name')?.text ?? '';
        const attrs = new Map<string, Expr | null>();
        out.classAttrs.set(cname, attrs);
        for (const m of d.def.childForFieldName('body')?.namedChildren ?? []) {
          if (!m) continue;
          const md = defOf(m);
          if (md?.def.type === 'function_definition') {
            out.fns.push(fnFacts(md.def, md.decorators, stmt, cname));
            if (md.decorators.some((t) => /property|\.setter|cached_property/.test(t))) out.properties.add(md.def.childForFieldName('name')?.text ?? '');
          } else if (m.type === 'expression_statement') {
            const a = m.namedChildren[0];
            if (a?.type === 'assignment') {
              const l = a.childForFieldName('left');
              if (l?.type === 'identifier') attrs.set(l.text, a.childForFieldName('right') ? toExpr(a.childForFieldName('right')) : null);
            }
          }
        }
      }
    }
    // module-wide: callee offsets, attribute assignments through other receivers, attribute values
    const walk = (n: Node) => {
      if (n.type === 'call') {
        const fn = n.childForFieldName('function');
        if (fn) out.calleeSpans.set(fn.startIndex, fn.endIndex);
        const e = toExpr(n);
        if (e.k === 'call') out.allCalls.push(e);
      } else if (n.type === 'assignment' || n.type === 'augmented_assignment') {
        const l = n.childForFieldName('left');
        const targets = l ? (l.type === 'pattern_list' || l.type === 'tuple_pattern' || l.type === 'list_pattern' ? l.namedChildren : [l]) : [];
        for (const t of targets) {
          if (t?.type !== 'attribute') continue;
          const obj = t.childForFieldName('object');
          const attr = t.childForFieldName('attribute')?.text ?? '';
          if (obj?.type !== 'identifier' || obj.text !== 'self' || n.type === 'augmented_assignment' || targets.length > 1) out.otherAttrAssigns.push({ attr, pos: n.startIndex });
        }
      } else if (n.type === 'attribute') {
        const p = n.parent;
        const called = p?.type === 'call' && p.childForFieldName('function')?.startIndex === n.startIndex && p.childForFieldName('function')?.endIndex === n.endIndex;
        const target = p?.type === 'assignment' && p.childForFieldName('left')?.startIndex === n.startIndex;
        if (!called && !target) out.attrValues.push({ attr: n.childForFieldName('attribute')?.text ?? '', pos: n.startIndex });
      }
      // setattr(obj, 'x', v): any attribute may change
      if (n.type === 'call') {
        const fn = n.childForFieldName('function')?.text;
        const args = n.childForFieldName('arguments')?.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment') ?? [];
        // nn.Module's register_buffer / register_parameter / add_module / register_module
        // bind the attribute they name
        const m = /(?:^|\.)(register_buffer|register_parameter|add_module|register_module)$/.exec(fn ?? '');
        if (m) {
          const name = args[0]?.type === 'string' ? toExpr(args[0]) : null;
          out.otherAttrAssigns.push({ attr: name?.k === 'lit' && name.atom.startsWith('s:') ? name.atom.slice(2) : '*', pos: n.startIndex });
        }
        if (fn === 'setattr') {
          const name = args[1]?.type === 'string' ? toExpr(args[1]) : null;
          out.otherAttrAssigns.push({ attr: name?.k === 'lit' && name.atom.startsWith('s:') ? name.atom.slice(2) : '*', pos: n.startIndex });
        }
        if ((fn === 'isinstance' || fn === 'issubclass') && args[1]) out.typeArgs.push([args[1].startIndex, args[1].endIndex]);
      }
      // annotations (PEP 484/526), base-class lists and `except` types name classes
      // without calling them
      if (n.type === 'type') out.typeArgs.push([n.startIndex, n.endIndex]);
      if (n.type === 'class_definition') {
        const sup = n.childForFieldName('superclasses');
        if (sup) out.typeArgs.push([sup.startIndex, sup.endIndex]);
      }
      if (n.type === 'except_clause') {
        const t = n.namedChildren.find((x) => x && x.type !== 'comment' && x.type !== 'block');
        if (t) out.typeArgs.push([t.startIndex, t.endIndex]);
      }
      for (const c of n.namedChildren) if (c) walk(c);
    };
    walk(root);
    return out;
  } finally {
    tree.delete();
  }

  function fnFacts(def: Node, decorators: string[], stmt: number, cls: string | null): FnFacts {
    const name = def.childForFieldName('name')?.text ?? '';
    const params: Param[] = [];
    let kwonly = false;
    for (const p of def.childForFieldName('parameters')?.namedChildren ?? []) {
      if (!p || p.type === 'comment') continue;
      if (p.type === 'list_splat_pattern' || p.type === 'keyword_separator') {
        if (p.type === 'list_splat_pattern') params.push({ name: p.namedChildren[0]?.text ?? '', kind: 'star', def: null });
        kwonly = true;
        continue;
      }
      if (p.type === 'positional_separator') continue;
      if (p.type === 'dictionary_splat_pattern') {
        params.push({ name: p.namedChildren[0]?.text ?? '', kind: 'kwstar', def: null });
        continue;
      }
      const isDefault = p.type === 'default_parameter' || p.type === 'typed_default_parameter';
      const pname = p.type === 'identifier' ? p.text : (p.childForFieldName('name')?.text ?? p.namedChildren[0]?.text ?? '');
      params.push({ name: pname, kind: kwonly ? 'kwonly' : 'pos', def: isDefault ? toExpr(p.childForFieldName('value')) : null });
    }
    const staticm = decorators.some((d) => /staticmethod/.test(d));
    const body = def.childForFieldName('body');
    const f: FnFacts = { stmt, cls, name, start: def.startIndex, end: def.endIndex, bodyStart: body?.startIndex ?? def.endIndex, params, bound: !!cls && !staticm, assigns: new Map(), loops: [], ifs: [], conds: [], calls: [], selfAssigns: [], returns: [], fallsOff: true, kwAdds: [], mutated: new Map(), confined: new Map() };
    const mutate = (name: string, pos: number) => {
      const l = f.mutated.get(name);
      if (l) l.push(pos);
      else f.mutated.set(name, [pos]);
    };
    const kwName = params.find((p) => p.kind === 'kwstar')?.name;
    const bodyStmts = body?.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment') ?? [];
    const lastStmt = bodyStmts[bodyStmts.length - 1];
    f.fallsOff = !lastStmt || (lastStmt.type !== 'return_statement' && lastStmt.type !== 'raise_statement');
    const assign = (n: string, a: Assign) => {
      let l = f.assigns.get(n);
      if (!l) f.assigns.set(n, (l = []));
      l.push(a);
    };
    const bindTarget = (t: Node | null, value: Expr | null, pos: number, end?: number) => {
      if (!t) return;
      if (t.type === 'identifier') assign(t.text, { pos, value, end });
      else if (t.type === 'attribute') {
        const obj = t.childForFieldName('object');
        if (obj?.type === 'identifier' && obj.text === 'self') f.selfAssigns.push({ attr: t.childForFieldName('attribute')?.text ?? '', pos, value });
      } else if (t.type !== 'subscript') for (const c of t.namedChildren) bindTarget(c, null, pos); // `d[k] = v` binds no name
    };
    const visit = (n: Node) => {
      if (SCOPES.has(n.type)) {
        // a nested scope: its name binds here; its body is not analysed
        const nm = n.childForFieldName('name');
        if (nm && n.type !== 'lambda') assign(nm.text, { pos: n.startIndex, value: null });
        return;
      }
      switch (n.type) {
        case 'assignment': {
          const l = n.childForFieldName('left');
          const r = n.childForFieldName('right');
          if ((l?.type === 'pattern_list' || l?.type === 'tuple_pattern') && r) {
            // `a, b = f(…)`: each name takes its element of the values `f` returns
            const els = l.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
            const rv = toExpr(r);
            els.forEach((t, i) => {
              bindTarget(t, els.every((x) => x.type === 'identifier') ? { k: 'unpack', value: rv, index: i, n: els.length } : null, n.startIndex, n.endIndex);
            });
          } else bindTarget(l, l?.type === 'identifier' || l?.type === 'attribute' ? (r ? toExpr(r) : null) : null, n.startIndex, n.endIndex);
          if (l?.type === 'subscript' && kwName && l.childForFieldName('value')?.text === kwName) {
            const k = l.childForFieldName('subscript');
            f.kwAdds.push({ pos: n.startIndex, key: k?.type === 'string' ? k.text.slice(1, -1) : null });
          }
          if (l?.type === 'subscript') mutate(l.childForFieldName('value')?.text ?? '', n.startIndex);
          break;
        }
        case 'augmented_assignment':
        case 'named_expression':
          bindTarget(n.childForFieldName('left') ?? n.childForFieldName('name'), null, n.startIndex);
          break;
        case 'for_statement':
          bindTarget(n.childForFieldName('left'), null, n.startIndex);
          break;
        case 'for_in_clause':
          // a comprehension's variable is read by the expression written before it
          bindTarget(n.childForFieldName('left'), null, def.startIndex);
          break;
        case 'as_pattern_target':
        case 'global_statement':
        case 'nonlocal_statement':
        case 'delete_statement':
          for (const c of n.namedChildren) if (c?.type === 'identifier') assign(c.text, { pos: 0, value: null });
          break;
        case 'except_clause':
          for (const c of n.namedChildren) if (c?.type === 'as_pattern') bindTarget(c.namedChildren[c.namedChildren.length - 1] ?? null, null, n.startIndex);
          break;
        case 'import_statement':
        case 'import_from_statement':
          for (const c of n.namedChildren) {
            if (c?.type === 'aliased_import') assign(c.childForFieldName('alias')?.text ?? '', { pos: n.startIndex, value: null });
            else if (c?.type === 'dotted_name' && n.type === 'import_from_statement' && c.startIndex !== n.childForFieldName('module_name')?.startIndex) assign(c.text, { pos: n.startIndex, value: null });
            else if (c?.type === 'dotted_name' && n.type === 'import_statement') assign(c.text.split('.')[0], { pos: n.startIndex, value: null });
          }
          break;
        case 'call': {
          const e = toExpr(n);
          if (e.k === 'call') f.calls.push(e);
          break;
        }
        case 'if_statement':
          f.ifs.push(ifSite(n));
          break;
        case 'conditional_expression': {
          const parts = n.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
          if (parts.length === 3) {
            const span = (x: Node): [number, number] => [x.startIndex, x.endIndex];
            const lines = (x: Node): [number, number] => [lineOf(x.startIndex), lineOf(x.endIndex)];
            f.conds.push({ start: parts[1].startIndex, test: toExpr(parts[1]), testText: parts[1].text.replace(/\s+/g, ' '), body: span(parts[0]), orelse: span(parts[2]), lines: { body: lines(parts[0]), orelse: lines(parts[2]) } });
          }
          break;
        }
        case 'return_statement': {
          const v = n.namedChildren.find((x) => x && x.type !== 'comment');
          f.returns.push({ pos: n.startIndex, value: v ? toExpr(v) : null });
          break;
        }
      }
      if (n.type === 'call' && kwName) {
        const fn = n.childForFieldName('function');
        const meth = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text ?? '' : '';
        if (fn?.type === 'attribute' && fn.childForFieldName('object')?.text === kwName && /^(setdefault|update|__setitem__)$/.test(meth)) {
          // `kwargs.setdefault('k', v)` adds k; `update` adds what it is given
          const a0 = n.childForFieldName('arguments')?.namedChildren.find((x) => x && x.type !== 'comment');
          f.kwAdds.push({ pos: n.startIndex, key: meth !== 'update' && a0?.type === 'string' ? a0.text.slice(1, -1) : null });
        }
      }
      if (n.type === 'call') {
        const fn = n.childForFieldName('function');
        if (fn?.type === 'attribute' && /^(setdefault|update|__setitem__|clear)$/.test(fn.childForFieldName('attribute')?.text ?? '')) mutate(fn.childForFieldName('object')?.text ?? '', n.startIndex);
      }
      if (LOOPS.has(n.type)) f.loops.push([n.startIndex, n.endIndex]);
      for (const c of n.namedChildren) if (c) visit(c);
    };
    if (body) for (const c of body.namedChildren) if (c) visit(c);
    if (body) confine(def, body, f);
    return f;
  }

  /** the positions whose value is `n`'s own value: a name or attribute chain, either
   *  operand of `or`/`and` (which return an operand), either branch of a conditional */
  function directValues(n: Node | null | undefined, out: number[]): number[] {
    if (!n) return out;
    if (n.type === 'identifier' || n.type === 'attribute') out.push(n.startIndex);
    else if (n.type === 'parenthesized_expression') directValues(n.namedChildren.find((x) => x && x.type !== 'comment'), out);
    else if (n.type === 'boolean_operator') {
      directValues(n.childForFieldName('left'), out);
      directValues(n.childForFieldName('right'), out);
    } else if (n.type === 'conditional_expression') {
      const parts = n.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
      if (parts.length === 3) {
        directValues(parts[0], out);
        directValues(parts[2], out);
      }
    }
    return out;
  }

  /** FnFacts.confined: which names of `def` only ever get called or tested in its body */
  function confine(def: Node, body: Node, f: FnFacts) {
    const names = new Set([...f.params.filter((p) => p.kind === 'pos' || p.kind === 'kwonly').map((p) => p.name), ...f.assigns.keys()]);
    const escapes = new Set<string>();
    const called = new Set<string>();
    const values = new Map<string, number[]>();
    const addValue = (name: string, rhs: Node | null) => {
      let l = values.get(name);
      if (!l) values.set(name, (l = []));
      directValues(rhs, l);
    };
    // the right-hand side positions of `x = …` that are x's own value (a read of x there
    // is x flowing into itself)
    const selfFlow = new Set<number>();
    const walk = (n: Node, nested: boolean) => {
      if (n.type === 'assignment' && !nested) {
        const l = n.childForFieldName('left');
        if (l?.type === 'identifier' && names.has(l.text)) {
          const r = n.childForFieldName('right');
          addValue(l.text, r);
          for (const p of directValues(r, [])) selfFlow.add(p);
        }
      }
      if (n.type === 'identifier' && names.has(n.text)) {
        const p = n.parent;
        const x = n.text;
        const field = (name: string) => p?.childForFieldName(name)?.startIndex === n.startIndex && p?.childForFieldName(name)?.endIndex === n.endIndex;
        if (nested) escapes.add(x);
        else if (p?.type === 'attribute' && field('attribute')) {
          // `obj.x`: not the name
        } else if (p?.type === 'keyword_argument' && field('name')) {
          // `f(x=…)`: not the name
        } else if (p?.type === 'assignment' && field('left')) {
          // a binding, not a read
        } else if (p?.type === 'call' && field('function')) called.add(x);
        else if (p?.type === 'comparison_operator' && p.namedChildren.length === 2 && p.namedChildren.some((c) => c?.type === 'none') && p.children.some((c) => c && !c.isNamed && c.type === 'is')) {
          // `x is None` / `x is not None`
        } else if (p?.type === 'not_operator' || ((p?.type === 'if_statement' || p?.type === 'elif_clause') && field('condition'))) {
          // a truth test
        } else if (selfFlow.has(n.startIndex) && n.parent && flowsInto(n, x)) {
          // `x = x or C`
        } else escapes.add(x);
      }
      for (const c of n.namedChildren) if (c) walk(c, nested || SCOPES.has(n.type) || n.type === 'lambda');
    };
    // is `n` (a direct value of some assignment's right-hand side) the value of `x = …`?
    const flowsInto = (n: Node, x: string): boolean => {
      for (let a: Node | null = n.parent; a; a = a.parent) {
        if (a.type === 'assignment') return a.childForFieldName('left')?.type === 'identifier' && a.childForFieldName('left')?.text === x;
        if (a.type !== 'boolean_operator' && a.type !== 'conditional_expression' && a.type !== 'parenthesized_expression') return false;
      }
      return false;
    };
    for (const c of body.namedChildren) if (c) walk(c, false);
    for (const p of def.childForFieldName('parameters')?.namedChildren ?? []) {
      if (p?.type !== 'default_parameter' && p?.type !== 'typed_default_parameter') continue;
      const name = p.childForFieldName('name')?.text ?? '';
      if (names.has(name)) addValue(name, p.childForFieldName('value'));
    }
    for (const x of called) {
      if (escapes.has(x)) continue;
      // every binding of x is one whose value is read (a `for`, `with … as`, tuple target
      // or import binds what the analysis does not follow: x is not confined)
      if ((f.assigns.get(x) ?? []).some((a) => !a.value)) continue;
      f.confined.set(x, values.get(x) ?? []);
    }
  }

  function ifSite(n: Node): IfSite {
    const clauses: Clause[] = [];
    const clause = (kind: Clause['kind'], at: Node, cond: Node | null, body: Node | null) => {
      if (!body) return;
      const stmtsOf = body.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
      const last = stmtsOf[stmtsOf.length - 1];
      clauses.push({
        kind,
        test: cond ? toExpr(cond) : null,
        testText: cond ? cond.text.replace(/\s+/g, ' ') : '',
        bodyStart: body.startIndex,
        bodyEnd: body.endIndex,
        startLine: lineOf(at.startIndex),
        endLine: lineOf(body.endIndex),
        exits: !!last && (last.type === 'return_statement' || last.type === 'raise_statement'),
        trivial: stmtsOf.every((s) => TRIVIAL.has(s.type) || (s.type === 'expression_statement' && s.namedChildren[0]?.type === 'string')),
      });
    };
    clause('if', n, n.childForFieldName('condition'), n.childForFieldName('consequence'));
    for (const alt of n.childrenForFieldName('alternative')) {
      if (!alt) continue;
      if (alt.type === 'elif_clause') clause('elif', alt, alt.childForFieldName('condition'), alt.childForFieldName('consequence'));
      else clause('else', alt, null, alt.childForFieldName('body'));
    }
    let rest: IfSite['rest'] = null;
    const sibs: Node[] = [];
    for (let s = n.nextNamedSibling; s; s = s.nextNamedSibling) if (s.type !== 'comment') sibs.push(s);
    if (sibs.length) rest = { start: sibs[0].startIndex, end: sibs[sibs.length - 1].endIndex, startLine: lineOf(sibs[0].startIndex), endLine: lineOf(sibs[sibs.length - 1].endIndex) };
    return { start: n.startIndex, clauses, rest };
  }
}

// ---------------------------------------------------------------- values

/** A set of atoms, or null: unknown. */
type Vals = Set<string> | null;
const MAX_ATOMS = 24;
const NONE: Vals = new Set(['None']);
const TF = (b: boolean | null): Vals => (b === null ? new Set(['True', 'False']) : new Set([b ? 'True' : 'False']));

function union(a: Vals, b: Vals): Vals {
  if (!a || !b) return null;
  const s = new Set(a);
  for (const x of b) s.add(x);
  return s.size > MAX_ATOMS ? null : s;
}

/** Truthiness of an atom (§3.3.8 `__bool__`/`__len__`), null when unknown. */
function truth(a: string): boolean | null {
  if (a === 'None' || a === 'False') return false;
  if (a === 'True') return true;
  if (a.startsWith('n:')) return Number(a.split(':')[2]) !== 0;
  if (a.startsWith('s:')) return a.length > 2;
  if (a.startsWith('empty')) return false;
  if (a.startsWith('obj:') && a !== 'obj:str') return true;
  if (a.startsWith('cls:') || a.startsWith('fn:') || a === 'obj') return true;
  return null;
}

/** The kind of a literal a caller passes for a required parameter: numbers and booleans
 *  become `t:int`/`t:float`/`t:bool` (some value of that type), the rest stays. */
function kindOf(a: string): string {
  if (a === 'True' || a === 'False') return 't:bool';
  if (a.startsWith('n:i:')) return 't:int';
  if (a.startsWith('n:f:')) return 't:float';
  return a;
}

/** Python type of an atom for `isinstance` with builtins, or null when unknown. */
function builtinType(a: string): string | null {
  if (a.startsWith('t:')) return a.slice(2);
  if (a === 'None') return 'NoneType';
  if (a === 'True' || a === 'False') return 'bool';
  if (a.startsWith('n:i:')) return 'int';
  if (a.startsWith('n:f:')) return 'float';
  if (a.startsWith('s:') || a === 'obj:str') return 'str';
  if (a.startsWith('obj:') || a.startsWith('empty:')) return a.split(':')[1];
  if (a === 'empty') return null;
  if (a.startsWith('cls:')) return 'type';
  if (a.startsWith('fn:')) return 'function';
  return null;
}

const BUILTIN_TYPES = new Set(['str', 'int', 'float', 'bool', 'dict', 'list', 'tuple', 'set', 'type', 'bytes', 'complex', 'frozenset']);

/** What the analysis needs from the closure. */
interface Ctx {
  corpus: Corpus;
  resolver: Resolver;
  /** is this offset of `mod` in the code that stays */
  kept: (mod: CorpusModule, pos: number) => boolean;
}

interface FnRef {
  mod: CorpusModule;
  fn: FnFacts;
}

/** Resolutions of references with a given attribute chain, per resolver and module: they
 *  do not depend on the block, and every block (and every rebuild of its closure) asks
 *  them again. */
const resolveMemo = new WeakMap<Resolver, WeakMap<CorpusModule, Map<string, { targets: Target[]; consumed: number }>>>();
function resolveChain(resolver: Resolver, mod: CorpusModule, ref: Ref, chain: readonly string[]): { targets: Target[]; consumed: number } {
  const m = memoFor(resolveMemo, resolver, mod);
  const key = `${ref.start}\0${ref.name}\0${chain.join('.')}`;
  let r = m.get(key);
  if (!r) m.set(key, (r = resolver.resolveRef(mod, { ...ref, attrs: [...chain], attrEnds: (ref.attrEnds ?? []).slice(0, chain.length) })));
  return r;
}

/** Per statement, what its references denote (block-independent; the block's closure only
 *  filters by what it keeps): the atoms of value uses and the statements reads need. */
interface StmtRefs {
  /** value uses: a reference whose longest denoting prefix is not exactly a call's callee */
  uses: { pos: number; atoms: string[] }[];
  /** every definition statement a reference reads (`repo:module:stmt`) */
  reads: { pos: number; keys: string[] }[];
}
const stmtRefsMemo = new WeakMap<Resolver, WeakMap<CorpusModule, Map<number, StmtRefs>>>();

/** The map a block-independent memo keeps for one resolver and module. */
function memoFor<K, V>(memo: WeakMap<Resolver, WeakMap<CorpusModule, Map<K, V>>>, resolver: Resolver, mod: CorpusModule): Map<K, V> {
  let byMod = memo.get(resolver);
  if (!byMod) memo.set(resolver, (byMod = new WeakMap()));
  let m = byMod.get(mod);
  if (!m) byMod.set(mod, (m = new Map()));
  return m;
}

const fnKey = (r: FnRef) => `${r.mod.repo}:${r.mod.name}:${r.fn.cls ?? ''}.${r.fn.name}:${r.fn.start}`;

/** One pruning of slim emission by values: replace [start, end) of statement `stmt`. */
export interface ValuePrune {
  mod: CorpusModule;
  stmt: number;
  start: number;
  end: number;
  text: string;
  lines: [number, number];
  what: string;
}

/** One call of the block from outside the closure: the atoms each argument can be (an
 *  empty set for an argument that is no literal: it reaches nothing). */
export interface EntryCall {
  positional: Set<string>[];
  keywords: [string, Set<string>][];
}

/** The value-unreachable branches of the closure's copied functions. */
export function valuePrunes(
  corpus: Corpus,
  resolver: Resolver,
  closure: Closure,
  skipOf: (mod: CorpusModule, stmt: number) => readonly (readonly [number, number])[],
  entry: { calls: readonly EntryCall[] },
): ValuePrune[] {
  const byMod = new Map<CorpusModule, Map<number, StmtNode>>();
  for (const n of closure.nodes) {
    let m = byMod.get(n.mod);
    if (!m) byMod.set(n.mod, (m = new Map()));
    m.set(n.stmt, n);
  }
  const facts = (m: CorpusModule) => modFacts(m, corpus.source(m));
  const sortedNodes = new Map<CorpusModule, StmtNode[]>();
  for (const [m, nodes] of byMod) sortedNodes.set(m, [...nodes.values()].sort((a, b) => a.facts.start - b.facts.start));
  const skipCache = new Map<StmtNode, readonly (readonly [number, number])[]>();
  /** the copied statement holding `pos` (statements do not overlap) */
  const nodeAt = (mod: CorpusModule, pos: number): StmtNode | undefined => spanAt(sortedNodes.get(mod), pos, (n) => n.facts);
  const ctx: Ctx = {
    corpus,
    resolver,
    kept: (mod, pos) => {
      // the copied statement holding `pos`, then its skipped ranges
      const n = nodeAt(mod, pos);
      if (!n) return false;
      let sk = skipCache.get(n);
      if (!sk) skipCache.set(n, (sk = skipOf(mod, n.stmt)));
      return !sk.some(([a, b]) => pos >= a && pos < b);
    },
  };
  // the copied functions and methods
  const fns: FnRef[] = [];
  for (const [mod, nodes] of byMod) for (const fn of facts(mod).fns) if (nodes.has(fn.stmt) && ctx.kept(mod, fn.start)) fns.push({ mod, fn });
  // indexes of the copied functions (first of a name wins, as a search in order would)
  const fnByMethod = new Map<string, FnRef>();
  const fnByName = new Map<string, FnRef>();
  const fnsByClass = new Map<string, FnRef[]>();
  for (const f of fns) {
    const mk = `${f.mod.repo}\0${f.mod.name}\0${f.fn.cls ?? ''}\0${f.fn.name}\0${f.fn.stmt}`;
    if (!fnByMethod.has(mk)) fnByMethod.set(mk, f);
    if (!f.fn.cls) {
      const nk = `${f.mod.repo}\0${f.mod.name}\0${f.fn.name}`;
      if (!fnByName.has(nk)) fnByName.set(nk, f);
    } else {
      const ck = `${f.mod.repo}\0${f.mod.name}\0${f.fn.cls}`;
      let l = fnsByClass.get(ck);
      if (!l) fnsByClass.set(ck, (l = []));
      l.push(f);
    }
  }
  const refAt = new Map<CorpusModule, Map<number, { ref: Ref; stmt: number }>>();
  const refOf = (mod: CorpusModule, pos: number) => {
    let m = refAt.get(mod);
    if (!m) {
      refAt.set(mod, (m = new Map()));
      for (const [stmt] of byMod.get(mod) ?? []) for (const r of mod.facts.statements[stmt].refs) m.set(r.start, { ref: r, stmt });
    }
    return m.get(pos);
  };
  /** a name or attribute chain at `pos` that reads a module-level binding: what it denotes */
  const denote = (mod: CorpusModule, e: Expr): Vals | undefined => {
    const chain: string[] = [];
    let x: Expr = e;
    while (x.k === 'attr') {
      chain.unshift(x.attr);
      x = x.obj;
    }
    if (x.k !== 'name') return undefined;
    const r = refOf(mod, x.start);
    if (!r) return undefined; // a local name
    const attrs = r.ref.attrs ?? [];
    if (chain.length > attrs.length) return null;
    const { targets, consumed } = resolveChain(resolver, mod, r.ref, chain);
    if (targets.length !== 1) return null;
    return atomOfTarget(targets[0], chain.slice(consumed));
  };
  const atomOfTarget = (t: Target, rest: string[]): Vals => {
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
        const def = kind === 'decorated_definition' ? defKind(t.module, t.stmts[0]) : kind;
        if (def === 'class_definition' && classStatement(t.module, t.name)) return new Set([`cls:${t.module.repo}:${t.module.name}:${t.name}`]);
        if (def === 'function_definition') return new Set([`fn:${t.module.repo}:${t.module.name}:${t.name}`]);
      }
    }
    return null;
  };
  const defKind = (mod: CorpusModule, stmt: number): string | null => {
    const f = facts(mod).fns.find((x) => x.stmt === stmt && !x.cls);
    if (f) return 'function_definition';
    return mod.facts.classes.some((c) => c.stmt === stmt && !c.nested) ? 'class_definition' : null;
  };

  // MRO-ish lookup: the first class in a depth-first walk of the bases defining `name`
  const methodMemo = new Map<string, FnRef | null>();
  const methodOf = (mod: CorpusModule, cls: string, name: string, skipSelf: boolean, depth = 0): FnRef | null => {
    if (depth > 12) return null;
    if (depth === 0) {
      const key = `${mod.repo}\0${mod.name}\0${cls}\0${name}\0${skipSelf}`;
      let r = methodMemo.get(key);
      if (r === undefined) methodMemo.set(key, (r = methodLookup(mod, cls, name, skipSelf, 0)));
      return r;
    }
    return methodLookup(mod, cls, name, skipSelf, depth);
  };
  const methodLookup = (mod: CorpusModule, cls: string, name: string, skipSelf: boolean, depth: number): FnRef | null => {
    const cf = classStatement(mod, cls);
    if (!cf) return null;
    if (!skipSelf) {
      const f = fnByMethod.get(`${mod.repo}\0${mod.name}\0${cls}\0${name}\0${cf.stmt}`);
      if (f) return f;
      if (cf.members.includes(name)) return null; // defined but not copied (or not a plain def)
    }
    for (const bases of baseClasses(resolver, mod, cf)) {
      for (const b of bases) {
        if (b.kind !== 'class') continue;
        const r = methodOf(b.module, b.cls.name, name, false, depth + 1);
        if (r) return r;
      }
    }
    return null;
  };

  // Reachable code, a least fixpoint: the block's class is instantiated (its `__init__`
  // takes the entry values, its other methods TOP); a live call in reachable code
  // reaches its callee with the argument values (a class's `__init__`, and makes its
  // methods reachable); a function or class used as a value in live code is reachable
  // with TOP parameters; code outside function bodies (module level, class bodies,
  // decorators, defaults) always runs. Values and live code only grow.
  const params = new Map<string, Map<string, Vals>>();
  const kwExtra = new Map<string, Map<string, Vals> | null>();
  const reachedFns = new Set<string>();
  const instantiated = new Set<string>();
  const fnsOfClass = (mod: CorpusModule, cls: string) => fnsByClass.get(`${mod.repo}\0${mod.name}\0${cls}`) ?? [];
  let changed = false;
  const reach = (f: FnRef, top: boolean) => {
    const k = fnKey(f);
    if (!reachedFns.has(k)) {
      reachedFns.add(k);
      // `self` of a method is the instance: not a value this analysis follows
      params.set(k, new Map(f.fn.params.map((p, i) => [p.name, i === 0 && f.fn.bound ? null : new Set<string>()])));
      kwExtra.set(k, new Map());
      changed = true;
    }
    // forward and the other public methods: a user of the block may call them
    if (top || (f.fn.cls && f.fn.name !== '__init__' && !/^_[^_]/.test(f.fn.name))) {
      const m = params.get(k)!;
      for (const [n, v] of m) {
        if (v !== null) {
          m.set(n, null);
          changed = true;
        }
      }
      if (kwExtra.get(k) !== null) {
        kwExtra.set(k, null);
        changed = true;
      }
    }
  };
  const setParam = (k: string, name: string, v: Vals): boolean => {
    const m = params.get(k);
    if (!m?.has(name)) return false;
    const cur = m.get(name);
    if (cur === null) return false;
    const next = union(cur ?? new Set(), v);
    if (next && cur && next.size === cur.size) return false;
    m.set(name, next);
    return true;
  };
  /** m[k] ∪= v; whether it changed */
  const grow = (m: Map<string, Vals>, k: string, v: Vals): boolean => {
    const cur = m.get(k);
    if (cur === null) return false;
    const next = union(cur ?? new Set(), v);
    if (next && cur && next.size === cur.size) return false;
    m.set(k, next);
    return true;
  };
  const instantiate = (clsAtom: string, top: boolean) => {
    const key = `${clsAtom}${top ? ':top' : ''}`;
    const [repo, ...rest] = clsAtom.slice(4).split(':');
    const name = rest.pop()!;
    const mod = corpus.module(rest.join(':'), repo);
    if (!mod) return;
    if (!instantiated.has(key)) {
      instantiated.add(key);
      instantiated.add(clsAtom);
      changed = true;
    }
    // the methods of its classes (what an instance can run)
    const seen = new Set<string>();
    const walk = (m: CorpusModule, c: string, depth: number) => {
      const k = `${m.repo}:${m.name}:${c}`;
      if (seen.has(k) || depth > 12) return;
      seen.add(k);
      for (const f of fnsOfClass(m, c)) if (f.fn.name !== '__init__' && !/^_[^_]/.test(f.fn.name)) reach(f, true);
      const cf = classStatement(m, c);
      if (cf) for (const bases of baseClasses(resolver, m, cf)) for (const b of bases) if (b.kind === 'class') walk(b.module, b.cls.name, depth + 1);
    };
    walk(mod, name, 0);
    if (top) {
      const init = methodOf(mod, name, '__init__', false);
      if (init) reach(init, true);
    }
  };
  // self.x: the union of the live `self.x = …` of reachable methods (and class-level
  // values of the copied classes); TOP when none is copied, when it is a property, or
  // when live code assigns it otherwise (`m.x = …`, `setattr`)
  const selfAttrCache = new Map<string, Vals>();
  const anySelfAssign = new Set<string>();
  for (const f of fns) for (const a of f.fn.selfAssigns) if (ctx.kept(f.mod, a.pos)) anySelfAssign.add(a.attr);
  for (const [mod] of byMod) for (const [, attrs] of facts(mod).classAttrs) for (const a of attrs.keys()) anySelfAssign.add(a);
  const properties = new Set<string>();
  for (const [mod] of byMod) for (const a of facts(mod).properties) properties.add(a);
  const otherAttrs = new Set<string>();
  /** dead ranges of each reachable function (this round) */
  const deadOf = new Map<string, [number, number][]>();
  const fnsByMod = new Map<CorpusModule, FnRef[]>();
  for (const f of fns) {
    let l = fnsByMod.get(f.mod);
    if (!l) fnsByMod.set(f.mod, (l = []));
    l.push(f);
  }
  for (const l of fnsByMod.values()) l.sort((a, b) => a.fn.start - b.fn.start);
  /** the function (module-level, or a method) whose body holds `pos` */
  const fnAt = (mod: CorpusModule, pos: number, from: 'body' | 'def' = 'body'): FnRef | undefined => {
    const f = spanAt(fnsByMod.get(mod), pos, (r) => r.fn);
    return f && (from === 'body' ? f.fn.bodyStart : f.fn.start) <= pos ? f : undefined;
  };
  /** `pos` of `f` runs: copied, not skipped, and in no dead range of `f` */
  const live = (f: FnRef, pos: number) => ctx.kept(f.mod, pos) && !(deadOf.get(fnKey(f)) ?? []).some(([a, b]) => pos >= a && pos < b);
  /** code outside function bodies (module level, class bodies, headers) or live code of a
   *  reachable function */
  // a module-level assignment (`MODELS = Registry('model')`, `ConfigType = Union[…]`)
  // runs for this analysis when running code reads what it binds (annotations do not)
  const needed = new Set<string>();
  const stmtKey = (mod: CorpusModule, stmt: number) => `${mod.repo}:${mod.name}:${stmt}`;
  const lazyStmt = (mod: CorpusModule, pos: number): number => {
    const n = nodeAt(mod, pos);
    return n && n.facts.kind === 'expression_statement' && n.facts.binds.length ? n.stmt : -1;
  };
  const runs = (mod: CorpusModule, pos: number): boolean => {
    if (!ctx.kept(mod, pos)) return false;
    const lz = lazyStmt(mod, pos);
    if (lz >= 0 && !needed.has(stmtKey(mod, lz))) return false;
    // the innermost function body holding it (a method's body, or a module-level function's)
    const f = fnAt(mod, pos);
    if (!f) return true;
    return reachedFns.has(fnKey(f)) && live(f, pos);
  };
  // evaluation
  const evalIn = (f: FnRef, e: Expr, pos: number, depth: number): Vals => {
    if (depth > 24) return null;
    switch (e.k) {
      case 'lit':
        return new Set([e.atom]);
      case 'coll':
        return new Set([e.atom]);
      case 'top':
        return null;
      case 'name': {
        const d = denote(f.mod, e);
        if (d !== undefined) return d;
        return nameValue(f, e.id, pos, depth);
      }
      case 'attr': {
        if (e.obj.k === 'name' && e.obj.id === 'self' && f.fn.bound && f.fn.params[0]?.name === 'self') return selfAttr(e.attr, depth);
        const d = denote(f.mod, e);
        return d === undefined ? null : d;
      }
      case 'not': {
        const v = evalIn(f, e.e, pos, depth + 1);
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
        const l = evalIn(f, e.l, pos, depth + 1);
        if (!l) return null;
        let out: Vals = new Set();
        let needR = false;
        for (const a of l) {
          const t = truth(a);
          if (t === null) return null;
          if ((e.op === 'or') === t) out.add(a);
          else needR = true;
        }
        if (needR) out = union(out, evalIn(f, e.r, pos, depth + 1));
        return out;
      }
      case 'cond': {
        const t = evalIn(f, e.test, pos, depth + 1);
        const ts = t ? [...t].map(truth) : [null];
        let out: Vals = new Set();
        if (ts.some((x) => x !== false)) out = union(out, evalIn(f, e.body, pos, depth + 1));
        if (ts.some((x) => x !== true)) out = union(out, evalIn(f, e.orelse, pos, depth + 1));
        return out;
      }
      case 'cmp':
        return compare(f, e, pos, depth);
      case 'call':
        return callValue(f, e, pos, depth);
      case 'seq':
        return new Set([e.items.length ? `obj:${e.kind}` : `empty:${e.kind}`]);
      case 'unpack':
        return e.value.k === 'call' ? returned(f, e.value, depth, e) : null;
      case 'dict':
        return new Set([e.items.length ? 'obj:dict' : 'empty:dict']);
    }
  };
  /** what a call of a copied function returns: the union of its live `return`s (None
   *  when it can end without one); `pick`: the element of a returned tuple */
  const returned = (f: FnRef, c: Expr & { k: 'call' }, depth: number, pick?: { index: number; n: number }): Vals => {
    if (depth > 16) return null;
    const callees = calleesOf(f, c);
    // only calls whose callee is known (`obj.m(…)` may be any object's m)
    if (!callees.length || callees.some((x) => x.cls || x.fuzzy || !reachedFns.has(fnKey(x.fn)))) return null;
    let out: Vals = new Set();
    for (const { fn } of callees) {
      if (fn.fn.fallsOff || fn.fn.returns.some((r) => !r.value)) {
        if (pick) return null;
        out = union(out, NONE);
      }
      for (const r of fn.fn.returns) {
        if (!r.value || !live(fn, r.pos)) continue;
        if (pick) {
          if (r.value.k !== 'seq' || r.value.items.length !== pick.n) return null;
          out = union(out, evalIn(fn, r.value.items[pick.index], r.pos, depth + 1));
        } else out = union(out, evalIn(fn, r.value, r.pos, depth + 1));
        if (!out) return null;
      }
    }
    return out;
  };
  const mutatedLive = (f: FnRef, id: string) => (f.fn.mutated.get(id) ?? []).some((pos) => live(f, pos));
  /** the keys and values of a local name bound only to dicts of literal keys */
  const localDict = (f: FnRef, id: string, pos: number, depth = 0): Map<string, Vals> | null => {
    if (depth > 8) return null;
    // a parameter that is None (or an empty dict) adds no keys: `**None` raises, so a
    // call that works splats what the body assigned
    const p = f.fn.params.find((x) => x.name === id);
    if (p) {
      const pv = p.kind === 'pos' || p.kind === 'kwonly' ? params.get(fnKey(f))?.get(id) : null;
      if (!pv || [...pv].some((v) => v !== 'None' && v !== 'empty:dict')) return null;
    }
    const as = (f.fn.assigns.get(id) ?? []).filter((a) => live(f, a.pos) && ((a.end ?? a.pos) <= pos || f.fn.loops.some(([s, t]) => s <= a.pos && a.pos < t && s <= pos && pos < t)));
    if (!as.length) return null;
    const out = new Map<string, Vals>();
    for (const a of as) {
      const v = a.value;
      let items: [string, Expr][] | null = null;
      if (v?.k === 'dict') items = v.items;
      else if (v?.k === 'call' && v.fn.k === 'name' && v.fn.id === 'dict' && !v.args.length && !v.star && !v.kwsplat.length) items = v.kw;
      if (!items) return null;
      for (const [k, x] of items) {
        if (k !== '**') {
          out.set(k, union(out.get(k) ?? new Set(), evalIn(f, x, a.pos, 1)));
          continue;
        }
        // `**other`: a dict of known keys, or `**(x or {})` where x is None
        const inner = dictShape(f, x, a.pos, depth + 1);
        if (!inner) return null;
        for (const [ik, iv] of inner) out.set(ik, union(out.get(ik) ?? new Set(), iv));
      }
    }
    return out;
  };
  /** the keys and values of a dict expression, or null when unknown */
  const dictShape = (f: FnRef, x: Expr, pos: number, depth: number): Map<string, Vals> | null => {
    if (depth > 8) return null;
    if (x.k === 'dict' && x.items.every(([k]) => k !== '**')) return new Map(x.items.map(([k, v]) => [k, evalIn(f, v, pos, 1)]));
    if (x.k === 'coll' && x.atom === 'empty:dict') return new Map();
    if (x.k === 'name') return kwKeys(f, x.id) ?? (mutatedLive(f, x.id) ? null : localDict(f, x.id, pos, depth + 1));
    if (x.k === 'bool' && x.op === 'or') {
      // `a or b`: a when a is truthy; only a None/empty a is followed (to b)
      const l = evalIn(f, x.l, pos, 1);
      if (!l || [...l].some((v) => truth(v) !== false)) return null;
      return dictShape(f, x.r, pos, depth + 1);
    }
    return null;
  };
  /** the keys a `**kwargs` parameter can hold, or null when unknown */
  const kwKeys = (f: FnRef, id: string): Map<string, Vals> | null => {
    const p = f.fn.params.find((x) => x.name === id && x.kind === 'kwstar');
    if (!p || (f.fn.assigns.get(id) ?? []).some((a) => live(f, a.pos))) return null;
    const known = kwExtra.get(fnKey(f));
    if (!known) return null;
    const adds = f.fn.kwAdds.filter((a) => live(f, a.pos));
    if (!adds.length) return known;
    if (adds.some((a) => a.key === null)) return null;
    const out = new Map(known);
    for (const a of adds) out.set(a.key!, null);
    return out;
  };
  const nameValue = (f: FnRef, id: string, pos: number, depth: number): Vals => {
    const p = f.fn.params.find((x) => x.name === id);
    let out: Vals = new Set();
    if (p) {
      const k = fnKey(f);
      if (p.kind === 'star') out = new Set(['obj:tuple', 'empty:tuple']);
      else if (p.kind === 'kwstar') out = new Set(['obj:dict', 'empty:dict']);
      else {
        const m = params.get(k);
        out = m?.has(id) ? m.get(id)! : null;
      }
    }
    const as = f.fn.assigns.get(id);
    if (!p && !as) return null; // a free name the facts do not resolve (class-scope, builtins)
    for (const a of as ?? []) {
      if (!out) return null;
      if (!live(f, a.pos)) continue;
      if ((a.end ?? a.pos) > pos && !f.fn.loops.some(([s, t]) => s <= a.pos && a.pos < t && s <= pos && pos < t)) continue;
      if (!a.value) return null;
      out = union(out, evalIn(f, a.value, a.pos, depth + 1));
    }
    return out;
  };
  const selfAttr = (attr: string, depth: number): Vals => {
    if (!anySelfAssign.has(attr) || otherAttrs.has(attr) || otherAttrs.has('*') || properties.has(attr)) return null;
    if (selfAttrCache.has(attr)) return selfAttrCache.get(attr)!;
    selfAttrCache.set(attr, null); // a cycle reads TOP
    let out: Vals = new Set();
    for (const f of fns) {
      if (!reachedFns.has(fnKey(f))) continue;
      for (const a of f.fn.selfAssigns) {
        if (a.attr !== attr || !live(f, a.pos)) continue;
        out = a.value ? union(out, evalIn(f, a.value, a.pos, depth + 1)) : null;
        if (!out) break;
      }
      if (!out) break;
    }
    // class-level values of the copied classes
    for (const [mod] of byMod) {
      for (const [, attrs] of facts(mod).classAttrs) {
        if (!attrs.has(attr)) continue;
        const v = attrs.get(attr);
        out = v && (v.k === 'lit' || v.k === 'coll') ? union(out, new Set([v.atom])) : null;
      }
    }
    selfAttrCache.set(attr, out);
    return out;
  };
  const compare = (f: FnRef, e: Expr & { k: 'cmp' }, pos: number, depth: number): Vals => {
    const l = evalIn(f, e.l, pos, depth + 1);
    if ((e.op === 'in' || e.op === 'not in') && e.r.k === 'name' && e.l.k === 'lit' && e.l.atom.startsWith('s:')) {
      // `'key' in kwargs`: a key no caller passes is not there
      const keys = kwKeys(f, e.r.id);
      if (!keys) return TF(null);
      return keys.has(e.l.atom.slice(2)) ? TF(null) : boolSet(new Set([false]), e.op === 'not in');
    }
    if (e.op === 'in' || e.op === 'not in') {
      if (!l || e.r.k !== 'seq') return TF(null);
      const items: string[] = [];
      for (const it of e.r.items) {
        const v = evalIn(f, it, pos, depth + 1);
        if (v?.size !== 1) return TF(null);
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
    const r = evalIn(f, e.r, pos, depth + 1);
    if (!l || !r) return TF(null);
    const res = new Set<boolean>();
    for (const a of l) {
      for (const b of r) {
        let v: boolean | null;
        if (e.op === 'is' || e.op === 'is not') v = a === 'None' || b === 'None' ? a === b : a.startsWith('cls:') || a.startsWith('fn:') || b.startsWith('cls:') || b.startsWith('fn:') ? identityAtoms(a, b) : null;
        else if (e.op === '==' || e.op === '!=') v = eqAtoms(a, b);
        else v = orderAtoms(a, b, e.op);
        if (v === null) return TF(null);
        res.add(v);
      }
    }
    return boolSet(res, e.op === 'is not' || e.op === '!=');
  };
  const callValue = (f: FnRef, e: Expr & { k: 'call' }, pos: number, depth: number): Vals => {
    const fname = e.fn.k === 'name' ? e.fn.id : e.fn.k === 'attr' ? e.fn.attr : '';
    const callee = e.fn.k === 'name' || e.fn.k === 'attr' ? denote(f.mod, e.fn) : undefined;
    const isB = (n: string) => callee instanceof Set && callee.size === 1 && callee.has(`b:${n}`);
    if ((isB('isinstance') || isB('issubclass')) && e.args.length === 2 && !e.kw.length && !e.star) {
      const obj = evalIn(f, e.args[0], pos, depth + 1);
      const types = e.args[1].k === 'seq' ? e.args[1].items : [e.args[1]];
      const tv: string[] = [];
      for (const t of types) {
        const v = evalIn(f, t, pos, depth + 1);
        if (v?.size !== 1) return TF(null);
        tv.push([...v][0]);
      }
      if (!obj) return TF(null);
      const res = new Set<boolean>();
      for (const a of obj) {
        const vs = tv.map((t) => (isB('isinstance') ? isInstance(a, t) : isSubclass(a, t)));
        if (vs.some((v) => v === true)) res.add(true);
        else if (vs.every((v) => v === false)) res.add(false);
        else return TF(null);
      }
      return boolSet(res, false);
    }
    if ((isB('dict') || isB('list') || isB('tuple') || isB('set')) && !e.star && !e.kwsplat.length) {
      const kind = [...(callee as Set<string>)][0].slice(2);
      return new Set([e.args.length || e.kw.length ? (kind === 'dict' && !e.kw.length && e.args.length ? 'obj' : `obj:${kind}`) : `empty:${kind}`]);
    }
    // copy.deepcopy(x) / copy.copy(x) is x as far as these tests go
    if (callee instanceof Set && callee.size === 1 && /^x:copy\.(deep)?copy$/.test([...callee][0]) && e.args.length === 1) return evalIn(f, e.args[0], pos, depth + 1);
    // kwargs.pop('k', d) / kwargs.get('k', d): the values callers pass for k, or d
    if (e.fn.k === 'attr' && (fname === 'pop' || fname === 'get') && e.fn.obj.k === 'name' && e.args.length >= 1 && e.args.length <= 2 && e.args[0].k === 'lit' && e.args[0].atom.startsWith('s:')) {
      const keys = kwKeys(f, e.fn.obj.id);
      if (keys) {
        const k = e.args[0].atom.slice(2);
        let out: Vals = keys.has(k) ? keys.get(k)! : new Set();
        out = union(out, e.args.length === 2 ? evalIn(f, e.args[1], pos, depth + 1) : fname === 'get' ? NONE : new Set());
        return out;
      }
    }
    if (e.fn.k === 'call' || e.fn.k === 'name' || e.fn.k === 'attr') {
      const r = returned(f, e, depth);
      if (r) return r;
    }
    if (e.fn.k === 'attr' && fname === 'lower' && !e.args.length) {
      const v = evalIn(f, e.fn.obj, pos, depth + 1);
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
  };
  const boolSet = (res: Set<boolean>, negate: boolean): Vals => new Set([...res].map((b) => ((b !== negate) ? 'True' : 'False')));
  const isInstance = (a: string, t: string): boolean | null => {
    const ty = builtinType(a);
    if (t.startsWith('b:')) {
      const tn = t.slice(2);
      if (!BUILTIN_TYPES.has(tn) && tn !== 'object') return null;
      if (tn === 'object') return true;
      if (!ty) return null;
      if (tn === ty) return true;
      if (tn === 'int' && ty === 'bool') return true;
      return ty === 'NoneType' || ty === 'str' || ty === 'int' || ty === 'float' || ty === 'bool' || ty === 'function' || ((ty === 'type') && tn !== 'type') || ['dict', 'list', 'tuple', 'set'].includes(ty) ? false : null;
    }
    if (t.startsWith('cls:') || t.startsWith('x:')) {
      // a value of a builtin type, a class object or a function is no instance of a
      // class of the corpus (nor of an extern class, unless that is a metaclass)
      if (ty === 'NoneType' || ty === 'str' || ty === 'int' || ty === 'float' || ty === 'bool' || ty === 'function') return t.startsWith('x:') && !/\.(Module|Tensor)$/.test(t) ? null : false;
      if (ty === 'type' && t.startsWith('cls:') && !isMeta(t)) return false;
      return null;
    }
    return null;
  };
  const isMeta = (t: string): boolean => {
    const [repo, ...rest] = t.slice(4).split(':');
    const name = rest.pop()!;
    const mod = corpus.module(rest.join(':'), repo);
    const cf = mod ? classStatement(mod, name) : null;
    return !cf || cf.bases.some((b) => /\b(type|Meta)\b|Meta$/.test(b.text));
  };
  const isSubclass = (a: string, t: string): boolean | null => {
    if (a.startsWith('x:') && t.startsWith('cls:')) return false; // an extern class derives from no corpus class
    if (!a.startsWith('cls:')) return null;
    if (a === t) return true;
    const anc = ancestors(a);
    if (!anc) return null;
    if (anc.set.has(t)) return true;
    return anc.closed && t.startsWith('cls:') ? false : null;
  };
  const ancCache = new Map<string, { set: Set<string>; closed: boolean } | null>();
  const ancestors = (a: string): { set: Set<string>; closed: boolean } | null => {
    if (ancCache.has(a)) return ancCache.get(a)!;
    ancCache.set(a, null);
    const [repo, ...rest] = a.slice(4).split(':');
    const name = rest.pop()!;
    const mod = corpus.module(rest.join(':'), repo);
    const cf = mod ? classStatement(mod, name) : null;
    if (!mod || !cf) return null;
    const set = new Set<string>();
    let closed = true;
    for (const bases of baseClasses(resolver, mod, cf)) {
      if (bases.length !== 1) closed = false;
      for (const b of bases) {
        if (b.kind === 'extern') {
          set.add(`x:${b.qualified}`);
          continue;
        }
        const k = `cls:${b.module.repo}:${b.module.name}:${b.cls.name}`;
        set.add(k);
        const up = ancestors(k);
        if (!up) closed = false;
        else {
          for (const x of up.set) set.add(x);
          closed &&= up.closed;
        }
      }
    }
    if (cf.bases.length !== cf.bases.filter((b) => b.name).length) closed = false;
    const r = { set, closed };
    ancCache.set(a, r);
    return r;
  };

  // callees of a call: a function, a class's __init__, `super().m`, `Cls.m(self, …)`,
  // `obj.m(…)` (the methods named m of the instantiated classes)
  type Callee = { fn: FnRef; bound: boolean; cls?: string; fuzzy?: boolean };
  // memoised per call until the instantiated classes grow (what `obj.m(…)` may reach)
  const calleeMemo = new Map<Expr, { fn: FnFacts; stamp: number; out: Callee[] }>();
  const calleesOf = (f: FnRef, c: Expr & { k: 'call' }): Callee[] => {
    // a call through a local name: what the name holds there (values grow every round)
    if (c.fn.k === 'name' && f.fn.confined.has(c.fn.id)) {
      const v = nameValue(f, c.fn.id, c.start, 0);
      return v ? resolveCallee(v, []) : [];
    }
    const m = calleeMemo.get(c);
    if (m && m.fn === f.fn && m.stamp === instantiated.size) return m.out;
    const out = calleesOfCall(f, c);
    calleeMemo.set(c, { fn: f.fn, stamp: instantiated.size, out });
    return out;
  };
  const calleesOfCall = (f: FnRef, c: Expr & { k: 'call' }): Callee[] => {
    const out: Callee[] = [];
    if (c.fn.k === 'name') {
      const d = denote(f.mod, c.fn);
      return d ? resolveCallee(d, out) : out;
    }
    if (c.fn.k !== 'attr') return out;
    const m = c.fn.attr;
    const obj = c.fn.obj;
    if (obj.k === 'call' && obj.fn.k === 'name' && obj.fn.id === 'super') {
      if (f.fn.cls) {
        const r = methodOf(f.mod, f.fn.cls, m, true);
        if (r) out.push({ fn: r, bound: true });
      }
      return out;
    }
    const whole = denote(f.mod, c.fn);
    if (whole) return resolveCallee(whole, out);
    const d = denote(f.mod, obj);
    if (d && d.size === 1 && [...d][0].startsWith('cls:')) {
      const [repo, ...rest] = [...d][0].slice(4).split(':');
      const name = rest.pop()!;
      const mod = corpus.module(rest.join(':'), repo);
      const r = mod ? methodOf(mod, name, m, false) : null;
      if (r) out.push({ fn: r, bound: false });
      return out;
    }
    if (d !== undefined) return out; // an extern object, a module: nothing of ours
    for (const a of instantiated) {
      if (a.endsWith(':top')) continue;
      const [repo, ...rest] = a.slice(4).split(':');
      const name = rest.pop()!;
      const mod = corpus.module(rest.join(':'), repo);
      const r = mod ? methodOf(mod, name, m, false) : null;
      if (r && !out.some((x) => x.fn === r)) out.push({ fn: r, bound: true, fuzzy: true });
    }
    return out;
  };
  const resolveCallee = (d: Set<string>, out: Callee[]) => {
    for (const a of d) {
      const [kind, repo, ...rest] = a.split(':');
      if (kind !== 'cls' && kind !== 'fn') continue;
      const name = rest.pop()!;
      const mod = corpus.module(rest.join(':'), repo);
      if (!mod) continue;
      if (kind === 'cls') {
        const r = methodOf(mod, name, '__init__', false);
        out.push({ fn: r ?? (null as unknown as FnRef), bound: true, cls: a });
      } else {
        const r = fnByName.get(`${mod.repo}\0${mod.name}\0${name}`);
        if (r) out.push({ fn: r, bound: false });
      }
    }
    return out;
  };
  function evalDefault(f: FnRef, p: Param): Vals {
    return p.def ? evalIn(f, p.def, f.fn.start, 0) : null;
  }
  /** the dead ranges of `f` at the current values: clause bodies no value reaches, and
   *  the code after an `if` none of whose live clauses falls through */
  const deadRanges = (f: FnRef): { dead: [number, number][]; prunes: { site: IfSite; clauses: Clause[]; rest: boolean }[]; conds: { site: CondSite; part: 'body' | 'orelse' }[] } => {
    const dead: [number, number][] = [];
    const prunes: { site: IfSite; clauses: Clause[]; rest: boolean }[] = [];
    const conds: { site: CondSite; part: 'body' | 'orelse' }[] = [];
    const k = fnKey(f);
    deadOf.set(k, dead); // nested sites see the dead ranges found so far
    for (const site of f.fn.ifs) {
      if (!ctx.kept(f.mod, site.start) || dead.some(([a, b]) => site.start >= a && site.start < b)) continue;
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
          const v = evalIn(f, c.test, site.start, 0);
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
      if (!ctx.kept(f.mod, site.start) || dead.some(([a, b]) => site.start >= a && site.start < b)) continue;
      const v = evalIn(f, site.test, site.start, 0);
      const ts = v ? [...v].map(truth) : [null];
      const part = !ts.some((t) => t !== false) ? 'body' : !ts.some((t) => t !== true) ? 'orelse' : null;
      if (!part) continue;
      dead.push(site[part]);
      conds.push({ site, part });
    }
    return { dead, prunes, conds };
  };

  // static: what code outside function bodies calls and uses as values
  const typeArgsOf = (mod: CorpusModule) => facts(mod).typeArgs;
  /** what the references of a statement denote (memoised across blocks: StmtRefs) */
  const stmtRefs = (mod: CorpusModule, stmt: number): StmtRefs => {
    const m = memoFor(stmtRefsMemo, resolver, mod);
    let out = m.get(stmt);
    if (out) return out;
    out = { uses: [], reads: [] };
    const mf = facts(mod);
    const ta = typeArgsOf(mod);
    for (const r of mod.facts.statements[stmt].refs) {
      if (ta.some(([a, b]) => r.start >= a && r.start < b)) continue;
      // the longest prefix of the chain that denotes a definition: called when the
      // call's callee is exactly that chain, else a value use (passed on, or the
      // receiver of a method call such as `Cls.from_config(…)`)
      const attrs = r.attrs ?? [];
      for (let n = attrs.length; n >= 0; n--) {
        const { targets, consumed } = resolveChain(resolver, mod, r, attrs.slice(0, n));
        if (targets.length !== 1) continue;
        const v = atomOfTarget(targets[0], attrs.slice(consumed, n));
        if (!v) continue;
        const end = n ? (r.attrEnds ?? [])[n - 1] : r.end;
        if (mf.calleeSpans.get(r.start) !== end && v.size) out.uses.push({ pos: r.start, atoms: [...v] });
        break;
      }
      const { targets } = resolveChain(resolver, mod, r, attrs);
      const keys = targets.flatMap((t) => (t.kind === 'def' ? t.stmts.map((i) => stmtKey(t.module, i)) : []));
      if (keys.length) out.reads.push({ pos: r.start, keys });
    }
    m.set(stmt, out);
    return out;
  };
  const useAsValue = (a: string) => {
    if (a.startsWith('cls:')) instantiate(a, true);
    else if (a.startsWith('fn:')) {
      const [, repo, ...rest] = a.split(':');
      const name = rest.pop()!;
      const f = fnByName.get(`${repo}\0${rest.join(':')}\0${name}`);
      if (f) reach(f, true);
    }
  };
  /** a call the analysis does not follow argument by argument (module level, class
   *  bodies, nested functions, lambdas): its callees take TOP */
  const opaqueCall = (ctxFn: FnRef, c: Expr & { k: 'call' }) => {
    // an instance of a class the code does not name (`cls(…)`, `self.__class__(…)`,
    // `type(self)(…)`): every instantiated class's __init__ may run with anything
    if ((c.fn.k === 'name' && c.fn.id === 'cls') || (c.fn.k === 'attr' && c.fn.attr === '__class__') || (c.fn.k === 'call' && c.fn.fn.k === 'name' && c.fn.fn.id === 'type')) {
      for (const a of [...instantiated]) if (!a.endsWith(':top')) instantiate(a, true);
    }
    for (const x of calleesOf(ctxFn, c)) {
      if (x.cls) instantiate(x.cls, true);
      else reach(x.fn, true);
    }
  };
  const analysed = new Set<number>();
  for (const f of fns) for (const c of f.fn.calls) analysed.add(c.start);
  const moduleFn = (mod: CorpusModule, pos: number): FnRef => ({ mod, fn: { stmt: -1, cls: null, name: '', start: pos, end: pos, bodyStart: pos, params: [], bound: false, assigns: new Map(), loops: [], ifs: [], conds: [], calls: [], selfAssigns: [], returns: [], fallsOff: true, kwAdds: [], mutated: new Map(), confined: new Map() } });

  // the block's __init__ takes its defaults, call-site literals and validated arguments
  const target = closure.target;
  const entryInit = methodOf(target.mod, target.className, '__init__', false);
  const entryVals = new Map<string, Vals>();
  if (entryInit) {
    const ps = entryInit.fn.params.slice(entryInit.fn.bound ? 1 : 0);
    // a required parameter is TOP: the user passes anything
    for (const p of ps) entryVals.set(p.name, p.def && p.kind !== 'star' && p.kind !== 'kwstar' ? new Set<string>() : null);
    // a required parameter that every known call (call sites, validated arguments) gives
    // a literal takes those values' kinds: the strings and None as they are (the options
    // the block is built with), numbers and booleans as "some int/float/bool" (a caller
    // may pass any size or flag), so type tests are decided and value tests are not
    const kinds = new Set<string>();
    const given = (c: EntryCall, i: number, name: string): Set<string> | undefined => c.keywords.find(([k]) => k === name)?.[1] ?? (ps[i]?.kind === 'pos' ? c.positional[i] : undefined);
    ps.forEach((p, i) => {
      if (p.def || (p.kind !== 'pos' && p.kind !== 'kwonly') || !entry.calls.length) return;
      const seen = entry.calls.map((c) => given(c, i, p.name));
      if (seen.some((v) => !v?.size)) return;
      entryVals.set(p.name, new Set(seen.flatMap((v) => [...v!].map(kindOf))));
      kinds.add(p.name);
    });
    const extra = new Map<string, Vals>();
    for (const c of entry.calls) {
      c.positional.forEach((a, i) => {
        const p = ps[i];
        if (p && p.kind === 'pos' && entryVals.get(p.name) && !kinds.has(p.name)) entryVals.set(p.name, union(entryVals.get(p.name)!, a));
      });
      for (const [k, a] of c.keywords) {
        if (entryVals.has(k)) {
          if (entryVals.get(k) && !kinds.has(k)) entryVals.set(k, union(entryVals.get(k)!, a));
        } else extra.set(k, union(extra.get(k) ?? new Set(), a));
      }
    }
    reach(entryInit, false);
    const k = fnKey(entryInit);
    for (const p of ps) {
      const v = entryVals.get(p.name);
      setParam(k, p.name, v ? (p.def ? union(v, evalDefault(entryInit, p)) : v) : null);
    }
    if (entryInit.fn.bound) setParam(k, entryInit.fn.params[0].name, null);
    kwExtra.set(k, ps.some((p) => p.kind === 'kwstar') ? extra : null);
  }
  instantiate(`cls:${target.mod.repo}:${target.mod.name}:${target.className}`, false);

  const uses: { mod: CorpusModule; pos: number; atoms: string[] }[] = [];
  const reads: { mod: CorpusModule; pos: number; keys: string[] }[] = [];
  for (const [mod, nodes] of byMod) {
    for (const [stmt] of nodes) {
      const sr = stmtRefs(mod, stmt);
      for (const u of sr.uses) if (ctx.kept(mod, u.pos)) uses.push({ mod, pos: u.pos, atoms: u.atoms });
      for (const r of sr.reads) if (ctx.kept(mod, r.pos)) reads.push({ mod, pos: r.pos, keys: r.keys });
    }
  }
  const opaque: { mod: CorpusModule; call: Expr & { k: 'call' }; ctx: FnRef }[] = [];
  for (const [mod] of byMod) {
    for (const c of facts(mod).allCalls) {
      if (analysed.has(c.start) || !ctx.kept(mod, c.start)) continue;
      opaque.push({ mod, call: c, ctx: fnAt(mod, c.start, 'def') ?? moduleFn(mod, c.start) });
    }
  }
  // positions that are the value of a confined local (FnFacts.confined)
  const confinedPos = new Map<CorpusModule, Map<number, { f: FnRef; name: string }>>();
  for (const f of fns) {
    for (const [name, ps] of f.fn.confined) {
      let m = confinedPos.get(f.mod);
      if (!m) confinedPos.set(f.mod, (m = new Map()));
      for (const p of ps) m.set(p, { f, name });
    }
  }
  const confinedAt = (mod: CorpusModule, pos: number) => confinedPos.get(mod)?.get(pos);
  const finalPrunes = new Map<string, ReturnType<typeof deadRanges>>();
  for (let round = 0; ; round++) {
    changed = false;
    selfAttrCache.clear();
    // attributes written otherwise by running code (only grows): before the tests read them
    for (const [mod] of byMod) {
      for (const a of facts(mod).otherAttrAssigns) {
        if (otherAttrs.has(a.attr) || !runs(mod, a.pos)) continue;
        otherAttrs.add(a.attr);
        changed = true;
      }
    }
    selfAttrCache.clear();
    finalPrunes.clear();
    for (const f of fns) if (reachedFns.has(fnKey(f))) finalPrunes.set(fnKey(f), deadRanges(f));
    // code outside function bodies, and the live code of reachable functions
    for (const r of reads) {
      if (!runs(r.mod, r.pos)) continue;
      for (const k of r.keys) {
        if (needed.has(k)) continue;
        needed.add(k);
        changed = true;
      }
    }
    for (const u of uses) {
      if (!runs(u.mod, u.pos)) continue;
      // the value of a confined local: only the function's own calls of that name run it,
      // with their arguments, unless one of them sees an unknown value
      const c = confinedAt(u.mod, u.pos);
      if (c && !(reachedFns.has(fnKey(c.f)) && c.f.fn.calls.some((call) => call.fn.k === 'name' && call.fn.id === c.name && live(c.f, call.start) && !nameValue(c.f, c.name, call.start, 0)))) continue;
      for (const a of u.atoms) useAsValue(a);
    }
    for (const o of opaque) {
      if (!runs(o.mod, o.call.start)) continue;
      opaqueCall(o.ctx, o.call);
    }
    for (const caller of fns) {
      const ck = fnKey(caller);
      if (!reachedFns.has(ck)) continue;
      for (const call of caller.fn.calls) {
        if (!live(caller, call.start)) continue;
        for (const x of calleesOf(caller, call)) {
          if (x.cls) {
            instantiate(x.cls, false);
            if (!x.fn) continue;
          }
          const fn = x.fn;
          reach(fn, false);
          const k = fnKey(fn);
          const ps = fn.fn.params.slice(x.bound && fn.fn.bound ? 1 : 0);
          if (!x.bound && fn.fn.bound && !call.args.length) continue;
          const given = new Set<string>();
          const pos = ps.filter((p) => p.kind === 'pos');
          call.args.forEach((a, i) => {
            const p = pos[i];
            if (p) {
              given.add(p.name);
              changed = setParam(k, p.name, evalIn(caller, a, call.start, 0)) || changed;
            }
          });
          for (const [name, a] of call.kw) {
            if (ps.some((p) => p.name === name && p.kind !== 'star' && p.kind !== 'kwstar')) {
              given.add(name);
              changed = setParam(k, name, evalIn(caller, a, call.start, 0)) || changed;
            } else {
              const kx = kwExtra.get(k);
              if (kx) changed = grow(kx, name, evalIn(caller, a, call.start, 0)) || changed;
            }
          }
          // **kwargs passed on: the caller's own **kwargs carries its known keys
          let splat: Map<string, Vals> | null = new Map();
          for (const sp of call.kwsplat) {
            const own = sp.k === 'name' ? caller.fn.params.find((p) => p.name === sp.id && p.kind === 'kwstar') : undefined;
            const assigned = sp.k === 'name' && (caller.fn.assigns.get(sp.id) ?? []).some((a) => live(caller, a.pos));
            let kx = own && !assigned ? kwExtra.get(ck) : null;
            // a local dict of literal keys (`dd = {'device': device, 'dtype': dtype}`)
            if (!own && sp.k === 'name' && !mutatedLive(caller, sp.id)) kx = localDict(caller, sp.id, call.start);
            if (!kx) splat = null;
            else if (splat) for (const [n, v] of kx) splat.set(n, union(splat.get(n) ?? new Set(), v));
          }
          for (const p of ps) {
            if (given.has(p.name) || p.kind === 'star' || p.kind === 'kwstar') continue;
            if ((call.star && p.kind === 'pos') || !splat) {
              changed = setParam(k, p.name, null) || changed;
              continue;
            }
            let v: Vals = new Set();
            if (splat.has(p.name)) v = union(v, splat.get(p.name)!);
            v = union(v, p.def ? evalDefault(fn, p) : splat.has(p.name) ? new Set() : null);
            changed = setParam(k, p.name, v) || changed;
          }
          if (!splat) {
            if (kwExtra.get(k) !== null) changed = true;
            kwExtra.set(k, null);
          } else {
            const kx = kwExtra.get(k);
            if (kx) {
              for (const [n, v] of splat) {
                if (ps.some((p) => p.name === n)) continue;
                changed = grow(kx, n, v) || changed;
              }
            }
          }
        }
      }
    }
    if (!changed) break;
    if (round >= 40) return []; // no fixpoint in time: prune nothing
  }

  // the prunes: dead code of reachable functions that reads definitions (that is what
  // shrinks the closure); bodies that only raise or pass stay as they are
  const prunes: ValuePrune[] = [];
  const readsDefs = (mod: CorpusModule, stmt: number, a: number, b: number): boolean =>
    mod.facts.statements[stmt].refs.some((r) => {
      if (r.start < a || r.start >= b) return false;
      const { targets } = resolveChain(resolver, mod, r, r.attrs ?? []);
      return targets.some((t) => t.kind === 'def');
    });
  for (const f of fns) {
    const fp = finalPrunes.get(fnKey(f));
    for (const { site, part } of fp?.conds ?? []) {
      const [start, end] = site[part];
      if (!readsDefs(f.mod, f.fn.stmt, start, end)) continue;
      const what = `${part === 'body' ? 'true' : 'false'} side of if-expression ${site.testText}`;
      const [a, b] = site.lines[part];
      // an expression that raises (a statement cannot stand there, nor a comment: the
      // line may go on): throwing into a fresh generator raises at once
      prunes.push({
        mod: f.mod,
        stmt: f.fn.stmt,
        start,
        end,
        lines: [a, b],
        what,
        text: `(_ for _ in ()).throw(ValueError(${JSON.stringify(`nnrag slim: pruned, not reached with this block's defaults and validated arguments: the ${what} (${f.mod.path}:${a === b ? a : `${a}-${b}`}; the faithful module has it)`)}))`,
      });
    }
    for (const { site, clauses, rest } of fp?.prunes ?? []) {
      for (const c of clauses) {
        if (c.trivial || !readsDefs(f.mod, f.fn.stmt, c.bodyStart, c.bodyEnd)) continue;
        const what = c.kind === 'else' ? `else of if ${site.clauses[0].testText}` : `${c.kind} ${c.testText}`;
        prunes.push({
          mod: f.mod,
          stmt: f.fn.stmt,
          start: c.bodyStart,
          end: c.bodyEnd,
          lines: [c.startLine, c.endLine],
          what,
          text: `raise ValueError(${JSON.stringify(`nnrag slim: branch '${what}' is not reached with this block's defaults and validated arguments and was pruned (restore it from ${f.mod.path}, see the header); the faithful module has it`)})  # nnrag slim: pruned lines ${c.startLine}-${c.endLine}`,
        });
      }
      if (rest && site.rest && readsDefs(f.mod, f.fn.stmt, site.rest.start, site.rest.end)) {
        const what = `after if ${site.clauses[0].testText}`;
        prunes.push({
          mod: f.mod,
          stmt: f.fn.stmt,
          start: site.rest.start,
          end: site.rest.end,
          lines: [site.rest.startLine, site.rest.endLine],
          what,
          text: `raise ValueError(${JSON.stringify(`nnrag slim: the code ${what} is not reached with this block's defaults and validated arguments and was pruned (restore it from ${f.mod.path}, see the header); the faithful module has it`)})  # nnrag slim: pruned lines ${site.rest.startLine}-${site.rest.endLine}`,
        });
      }
    }
  }
  // nested prunes inside an outer one go
  prunes.sort((a, b) => (a.mod === b.mod ? a.start - b.start || b.end - a.end : a.mod.name.localeCompare(b.mod.name)));
  const out: ValuePrune[] = [];
  for (const p of prunes) {
    const last = out[out.length - 1];
    if (last && last.mod === p.mod && p.start < last.end) continue;
    out.push(p);
  }
  return out;
}

/** Equality of two atoms (`==`), null when unknown. */
function eqAtoms(a: string, b: string): boolean | null {
  const simple = (x: string) => x === 'None' || x === 'True' || x === 'False' || x.startsWith('n:') || x.startsWith('s:');
  if (simple(a) && simple(b)) {
    const x = numOf(a);
    const y = numOf(b);
    if (!Number.isNaN(x) && !Number.isNaN(y)) return x === y;
    return a === b;
  }
  if ((a.startsWith('cls:') || a.startsWith('fn:')) && (b.startsWith('cls:') || b.startsWith('fn:') || simple(b))) return a === b;
  if ((b.startsWith('cls:') || b.startsWith('fn:')) && simple(a)) return false;
  return null;
}

/** The number an atom is (a bool is an int, §3.2), NaN when it is none. */
function numOf(a: string): number {
  return a === 'True' ? 1 : a === 'False' ? 0 : a.startsWith('n:') ? Number(a.split(':')[2]) : NaN;
}
/** `<`, `<=`, `>`, `>=` of two numbers (bool is an int, §3.2), null when unknown. */
function orderAtoms(a: string, b: string, op: string): boolean | null {
  const x = numOf(a);
  const y = numOf(b);
  if (Number.isNaN(x) || Number.isNaN(y)) return null;
  return op === '<' ? x < y : op === '<=' ? x <= y : op === '>' ? x > y : op === '>=' ? x >= y : null;
}
/** `a is b` for a class or function atom: the same definition. */
function identityAtoms(a: string, b: string): boolean | null {
  const def = (x: string) => x.startsWith('cls:') || x.startsWith('fn:');
  if (def(a) && def(b)) return a === b;
  if ((def(a) && (b === 'None' || b.startsWith('s:') || b.startsWith('n:'))) || (def(b) && (a === 'None' || a.startsWith('s:') || a.startsWith('n:')))) return false;
  return null;
}

/** The atom of a literal argument text (`None`, `2`, `'relu'`), else an empty set (a
 *  non-literal argument at a call site outside the closure reaches nothing). */
export function literalAtom(text: string): Set<string> {
  const t = text.trim();
  if (t === 'None' || t === 'True' || t === 'False') return new Set([t]);
  if (/^-?\d+$/.test(t)) return new Set([`n:i:${Number(t)}`]);
  if (/^-?(\d+\.\d*|\.\d+|\d+)(e-?\d+)?$/i.test(t)) return new Set([`n:f:${Number(t)}`]);
  const m = /^(['"])((?:(?!\1)[^\\])*)\1$/.exec(t);
  if (m) return new Set([`s:${m[2]}`]);
  return new Set();
}

/** Entry calls of the block from the texts of its call sites: `(64, 128, stride=2)` or a
 *  statement's text with the offset of the call's `(`; literal arguments only. */
export function entryCallFromText(text: string, offset?: number): EntryCall | null {
  const src = offset === undefined ? `f${text}` : text;
  const at = offset === undefined ? 1 : offset;
  const tree = parsePython(src);
  try {
    let node: Node | null = tree.rootNode.descendantForIndex(at, at + 1);
    while (node && node.type !== 'argument_list') node = node.parent;
    if (!node || node.startIndex !== at) return null;
    const call: EntryCall = { positional: [], keywords: [] };
    for (const a of node.namedChildren) {
      if (!a || a.type === 'comment') continue;
      if (a.type === 'keyword_argument') call.keywords.push([a.childForFieldName('name')?.text ?? '', literalAtom(a.childForFieldName('value')?.text ?? '')]);
      else if (a.type === 'list_splat' || a.type === 'dictionary_splat') break;
      else call.positional.push(literalAtom(a.text));
    }
    return call;
  } finally {
    tree.delete();
  }
}

/** The entry call of the arguments a module was validated with ({name: value}, or
 *  {args, kwargs}); JSON values as the harness encodes them (a class or an object is a
 *  string: its qualified name or repr, so an opaque truthy object here). */
export function entryCallFromArgs(args: unknown): EntryCall | null {
  if (!args || typeof args !== 'object') return null;
  const a = args as Record<string, unknown>;
  const atom = (v: unknown): Set<string> => {
    if (v === null) return new Set(['None']);
    if (typeof v === 'boolean') return new Set([v ? 'True' : 'False']);
    // JSON keeps no int/float distinction for integral values (Python's 1.0 reads as 1):
    // such a number is an int or a float of that value
    if (typeof v === 'number') return new Set(Number.isInteger(v) ? [`n:i:${v}`, `n:f:${v}`] : [`n:f:${v}`]);
    if (typeof v === 'string') return new Set([/^[A-Za-z_][\w.]*(\(.*\))?$/s.test(v) && /[.(]/.test(v) ? 'obj' : `s:${v}`]);
    if (Array.isArray(v) || typeof v === 'object') return new Set([Object.keys(v as object).length ? 'obj' : 'empty']);
    return new Set();
  };
  if (Array.isArray(a.args) && a.kwargs && typeof a.kwargs === 'object' && Object.keys(a).length === 2) {
    return { positional: a.args.map(atom), keywords: Object.entries(a.kwargs as object).map(([k, v]) => [k, atom(v)]) };
  }
  return { positional: [], keywords: Object.entries(a).map(([k, v]) => [k, atom(v)]) };
}

/** The item of `sorted` (ordered by start, spans not overlapping) whose [start, end)
 *  holds `pos`, by binary search. */
function spanAt<T>(sorted: readonly T[] | undefined, pos: number, span: (t: T) => { start: number; end: number }): T | undefined {
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
