// Classes looked up by name through a registry: the registry pattern of PyTorch libraries
// (mmengine's `Registry`, detectron2's and fvcore's `Registry`). A class statement
// decorated with `@R.register_module(…)` or `@R.register(…)` is stored in the object `R`
// when its module runs, under a name: the string given as `name=` (or as the first
// positional argument, mmengine's `register_module(name=None, force=False, module=None)`),
// else the class's `__name__`. Code elsewhere then builds it from that string
// (`R.build(dict(type='CrossEntropyLoss'))`, `cfg.setdefault('type', 'SelfSupDataPreprocessor')`),
// a reference no name resolution sees: the original's registry imports the package that
// registers it (mmengine's `locations=`), a copy holds only what its closure reached.
//
// The closure (closure.ts) therefore treats the string a config dict's `type` key is given
// in copied code (the registry config convention, parse/binder.ts `typeString`) that
// equals a name registered in a registry the copy itself holds (a copied definition, not
// an installed package's object) as a lazy reference to the registered class. Each
// condition is needed: any string would be only text (`layer='Linear'` of an init config
// names torch's layer, not a registered `Linear`; `'Runner'` in a default pulled a whole
// training loop into a head), and a registry the block never reads cannot be asked.
import type { BaseExpr } from '../parse/types.js';
import type { Corpus, CorpusModule } from './corpus.js';

/** One registration by decorator: class `cls` of `mod`, stored in the registry that the
 *  dotted expression `receiver` (`MODELS`, `registry.MODELS`) denotes in `mod` (resolved
 *  like a base class expression, classes.ts resolveBase). */
export interface Registration {
  mod: CorpusModule;
  cls: string;
  receiver: BaseExpr;
}

const DECORATOR = /^([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\.\s*(?:register_module|register)\s*\(([\s\S]*)\)\s*$/;
const STRING = /(['"])([A-Za-z_]\w*)\1/g;

/** The names a registration decorator's arguments give (`name='X'`, `name=['X', 'Y']`,
 *  a first positional string), else the class's own name. */
export function registeredNames(args: string, cls: string): string[] {
  const named = /\bname\s*=\s*(\[[^\]]*\]|\([^)]*\)|(['"])[A-Za-z_]\w*\2)/.exec(args);
  const text = named ? named[1] : /^\s*(['"])[A-Za-z_]\w*\1/.exec(args)?.[0];
  if (text === undefined) return [cls];
  const out = [...text.matchAll(STRING)].map((m) => m[2]);
  return out.length ? out : [cls];
}

/** A decorator's text (without `@`) as a registration: its receiver and the names it
 *  registers class `cls` under; null when it is not one. */
export function registrationOf(decorator: string, cls: string): { receiver: string[]; names: string[] } | null {
  const m = DECORATOR.exec(decorator.trim());
  if (!m) return null;
  return { receiver: m[1].split('.').map((s) => s.trim()), names: registeredNames(m[2], cls) };
}

const cache = new WeakMap<Corpus, Map<string, Registration[]>>();

/** Every registration by decorator of the corpus's indexed modules, by registered name. */
export function registrations(corpus: Corpus): Map<string, Registration[]> {
  let out = cache.get(corpus);
  if (out) return out;
  out = new Map();
  for (const mod of corpus.modules()) {
    for (const c of mod.facts.classes) {
      if (c.nested) continue;
      for (const d of c.decorators) {
        const r = registrationOf(d, c.name);
        if (!r) continue;
        const [name, ...attrs] = r.receiver;
        const receiver: BaseExpr = { text: r.receiver.join('.'), name, attrs };
        for (const n of r.names) {
          let l = out.get(n);
          if (!l) out.set(n, (l = []));
          l.push({ mod, cls: c.name, receiver });
        }
      }
    }
  }
  cache.set(corpus, out);
  return out;
}
