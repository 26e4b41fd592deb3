// The version a checkout's build gives its distribution (src/environment/checkout-version.ts),
// read from the packaging files of small repositories written here, never by running them:
// each way a build declares its version, and a value that is not a version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { checkoutVersion, pep440 } from '../../src/environment/checkout-version.js';
import { tempDir } from '../helpers.js';

function repo(files: Record<string, string>): string {
  const root = tempDir();
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return root;
}

test('a checkout version is read the way its build reads it', () => {
  // PEP 621 static version
  assert.equal(checkoutVersion(repo({ 'pyproject.toml': '[project]\nname = "a"\nversion = "2.9.0"\n' }), 'a'), '2.9.0');
  // setup.cfg: a literal, and `attr:` naming a module's __version__
  assert.equal(checkoutVersion(repo({ 'setup.cfg': '[metadata]\nname = b\nversion = 1.4\n' }), 'b'), '1.4');
  assert.equal(
    checkoutVersion(
      repo({
        'setup.cfg': '[metadata]\nname = c\nversion = attr: c.about.__version__\n',
        'c/about.py': '__version__ = "0.3.1"\n',
      }),
      'c',
    ),
    '0.3.1',
  );
  // setup.py: a literal argument
  assert.equal(checkoutVersion(repo({ 'setup.py': "setup(name='d', version='1.0')\n" }), 'd'), '1.0');
  // setup.py reading a version file it names (exec of mmcv/version.py)
  assert.equal(
    checkoutVersion(
      repo({
        'setup.py':
          "version_file = 'e/version.py'\ndef get_version():\n    exec(open(version_file).read())\nsetup(name='e', version=get_version())\n",
        'e/version.py': "__version__ = '2.2.0'\n",
      }),
      'e',
    ),
    '2.2.0',
  );
  // a dynamic version in pyproject.toml read from a file (pdm: `path = "f/version.py"`)
  assert.equal(
    checkoutVersion(
      repo({
        'pyproject.toml':
          '[project]\nname = "f"\ndynamic = ["version"]\n[tool.pdm.version]\nsource = "file"\npath = "f/version.py"\n',
        'f/version.py': "__version__ = '1.0.29.dev0'\n",
      }),
      'f',
    ),
    '1.0.29.dev0',
  );
  // os.path.join(..., "g", "__init__.py") (detectron2's get_version), and the package's
  // own __init__ when nothing names a file
  assert.equal(
    checkoutVersion(
      repo({
        'setup.py':
          'p = path.join(path.dirname(__file__), "g", "__init__.py")\nsetup(name="g", version=get_version())\n',
        'g/__init__.py': '__version__ = "0.6"\n',
      }),
      'g',
    ),
    '0.6',
  );
  assert.equal(
    checkoutVersion(
      repo({ 'setup.py': 'setup(name="h-pkg")\n', 'h_pkg/__init__.py': '__version__ = "3.1rc1"\n' }),
      'h-pkg',
    ),
    '3.1rc1',
  );
  // nothing to read: no version (the checkout is then installed without a pin)
  assert.equal(checkoutVersion(repo({ 'setup.py': 'setup(name="i", version=compute())\n' }), 'i'), null);
  assert.equal(pep440('2.0.0rc4'), '2.0.0rc4');
  assert.equal(pep440('{version}'), null);
});
