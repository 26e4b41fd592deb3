// The version a checkout's build would give its distribution, read from its packaging files
// as text, never by running them: PEP 621 `[project] version` in pyproject.toml; setup.cfg's
// `[metadata] version` (a literal, `attr: pkg.mod.__version__` or `file: VERSION`); a
// literal `version=` argument in setup.py; else the version file the build reads (a
// `version_file`/`path = "pkg/version.py"` string in setup.py or pyproject.toml, a
// setuptools/pdm/hatch dynamic `attr`), then `<package>/version.py`, `<package>/_version.py`,
// `<package>/__init__.py` of the distribution's package, holding `__version__ = "…"`.
// The environment layer pins an installed checkout at this version when it resolves the
// other requirements (pypi.ts), so that a repository that pins another version is seen to
// conflict with it.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

function read(root: string, rel: string): string | null {
  try {
    return readFileSync(path.join(root, rel), 'utf8');
  } catch {
    return null;
  }
}

/** A PEP 440 public version (with pre-, post-, dev- and local labels); anything else is
 *  not taken for one (a computed value, a placeholder). */
export function pep440(v: string | undefined | null): string | null {
  const s = v?.trim();
  return s &&
    /^v?\d+(\.\d+)*((a|b|c|rc|alpha|beta|pre|preview)\.?\d*)?(\.?post\d*)?(\.?dev\d*)?(\+[a-z0-9.]+)?$/i.test(s)
    ? s.replace(/^v/, '')
    : null;
}

/** `__version__ = "1.2.0"` (or `version = …`, `VERSION = …`) at a module's top level. */
function versionInModule(text: string | null): string | null {
  if (!text) return null;
  const m = /^(?:__version__|version|VERSION)\s*(?::\s*str\s*)?=\s*["']([^"']+)["']/m.exec(text);
  return pep440(m?.[1]);
}

/** The file of a dotted module (`pkg.version` → pkg/version.py or pkg/version/__init__.py,
 *  also under src/). */
function moduleFile(root: string, dotted: string): string | null {
  const rel = dotted.split('.').join('/');
  for (const base of ['', 'src/'])
    for (const f of [`${base}${rel}.py`, `${base}${rel}/__init__.py`]) if (existsSync(path.join(root, f))) return f;
  return null;
}

/** The version of a checkout's distribution as its build would make it, or null. */
export function checkoutVersion(root: string, distribution?: string | null): string | null {
  const pyproject = read(root, 'pyproject.toml');
  const project = pyproject && /^\[project\]([^[]*)/m.exec(pyproject)?.[1];
  const literal = project && /^version\s*=\s*["']([^"']+)["']/m.exec(project);
  if (literal) return pep440(literal[1]);
  const cfg = read(root, 'setup.cfg');
  const meta = cfg && /^\[metadata\]([^[]*)/m.exec(cfg)?.[1];
  const cfgVersion = meta && /^version\s*=\s*(.+)$/m.exec(meta)?.[1].trim();
  if (cfgVersion) {
    const attr = /^attr:\s*([\w.]+)\.\w+$/.exec(cfgVersion);
    const file = /^file:\s*(\S+)/.exec(cfgVersion);
    const v = attr
      ? versionInModule(moduleFile(root, attr[1]) && read(root, moduleFile(root, attr[1])!))
      : file
        ? pep440(read(root, file[1]))
        : pep440(cfgVersion);
    if (v) return v;
  }
  const setup = read(root, 'setup.py');
  const setupLiteral = setup && /\bversion\s*=\s*["']([^"']+)["']/.exec(setup);
  if (setupLiteral && pep440(setupLiteral[1])) return pep440(setupLiteral[1]);
  // a version file named by the build: `version_file = 'mmcv/version.py'`,
  // `[tool.pdm.version] path = "timm/version.py"`, `attr = "pkg.version.__version__"`,
  // `os.path.join(..., "detectron2", "__init__.py")`
  const files: string[] = [];
  for (const text of [setup, pyproject]) {
    if (!text) continue;
    for (const m of text.matchAll(/["']([\w./-]+\.py)["']/g)) files.push(m[1]);
    for (const m of text.matchAll(/attr\s*=\s*["']([\w.]+)\.\w+["']/g)) {
      const f = moduleFile(root, m[1]);
      if (f) files.push(f);
    }
    for (const m of text.matchAll(/join\([^)]*?["'](\w+)["']\s*,\s*["'](\w+\.py)["']\s*\)/g))
      files.push(`${m[1]}/${m[2]}`);
  }
  const pkg = distribution?.replace(/[-.]/g, '_');
  if (pkg)
    for (const base of ['', 'src/'])
      for (const f of ['version.py', '_version.py', '__init__.py']) files.push(`${base}${pkg}/${f}`);
  for (const f of files) {
    if (f === 'setup.py' || path.isAbsolute(f) || f.split('/').includes('..')) continue;
    const v = versionInModule(read(root, f));
    if (v) return v;
  }
  return null;
}
