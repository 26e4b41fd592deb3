// What of a Python file a harvest step can have seen (issue 27: a one-file edit re-runs
// only the steps it can change). A step forks from the repository's zygote, where every
// module's top level ran at import; in the step, only the functions that ran could do
// anything more. So the step depends on a module it read through:
//   - its skeleton: the file without comments (they are not tokens, Language Reference
//     §2.1.3), blank lines and trailing spaces, and without the bodies of the functions
//     defined at module or class level that no decorator receives. What stays is every
//     top-level statement, class body, `def` line (its parameters' defaults and
//     annotations are evaluated at definition, §8.7), docstring, and the whole of a
//     decorated function (a decorator receives the function object and may read its code:
//     torch.jit.script compiles its source);
//   - the bodies of the functions that ran: in the step, or in the zygote's import (a
//     function a decorator or a top-level statement called; reads.py records both by
//     co_qualname).
// A function nested in one of those bodies belongs to it (`f.<locals>.g` is `f`'s body); a
// lambda or comprehension at module or class level belongs to the skeleton.
// partDigest gives the digest of the skeleton with the bodies of the names given; a
// stored step's answer is reused while it is unchanged (witness/harvest.ts reusable).
import { createHash } from 'node:crypto';
import { parsePython } from '../../parse/parser.js';
import { syntaxTree, type SyntaxNode } from '../../parse/syntax.js';

export interface CodeParts {
  /** the skeleton, normalized */
  skeleton: string;
  /** qualified name (class chain and name) → the bodies defined under it, normalized */
  bodies: Map<string, string[]>;
}

/** The skeleton and the cut function bodies of a Python source; null when it does not
 *  parse (its parts cannot be told apart: the whole file counts). Call after `await
 *  initParser()`. */
export function codeParts(source: string): CodeParts | null {
  const tree = parsePython(source);
  try {
    if (tree.rootNode.hasError) return null;
    const root = syntaxTree(tree, source);
    const comments = commentRanges(root);
    const cuts: { from: number; to: number; name: string }[] = [];
    // scope: the class chain of a module- or class-level definition; null inside a
    // function that stays whole (its nested definitions stay with it)
    const walk = (n: SyntaxNode, scope: string[] | null, cut: boolean): void => {
      for (const c of n.namedChildren) {
        if (c.type === 'comment') continue;
        if (c.type === 'class_definition') {
          const name = c.childForFieldName('name')?.text;
          walk(c, scope && name ? [...scope, name] : null, cut);
        } else if (c.type === 'function_definition') {
          const name = c.childForFieldName('name')?.text;
          const body = c.childForFieldName('body');
          if (!cut && scope && name && body && n.type !== 'decorated_definition') {
            // the docstring stays in the skeleton (`__doc__` is read without running the body)
            const first = body.namedChildren[0];
            const doc =
              first?.type === 'expression_statement' &&
              first.namedChildren.length === 1 &&
              first.namedChildren[0].type === 'string'
                ? first.endIndex
                : body.startIndex;
            cuts.push({ from: doc, to: body.endIndex, name: [...scope, name].join('.') });
            walk(c, null, true);
          } else walk(c, null, cut);
        } else walk(c, scope, cut);
      }
    };
    walk(root, [], false);
    // the text of [from, to) less the comments and the cut ranges inside it, normalized
    const piece = (from: number, to: number, skip: { from: number; to: number }[]): string => {
      const holes = [
        ...comments.filter(([s, e]) => s >= from && e <= to).map(([s, e]) => ({ from: s, to: e })),
        ...skip,
      ].sort((a, b) => a.from - b.from);
      let out = '';
      let at = from;
      for (const h of holes) {
        if (h.from < at) continue;
        out += source.slice(at, h.from);
        at = h.to;
      }
      out += source.slice(at, to);
      return normalize(out);
    };
    const bodies = new Map<string, string[]>();
    for (const c of cuts) {
      const list = bodies.get(c.name) ?? [];
      list.push(piece(c.from, c.to, []));
      bodies.set(c.name, list);
    }
    return { skeleton: piece(0, source.length, cuts), bodies };
  } finally {
    tree.delete();
  }
}

/** Lines without trailing spaces, blank lines dropped (a comment's line left blank too). */
function normalize(text: string): string {
  return text
    .split(/\r?\n|\r/)
    .map((l) => l.trimEnd())
    .filter((l) => l.length > 0)
    .join('\n');
}

/** The body a code object belongs to, from its co_qualname: its names up to the first
 *  `<…>` (`<locals>`, `<lambda>`, `<listcomp>`); '' at module level (the skeleton). */
export function bodyOf(qualname: string): string {
  const parts = qualname.split('.');
  const at = parts.findIndex((p) => p.startsWith('<'));
  return (at < 0 ? parts : parts.slice(0, at)).join('.');
}

/** The digest of a file's skeleton with the bodies of the functions named (co_qualnames;
 *  names with no cut body are in the skeleton already). */
export function partDigest(parts: CodeParts, names: readonly string[]): string {
  const h = createHash('sha256').update(parts.skeleton).update('\0\0');
  for (const b of [...new Set(names.map(bodyOf))].sort()) {
    const texts = parts.bodies.get(b);
    if (texts) h.update(b + '\0' + texts.join('\0') + '\0\0');
  }
  return h.digest('hex').slice(0, 32);
}

/** A digest of a Python source's code at its positions: the text without comments (not
 *  tokens, Language Reference §2.1.3), trailing spaces and the blank lines at its end,
 *  every other line kept where it was (a line number in a traceback or a warning stays
 *  the same). A comment edited in place or added at the end leaves it; one added on a line
 *  of its own above code moves the code and changes it. Null when the source does not
 *  parse. Call after `await initParser()`. */
export function codeAtLines(source: string): string | null {
  const tree = parsePython(source);
  try {
    if (tree.rootNode.hasError) return null;
    const comments = commentRanges(syntaxTree(tree, source));
    let out = '';
    let at = 0;
    for (const [s, e] of comments) {
      out += source.slice(at, s);
      at = e;
    }
    out += source.slice(at);
    const text = out
      .split(/\r?\n|\r/)
      .map((l) => l.trimEnd())
      .join('\n')
      .replace(/\n+$/, '');
    return createHash('sha256').update(text).digest('hex').slice(0, 40);
  } finally {
    tree.delete();
  }
}

/** The byte ranges of the comments under `root`, in order (comments are not tokens,
 *  Language Reference §2.1.3: a digest of code leaves them out). */
function commentRanges(root: SyntaxNode): [number, number][] {
  const out: [number, number][] = [];
  const walk = (n: SyntaxNode): void => {
    for (const c of n.namedChildren) {
      if (c.type === 'comment') out.push([c.startIndex, c.endIndex]);
      else walk(c);
    }
  };
  walk(root);
  return out.sort((a, b) => a[0] - b[0]);
}
