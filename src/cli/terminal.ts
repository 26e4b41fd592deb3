// Text from repositories (error messages, docstrings, config keys, ids) made safe to
// print on a terminal: control characters are shown as escapes instead of acting. ESC
// (C0) starts the sequences that clear the screen, move the cursor or retitle the
// window (ECMA-48 §5.3, §8.3); C1 controls (U+0080–U+009F, e.g. CSI U+009B) do the same
// on terminals that read them in UTF-8; a carriage return or backspace overwrites what
// was printed (a fake "OK"); bidirectional overrides and isolates (Unicode TR #9, the
// "Trojan Source" characters) reorder what is shown.
//
// Identifiers may be non-ASCII (PEP 3131): `mоdels.Net` with a Cyrillic о looks like
// `models.Net`. `showId` prints such an id with its non-ASCII characters as \uNNNN and a
// marker, so two ids that look the same print differently.
//
// One helper for every print of the CLI: `safeText` for human output (newlines and tabs
// kept, everything else escaped as \xNN / \uNNNN), `safeJson` for JSON (already escapes
// C0; C1, DEL, bidi controls and line/paragraph separators become \uNNNN escapes: the
// same JSON value).

// C0 but \t and \n, DEL, C1, bidi embeddings/overrides/isolates, LRM/RLM/ALM, U+2028/9
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_JSON = /[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const hex = (c: string, n: number) => c.charCodeAt(0).toString(16).padStart(n, '0');

/** `s` with every control character that would act on a terminal shown as an escape. */
export function safeText(s: string): string {
  return s.replace(UNSAFE, (c) => (c.charCodeAt(0) <= 0xff ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`));
}

/** JSON text with the characters JSON.stringify leaves raw that act on a terminal
 *  (C1, DEL, bidi controls) as \uNNNN escapes: the same JSON value. */
export function safeJson(json: string): string {
  return json.replace(UNSAFE_JSON, (c) => `\\u${hex(c, 4)}`);
}

/** An id (block, module, repository) as printed for humans: ASCII as is; otherwise its
 *  non-ASCII characters as \\uNNNN (\\UNNNNNNNN beyond the BMP) and a `[non-ASCII]` marker. */
export function showId(id: string): string {
  if (/^[\x20-\x7e]*$/.test(id)) return id;
  let out = '';
  for (const ch of id) {
    const cp = ch.codePointAt(0)!;
    out +=
      cp >= 0x20 && cp < 0x7f
        ? ch
        : cp <= 0xffff
          ? `\\u${cp.toString(16).padStart(4, '0')}`
          : `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return `${out} [non-ASCII]`;
}
