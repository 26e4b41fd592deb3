// The pins export writes say what was tested (requirements.ts testedPin): a lower bound
// that admits the tested version itself, checked against PEP 440's order (compareVersions),
// and the lowest tested version when a block passed in several environments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareVersions, parsePep440, testedPin } from '../../src/environment/requirements.js';

/** Whether `version` meets `>=bound` in PEP 440's order (the check pip makes). */
const admits = (pin: string, version: string) => compareVersions(version, pin.split('>=')[1]) >= 0;

test('a tested pre-release or development release is admitted by its own pin', () => {
  // mmengine 0.11.0rc0 was `>=0.11.0`, which excludes 0.11.0rc0 (0.11.0rc0 < 0.11.0)
  assert.equal(testedPin('mmengine', '0.11.0rc0'), 'mmengine>=0.11.0rc0');
  assert.equal(testedPin('mmcv', '2.0.0rc4'), 'mmcv>=2.0.0rc4');
  assert.equal(testedPin('f', '1.0.29.dev0'), 'f>=1.0.29.dev0');
  assert.equal(testedPin('g', '1.0b2.dev3'), 'g>=1.0b2.dev3');
  // the spellings PEP 440 normalises
  assert.equal(testedPin('h', '1.0-RC.1'), 'h>=1.0rc1');
  assert.equal(testedPin('h', '1.0alpha'), 'h>=1.0a0');
  assert.equal(testedPin('h', '1.0c2'), 'h>=1.0rc2');
  assert.equal(testedPin('e', '1!2.0'), 'e>=1!2.0');
  // post-releases and local labels: bounded at the release, which admits them
  assert.equal(testedPin('tzdata', '2024.1.post1'), 'tzdata>=2024.1');
  assert.equal(testedPin('k', '1.0-1'), 'k>=1.0');
  assert.equal(testedPin('torch', '2.9.1+cpu'), 'torch>=2.9.1');
  assert.equal(testedPin('torch', '1.13.0a0+gitunknown'), 'torch>=1.13.0a0');
  // not PEP 440: the leading release, else the bare name
  assert.equal(testedPin('odd', '1.2.3-custom-build'), 'odd>=1.2.3');
  assert.equal(testedPin('odd', 'unknown-version'), 'odd');
  for (const v of ['0.11.0rc0', '2.0.0rc4', '1.0.29.dev0', '1.0b2.dev3', '2024.1.post1', '1.0.post1.dev0', '2.9.1+cpu'])
    assert.ok(admits(testedPin('x', v), v), `${testedPin('x', v)} admits ${v}`);
});

test("versions compare in PEP 440's order", () => {
  const ordered = [
    '1.0.dev0',
    '1.0a1.dev1',
    '1.0a1',
    '1.0a2',
    '1.0b1',
    '1.0rc0',
    '1.0rc1',
    '1.0',
    '1.0.post1.dev0',
    '1.0.post1',
    '1.0.1',
    '1.10',
    '1!0.1',
  ];
  for (let i = 0; i < ordered.length; i++)
    for (let j = 0; j < ordered.length; j++)
      assert.equal(
        Math.sign(compareVersions(ordered[i], ordered[j])),
        Math.sign(i - j),
        `${ordered[i]} vs ${ordered[j]}`,
      );
  assert.equal(compareVersions('2.6', '2.6.0'), 0);
  assert.equal(compareVersions('2.6.0+cpu', '2.6.0'), 0);
  assert.equal(parsePep440('not a version'), null);
});
