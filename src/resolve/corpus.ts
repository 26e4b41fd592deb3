// The corpus as the resolver sees it: every indexed module under its absolute module
// name (what Python would import), with its FileFacts and a way to read its source.
// When two repositories provide the same module name, the repository with the better
// (lower) priority number wins (as the first sys.path entry would); the others are kept as
// alternatives for diagnostics.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FileFacts } from '../parse/types.js';
import { NnragError } from '../util/errors.js';
import { decodePython, gitBlobId } from '../index/source.js';

export interface CorpusRepo {
  name: string;
  url: string | null;
  root: string;
  revision: string | null;
  priority: number;
}

export interface CorpusModule {
  /** absolute module name, e.g. `timm.layers.mlp`; a package is named by its folder */
  name: string;
  repo: string;
  /** posix path relative to the repository root */
  path: string;
  isPackage: boolean;
  blob: string;
  facts: FileFacts;
}

export class Corpus {
  readonly repos = new Map<string, CorpusRepo>();
  private readonly byName = new Map<string, CorpusModule[]>();
  /** every package prefix of every module name (for namespace packages, PEP 420) */
  private readonly prefixes = new Set<string>();
  private readonly sources = new Map<string, string>();
  /** name → statement indexes binding it, per module (lazily built) */
  private readonly binders = new Map<CorpusModule, Map<string, number[]>>();

  constructor(repos: CorpusRepo[], modules: CorpusModule[]) {
    for (const r of repos) this.repos.set(r.name, r);
    for (const m of modules) {
      let list = this.byName.get(m.name);
      if (!list) this.byName.set(m.name, (list = []));
      list.push(m);
      const parts = m.name.split('.');
      for (let i = 1; i < parts.length; i++) this.prefixes.add(parts.slice(0, i).join('.'));
    }
    const prio = (m: CorpusModule) => this.repos.get(m.repo)?.priority ?? 0;
    // nn-rag priority: lower numbers are preferred
    for (const list of this.byName.values()) list.sort((a, b) => prio(a) - prio(b) || a.repo.localeCompare(b.repo));
  }

  /** The module Python would import under this name, if indexed. */
  module(name: string): CorpusModule | undefined {
    return this.byName.get(name)?.[0];
  }

  /** Other repositories' modules with the same name (shadowed by priority). */
  alternatives(name: string): CorpusModule[] {
    return this.byName.get(name)?.slice(1) ?? [];
  }

  modules(): CorpusModule[] {
    return [...this.byName.values()].map((l) => l[0]);
  }

  /** A namespace package (PEP 420) or regular package exists under this name. */
  isPackageName(name: string): boolean {
    return this.prefixes.has(name) || !!this.module(name)?.isPackage;
  }

  /** Is this (absolute) module name, or the package it starts with, indexed? */
  knowsTopLevel(name: string): boolean {
    const top = name.split('.')[0];
    return this.byName.has(top) || this.prefixes.has(top);
  }

  /** Statement indexes of `mod` that bind `name` at module scope. A function that
   *  rebinds the name through `global` counts only when no statement binds it when the
   *  module runs: the name is defined without calling that function. */
  bindersOf(mod: CorpusModule, name: string): number[] {
    let map = this.binders.get(mod);
    if (!map) {
      const direct = new Map<string, number[]>();
      const viaGlobal = new Map<string, number[]>();
      mod.facts.statements.forEach((st, i) => {
        const g = st.globalBinds;
        for (const n of st.binds) {
          const target = g?.includes(n) ? viaGlobal : direct;
          const l = target.get(n);
          if (l) l.push(i);
          else target.set(n, [i]);
        }
      });
      for (const [n, l] of viaGlobal) if (!direct.has(n)) direct.set(n, l);
      map = direct;
      this.binders.set(mod, map);
    }
    return map.get(name) ?? [];
  }

  private readonly lineStarts = new Map<CorpusModule, number[]>();

  /** 1-based line of an offset in the module's source. */
  lineOf(mod: CorpusModule, offset: number): number {
    let starts = this.lineStarts.get(mod);
    if (!starts) {
      const src = this.source(mod);
      starts = [0];
      for (let i = src.indexOf('\n'); i !== -1; i = src.indexOf('\n', i + 1)) starts.push(i + 1);
      this.lineStarts.set(mod, starts);
    }
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  private readonly deleters = new Map<CorpusModule, Map<string, number[]>>();

  /** Statement indexes of `mod` that `del` the name at module scope. */
  deletersOf(mod: CorpusModule, name: string): number[] {
    let map = this.deleters.get(mod);
    if (!map) {
      map = new Map();
      mod.facts.statements.forEach((st, i) => {
        for (const n of st.deletes ?? []) {
          const l = map!.get(n);
          if (l) l.push(i);
          else map!.set(n, [i]);
        }
      });
      this.deleters.set(mod, map);
    }
    return map.get(name) ?? [];
  }

  /** Absolute path of a module's file. */
  filePath(mod: CorpusModule): string {
    const repo = this.repos.get(mod.repo);
    if (!repo) throw new NnragError(`unknown repository ${mod.repo}`);
    return path.join(repo.root, ...mod.path.split('/'));
  }

  /** The module's source text, checked against the indexed blob id: offsets in the
   *  facts are only valid for that exact content. */
  source(mod: CorpusModule): string {
    const key = `${mod.repo}\0${mod.path}`;
    let text = this.sources.get(key);
    if (text === undefined) {
      const file = this.filePath(mod);
      let buf: Buffer;
      try {
        buf = readFileSync(file);
      } catch (e) {
        throw new NnragError(`cannot read ${file}: ${(e as Error).message}; re-run \`nnrag index\``, 'stale-index');
      }
      if (gitBlobId(buf) !== mod.blob) {
        throw new NnragError(`${file} changed since it was indexed; re-run \`nnrag index\``, 'stale-index');
      }
      text = decodePython(buf).text;
      this.sources.set(key, text);
    }
    return text;
  }
}
