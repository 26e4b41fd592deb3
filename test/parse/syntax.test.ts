// The binder's copy of the tree (src/parse/syntax.ts) against web-tree-sitter's own
// Node API: the same named nodes in the same order, with the same types, offsets, rows
// and columns, parents and field children, from the fast walk (WebAssembly exports) and
// from the public TreeCursor walk; on fixtures, on text with syntax errors, CRLF and
// lone CR line ends, non-ASCII and astral characters, deep nesting.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Node } from 'web-tree-sitter';
import { initParser, parsePython } from '../../src/parse/parser.js';
import { fastWalkAvailable, syntaxTree, type SyntaxNode } from '../../src/parse/syntax.js';
import { fixture, repoRoot } from '../helpers.js';

function pythonFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...pythonFiles(p));
    else if (e.name.endsWith('.py')) out.push(p);
  }
  return out;
}

const samples: Record<string, string> = {
  crlf: 'import torch\r\nclass A(torch.nn.Module):\r\n    def forward(self, x):\r\n        return x\r\n',
  'lone-cr': 'x = 1\ry = [x,\r  2]\nz = y\n',
  unicode:
    '# é ü 漢字 🙂\nname = "🙂🙂"  # 🙂\ndef f(α=1, *β, **γ):\n    return α + len("漢字")\nclass K: x: "List[int]" = []\n',
  'syntax-error': 'def f(x:\n    return (x +\nclass B(nn.Module):\n    def forward(self, x):\n        return x\n',
  'missing-node': 'x = (1,\n',
  match:
    'match p:\n    case Point(x=0, y=yy) as pt if yy > 0:\n        pass\n    case [1, *rest]:\n        pass\n    case {"k": v, **kw}:\n        pass\n',
  empty: '',
  // deep nesting grows the cursor's stack inside WebAssembly
  deep:
    'x = ' +
    '('.repeat(600) +
    '1' +
    ')'.repeat(600) +
    '\n' +
    'def f():\n' +
    Array.from({ length: 100 }, (_, i) => ' '.repeat(4 * (i + 1)) + 'if x:\n').join('') +
    ' '.repeat(404) +
    'pass\n',
  nul: 'a\0b = 1\n',
};

/** Every named node, depth first, as [type, start, end, startRow, startColumn, endRow,
 *  endColumn, parent index], and each field child (by field name) of each node. */
function refRows(root: Node, fields: readonly (string | null)[]): { nodes: unknown[][]; fieldKids: string[] } {
  const nodes: unknown[][] = [];
  const fieldKids: string[] = [];
  const index = new Map<number, number>();
  const visit = (n: Node, parent: number) => {
    const i = nodes.length;
    index.set(n.id, i);
    nodes.push([
      n.type,
      n.startIndex,
      n.endIndex,
      n.startPosition.row,
      n.startPosition.column,
      n.endPosition.row,
      n.endPosition.column,
      parent,
    ]);
    for (const f of fields) {
      if (!f) continue;
      for (const c of n.childrenForFieldName(f))
        if (c?.isNamed) fieldKids.push(`${i} ${f} ${c.type} ${c.startIndex}-${c.endIndex}`);
    }
    for (const c of n.namedChildren) if (c) visit(c, i);
  };
  visit(root, -1);
  return { nodes, fieldKids };
}

function ourRows(root: SyntaxNode, fields: readonly (string | null)[]): { nodes: unknown[][]; fieldKids: string[] } {
  const nodes: unknown[][] = [];
  const fieldKids: string[] = [];
  const index = new Map<SyntaxNode, number>();
  const visit = (n: SyntaxNode) => {
    const i = nodes.length;
    index.set(n, i);
    nodes.push([
      n.type,
      n.startIndex,
      n.endIndex,
      n.startPosition.row,
      n.startPosition.column,
      n.endPosition.row,
      n.endPosition.column,
      n.parent ? index.get(n.parent)! : -1,
    ]);
    for (const f of fields) {
      if (!f) continue;
      for (const c of n.childrenForFieldName(f)) fieldKids.push(`${i} ${f} ${c.type} ${c.startIndex}-${c.endIndex}`);
    }
    for (const c of n.namedChildren) visit(c);
  };
  visit(root);
  return { nodes, fieldKids };
}

describe('syntax tree copy', () => {
  it('matches web-tree-sitter node for node, by both walks', async () => {
    await initParser();
    assert.ok(fastWalkAvailable(), 'the fast walk finds the WebAssembly exports of the pinned web-tree-sitter');
    const texts: [string, string][] = Object.entries(samples);
    for (const f of [
      ...pythonFiles(fixture('resolve')),
      ...pythonFiles(fixture('scopes')),
      ...pythonFiles(path.join(repoRoot, 'examples')),
    ]) {
      texts.push([path.relative(repoRoot, f), readFileSync(f, 'utf8')]);
    }
    assert.ok(texts.length > 20);
    for (const [name, text] of texts) {
      const tree = parsePython(text);
      try {
        const fields = tree.language.fields;
        const ref = refRows(tree.rootNode, fields);
        const fast = syntaxTree(tree, text, true);
        const slow = syntaxTree(tree, text, false);
        assert.deepEqual(ourRows(fast, fields), ref, name);
        assert.deepEqual(ourRows(slow, fields), ref, name);
        // ids are unique and text is the source slice
        const ids = new Set<number>();
        const all = (n: SyntaxNode): void => {
          ids.add(n.id);
          assert.equal(n.text, text.slice(n.startIndex, n.endIndex));
          n.namedChildren.forEach(all);
        };
        all(fast);
        assert.equal(ids.size, ref.nodes.length, name);
      } finally {
        tree.delete();
      }
    }
  });
});
