// Server-side syntax highlighting of Python for the web catalog: the module is parsed with
// tree-sitter-python and each leaf token is wrapped in a <span> whose class names its
// role (keyword, string, comment, number, constant, function or class name, decorator,
// builtin). Text between tokens (whitespace) is copied as is, and every piece of source
// text is HTML-escaped, so the output shows exactly the module's characters.
import { PYTHON_KEYWORDS, PYTHON_SOFT_KEYWORDS } from '../util/python.js';
import { initParser, parsePython, type Node } from '../parse/parser.js';

/** Escape text for HTML element content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

// keywords shown as keywords: the hard ones except the constants (shown as constants), the
// soft ones except `_`, and Python 2's print and exec statements
const KEYWORDS = new Set([
  ...[...PYTHON_KEYWORDS].filter((k) => !['True', 'False', 'None'].includes(k)),
  ...[...PYTHON_SOFT_KEYWORDS].filter((k) => k !== '_'),
  'exec',
  'print',
]);
const CONSTANTS = new Set(['true', 'false', 'none', 'True', 'False', 'None', 'ellipsis']);
const BUILTINS = new Set(
  'self super len range isinstance issubclass getattr setattr hasattr print int float str bool list dict tuple set min max sum abs zip enumerate map filter any all sorted reversed type object NotImplementedError ValueError TypeError RuntimeError'.split(
    ' ',
  ),
);

/** CSS class of a token node, or null for plain text. */
function tokenClass(n: Node): string | null {
  const t = n.type;
  if (t === 'comment') return 'c';
  if (t === 'string' || t === 'concatenated_string') return 's';
  if (t === 'integer' || t === 'float') return 'n';
  if (CONSTANTS.has(t)) return 'k2';
  if (KEYWORDS.has(t) && !n.isNamed) return 'k';
  if (t === 'identifier') {
    const p = n.parent;
    if (p && p.type === 'function_definition' && p.childForFieldName('name')?.id === n.id) return 'f';
    if (p && p.type === 'class_definition' && p.childForFieldName('name')?.id === n.id) return 'cl';
    if (p && p.type === 'decorator') return 'd';
    if (BUILTINS.has(n.text)) return 'b';
    return null;
  }
  if (t === '@') return 'd';
  return null;
}

/** Nodes highlighted as a whole (their children are not visited). */
const WHOLE = new Set(['string', 'concatenated_string', 'comment']);

/** HTML of `src` with highlighted tokens (without the surrounding <pre>). */
export async function highlightPython(src: string): Promise<string> {
  await initParser();
  const tree = parsePython(src);
  try {
    const out: string[] = [];
    let pos = 0;
    const cursor = tree.walk();
    const emit = (n: Node, cls: string | null) => {
      const s = n.startIndex;
      const e = n.endIndex;
      if (s < pos) return;
      out.push(escapeHtml(src.slice(pos, s)));
      const text = escapeHtml(src.slice(s, e));
      out.push(cls ? `<span class="${cls}">${text}</span>` : text);
      pos = e;
    };
    // depth-first walk over the tree; leaves and whole-highlighted nodes emit text
    let descend = true;
    for (;;) {
      const n = cursor.currentNode;
      if (descend && !WHOLE.has(n.type) && n.childCount > 0 && cursor.gotoFirstChild()) continue;
      if (descend && (WHOLE.has(n.type) || n.childCount === 0)) emit(n, tokenClass(n));
      if (cursor.gotoNextSibling()) {
        descend = true;
        continue;
      }
      if (!cursor.gotoParent()) break;
      descend = false;
    }
    cursor.delete();
    out.push(escapeHtml(src.slice(pos)));
    return out.join('');
  } finally {
    tree.delete();
  }
}
