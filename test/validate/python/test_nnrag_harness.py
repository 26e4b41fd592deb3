"""Unit tests of the harness package (src/validate/python/nnrag_harness), one class per
module: values (encode / decode), harvest (argparse defaults read statically, size ranks,
configurations by use, entry-point call plans) and sources (the witness source and the
label -> source rule). Run with a Python that has torch (test/validate/harness-package.test.ts)."""
import argparse
import dataclasses
import functools
import os
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "validate", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from nnrag_harness import harvest as H  # noqa: E402
from nnrag_harness import sources as S  # noqa: E402
from nnrag_harness import values as V  # noqa: E402


@dataclasses.dataclass
class Cfg:
    width: int = 4
    heads: int = 2


class Box(object):
    def __init__(self, t, m):
        self.t = t
        self.m = m


class Lin(nn.Module):
    def __init__(self, d, act=nn.ReLU):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = act()

    def forward(self, x):
        return self.act(self.fc(x))


NS = {"Cfg": Cfg, "Box": Box, "Lin": Lin}
resolve = V.module_resolver(NS, lambda m: m.split(".")[0] in ("torch", "functools"))


class ValuesTest(unittest.TestCase):
    def roundtrip(self, v, modules=None):
        enc = V.encode(v, modules)
        return enc, V.decode(enc, resolve, torch, torch.Generator().manual_seed(0))

    def test_plain_data(self):
        for v in [1, 2.5, "x", None, True, (1, 2), [1, (2, 3)], {"a": (1,)}]:
            self.assertEqual(self.roundtrip(v)[1], v)
        self.assertEqual(self.roundtrip(float("inf"))[1], float("inf"))

    def test_classes_partials_dataclasses(self):
        enc, dec = self.roundtrip(functools.partial(nn.LayerNorm, eps=1e-6))
        self.assertIs(dec.func, nn.LayerNorm)
        self.assertEqual(dec.keywords, {"eps": 1e-6})
        enc, dec = self.roundtrip(Cfg(width=8))
        self.assertEqual(dec, Cfg(width=8))

    def test_unknown_dataclass_becomes_namespace(self):
        enc = V.encode(Cfg(width=8))
        enc["$dataclass"] = ["elsewhere", "Other"]
        dec = V.decode(enc, resolve, torch)
        self.assertIsInstance(dec, types.SimpleNamespace)
        self.assertEqual(dec.width, 8)

    def test_tensors(self):
        ids = torch.tensor([[1, 5, 9]])
        enc, dec = self.roundtrip(ids)
        self.assertTrue(torch.equal(dec, ids))
        mask = torch.tensor([True, False])
        self.assertTrue(torch.equal(self.roundtrip(mask)[1], mask))
        x = torch.rand(2, 3, 4) + 5.0
        enc, dec = self.roundtrip(x)
        self.assertEqual(list(dec.shape), [2, 3, 4])
        self.assertEqual(dec.dtype, torch.float32)
        self.assertGreaterEqual(float(dec.min()), enc["min"])
        self.assertEqual(V.size_of(enc), 24)

    def test_module_instances_need_their_construction(self):
        m = Lin(4)
        with self.assertRaises(V.Unencodable):
            V.encode(m)
        enc, dec = self.roundtrip(m, {id(m): (m, Lin, (4,), {})})
        self.assertIsInstance(dec, Lin)
        self.assertEqual(dec.fc.in_features, 4)

    def test_objects_from_fields(self):
        enc, dec = self.roundtrip(Box(torch.zeros(2), [1]))
        self.assertIsInstance(dec, Box)
        self.assertEqual(dec.m, [1])

    def test_unresolvable(self):
        with self.assertRaises(V.Unresolvable):
            V.decode({"$ref": ["repo.mod", "Missing"]}, resolve, torch)


class HarvestTest(unittest.TestCase):
    def test_argparse_defaults(self):
        src = ("import argparse\np = argparse.ArgumentParser()\n"
               "p.add_argument('--hidden-dim', default=256, type=int)\n"
               "p.add_argument('--aux', action='store_true')\n"
               "p.add_argument('--no-x', dest='x', action='store_false')\n"
               "p.add_argument('--device', default='cuda')\n"
               "p.add_argument('--lr', type=float)\n")
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(src)
        try:
            d = H.argparse_defaults(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(d, {"hidden_dim": 256, "aux": False, "x": True, "device": "cpu", "lr": None})

    def test_size_rank(self):
        names = ["vit_large_patch16", "vit_tiny_patch16", "vit_base_patch16", "resnet50"]
        self.assertEqual(sorted(names, key=H.size_rank)[0], "vit_tiny_patch16")

    def test_configs_by_use(self):
        class Block(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.a = config.width + config.heads

        configs = [{"kind": "argparse", "fields": {"lr": 1, "epochs": 2, "depth": 3}},
                   {"kind": "dataclass", "ref": [__name__, "Cfg"], "fields": ["width", "heads"]}]
        self.assertEqual(H.choose_configs(Block, "config", configs)[0]["kind"], "dataclass")
        plan = H.call_plan(Block, configs, [])
        self.assertEqual(plan["config"]["config"]["kind"], "dataclass")

    def test_call_plan(self):
        def build(pretrained=True, n=3):
            return None

        def needs(width):
            return None
        self.assertEqual(H.call_plan(build, [], []), {"pretrained": {"value": False}})
        self.assertIsNone(H.call_plan(needs, [], []))

    def test_recorder(self):
        rec = H.Recorder(torch, {"m.Lin": Lin}, [])
        rec.install(nn)
        try:
            m = Lin(3, act=nn.GELU)
            m(torch.randn(2, 3))
            w = rec.witnesses("test")["m.Lin"]["witnesses"][0]
        finally:
            for cls, name, orig in rec.patched:
                setattr(cls, name, orig)
        self.assertEqual(w["args"], [3])
        self.assertEqual(w["kwargs"]["act"], {"$ref": ["torch.nn.modules.activation", "GELU"]})
        self.assertEqual(w["inputs"]["args"][0]["$tensor"], [2, 3])
        self.assertEqual(w["outputs"], [[2, 3]])


class SourcesTest(unittest.TestCase):
    def test_source_of(self):
        self.assertEqual(S.source_of("witness 1 x.y"), "witness")
        self.assertEqual(S.source_of("call-site 2 guessed=1"), "call-site")
        self.assertEqual(S.source_of("config cfgs['a']"), "config-table")
        self.assertEqual(S.source_of("defaults"), "defaults")
        self.assertEqual(S.source_of("heuristic d=32 h=4"), "guess")
        self.assertEqual(S.source_of("widths d=32 h=4"), "guess")

    def test_witness_candidates_and_inputs(self):
        w = {"args": [4], "kwargs": {"act": {"$ref": ["torch.nn.modules.activation", "GELU"]}},
             "inputs": {"args": [{"$tensor": [2, 4], "dtype": "float32"}], "kwargs": {}}, "entry": "e", "params": 20}
        bad = {"args": [{"$module": ["repo.x", "Missing"], "args": [], "kwargs": {}}], "kwargs": {}, "entry": "e"}
        res = S.copy_resolver(NS, ["repo"], {})
        cands, skipped = S.witness_candidates([bad, w], res, torch)
        self.assertEqual(len(cands), 1)
        self.assertEqual(len(skipped), 1)
        label, args, kwargs, _ = cands[0]
        self.assertEqual(S.source_of(label), "witness")
        m = Lin(*args, **kwargs)
        a, kw = S.witness_inputs(w, res, torch)
        self.assertEqual(list(m(*a, **kw).shape), [2, 4])
        a2, _ = S.witness_inputs(w, res, torch)
        self.assertTrue(torch.equal(a[0], a2[0]))  # the same seed: the copy and the original get the same inputs


if __name__ == "__main__":
    unittest.main()
