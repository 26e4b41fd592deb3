// Per-module facts of slim's value analysis (values.ts): what the functions and classes
// of one module hold for the evaluation (parameters and defaults, assignments, `if` sites and
// conditional expressions, calls, returns, `self.x = …`, `**kwargs` additions, confined
// locals) and module-wide facts (callee spans, attribute assignments through other
// receivers, type arguments, class-level values, properties), read off one parse tree.
import type { Node } from 'web-tree-sitter';
import type { CorpusModule } from '../../resolve/corpus.js';
import { TOP_E, toExpr, type CallExpr, type Expr } from './expr.js';

export interface Clause {
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

export interface IfSite {
  start: number;
  clauses: Clause[];
  /** the statements after the `if` in its block */
  rest: { start: number; end: number; startLine: number; endLine: number } | null;
}

/** A conditional expression `body if test else orelse` (Language Reference §6.13). */
export interface CondSite {
  /** where the test starts (the body starts where the expression does, and may be the
   *  range pruned already) */
  start: number;
  test: Expr;
  testText: string;
  body: [number, number];
  orelse: [number, number];
  lines: { body: [number, number]; orelse: [number, number] };
}

export interface Assign {
  pos: number;
  /** where the statement ends: it binds after its right-hand side ran (a read inside
   *  the right-hand side sees the value before) */
  end?: number;
  /** null: a form not evaluated (tuple target, augmented, `for`, `with … as`, …) */
  value: Expr | null;
}

export interface Param {
  name: string;
  kind: 'pos' | 'kwonly' | 'star' | 'kwstar';
  def: Expr | null;
}

export interface FnFacts {
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
  calls: CallExpr[];
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

export interface ModFacts {
  fns: FnFacts[];
  /** attributes assigned through a receiver other than `self` (`m.x = …`), via
   *  augmented/tuple targets, or by `setattr` (`*`: a computed name; `*nn`: one of an
   *  nn.Module's, by `add_module`/`register_buffer`/…): where; their
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
  allCalls: CallExpr[];
  /** methods defined under a property-like decorator (their name as an attribute is TOP) */
  properties: Set<string>;
  /** key lookups `d[k]`, `d.get(k, …)`, `d.pop(k, …)` whose `d` is a name or attribute chain
   *  (`pos`: where `d` starts); `direct`: in the body of one function, not a nested scope */
  lookups: { pos: number; obj: Expr; key: Expr; direct: boolean }[];
}

const SCOPES = new Set(['function_definition', 'class_definition', 'lambda']);
const LOOPS = new Set(['for_statement', 'while_statement']);
const TRIVIAL = new Set(['raise_statement', 'pass_statement', 'assert_statement', 'comment']);

/** The facts of a module (`root`: its parse tree; `lineOf`: the 1-based line of an offset). */
export function moduleFacts(mod: CorpusModule, root: Node, lineOf: (i: number) => number): ModFacts {
  const stmts = mod.facts.statements;
  const stmtAt = (offset: number): number => stmts.findIndex((s) => s.start <= offset && offset < s.end);
  const out: ModFacts = {
    fns: [],
    otherAttrAssigns: [],
    typeArgs: [],
    classAttrs: new Map(),
    attrValues: [],
    calleeSpans: new Map(),
    allCalls: [],
    properties: new Set(),
    lookups: [],
  };
  for (const top of root.namedChildren) {
    if (!top) continue;
    const d = defOf(top);
    if (!d) continue;
    const stmt = stmtAt(top.startIndex);
    if (d.def.type === 'function_definition') out.fns.push(fnFacts(d.def, d.decorators, stmt, null, lineOf));
    else {
      const cname = d.def.childForFieldName('name')?.text ?? '';
      const attrs = new Map<string, Expr | null>();
      out.classAttrs.set(cname, attrs);
      for (const m of d.def.childForFieldName('body')?.namedChildren ?? []) {
        if (!m) continue;
        const md = defOf(m);
        if (md?.def.type === 'function_definition') {
          out.fns.push(fnFacts(md.def, md.decorators, stmt, cname, lineOf));
          if (md.decorators.some((t) => /property|\.setter|cached_property/.test(t)))
            out.properties.add(md.def.childForFieldName('name')?.text ?? '');
        } else if (m.type === 'expression_statement') {
          const a = m.namedChildren[0];
          if (a?.type === 'assignment') {
            const l = a.childForFieldName('left');
            if (l?.type === 'identifier')
              attrs.set(l.text, a.childForFieldName('right') ? toExpr(a.childForFieldName('right')) : null);
          }
        }
      }
    }
  }
  walkModule(root, out);
  return out;
}

function defOf(n: Node): { def: Node; decorators: string[] } | null {
  if (n.type === 'decorated_definition') {
    const def = n.childForFieldName('definition');
    return def ? { def, decorators: n.namedChildren.filter((d) => d?.type === 'decorator').map((d) => d!.text) } : null;
  }
  return n.type === 'function_definition' || n.type === 'class_definition' ? { def: n, decorators: [] } : null;
}

/** Module-wide: callee offsets, attribute assignments through other receivers, attribute
 *  values, type arguments. */
function walkModule(root: Node, out: ModFacts): void {
  const walk = (n: Node, fnDepth: number) => {
    lookup(n, fnDepth, out);
    if (n.type === 'call') {
      const fn = n.childForFieldName('function');
      if (fn) out.calleeSpans.set(fn.startIndex, fn.endIndex);
      const e = toExpr(n);
      if (e.k === 'call') out.allCalls.push(e);
    } else if (n.type === 'assignment' || n.type === 'augmented_assignment') {
      const l = n.childForFieldName('left');
      const targets = l
        ? l.type === 'pattern_list' || l.type === 'tuple_pattern' || l.type === 'list_pattern'
          ? l.namedChildren
          : [l]
        : [];
      for (const t of targets) {
        if (t?.type !== 'attribute') continue;
        const obj = t.childForFieldName('object');
        const attr = t.childForFieldName('attribute')?.text ?? '';
        if (
          obj?.type !== 'identifier' ||
          obj.text !== 'self' ||
          n.type === 'augmented_assignment' ||
          targets.length > 1
        )
          out.otherAttrAssigns.push({ attr, pos: n.startIndex });
      }
    } else if (n.type === 'attribute') {
      const p = n.parent;
      const called =
        p?.type === 'call' &&
        p.childForFieldName('function')?.startIndex === n.startIndex &&
        p.childForFieldName('function')?.endIndex === n.endIndex;
      const target = p?.type === 'assignment' && p.childForFieldName('left')?.startIndex === n.startIndex;
      if (!called && !target)
        out.attrValues.push({ attr: n.childForFieldName('attribute')?.text ?? '', pos: n.startIndex });
    }
    // setattr(obj, 'x', v): any attribute may change
    if (n.type === 'call') {
      const fn = n.childForFieldName('function')?.text;
      const args =
        n.childForFieldName('arguments')?.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment') ?? [];
      // nn.Module's register_buffer / register_parameter / add_module / register_module
      // bind the attribute they name
      const m = /(?:^|\.)(register_buffer|register_parameter|add_module|register_module)$/.exec(fn ?? '');
      if (m) {
        const name = args[0]?.type === 'string' ? toExpr(args[0]) : null;
        // `*nn`: some attribute of an nn.Module (a plain class has none of these methods)
        out.otherAttrAssigns.push({
          attr: name?.k === 'lit' && name.atom.startsWith('s:') ? name.atom.slice(2) : '*nn',
          pos: n.startIndex,
        });
      }
      if (fn === 'setattr') {
        const name = args[1]?.type === 'string' ? toExpr(args[1]) : null;
        out.otherAttrAssigns.push({
          attr: name?.k === 'lit' && name.atom.startsWith('s:') ? name.atom.slice(2) : '*',
          pos: n.startIndex,
        });
      }
      if ((fn === 'isinstance' || fn === 'issubclass') && args[1])
        out.typeArgs.push([args[1].startIndex, args[1].endIndex]);
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
    const depth = n.type === 'function_definition' || n.type === 'lambda' ? fnDepth + 1 : fnDepth;
    for (const c of n.namedChildren) if (c) walk(c, depth);
  };
  walk(root, 0);
}

/** ModFacts.lookups: `d[k]` (Language Reference §6.3.2 subscriptions) and `d.get(k, …)` /
 *  `d.pop(k, …)` of a name or attribute chain `d` */
function lookup(n: Node, fnDepth: number, out: ModFacts): void {
  let obj: Node | null = null;
  let key: Node | null | undefined = null;
  if (n.type === 'subscript') {
    obj = n.childForFieldName('value');
    const keys = n.childrenForFieldName('subscript').filter((x): x is Node => !!x && x.type !== 'comment');
    key = keys.length === 1 ? keys[0] : null;
  } else if (n.type === 'call') {
    const fn = n.childForFieldName('function');
    const meth = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : '';
    if (fn?.type === 'attribute' && (meth === 'get' || meth === 'pop')) {
      obj = fn.childForFieldName('object');
      key = n.childForFieldName('arguments')?.namedChildren.find((x) => x && x.type !== 'comment');
      if (key?.type === 'keyword_argument' || key?.type === 'list_splat' || key?.type === 'dictionary_splat')
        key = null;
    }
  }
  if (!obj || (obj.type !== 'identifier' && obj.type !== 'attribute')) return;
  out.lookups.push({ pos: obj.startIndex, obj: toExpr(obj), key: key ? toExpr(key) : TOP_E, direct: fnDepth === 1 });
}

/** The facts of a function before its body is read: where it is, its parameters, and
 *  empty lists and maps for what the body adds. */
export function newFnFacts(
  at: Pick<FnFacts, 'stmt' | 'cls' | 'name' | 'start' | 'end' | 'bodyStart' | 'params' | 'bound'>,
): FnFacts {
  return {
    ...at,
    assigns: new Map(),
    loops: [],
    ifs: [],
    conds: [],
    calls: [],
    selfAssigns: [],
    returns: [],
    fallsOff: true,
    kwAdds: [],
    mutated: new Map(),
    confined: new Map(),
  };
}

/** The parameters of function definition `def`, in order, with their kinds (Language
 *  Reference 8.7: `*args` and a bare `*` start the keyword-only ones, `/` ends the
 *  positional-only ones) and default expressions. */
function paramsOf(def: Node): Param[] {
  const params: Param[] = [];
  let kwonly = false;
  for (const p of def.childForFieldName('parameters')?.namedChildren ?? []) {
    if (!p || p.type === 'comment') continue;
    if (p.type === 'list_splat_pattern' || p.type === 'keyword_separator') {
      if (p.type === 'list_splat_pattern')
        params.push({ name: p.namedChildren[0]?.text ?? '', kind: 'star', def: null });
      kwonly = true;
      continue;
    }
    if (p.type === 'positional_separator') continue;
    if (p.type === 'dictionary_splat_pattern') {
      params.push({ name: p.namedChildren[0]?.text ?? '', kind: 'kwstar', def: null });
      continue;
    }
    const isDefault = p.type === 'default_parameter' || p.type === 'typed_default_parameter';
    const pname =
      p.type === 'identifier' ? p.text : (p.childForFieldName('name')?.text ?? p.namedChildren[0]?.text ?? '');
    params.push({
      name: pname,
      kind: kwonly ? 'kwonly' : 'pos',
      def: isDefault ? toExpr(p.childForFieldName('value')) : null,
    });
  }
  return params;
}

function fnFacts(
  def: Node,
  decorators: string[],
  stmt: number,
  cls: string | null,
  lineOf: (i: number) => number,
): FnFacts {
  const name = def.childForFieldName('name')?.text ?? '';
  const params = paramsOf(def);
  const staticm = decorators.some((d) => /staticmethod/.test(d));
  const body = def.childForFieldName('body');
  const f = newFnFacts({
    stmt,
    cls,
    name,
    start: def.startIndex,
    end: def.endIndex,
    bodyStart: body?.startIndex ?? def.endIndex,
    params,
    bound: !!cls && !staticm,
  });
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
      if (obj?.type === 'identifier' && obj.text === 'self')
        f.selfAssigns.push({ attr: t.childForFieldName('attribute')?.text ?? '', pos, value });
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
          const plain = els.every((x) => x.type === 'identifier');
          for (let i = 0; i < els.length; i++)
            bindTarget(
              els[i],
              plain ? { k: 'unpack', value: rv, index: i, n: els.length } : null,
              n.startIndex,
              n.endIndex,
            );
        } else
          bindTarget(
            l,
            l?.type === 'identifier' || l?.type === 'attribute' ? (r ? toExpr(r) : null) : null,
            n.startIndex,
            n.endIndex,
          );
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
        for (const c of n.namedChildren)
          if (c?.type === 'as_pattern')
            bindTarget(c.namedChildren[c.namedChildren.length - 1] ?? null, null, n.startIndex);
        break;
      case 'import_statement':
      case 'import_from_statement':
        for (const c of n.namedChildren) {
          if (c?.type === 'aliased_import')
            assign(c.childForFieldName('alias')?.text ?? '', { pos: n.startIndex, value: null });
          else if (
            c?.type === 'dotted_name' &&
            n.type === 'import_from_statement' &&
            c.startIndex !== n.childForFieldName('module_name')?.startIndex
          )
            assign(c.text, { pos: n.startIndex, value: null });
          else if (c?.type === 'dotted_name' && n.type === 'import_statement')
            assign(c.text.split('.')[0], { pos: n.startIndex, value: null });
        }
        break;
      case 'call': {
        const e = toExpr(n);
        if (e.k === 'call') f.calls.push(e);
        break;
      }
      case 'if_statement':
        f.ifs.push(ifSite(n, lineOf));
        break;
      case 'conditional_expression': {
        const parts = n.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
        if (parts.length === 3) {
          const span = (x: Node): [number, number] => [x.startIndex, x.endIndex];
          const lines = (x: Node): [number, number] => [lineOf(x.startIndex), lineOf(x.endIndex)];
          f.conds.push({
            start: parts[1].startIndex,
            test: toExpr(parts[1]),
            testText: parts[1].text.replace(/\s+/g, ' '),
            body: span(parts[0]),
            orelse: span(parts[2]),
            lines: { body: lines(parts[0]), orelse: lines(parts[2]) },
          });
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
      const meth = fn?.type === 'attribute' ? (fn.childForFieldName('attribute')?.text ?? '') : '';
      if (
        fn?.type === 'attribute' &&
        fn.childForFieldName('object')?.text === kwName &&
        /^(setdefault|update|__setitem__)$/.test(meth)
      ) {
        // `kwargs.setdefault('k', v)` adds k; `update` adds what it is given
        const a0 = n.childForFieldName('arguments')?.namedChildren.find((x) => x && x.type !== 'comment');
        f.kwAdds.push({
          pos: n.startIndex,
          key: meth !== 'update' && a0?.type === 'string' ? a0.text.slice(1, -1) : null,
        });
      }
    }
    if (n.type === 'call') {
      const fn = n.childForFieldName('function');
      if (
        fn?.type === 'attribute' &&
        /^(setdefault|update|__setitem__|clear)$/.test(fn.childForFieldName('attribute')?.text ?? '')
      )
        mutate(fn.childForFieldName('object')?.text ?? '', n.startIndex);
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
  else if (n.type === 'parenthesized_expression')
    directValues(
      n.namedChildren.find((x) => x && x.type !== 'comment'),
      out,
    );
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
  const names = new Set([
    ...f.params.filter((p) => p.kind === 'pos' || p.kind === 'kwonly').map((p) => p.name),
    ...f.assigns.keys(),
  ]);
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
      const field = (name: string) =>
        p?.childForFieldName(name)?.startIndex === n.startIndex && p?.childForFieldName(name)?.endIndex === n.endIndex;
      if (nested) escapes.add(x);
      else if (p?.type === 'attribute' && field('attribute')) {
        // `obj.x`: not the name
      } else if (p?.type === 'keyword_argument' && field('name')) {
        // `f(x=…)`: not the name
      } else if (p?.type === 'assignment' && field('left')) {
        // a binding, not a read
      } else if (p?.type === 'call' && field('function')) called.add(x);
      else if (
        p?.type === 'comparison_operator' &&
        p.namedChildren.length === 2 &&
        p.namedChildren.some((c) => c?.type === 'none') &&
        p.children.some((c) => c && !c.isNamed && c.type === 'is')
      ) {
        // `x is None` / `x is not None`
      } else if (
        p?.type === 'not_operator' ||
        ((p?.type === 'if_statement' || p?.type === 'elif_clause') && field('condition'))
      ) {
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
      if (a.type === 'assignment')
        return a.childForFieldName('left')?.type === 'identifier' && a.childForFieldName('left')?.text === x;
      if (a.type !== 'boolean_operator' && a.type !== 'conditional_expression' && a.type !== 'parenthesized_expression')
        return false;
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

function ifSite(n: Node, lineOf: (i: number) => number): IfSite {
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
      trivial: stmtsOf.every(
        (s) => TRIVIAL.has(s.type) || (s.type === 'expression_statement' && s.namedChildren[0]?.type === 'string'),
      ),
    });
  };
  clause('if', n, n.childForFieldName('condition'), n.childForFieldName('consequence'));
  for (const alt of n.childrenForFieldName('alternative')) {
    if (!alt) continue;
    if (alt.type === 'elif_clause')
      clause('elif', alt, alt.childForFieldName('condition'), alt.childForFieldName('consequence'));
    else clause('else', alt, null, alt.childForFieldName('body'));
  }
  let rest: IfSite['rest'] = null;
  const sibs: Node[] = [];
  for (let s = n.nextNamedSibling; s; s = s.nextNamedSibling) if (s.type !== 'comment') sibs.push(s);
  if (sibs.length)
    rest = {
      start: sibs[0].startIndex,
      end: sibs[sibs.length - 1].endIndex,
      startLine: lineOf(sibs[0].startIndex),
      endLine: lineOf(sibs[sibs.length - 1].endIndex),
    };
  return { start: n.startIndex, clauses, rest };
}
