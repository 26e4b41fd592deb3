// Sandbox proof that decorators return their argument (docs/ARCHITECTURE.md "Slim
// emission"), for decorators whose body the corpus does not show (an extern registry,
// a method found through inheritance): a probe module is the faithful module followed
// by code that evaluates each decorator expression afresh, applies it to a fresh class
// (an nn.Module subclass) or function and asserts that it got the same object back,
// with the same attributes (a decorator that marks the object, such as
// `@torch.jit.unused`, is not a registration and stays).
// It is validated like a block (import stage required, no original), so it runs in the
// same sandbox; it is never stored as a block.
import type { NamespaceMap } from '../emitter.js';

export const PROBE_CLASS = 'NnragDecoratorProbe';

export interface ProbeDecorator {
  key: string;
  /** the original module and line of the decorator */
  module: string;
  line: number;
  target: 'class' | 'function';
}

/** The probe module's source, and the keys it proves when it imports; null when no
 *  decorator can be located in the faithful text (one line each, no comment). */
export function probeSource(
  faithful: string,
  namespace: NamespaceMap,
  decorators: readonly ProbeDecorator[],
): { source: string; keys: string[] } | null {
  const lines = faithful.split('\n');
  const probes: string[] = [];
  const keys: string[] = [];
  for (const d of decorators) {
    const st = namespace.statements.find(([, , module, of, ol]) => module === d.module && of <= d.line && d.line <= ol);
    if (!st) continue;
    const text = lines[st[0] - 1 + (d.line - st[3])]?.trim() ?? '';
    if (!text.startsWith('@') || text.includes('#')) continue;
    probes.push(`    (lambda: ${text.slice(1)}, ${JSON.stringify(d.target)}),`);
    keys.push(d.key);
  }
  if (!probes.length) return null;
  const source = `${faithful}

# nnrag slim: decorator identity probe (not part of any block)
import torch as _nnrag_torch

_NNRAG_PROBES = [
${probes.join('\n')}
]


def _nnrag_identity_probe():
    same = []
    for i, (make, kind) in enumerate(_NNRAG_PROBES):
        if kind == 'class':
            obj = type('_NnragProbe%d' % i, (_nnrag_torch.nn.Module,), {'__module__': __name__})
        else:
            def obj(*args, **kwargs):
                return None
            obj.__name__ = obj.__qualname__ = '_nnrag_probe_%d' % i
        # a registration leaves the object as it was: a decorator that marks it
        # (@torch.jit.unused sets an attribute TorchScript reads) changes what it means
        before = dict(vars(obj))
        try:
            out = make()(obj)
        except Exception:
            # (torch.fx.wrap refuses to run outside a module's top level): not a registration
            same.append(False)
            continue
        after = dict(vars(obj))
        same.append(out is obj and after.keys() == before.keys() and all(after[k] is before[k] for k in before))
    if not all(same):
        # one verdict per decorator, in the order of the probe's keys (probeVerdicts)
        raise AssertionError('nnrag: a decorator does not return its argument: %r' % same)


_nnrag_identity_probe()


class ${PROBE_CLASS}(_nnrag_torch.nn.Module):
    def forward(self, x):
        return x
`;
  return { source, keys };
}

/** Each decorator's verdict, in the order of the probe's keys, read from the error of a
 *  probe that failed on its identity check; null when it failed otherwise. */
export function probeVerdicts(error: string | null | undefined, keys: number): boolean[] | null {
  const m = /nnrag: a decorator does not return its argument: \[((?:True|False)(?:, (?:True|False))*)\]/.exec(
    error ?? '',
  );
  const v = m ? m[1].split(', ').map((x) => x === 'True') : null;
  return v && v.length === keys ? v : null;
}
