// nn.Module discovery through *resolved* base classes.
//
// A block is a module-level class that
// - is a subclass of torch.nn.Module: one of its bases resolves (through imports,
//   aliases, re-exports, `alias.attr` chains; see resolve/names.ts) to torch.nn.Module
//   or to an extern class that is an nn.Module subclass, or to an indexed class that is
//   itself an nn.Module subclass (`class X(Bottleneck)`, a BaseModule from another
//   indexed repository);
// - is concrete: no abstract method left unimplemented (abc rules: a method decorated
//   with @abstractmethod in the class or a base, not overridden by a plain definition);
// - has a forward of its own, inherited from an indexed base, or inherited from an
//   extern nn.Module subclass that defines one (`nn.Sequential`, `nn.Conv2d`), but not
//   torch.nn.Module's placeholder.
// Whether an extern class is an nn.Module subclass with a forward is decided by
// `staticExternInfo` (a reference list of torch.nn's classes generated from torch,
// torch-nn-classes.ts), or by an ExternInfo the caller passes.
import type { BlockRow } from '../store/store.js';
import type { ClassFacts } from '../parse/types.js';
import type { Corpus, CorpusModule } from '../resolve/corpus.js';
import type { Resolver } from '../resolve/names.js';
import { baseClasses } from '../resolve/classes.js';
import { TORCH_NN_NOT_MODULES, TORCH_NN_WITH_FORWARD, TORCH_NN_WITHOUT_FORWARD } from './torch-nn-classes.js';
import { blockId } from './ids.js';

/** A discovered block, as the store keeps it (id = qualified name `module.ClassName`,
 *  or `repo:module.ClassName` when several repositories define that name: ids.ts). */
export type Block = Omit<BlockRow, 'data'>;

/** What discovery needs to know of an extern class (by qualified name). */
export interface ExternClassInfo {
  isModule: boolean;
  hasForward: boolean;
}

export type ExternInfo = (qualified: string) => ExternClassInfo | undefined;

interface ClassInfo {
  isModule: boolean;
  hasForward: boolean;
  /** abstract methods not implemented */
  abstract: Set<string>;
}

/** `if __name__ == '__main__':` (either operand order, either quote, parenthesised) */
const MAIN_GUARD = /^if\s*\(?\s*(?:__name__\s*==\s*(['"])__main__\1|(['"])__main__\2\s*==\s*__name__)\s*\)?\s*:/;

const WITH_FORWARD = new Set(TORCH_NN_WITH_FORWARD);
const WITHOUT_FORWARD = new Set(TORCH_NN_WITHOUT_FORWARD);
const NOT_MODULES = new Set(TORCH_NN_NOT_MODULES);
/** containers and bases of torch.nn's public API without a forward of their own */
const NO_FORWARD_CONTAINERS = new Set([
  'ModuleList',
  'ModuleDict',
  'ParameterList',
  'ParameterDict',
  'Module',
  'Container',
]);
const NOT_MODULE_NAMES = new Set(['Parameter', 'UninitializedParameter', 'UninitializedBuffer', 'Buffer']);

/** Without a Python to ask: the reference list of torch.nn's classes (generated from
 *  torch by scripts/torch_nn_classes.py: every nn.Module subclass under every module
 *  path it is reachable by, private ones included, e.g.
 *  `torch.nn.modules.batchnorm._BatchNorm`), which says whether the class is a module
 *  and has a forward other than torch.nn.Module's placeholder. A name the list does not
 *  know (a class of a newer torch) is judged by torch.nn's public naming: a
 *  capitalised class of `torch.nn` or `torch.nn.modules.<m>` is a module, with a
 *  forward unless it is a container. Anything else is not known to be a module. */
export function staticExternInfo(q: string): ExternClassInfo | undefined {
  if (WITH_FORWARD.has(q)) return { isModule: true, hasForward: true };
  if (WITHOUT_FORWARD.has(q)) return { isModule: true, hasForward: false };
  if (NOT_MODULES.has(q)) return undefined;
  const m = /^torch\.nn\.(?:modules\.\w+\.)?([A-Z]\w*)$/.exec(q);
  if (m && !NOT_MODULE_NAMES.has(m[1])) return { isModule: true, hasForward: !NO_FORWARD_CONTAINERS.has(m[1]) };
  return undefined;
}

export class Discovery {
  private readonly memo = new Map<string, ClassInfo>();
  private readonly inProgress = new Set<string>();

  constructor(
    readonly corpus: Corpus,
    readonly resolver: Resolver,
    private readonly extern: ExternInfo = staticExternInfo,
  ) {}

  /** Qualified names of every extern class used as a base anywhere. */
  externBaseNames(): string[] {
    const out = new Set<string>();
    for (const mod of this.corpus.modules()) {
      for (const cls of mod.facts.classes) {
        for (const b of baseClasses(this.resolver, mod, cls).flat()) if (b.kind === 'extern') out.add(b.qualified);
      }
    }
    return [...out].sort();
  }

  private classInfo(mod: CorpusModule, cls: ClassFacts): ClassInfo {
    const key = `${mod.repo}\0${mod.name}\0${cls.name}\0${cls.line}`;
    const hit = this.memo.get(key);
    if (hit) return hit;
    if (this.inProgress.has(key)) return { isModule: false, hasForward: false, abstract: new Set() };
    this.inProgress.add(key);
    const info: ClassInfo = { isModule: false, hasForward: cls.members.includes('forward'), abstract: new Set() };
    const inherited = new Set<string>();
    for (const targets of baseClasses(this.resolver, mod, cls)) {
      for (const t of targets) {
        if (t.kind === 'extern') {
          const ext = this.extern(t.qualified);
          if (ext?.isModule) {
            info.isModule = true;
            if (ext.hasForward) info.hasForward = true;
          }
        } else {
          const base = this.classInfo(t.module, t.cls);
          if (base.isModule) info.isModule = true;
          if (base.hasForward) info.hasForward = true;
          for (const a of base.abstract) inherited.add(a);
        }
      }
    }
    for (const a of inherited) if (!cls.members.includes(a)) info.abstract.add(a);
    for (const a of cls.abstractMethods) info.abstract.add(a);
    this.inProgress.delete(key);
    this.memo.set(key, info);
    return info;
  }

  /** Whether the class statement sits in the body of `if __name__ == '__main__':` (not
   *  its `elif` / `else`): that body runs only when the file is run as a script, never
   *  when the module is imported (Python's `__main__` documentation, "Top-level code
   *  environment"), so the class is no module attribute and no block. */
  private underMainGuard(mod: CorpusModule, cls: ClassFacts): boolean {
    const st = mod.facts.statements[cls.stmt];
    if (!st || st.guard !== 'if') return false;
    let src: string;
    try {
      src = this.corpus.source(mod);
    } catch {
      return false;
    }
    const head = src.slice(st.start, cls.start);
    if (!MAIN_GUARD.test(head)) return false;
    // an `elif` / `else` of the top-level `if` (column 0) before the class: not the body
    return !/\n(?:elif\b|else\s*:)/.test(head);
  }

  /** Every block of every repository, ordered by repository, path and line. */
  discover(): Block[] {
    const out: Block[] = [];
    for (const mod of this.corpus.modules()) {
      for (const cls of mod.facts.classes) {
        const info = this.classInfo(mod, cls);
        if (!info.isModule || !info.hasForward || info.abstract.size) continue;
        if (this.underMainGuard(mod, cls)) continue;
        out.push({
          id: `${mod.name}.${cls.name}`,
          name: cls.name,
          module: mod.name,
          repo: mod.repo,
          path: mod.path,
          line: cls.line,
          bases: cls.bases.map((b) => b.text),
        });
      }
    }
    // a name defined twice in one module: the last definition is the module attribute
    const seen = new Map<string, number>();
    out.forEach((b, i) => {
      seen.set(`${b.repo}\0${b.id}`, i);
    });
    const unique = out.filter((b, i) => seen.get(`${b.repo}\0${b.id}`) === i);
    // a qualified name several repositories define: its ids carry the repository
    const repos = new Map<string, Set<string>>();
    for (const b of unique) {
      const s = repos.get(b.id);
      if (s) s.add(b.repo);
      else repos.set(b.id, new Set([b.repo]));
    }
    for (const b of unique) if (repos.get(b.id)!.size > 1) b.id = blockId(b.repo, b.module, b.name, true);
    unique.sort((a, b) => a.repo.localeCompare(b.repo) || a.path.localeCompare(b.path) || a.line - b.line);
    return unique;
  }
}
