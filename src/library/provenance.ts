// Provenance of library blocks: the `required_repos.json` manifests (per block and for the
// whole library: repository names, origin URLs, revisions as `swh:1:rev:` SWHIDs, and the
// `swh:1:cnt:` SWHID of every contributing source file) and the license of each repository.
//
// Content SWHIDs come from the extraction record (the git blob id of the indexed bytes, see
// swhid.ts); `checkSwhids` re-hashes the files on disk so a file changed since indexing is
// reported rather than silently attributed.
//
// Licenses are identified by the text of the repository's license file (LICENSE, COPYING …
// at the repository root), else by the `license` field of pyproject.toml (PEP 621: a string
// SPDX expression (PEP 639) or a table with `text`), setup.cfg or setup.py, as an SPDX id
// (https://spdx.org/licenses/) for common licenses, else 'unknown'.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { IndexedRepo } from '../store/store.js';
import type { ProvenanceEntry } from './spec.js';
import { contentSwhid, originUrl, revisionSwhid } from './swhid.js';

export interface LicenseInfo {
  /** SPDX license id, or 'unknown' */
  spdx: string;
  /** file (relative to the repository root) the license was read from, null when none */
  source: string | null;
}

/** Distinctive phrases of common license texts, most specific first. */
const TEXT_RULES: { spdx: string; test: (t: string) => boolean }[] = [
  { spdx: 'AGPL-3.0', test: (t) => /GNU AFFERO GENERAL PUBLIC LICENSE/i.test(t) },
  { spdx: 'LGPL-3.0', test: (t) => /GNU LESSER GENERAL PUBLIC LICENSE/i.test(t) && /Version 3/i.test(t) },
  { spdx: 'LGPL-2.1', test: (t) => /GNU LESSER GENERAL PUBLIC LICENSE/i.test(t) && /Version 2\.1/i.test(t) },
  { spdx: 'GPL-3.0', test: (t) => /GNU GENERAL PUBLIC LICENSE/i.test(t) && /Version 3/i.test(t) },
  { spdx: 'GPL-2.0', test: (t) => /GNU GENERAL PUBLIC LICENSE/i.test(t) && /Version 2/i.test(t) },
  { spdx: 'Apache-2.0', test: (t) => /Apache License/i.test(t) && /Version 2\.0/i.test(t) },
  { spdx: 'MPL-2.0', test: (t) => /Mozilla Public License,? (Version|v\.?) ?2\.0/i.test(t) },
  { spdx: 'CC-BY-NC-SA-4.0', test: (t) => /Attribution-NonCommercial-ShareAlike 4\.0/i.test(t) },
  { spdx: 'CC-BY-NC-4.0', test: (t) => /Attribution-NonCommercial 4\.0/i.test(t) },
  { spdx: 'CC-BY-4.0', test: (t) => /Creative Commons Attribution 4\.0/i.test(t) },
  { spdx: 'Unlicense', test: (t) => /This is free and unencumbered software released into the public domain/i.test(t) },
  { spdx: 'MIT', test: (t) => /Permission is hereby granted, free of charge, to any person obtaining a copy/i.test(t) },
  {
    spdx: 'ISC',
    test: (t) => /Permission to use, copy, modify, and\/or distribute this software for any purpose/i.test(t),
  },
  {
    spdx: 'BSD-3-Clause',
    test: (t) =>
      /Redistribution and use in source and binary forms/i.test(t) &&
      /(Neither the name|names of its contributors)/i.test(t),
  },
  { spdx: 'BSD-2-Clause', test: (t) => /Redistribution and use in source and binary forms/i.test(t) },
];

/** SPDX id from a license text (a whole license file). */
export function licenseFromText(text: string): string {
  const t = text.replace(/\s+/g, ' ');
  return TEXT_RULES.find((r) => r.test(t))?.spdx ?? 'unknown';
}

/** SPDX id from a short metadata value (`MIT`, `Apache 2.0`, `BSD-3-Clause`, `GPLv3`). */
export function licenseFromName(name: string): string {
  const n = name.trim().replace(/\s+/g, ' ');
  const rules: [RegExp, string][] = [
    [/^(the )?MIT( License)?$|^Expat$/i, 'MIT'],
    [/^Apache(-| |_)?(Software )?(License)?,?( Version| v)?[ -]?2(\.0)?( License)?$/i, 'Apache-2.0'],
    [/^BSD[- ]3[- ]Clause( License)?$|^(New|Modified|Revised) BSD( License)?$/i, 'BSD-3-Clause'],
    [/^BSD[- ]2[- ]Clause( License)?$|^Simplified BSD( License)?$/i, 'BSD-2-Clause'],
    [/^(GNU )?(A ?GPL|Affero)[- ]?v?3(\.0)?(-only|-or-later|\+)?$/i, 'AGPL-3.0'],
    [/^(GNU )?LGPL[- ]?v?3(\.0)?(-only|-or-later|\+)?$/i, 'LGPL-3.0'],
    [/^(GNU )?LGPL[- ]?v?2\.1(-only|-or-later|\+)?$/i, 'LGPL-2.1'],
    [/^(GNU )?GPL[- ]?v?3(\.0)?(-only|-or-later|\+)?$|^GNU General Public License v3/i, 'GPL-3.0'],
    [/^(GNU )?GPL[- ]?v?2(\.0)?(-only|-or-later|\+)?$|^GNU General Public License v2/i, 'GPL-2.0'],
    [/^MPL[- ]?2(\.0)?$|^Mozilla Public License 2\.0/i, 'MPL-2.0'],
    [/^ISC( License)?$/i, 'ISC'],
    [/^Unlicense$/i, 'Unlicense'],
    [/^CC[- ]BY[- ]NC[- ]4\.0$/i, 'CC-BY-NC-4.0'],
    [/^CC[- ]BY[- ]4\.0$/i, 'CC-BY-4.0'],
  ];
  return rules.find(([re]) => re.test(n))?.[1] ?? 'unknown';
}

const LICENSE_FILE = /^(LICEN[CS]E|COPYING)(\.(txt|md|rst))?$/i;

/** The license of a repository checkout (its root folder). */
export function detectLicense(root: string): LicenseInfo {
  let entries: string[] = [];
  try {
    entries = readdirSync(root);
  } catch {
    return { spdx: 'unknown', source: null };
  }
  const files = entries.filter((e) => LICENSE_FILE.test(e)).sort((a, b) => a.length - b.length || a.localeCompare(b));
  for (const f of files) {
    const text = readText(path.join(root, f));
    if (text === null) continue;
    const spdx = licenseFromText(text);
    if (spdx !== 'unknown') return { spdx, source: f };
  }
  // packaging metadata
  const pyproject = readText(path.join(root, 'pyproject.toml'));
  if (pyproject) {
    // PEP 639: license = "MIT"; PEP 621: license = {text = "MIT"} (or {file = "LICENSE"})
    const m = /^\s*license\s*=\s*(?:"([^"]+)"|'([^']+)'|\{\s*text\s*=\s*"([^"]+)"\s*\})/m.exec(pyproject);
    const v = m?.[1] ?? m?.[2] ?? m?.[3];
    if (v && licenseFromName(v) !== 'unknown') return { spdx: licenseFromName(v), source: 'pyproject.toml' };
  }
  const cfg = readText(path.join(root, 'setup.cfg'));
  if (cfg) {
    const m = /^\s*license\s*=\s*(.+)$/m.exec(cfg);
    if (m && licenseFromName(m[1]) !== 'unknown') return { spdx: licenseFromName(m[1]), source: 'setup.cfg' };
  }
  const setup = readText(path.join(root, 'setup.py'));
  if (setup) {
    const m = /\blicense\s*=\s*['"]([^'"]+)['"]/.exec(setup);
    if (m && licenseFromName(m[1]) !== 'unknown') return { spdx: licenseFromName(m[1]), source: 'setup.py' };
  }
  return { spdx: 'unknown', source: files[0] ?? null };
}

function readText(file: string): string | null {
  try {
    return existsSync(file) ? readFileSync(file, 'utf8') : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- manifests

export interface ManifestFile {
  path: string;
  module: string;
  /** `swh:1:cnt:<git blob id>` of the file as indexed */
  swhid: string;
  /** line ranges copied from this file (per block manifests) */
  lines?: [number, number][];
  /** blocks that copy from this file (library manifest) */
  blocks?: string[];
}

export interface ManifestRepo {
  name: string;
  url: string | null;
  /** git commit id, when the checkout is a git repository */
  revision: string | null;
  /** `swh:1:rev:<commit>` */
  revision_swhid: string | null;
  license: string;
  license_file: string | null;
  files: ManifestFile[];
  /** the content SWHIDs of `files`, for tools that only want the identifiers */
  swhids: string[];
}

export interface RequiredRepos {
  /** block id for a per-block manifest; null for the library manifest */
  block: string | null;
  repos: ManifestRepo[];
}

const HEX40 = /^[0-9a-f]{40}$/i;

function repoEntry(
  name: string,
  repo: IndexedRepo | undefined,
  prov: ProvenanceEntry | undefined,
  license: LicenseInfo | undefined,
): ManifestRepo {
  const revision = repo?.revision ?? prov?.revision ?? null;
  const url = repo?.url ?? prov?.url ?? null;
  return {
    name,
    url: url ? originUrl(url) : null,
    revision,
    revision_swhid: revision && HEX40.test(revision) ? revisionSwhid(revision) : null,
    license: license?.spdx ?? 'unknown',
    license_file: license?.source ?? null,
    files: [],
    swhids: [],
  };
}

/** The `required_repos.json` of one block, from its record's provenance entries. */
export function blockManifest(
  id: string,
  provenance: readonly ProvenanceEntry[],
  repos: ReadonlyMap<string, IndexedRepo>,
  licenses: ReadonlyMap<string, LicenseInfo>,
): RequiredRepos {
  const byRepo = new Map<string, ManifestRepo>();
  for (const p of provenance) {
    let r = byRepo.get(p.repo);
    if (!r) byRepo.set(p.repo, (r = repoEntry(p.repo, repos.get(p.repo), p, licenses.get(p.repo))));
    r.files.push({ path: p.path, module: p.module, swhid: p.swhid, lines: p.ranges });
  }
  return { block: id, repos: finish([...byRepo.values()]) };
}

/** The library `required_repos.json`: every repository and file any block copies from. */
export function libraryManifest(
  blocks: readonly { id: string; provenance: readonly ProvenanceEntry[] }[],
  repos: ReadonlyMap<string, IndexedRepo>,
  licenses: ReadonlyMap<string, LicenseInfo>,
): RequiredRepos {
  const byRepo = new Map<string, ManifestRepo>();
  const files = new Map<string, ManifestFile>();
  for (const b of blocks) {
    for (const p of b.provenance) {
      let r = byRepo.get(p.repo);
      if (!r) byRepo.set(p.repo, (r = repoEntry(p.repo, repos.get(p.repo), p, licenses.get(p.repo))));
      const key = `${p.repo}\0${p.path}`;
      let f = files.get(key);
      if (!f) {
        files.set(key, (f = { path: p.path, module: p.module, swhid: p.swhid, blocks: [] }));
        r.files.push(f);
      }
      if (!f.blocks!.includes(b.id)) f.blocks!.push(b.id);
    }
  }
  for (const f of files.values()) f.blocks!.sort();
  return { block: null, repos: finish([...byRepo.values()]) };
}

function finish(repos: ManifestRepo[]): ManifestRepo[] {
  for (const r of repos) {
    r.files.sort((a, b) => a.path.localeCompare(b.path));
    r.swhids = [...new Set(r.files.map((f) => f.swhid))].sort();
  }
  return repos.sort((a, b) => a.name.localeCompare(b.name));
}

/** Files of a manifest whose bytes on disk no longer hash to the recorded SWHID (changed
 *  since indexing) or are missing. */
export function checkSwhids(
  manifest: RequiredRepos,
  repos: ReadonlyMap<string, IndexedRepo>,
): { repo: string; path: string; expected: string; actual: string | null }[] {
  const bad: { repo: string; path: string; expected: string; actual: string | null }[] = [];
  for (const r of manifest.repos) {
    const root = repos.get(r.name)?.root;
    for (const f of r.files) {
      let actual: string | null = null;
      try {
        if (root) actual = contentSwhid(readFileSync(path.join(root, f.path)));
      } catch {
        actual = null;
      }
      if (actual !== f.swhid) bad.push({ repo: r.name, path: f.path, expected: f.swhid, actual });
    }
  }
  return bad;
}
