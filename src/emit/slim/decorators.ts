// Registration decorators (docs/ARCHITECTURE.md "Slim emission"): does a decorator's
// call return the decorated object itself? Established statically from the body of the
// function it calls, in the corpus:
// - `@f`: every return of `f` returns its first parameter, the body cannot fall off
//   its end (its last statement returns), and the parameter is never rebound;
// - `@f(...)` / `@obj.f(...)`: `f` returns a function defined in its own body that has
//   the property above, or, on a path guarded by `if p is not None:`, a parameter `p`
//   whose default is None and that the decorator's call does not pass (the "with or
//   without arguments" decorator idiom: `register_module(name=None, module=None)`);
// - `obj.f` is a method of the class `obj` is an instance of: `obj = C(...)` at module
//   level, `C` a class of the corpus that defines `f` in its body.
// Anything else is 'unknown' and may be proven in the sandbox instead (probe.ts). A
// decorator that wraps (returns another object) is never removed.
//
// A registration call is the same function called directly on the object it registers, as
// a statement (its value dropped): `R.register_module(module=C, name='c')` where `f` has
// the "with or without arguments" shape above and the call passes one of its guarded
// parameters (the path that returns that argument). Like a removed decorator, removing it
// drops only the registration.
import type { Node } from 'web-tree-sitter';
import { parsePython } from '../../parse/parser.js';
import type { Ref } from '../../parse/types.js';
import type { CorpusModule } from '../../resolve/corpus.js';
import type { Resolver } from '../../resolve/names.js';
import type { CallStatementSite, DecoratorSite } from './syntax.js';

export type DecoratorVerdict = 'identity' | 'unknown';

export type FnShape = {
  params: { name: string; noneDefault: boolean }[];
  /** the parameter every return path returns (never rebound), if any */
  identityParam: string | null;
  factory: { guardedParams: string[]; innerIdentity: boolean; ok: boolean };
};

/** Function shapes by statement (and method): analysis.ts owns one per resolver. */
export type ShapeMemo = Map<string, FnShape | null>;

/** The verdict for one decorator of a statement of `mod`. */
export function decoratorVerdict(
  resolver: Resolver,
  mod: CorpusModule,
  site: DecoratorSite,
  shapes: ShapeMemo,
): DecoratorVerdict {
  const st = mod.facts.statements[site.stmt];
  const ref = st.refs.find((r) => r.start === site.calleeStart);
  if (!ref) return 'unknown';
  const fn = calleeFunction(resolver, mod, ref, site, shapes);
  if (!fn) return 'unknown';
  const { shape, method } = fn;
  const own = method ? shape.params.slice(1) : shape.params;
  if (!site.call) return own.length >= 1 && shape.identityParam === own[0].name ? 'identity' : 'unknown';
  if (site.call.star || !shape.factory.ok || !shape.factory.innerIdentity) return 'unknown';
  // every guarded parameter must be left at its None default by the call
  for (const p of shape.factory.guardedParams) {
    const i = own.findIndex((q) => q.name === p);
    if (i < 0 || !own[i].noneDefault || i < site.call.positional || site.call.keywords.includes(p)) return 'unknown';
  }
  return 'identity';
}

/** Is a call statement a registration call (see the header)? */
export function registrationCall(
  resolver: Resolver,
  mod: CorpusModule,
  site: CallStatementSite,
  shapes: ShapeMemo,
): boolean {
  if (site.call.star) return false;
  const ref = mod.facts.statements[site.stmt].refs.find((r) => r.start === site.calleeStart);
  if (!ref) return false;
  const fn = calleeFunction(resolver, mod, ref, site, shapes);
  if (!fn) return false;
  const { shape, method } = fn;
  const own = method ? shape.params.slice(1) : shape.params;
  if (!shape.factory.ok || !shape.factory.guardedParams.length) return false;
  return shape.factory.guardedParams.some((p) => {
    const i = own.findIndex((q) => q.name === p);
    return i >= 0 && own[i].noneDefault && (i < site.call.positional || site.call.keywords.includes(p));
  });
}

/** The function a decorator's callee names: a top-level def, or a method of the class of
 *  a module-level instance (`MODELS = Registry(...)`, `MODELS.register_module`). */
function calleeFunction(
  resolver: Resolver,
  mod: CorpusModule,
  ref: Ref,
  site: { calleeEnd: number },
  shapes: ShapeMemo,
): { shape: FnShape; method: boolean } | null {
  const { targets, consumed } = resolver.resolveRef(mod, ref);
  if (targets.length !== 1 || targets[0].kind !== 'def') return null;
  const t = targets[0];
  const attrs = ref.attrs ?? [];
  const end = consumed ? ref.attrEnds![consumed - 1] : ref.end;
  const rest = attrs.slice(consumed);
  if (end === site.calleeEnd && rest.length === 0) {
    if (t.stmts.length !== 1) return null;
    const shape = functionShape(resolver, t.module, t.stmts[0], null, t.name, shapes);
    return shape ? { shape, method: false } : null;
  }
  if (rest.length !== 1 || t.stmts.length !== 1 || (ref.attrEnds?.[attrs.length - 1] ?? -1) !== site.calleeEnd)
    return null;
  // obj.method: obj = C(...) at module level, C a class of the corpus
  const ost = t.module.facts.statements[t.stmts[0]];
  if (ost.kind !== 'expression_statement' || ost.binds.length !== 1) return null;
  const src = resolver.corpus.source(t.module);
  const m = new RegExp(`^${t.name}\\s*(?::[^=]*)?=\\s*([A-Za-z_][\\w.]*)\\s*\\(`).exec(src.slice(ost.start, ost.end));
  if (!m) return null;
  const calleeEnd = ost.start + m[0].replace(/\s*\($/, '').length;
  const clsRef = ost.refs.find((r) => r.start === calleeEnd - m[1].length);
  if (!clsRef) return null;
  const c = resolver.resolveRef(t.module, clsRef);
  if (c.targets.length !== 1 || c.targets[0].kind !== 'def' || c.consumed !== (clsRef.attrs?.length ?? 0)) return null;
  const ct = c.targets[0];
  if (ct.stmts.length !== 1 || !ct.module.facts.classes.some((k) => k.name === ct.name && k.stmt === ct.stmts[0]))
    return null;
  const shape = functionShape(resolver, ct.module, ct.stmts[0], rest[0], rest[0], shapes);
  return shape ? { shape, method: true } : null;
}

/** The shape of a function defined by top-level statement `stmt` (or of `method` in the
 *  class that statement defines). */
function functionShape(
  resolver: Resolver,
  mod: CorpusModule,
  stmt: number,
  method: string | null,
  name: string,
  shapes: ShapeMemo,
): FnShape | null {
  const key = `${mod.repo}\0${mod.name}\0${stmt}\0${method ?? ''}`;
  if (shapes.has(key)) return shapes.get(key)!;
  let out: FnShape | null = null;
  const st = mod.facts.statements[stmt];
  const text = resolver.corpus.source(mod).slice(st.start, st.end);
  const tree = parsePython(text);
  try {
    let def: Node | null = unwrap(tree.rootNode.namedChildren.find((x) => x && x.type !== 'comment') ?? null);
    if (method && def?.type === 'class_definition') {
      const body = def.childForFieldName('body');
      def = null;
      for (const c of body?.namedChildren ?? []) {
        const d = unwrap(c);
        if (d?.type === 'function_definition' && d.childForFieldName('name')?.text === method) {
          // a decorated method (staticmethod, a wrapper) is not read
          if (c!.type === 'decorated_definition') def = null;
          else def = d;
        }
      }
    } else if (method || def?.type !== 'function_definition' || def.childForFieldName('name')?.text !== name)
      def = null;
    // a decorated def may be wrapped by its own decorators
    if (def && def.parent?.type === 'decorated_definition') def = null;
    if (def) out = shapeOf(def);
  } finally {
    tree.delete();
  }
  shapes.set(key, out);
  return out;
}

function unwrap(n: Node | null): Node | null {
  if (n?.type === 'decorated_definition') return n.childForFieldName('definition');
  return n;
}

function shapeOf(def: Node): FnShape {
  const params = paramsOf(def);
  const body = def.childForFieldName('body');
  const identityParam = body ? (params.map((p) => p.name).find((p) => isIdentity(body, p)) ?? null) : null;
  const factory = { guardedParams: [] as string[], innerIdentity: false, ok: !!body };
  if (body) {
    const inner = new Map<string, Node>();
    for (const c of body.namedChildren)
      if (c?.type === 'function_definition') inner.set(c.childForFieldName('name')?.text ?? '', c);
    const rets = returnsOf(body);
    if (!rets.length || !endsInReturn(body)) factory.ok = false;
    let sawInner = false;
    for (const r of rets) {
      const v = r.namedChildren.find((x) => x && x.type !== 'comment');
      if (v?.type !== 'identifier') {
        factory.ok = false;
        continue;
      }
      const g = inner.get(v.text);
      if (g) {
        const gp = paramsOf(g);
        const gb = g.childForFieldName('body');
        if (!gb || !gp.length || !isIdentity(gb, gp[0].name) || rebound(body, v.text, g)) factory.ok = false;
        else sawInner = true;
        continue;
      }
      // `if p is not None: … return p`
      const guard = r.parent?.parent;
      const cond = guard?.type === 'if_statement' ? guard.childForFieldName('condition') : null;
      if (
        cond &&
        r.parent?.type === 'block' &&
        guard!.childForFieldName('consequence')?.startIndex === r.parent.startIndex &&
        new RegExp(`^${v.text}\\s+is\\s+not\\s+None$`).test(cond.text) &&
        params.some((p) => p.name === v.text)
      ) {
        factory.guardedParams.push(v.text);
        continue;
      }
      factory.ok = false;
    }
    factory.innerIdentity = sawInner;
  }
  return { params, identityParam, factory };
}

function paramsOf(def: Node): { name: string; noneDefault: boolean }[] {
  const out: { name: string; noneDefault: boolean }[] = [];
  for (const p of def.childForFieldName('parameters')?.namedChildren ?? []) {
    if (!p) continue;
    if (p.type === 'identifier') out.push({ name: p.text, noneDefault: false });
    else if (p.type === 'typed_parameter') {
      const id = p.namedChildren.find((x) => x?.type === 'identifier');
      if (id) out.push({ name: id.text, noneDefault: false });
    } else if (p.type === 'default_parameter' || p.type === 'typed_default_parameter') {
      const n = p.childForFieldName('name');
      const v = p.childForFieldName('value');
      if (n) out.push({ name: n.text, noneDefault: v?.type === 'none' });
    }
  }
  return out;
}

/** Every return (outside nested functions, lambdas and classes) returns `param`, the body
 *  ends in a return, and `param` is never rebound. */
function isIdentity(body: Node, param: string): boolean {
  if (!param) return false;
  const rets = returnsOf(body);
  if (!rets.length || !endsInReturn(body)) return false;
  for (const r of rets) {
    const v = r.namedChildren.find((x) => x && x.type !== 'comment');
    if (v?.type !== 'identifier' || v.text !== param) return false;
  }
  return !rebound(body, param, null);
}

function returnsOf(n: Node, out: Node[] = []): Node[] {
  for (const c of n.namedChildren) {
    if (!c) continue;
    if (c.type === 'return_statement') out.push(c);
    else if (
      c.type !== 'function_definition' &&
      c.type !== 'class_definition' &&
      c.type !== 'lambda' &&
      c.type !== 'decorated_definition'
    )
      returnsOf(c, out);
  }
  return out;
}

function endsInReturn(body: Node): boolean {
  const stmts = body.namedChildren.filter((x) => x && x.type !== 'comment');
  const last = stmts[stmts.length - 1];
  return last?.type === 'return_statement';
}

/** Is `name` a target of an assignment, loop, `with … as`, walrus, import or
 *  `global`/`nonlocal` in `n` (outside nested scopes, `skip` excluded)? */
function rebound(n: Node, name: string, skip: Node | null): boolean {
  for (const c of n.namedChildren) {
    if (!c || (skip && c.startIndex === skip.startIndex)) continue;
    if (c.type === 'function_definition' || c.type === 'class_definition' || c.type === 'lambda') {
      if (c.type !== 'lambda' && c.childForFieldName('name')?.text === name) return true;
      continue;
    }
    const target =
      c.type === 'assignment' || c.type === 'augmented_assignment'
        ? c.childForFieldName('left')
        : c.type === 'for_statement'
          ? c.childForFieldName('left')
          : c.type === 'named_expression'
            ? c.childForFieldName('name')
            : c.type === 'as_pattern_target'
              ? c
              : null;
    if (target && bindsName(target, name)) return true;
    if (
      (c.type === 'global_statement' || c.type === 'nonlocal_statement' || c.type.startsWith('import')) &&
      new RegExp(`\\b${name}\\b`).test(c.text)
    )
      return true;
    if (rebound(c, name, skip)) return true;
  }
  return false;
}

/** Does an assignment target bind `name` (not an attribute or item of it)? */
function bindsName(t: Node, name: string): boolean {
  if (t.type === 'identifier') return t.text === name;
  if (
    [
      'pattern_list',
      'tuple_pattern',
      'list_pattern',
      'tuple',
      'list',
      'list_splat_pattern',
      'parenthesized_expression',
      'as_pattern_target',
    ].includes(t.type)
  ) {
    return t.namedChildren.some((c) => !!c && bindsName(c, name));
  }
  return false;
}
