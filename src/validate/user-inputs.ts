// Constructor arguments and forward inputs a user gives for a block (`--args JSON|@FILE`,
// `--input-shape 1,3,224,224` or `--input-shape @FILE`) when its repository shows none: they
// travel to the harness as one witness (types.ts Witness, values encoded as
// python/nnrag_harness/values.py decodes them) whose entry is `user-supplied`, which the
// harness tries before every other candidate (stages.py) and records as the arguments'
// source `user`.
import { readFileSync } from 'node:fs';
import { UsageError } from '../util/errors.js';
import type { Witness } from './types.js';

/** The witness entry of user-supplied arguments (sources.py USER_ENTRY). */
export const USER_ENTRY = 'user-supplied';

/** Marks a number of the user's JSON that is written as a float but has an integral value
 *  (`2.0`, `1e3`), so that JSON.parse keeps it apart from an integer: JavaScript has one
 *  number type, and `2.0` would reach Python as the int 2 (`scale=2`). The marker is a
 *  string no JSON text the tokenizer copies can hold unescaped (it starts with NUL). */
const FLOAT_MARK = '\u0000float:';
const NUMBER = /-?\d+(\.\d+)?([eE][+-]?\d+)?/y;

/** `text` with each integral number written with a fraction or an exponent turned into
 *  the string FLOAT_MARK + its text (JSON, RFC 8259 sections 6 and 7: strings are copied
 *  whole, escapes included). */
export function markIntegralFloats(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (m) {
        const tok = m[0];
        out += (m[1] || m[2]) && Number.isInteger(Number(tok)) ? JSON.stringify(FLOAT_MARK + tok) : tok;
        i += tok.length;
        continue;
      }
    }
    out += c;
    i++;
  }
  return out;
}

/** The markers of markIntegralFloats in a parsed value turned back into numbers (inside a
 *  value the user wrote already encoded: its numbers are the encoding's, e.g. a tensor's
 *  statistics). */
function unmarkFloats(v: unknown): unknown {
  if (typeof v === 'string' && v.startsWith(FLOAT_MARK)) return Number(v.slice(FLOAT_MARK.length));
  if (Array.isArray(v)) return v.map(unmarkFloats);
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, unmarkFloats(x)]));
  return v;
}

/** JSON text, or the text of the file after `@` (integral floats marked: markIntegralFloats). */
function jsonArg(flag: string, text: string): unknown {
  let body = text;
  if (text.startsWith('@')) {
    try {
      body = readFileSync(text.slice(1), 'utf8');
    } catch (e) {
      throw new UsageError(`${flag} ${text}: ${(e as Error).message}`);
    }
  }
  try {
    JSON.parse(body);
  } catch (e) {
    throw new UsageError(`${flag}: not JSON (${(e as Error).message}); e.g. ${flag} '{"dim": 64}' or ${flag} @FILE`);
  }
  return JSON.parse(markIntegralFloats(body));
}

/** A JSON value in the witness encoding: objects become `{"$dict": …}` (a dict), unless
 *  already an encoded value (a key starting with `$`, e.g. `{"$tensor": [2, 8], "dtype":
 *  "int64"}`); a float of integral value written `2.0` becomes `{"$float": "2.0"}` (as
 *  values.py encodes it); lists, numbers, strings, booleans and null are themselves. */
export function encodeUserValue(v: unknown): unknown {
  if (typeof v === 'string' && v.startsWith(FLOAT_MARK)) return { $float: v.slice(FLOAT_MARK.length) };
  if (Array.isArray(v)) return v.map(encodeUserValue);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (Object.keys(o).some((k) => k.startsWith('$'))) return unmarkFloats(o);
    return { $dict: Object.fromEntries(Object.entries(o).map(([k, x]) => [k, encodeUserValue(x)])) };
  }
  return v;
}

/** `1,3,224,224` → a float32 tensor of that shape; `@FILE` → a JSON list of shapes or
 *  encoded values (`{"$tensor": [1, 16], "dtype": "int64", "max": 999}` for token ids). */
export function parseInputShapes(values: readonly string[]): unknown[] {
  const out: unknown[] = [];
  for (const v of values) {
    if (v.startsWith('@')) {
      const data = jsonArg('--input-shape', v);
      if (!Array.isArray(data))
        throw new UsageError(
          `--input-shape ${v}: expected a JSON list of shapes ([[1, 3, 224, 224]]) or encoded tensors`,
        );
      for (const d of data)
        out.push(Array.isArray(d) ? shapeTensor((unmarkFloats(d) as unknown[]).join(','), v) : encodeUserValue(d));
    } else out.push(shapeTensor(v, v));
  }
  return out;
}

function shapeTensor(text: string, shown: string): unknown {
  const dims = text
    .split(/[,\s]+/)
    .filter(Boolean)
    .map(Number);
  if (!dims.length || dims.some((d) => !Number.isInteger(d) || d < 0 || d > 1 << 20))
    throw new UsageError(`--input-shape ${shown}: give whole numbers, e.g. --input-shape 1,3,224,224`);
  return { $tensor: dims, dtype: 'float32' };
}

/** The user's arguments and inputs as a witness. `args`: the JSON text (or `@FILE`) of
 *  keyword arguments `{"dim": 64}`, positional ones `[64, 4]`, or both
 *  `{"args": [64], "kwargs": {"heads": 4}}` (the form of a record's `args`). */
export function userWitness(argsText: string | undefined, inputs: unknown[] | undefined): Witness {
  let args: unknown[] = [];
  let kwargs: Record<string, unknown> = {};
  if (argsText !== undefined) {
    const data = jsonArg('--args', argsText);
    if (Array.isArray(data)) args = data;
    else if (data && typeof data === 'object') {
      const o = data as Record<string, unknown>;
      const keys = Object.keys(o);
      if (
        keys.length &&
        keys.every((k) => k === 'args' || k === 'kwargs') &&
        (o.args === undefined || Array.isArray(o.args)) &&
        (o.kwargs === undefined || (typeof o.kwargs === 'object' && !Array.isArray(o.kwargs)))
      ) {
        args = (o.args as unknown[] | undefined) ?? [];
        kwargs = (o.kwargs as Record<string, unknown> | undefined) ?? {};
      } else kwargs = o;
    } else
      throw new UsageError(
        '--args: give a JSON object of keyword arguments, a list of positional ones, or {"args": [...], "kwargs": {...}}',
      );
  }
  const w: Witness = {
    args: args.map(encodeUserValue),
    kwargs: Object.fromEntries(Object.entries(kwargs).map(([k, v]) => [k, encodeUserValue(v)])),
    params: 0,
    entry: USER_ENTRY,
  };
  if (inputs?.length) w.inputs = { args: inputs, kwargs: {} };
  return w;
}
