// Expressions of slim's value analysis (values.ts): a compact tree of the Python
// expressions the analysis evaluates (Language Reference §6), built from tree-sitter nodes
// (which do not outlive their parse). Anything else is `top` (unknown).
import type { Node } from 'web-tree-sitter';

/** A compact expression tree (tree-sitter nodes do not outlive the parse). */
export type Expr =
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

/** A call expression. */
export type CallExpr = Expr & { k: 'call' };

export const TOP_E: Expr = { k: 'top' };

export function toExpr(n: Node | null | undefined): Expr {
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
        if (a.type === 'keyword_argument')
          out.kw.push([a.childForFieldName('name')?.text ?? '', toExpr(a.childForFieldName('value'))]);
        else if (a.type === 'list_splat') out.star = true;
        else if (a.type === 'dictionary_splat')
          out.kwsplat.push(toExpr(a.namedChildren.find((x) => x && x.type !== 'comment')));
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
        if (!k || k.k !== 'lit' || !k.atom.startsWith('s:'))
          return { k: 'coll', atom: items.length ? 'obj:dict' : 'empty:dict' };
        pairs.push([k.atom.slice(2), toExpr(it.childForFieldName('value'))]);
      }
      return { k: 'dict', items: pairs };
    }
    case 'conditional_expression': {
      const parts = n.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
      return parts.length === 3
        ? { k: 'cond', body: toExpr(parts[0]), test: toExpr(parts[1]), orelse: toExpr(parts[2]) }
        : TOP_E;
    }
    default:
      return TOP_E;
  }
}
