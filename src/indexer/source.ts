// Reading Python source bytes as text, the same way everywhere (indexing, emission):
// FileFacts offsets are indices into the text this function returns, so every stage
// that slices a file by those offsets must decode it with `decodePython` too.
//
// Rules (Python reference, "Encoding declarations"; PEP 263, PEP 3120):
// - The default source encoding is UTF-8 (PEP 3120). A UTF-8 BOM is dropped.
// - A coding cookie (`# -*- coding: latin-1 -*-`) on line 1, or on line 2 when line 1
//   is blank or a comment, names another codec (PEP 263).
// - Decision for undecodable bytes: CPython refuses such a file (SyntaxError), but
//   nnrag indexes it as far as possible: invalid sequences become U+FFFD and the file
//   gets an `invalid-utf8` (or `undecodable`) problem naming the first bad line, so the
//   definitions in the rest of the file stay usable and the problem is visible.
import { isUtf8 } from 'node:buffer';
export { gitBlobId } from '../repos/git.js';

export interface DecodedSource {
  text: string;
  /** codec used: 'utf-8' or the (normalised) PEP 263 cookie */
  encoding: string;
  /** null when the bytes decoded cleanly */
  problem: { kind: 'invalid-utf8' | 'undecodable' | 'unknown-encoding'; message: string } | null;
}

// PEP 263: ^[ \t\f]*#.*?coding[:=][ \t]*([-_.a-zA-Z0-9]+)
const COOKIE = /^[ \t\f]*#.*?coding[:=][ \t]*([-_.a-zA-Z0-9]+)/;
const BLANK_OR_COMMENT = /^[ \t\f]*(?:#.*)?$/;

/** The PEP 263 coding cookie of the first two lines, lower-cased, or null. */
export function codingCookie(buf: Uint8Array): string | null {
  // Cookies are ASCII; look at the first two lines only.
  const head = Buffer.from(buf.buffer, buf.byteOffset, Math.min(buf.length, 400)).toString('latin1');
  const lines = head.split(/\r\n|\r|\n/, 2);
  let m = COOKIE.exec(lines[0] ?? '');
  if (!m && lines.length > 1 && BLANK_OR_COMMENT.test(lines[0])) m = COOKIE.exec(lines[1]);
  return m ? m[1].toLowerCase() : null;
}

const UTF8_NAMES = new Set([
  'utf-8',
  'utf8',
  'utf_8',
  'u8',
  'utf',
  'cp65001',
  'utf-8-sig',
  'utf8-sig',
  'ascii',
  'us-ascii',
  '646',
]);
const LATIN1_NAMES = new Set([
  'latin-1',
  'latin1',
  'latin_1',
  'iso-8859-1',
  'iso8859-1',
  'iso_8859_1',
  '8859',
  'cp819',
  'l1',
]);

function firstBadLine(text: string): number {
  const i = text.indexOf('\uFFFD');
  if (i < 0) return 1;
  let line = 1;
  for (let k = 0; k < i; k++) if (text.charCodeAt(k) === 10) line++;
  return line;
}

const utf8 = new TextDecoder('utf-8'); // non-fatal, drops the BOM

/** Decode Python source bytes (see the rules in the header). */
export function decodePython(buf: Uint8Array): DecodedSource {
  const hasBom = buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf;
  const cookie = hasBom ? null : codingCookie(buf);
  if (cookie && !UTF8_NAMES.has(cookie)) {
    // Python's latin-1 is ISO-8859-1 proper (WHATWG maps the label to windows-1252).
    if (LATIN1_NAMES.has(cookie)) {
      return {
        text: Buffer.from(buf.buffer, buf.byteOffset, buf.length).toString('latin1'),
        encoding: 'latin-1',
        problem: null,
      };
    }
    let dec: TextDecoder | null = null;
    try {
      dec = new TextDecoder(cookie.replace(/_/g, '-'), { fatal: true });
    } catch {
      dec = null;
    }
    if (dec) {
      try {
        return { text: dec.decode(buf), encoding: cookie, problem: null };
      } catch {
        const text = new TextDecoder(cookie.replace(/_/g, '-')).decode(buf);
        return {
          text,
          encoding: cookie,
          problem: {
            kind: 'undecodable',
            message: `bytes not valid in declared encoding ${cookie} (first at line ${firstBadLine(text)})`,
          },
        };
      }
    }
    const text = utf8.decode(buf);
    return {
      text,
      encoding: 'utf-8',
      problem: { kind: 'unknown-encoding', message: `unknown coding cookie ${cookie}; decoded as UTF-8` },
    };
  }
  const text = utf8.decode(buf);
  if (isUtf8(buf)) return { text, encoding: 'utf-8', problem: null };
  return {
    text,
    encoding: 'utf-8',
    problem: {
      kind: 'invalid-utf8',
      message: `invalid UTF-8 (first at line ${firstBadLine(text)}); indexed with U+FFFD replacements`,
    },
  };
}
