// A small JSON-schema checker for the tests (the keywords nnrag's schemas use: type,
// enum, required, properties, additionalProperties, items, minItems, maxItems): returns
// the paths and reasons of every violation, [] when the value conforms.
type Schema = {
  type?: string | readonly string[];
  enum?: readonly unknown[];
  required?: readonly string[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
};

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

export function violations(schema: Schema, value: unknown, at = '$'): string[] {
  const out: string[] = [];
  if (schema.type !== undefined) {
    const types = typeof schema.type === 'string' ? [schema.type] : schema.type;
    const t = typeOf(value);
    if (!types.includes(t) && !(t === 'integer' && types.includes('number')))
      return [`${at}: ${t}, expected ${types.join(' | ')}`];
  }
  if (schema.enum && !schema.enum.includes(value))
    out.push(`${at}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`);
  if (schema.minimum !== undefined && typeof value === 'number' && value < schema.minimum)
    out.push(`${at}: below ${schema.minimum}`);
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      out.push(`${at}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      out.push(`${at}: more than ${schema.maxItems} items`);
    if (schema.items)
      value.forEach((x, i) => {
        out.push(...violations(schema.items!, x, `${at}[${i}]`));
      });
  } else if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    for (const k of schema.required ?? []) if (!(k in o)) out.push(`${at}.${k}: missing`);
    for (const [k, v] of Object.entries(o)) {
      const sub = schema.properties?.[k] ?? schema.additionalProperties;
      if (sub) out.push(...violations(sub, v, `${at}.${k}`));
      else if (schema.properties) out.push(`${at}.${k}: not in the schema`);
    }
  }
  return out;
}
