// The Python unit tests of the harness package (test/validate/python/, unittest), run
// with the interpreter that validates (a real torch): each argument and input source and
// the value encoding are tested on their own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fixture } from '../helpers.js';
import { torchPython } from './common.js';

const py = await torchPython();

test('nnrag_harness unit tests (values, harvest, sources)', {
  skip: py ? false : 'no Python with torch on this machine',
}, () => {
  const file = fixture('..', 'validate', 'python', 'test_nnrag_harness.py');
  const r = spawnSync(py!.python, [file], {
    encoding: 'utf8',
    timeout: 600000,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  });
  assert.equal(r.status, 0, `python unit tests failed:\n${r.stderr}${r.stdout}`);
  const ran = /Ran (\d+) tests?/.exec(r.stderr);
  assert.ok(ran && Number(ran[1]) >= 10 && /\nOK/.test(r.stderr), r.stderr);
});

test('nnrag_harness.usage unit tests (parameters used as indices, read from the code)', {
  skip: py ? false : 'no Python with torch on this machine',
}, () => {
  const file = fixture('..', 'validate', 'python', 'test_usage.py');
  const r = spawnSync(py!.python, [file], {
    encoding: 'utf8',
    timeout: 600000,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  });
  assert.equal(r.status, 0, `python unit tests failed:\n${r.stderr}${r.stdout}`);
  assert.match(r.stderr, /Ran [1-9]\d* tests?[\s\S]*\nOK/);
});

test('nnrag_harness.snippet unit tests (usage snippets: quoting, whitelist IR, ast check, run, values check)', {
  skip: py ? false : 'no Python with torch on this machine',
}, () => {
  const file = fixture('..', 'validate', 'python', 'test_snippet.py');
  const r = spawnSync(py!.python, [file], {
    encoding: 'utf8',
    timeout: 600000,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  });
  assert.equal(r.status, 0, `python unit tests failed:\n${r.stderr}${r.stdout}`);
  assert.match(r.stderr, /Ran [1-9]\d* tests?[\s\S]*\nOK/);
});
