"""Unit tests of the harness package (src/validate/python/nnrag_harness), one class per
module: values (encode / decode), harvest (argparse defaults read statically, size ranks,
configurations by use, entry-point call plans), sources (the witness source and the
label -> source rule) and stash (the original's modules hidden and kept). Run with a Python that has torch (test/validate/harness-package.test.ts)."""

import copy
import dataclasses
import functools
import importlib.machinery
import json
import math
import os
import shutil
import sys
import tempfile
import types
import typing
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "validate", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from nnrag_harness import arguments as A  # noqa: E402
from nnrag_harness import candidates as CA  # noqa: E402
from nnrag_harness import classify as C  # noqa: E402
from nnrag_harness import configs as CF  # noqa: E402
from nnrag_harness import harvest as H  # noqa: E402
from nnrag_harness import harvest_docs as HD  # noqa: E402
from nnrag_harness import inputs as I  # noqa: E402
from nnrag_harness import source_callsite as SC  # noqa: E402
from nnrag_harness import source_guess as SG  # noqa: E402
from nnrag_harness import source_provider as PR  # noqa: E402
from nnrag_harness import source_table as ST  # noqa: E402
from nnrag_harness import source_witness as SW  # noqa: E402
from nnrag_harness import sources as S  # noqa: E402
from nnrag_harness import namespace as NS_MOD  # noqa: E402
from nnrag_harness import stash as STASH_MOD  # noqa: E402
from nnrag_harness import structured as T  # noqa: E402
from nnrag_harness import values as V  # noqa: E402
from nnrag_harness import CANDIDATE_MODULE  # noqa: E402


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


def _legacy(fn):
    """A decorator keeping the factory in its closure (functools.wraps: __wrapped__ too)."""

    @functools.wraps(fn)
    def wrapper(*a, **k):
        return fn(*a, **k)

    return wrapper


def _plain(fn):
    """A decorator without functools.wraps: the factory only in its closure."""

    def inner(*a, **k):
        return fn(*a, **k)

    return inner


def _make_lin():
    return Lin(4)


wrapped_factory = _legacy(_make_lin)
closure_factory = _plain(_make_lin)


class ValuesTest(unittest.TestCase):
    def roundtrip(self, v, modules=None):
        enc = V.encode(v, modules)
        return enc, V.decode(enc, resolve, torch, torch.Generator().manual_seed(0))

    def test_tensor_statistics_are_those_of_its_finite_values(self):
        def reference(t):
            # the finite values gathered by a mask, then their statistics
            f = t.detach().float()
            finite = f[f.isfinite()]
            if not finite.numel():
                return {}
            return {
                "min": float(finite.min()),
                "max": float(finite.max()),
                "mean": float(finite.mean()),
                "std": float(finite.std()) if finite.numel() > 1 else 0.0,
            }

        g = torch.Generator().manual_seed(3)
        base = torch.randn(2, 5, 7, 9, generator=g) * 3
        with_nan = base.clone()
        with_nan[0, 1, 2, 3] = float("nan")
        with_inf = base.clone()
        with_inf[1, 4, 6, 8] = float("-inf")
        zeros = torch.tensor([0.0, -0.0, 1.0, -0.0, 0.0])
        cases = {
            "contiguous": base,
            "permuted": base.permute(0, 2, 3, 1),
            "a view with an offset": base[1, 2:, 1:, 3:],
            "half": base.half(),
            "bfloat16": base.bfloat16(),
            "double": base.double(),
            "a NaN": with_nan,
            "a NaN, permuted": with_nan.transpose(1, 3),
            "an infinity": with_inf,
            "all NaN": torch.full((3, 4), float("nan")),
            "one value": torch.tensor([2.5]),
            "a scalar": torch.tensor(-1.5),
            "signed zeros": zeros,
            "a parameter": nn.Parameter(base[0]),
        }
        for name, t in cases.items():
            enc = V.encode(t)
            got = {k: enc[k] for k in ("min", "max", "mean", "std") if k in enc}
            want = reference(t)
            self.assertEqual(got, want, name)
            # the same bits: a zero's sign too
            self.assertEqual(
                [math.copysign(1, v) for v in got.values()], [math.copysign(1, v) for v in want.values()], name
            )

    def test_plain_data(self):
        for v in [1, 2.5, "x", None, True, (1, 2), [1, (2, 3)], {"a": (1,)}]:
            self.assertEqual(self.roundtrip(v)[1], v)
        self.assertEqual(self.roundtrip(float("inf"))[1], float("inf"))

    def test_integral_floats_stay_floats_through_javascript_json(self):
        # node reads the harvest's JSON with JSON.parse and writes it back: a number
        # written `2.0` comes back `2`, an int in Python (JavaScript has one number type)
        import json

        def via_node(enc):
            return json.loads(
                json.dumps(enc), parse_float=lambda t: int(float(t)) if float(t).is_integer() else float(t)
            )

        m = Lin(4)
        for v in [2.0, -0.0, 1e20, (0.5, 1.0, 2.0), {"scale": 3.0}, {1: 2.0}]:
            enc = V.encode(v)
            dec = V.decode(via_node(enc), resolve, torch)
            self.assertEqual(dec, v)
            self.assertEqual(repr(dec), repr(v))
        self.assertEqual(V.encode(2.0), {"$float": "2.0"})
        self.assertEqual(V.encode(2.5), 2.5)
        # a module's plain attributes too
        m.gain = 1.0
        enc = V.encode(m, {id(m): (m, Lin, (4,), {})})
        fresh = V.decode(via_node(enc), resolve, torch)
        self.assertEqual(repr(fresh.gain), "1.0")

    def test_plans_keep_their_floats(self):
        plan = {
            "args": {"config": {"kind": "argparse", "fields": {"w": 2.0, "d": 2, "r": [0.5, 1.0]}}},
            "n": {"value": 3.0},
        }
        kept = V.keep_floats(plan)
        self.assertEqual(kept["n"], {"value": {"$float": "3.0"}})
        back = V.plain_floats(
            json.loads(json.dumps(kept), parse_float=lambda t: int(float(t)) if float(t).is_integer() else float(t))
        )
        self.assertEqual(repr(back), repr(plan))
        # a dict that is not exactly the marker stays a dict
        self.assertEqual(V.plain_floats({"$float": "x"}), {"$float": "x"})
        self.assertEqual(V.plain_floats({"$float": "1.0", "k": 1}), {"$float": "1.0", "k": 1})

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
        src = (
            "import argparse\np = argparse.ArgumentParser()\n"
            "p.add_argument('--hidden-dim', default=256, type=int)\n"
            "p.add_argument('--aux', action='store_true')\n"
            "p.add_argument('--no-x', dest='x', action='store_false')\n"
            "p.add_argument('--device', default='cuda')\n"
            "p.add_argument('--lr', type=float)\n"
        )
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
        # a registry entry's name ends in its key's quote and bracket: the size word still counts
        keyed = ["pkg.MODELS['net_b0']", "pkg.MODELS['net_v2_s']", "pkg.MODELS['net_v2_l']"]
        self.assertEqual(
            sorted(keyed, key=H.size_rank), ["pkg.MODELS['net_v2_s']", "pkg.MODELS['net_b0']", "pkg.MODELS['net_v2_l']"]
        )

    def test_configs_by_use(self):
        class Block(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.a = config.width + config.heads

        configs = [
            {"kind": "argparse", "fields": {"lr": 1, "epochs": 2, "depth": 3}},
            {"kind": "dataclass", "ref": [__name__, "Cfg"], "fields": ["width", "heads"]},
        ]
        self.assertEqual(H.choose_configs(Block, "config", configs)[0]["kind"], "dataclass")
        plan = H.call_plan(Block, configs, [])
        self.assertEqual(plan["config"]["config"]["kind"], "dataclass")

    def test_whole_model_input_rank_from_its_first_convolution(self):
        video = nn.Sequential(nn.Conv3d(3, 4, 3), nn.ReLU())
        signal = nn.Sequential(nn.Conv1d(2, 4, 3))
        image = nn.Sequential(nn.Conv2d(3, 4, 3))

        def shapes(m, h=None):
            return [list(c[0].shape) for c in H.input_candidates(m, h or {}, torch)]

        self.assertEqual(shapes(video)[0], [1, 3, H.CLIP_FRAMES, 64, 64])
        self.assertEqual(shapes(signal)[0], [1, 2, 64], "the convolution's input channels")
        self.assertEqual(shapes(image), [[1, 3, 64, 64], [1, 3, 224, 224]])
        self.assertEqual(shapes(video, {"img": 112, "chans": 3})[0], [1, 3, H.CLIP_FRAMES, 112, 112])

    def test_reach_through_decorators(self):
        # a registry's value is often a decorator's wrapper whose own code names nothing
        # of the model: reach follows __wrapped__ and the closure into the factory
        ids = {id(Lin): "t.Lin"}
        roots = [os.path.dirname(os.path.abspath(__file__))]
        self.assertEqual(H.reachable(_make_lin, ids, roots), ["t.Lin"])
        self.assertEqual(H.reachable(wrapped_factory, ids, roots), ["t.Lin"])
        self.assertEqual(H.reachable(closure_factory, ids, roots), ["t.Lin"])
        self.assertEqual(
            H.reachable(closure_factory, ids, ["/elsewhere"]), [], "functions outside the roots are not followed"
        )

    def test_call_plan(self):
        def build(pretrained=True, n=3):
            return None

        def needs(width):
            return None

        self.assertEqual(H.call_plan(build, [], []), {"pretrained": {"value": False}})
        self.assertIsNone(H.call_plan(needs, [], []))

    def test_module_classes_scanned_once_and_again_when_names_change(self):
        mod = types.ModuleType("scanned_fixture")
        exec(  # noqa: S102 - the test's own module
            "import torch.nn as nn\nclass A(nn.Module):\n    class Inner(nn.Module):\n        pass\n"
            "Alias = A.Inner\nclass NotModule(object):\n    pass\nImported = nn.Linear\n",
            vars(mod),
        )
        sys.modules["scanned_fixture"] = mod
        try:
            H.warm_scans(nn)
            first = H.module_classes("scanned_fixture", mod, nn)
            self.assertEqual(sorted(c.__qualname__ for c in first), ["A", "A.Inner"], "its own classes by their names")
            self.assertIs(H.module_classes("scanned_fixture", mod, nn), first, "answered from the zygote's scan")
            self.assertEqual(list(H.repo_classes({"scanned_fixture": mod}, nn)), ["scanned_fixture.A"])
            # a class defined in the module after the scan (a test's late definition)
            exec("class B(nn.Module):\n    pass\n", vars(mod))  # noqa: S102
            self.assertEqual(
                sorted(c.__qualname__ for c in H.module_classes("scanned_fixture", mod, nn)), ["A", "A.Inner", "B"]
            )
            # another module object under the same name (imported again) is scanned afresh
            other = types.ModuleType("scanned_fixture")
            self.assertEqual(H.module_classes("scanned_fixture", other, nn), [])
        finally:
            del sys.modules["scanned_fixture"]
            H._SCANS.pop("scanned_fixture", None)

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


class Attn(nn.Module):
    def __init__(self, dim, num_heads, qkv_bias=False, norm_layer=None):
        super().__init__()
        assert dim % num_heads == 0
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)

    def forward(self, x):
        return self.qkv(x)


class ArgumentsTest(unittest.TestCase):
    """The call-site, configuration-table, defaults and guess sources (arguments.py)."""

    def test_recorded_arguments_name_no_address(self):
        def make_conv(c):
            return nn.Conv2d(c, c, 1)

        class Opaque(object):
            pass

        got = A.jsonable(
            {"conv_layer": make_conv, "round": functools.partial(make_conv, 3), "o": Opaque(), "t": nn.ReLU}
        )
        # a function by its qualified name, as a class; a partial and a default repr without
        # the address that differs from process to process
        self.assertEqual(
            got["conv_layer"], __name__ + ".ArgumentsTest.test_recorded_arguments_name_no_address.<locals>.make_conv"
        )
        self.assertEqual(got["t"], "torch.nn.modules.activation.ReLU")
        self.assertNotIn(" at 0x", json.dumps(got))
        self.assertTrue(got["round"].startswith("functools.partial(<function "), got["round"])
        self.assertTrue(got["o"].endswith("Opaque object>"), got["o"])

    def test_guess_by_name(self):
        cands, why = CA.arg_candidates(Attn, [], {}, nn)
        label, args, kwargs = cands[0]
        self.assertEqual(S.source_of(label), "guess")
        self.assertEqual(kwargs["dim"] % kwargs["num_heads"], 0)
        Attn(*args, **kwargs)

    def test_float_unions(self):
        from typing import Optional, Union

        # a Union / Optional naming float first is a float (PEP 484), even where the name
        # says something else (`hue_factor` holds "act"); Union[int, ...] stays an int
        self.assertEqual(A._guess_by_name("hue_factor", Union[float, torch.Tensor], 16, 4, nn), 1.0)
        self.assertEqual(A._guess_by_name("gamma", Optional[float], 16, 4, nn), 1.0)
        self.assertEqual(A._guess_by_name("alpha_val", "Union[float, torch.Tensor]", 16, 4, nn), 1.0)
        self.assertEqual(A._guess_by_name("size", Union[int, tuple], 16, 4, nn), 16)

    def test_literal_call_site_first(self):
        cands, _ = CA.arg_candidates(Attn, ["(48, 6, qkv_bias=True)"], {}, nn)
        label, args, kwargs = cands[0]
        self.assertEqual(S.source_of(label), "call-site")
        m = Attn(*args, **kwargs)
        self.assertEqual((m.qkv.in_features, m.qkv.bias is not None), (48, True))

    def test_defaults(self):
        cands, _ = CA.arg_candidates(Lin, [], {}, nn)
        self.assertTrue(cands)
        cands, _ = CA.arg_candidates(nn.ReLU, [], {}, nn)
        self.assertEqual(cands[0][0], "defaults")

    def test_seq_variant(self):
        self.assertEqual(
            A.seq_variant([], {"window_size": 7, "depths": 2}), ([], {"window_size": (7, 7), "depths": [2, 2]})
        )
        self.assertIsNone(A.seq_variant([], {"dim": 4}))


class InputsTest(unittest.TestCase):
    """Input candidates from layers and their repair from shape errors (inputs.py)."""

    def test_linear_input(self):
        m = Attn(16, 4)
        plan = I.forward_plan(m)
        cands = I.input_candidates(m, plan, [16, 4], torch, nn, 32, {})
        shapes = [s[0][1] for s in cands if s]
        self.assertTrue(any(tuple(sh)[-1] == 16 for sh in shapes), shapes)
        x = I.make_inputs(cands[0], plan, torch)
        self.assertEqual(list(m(*x).shape)[-1], 48)

    def test_repair_channels(self):
        fixed = I.repair_specs(
            [("float", (2, 16, 8, 8))], "expected input[2, 16, 8, 8] to have 32 channels, but got 16 channels instead"
        )
        self.assertEqual(fixed[0][1][1], 32)

    def test_optional_and_lists_by_annotation_text(self):
        # PEP 604 unions with None are optional; PEP 585 builtin generics are lists
        for ann in ("Tensor | None", "None | Tensor", typing.Optional[torch.Tensor], "list[Tensor] | None"):
            self.assertTrue(I.is_optional(ann), ann)
        for ann in ("Tensor", torch.Tensor, "int | str", typing.Union[int, str]):
            self.assertFalse(I.is_optional(ann), ann)

        class Pool(nn.Module):
            def forward(self, x, hiddens: "list[torch.Tensor]", cond: "torch.Tensor | None"):
                return torch.cat(hiddens, 1) + (0 if cond is None else cond)

        m = Pool()
        self.assertEqual(I.forward_plan(m), [("x", "tensor"), ("hiddens", "tensors"), ("cond", "none")])

    def test_repair_the_input_whose_rows_failed(self):
        # two inputs of one width: the one whose flattened rows are mat1's is repaired
        specs = [("float", (2, 8, 32)), ("float", (2, 32))]
        msg = "addmm: mat1 and mat2 shapes cannot be multiplied (2x32 and 16x256)"
        self.assertEqual(I.repair_specs(specs, msg), [("float", (2, 8, 32)), ("float", (2, 16))])
        msg = "mm: mat1 and mat2 shapes cannot be multiplied (16x32 and 16x256)"
        self.assertEqual(I.repair_specs(specs, msg), [("float", (2, 8, 16)), ("float", (2, 32))])

    def test_repair_recurrent_features(self):
        # torch's own message for an RNN / LSTM / GRU input of the wrong feature size
        gru = nn.GRU(input_size=32, hidden_size=8)
        specs = [("float", (2, 8, 3))]
        with self.assertRaises(RuntimeError) as e:
            gru(torch.randn(*specs[0][1]))
        fixed = I.repair_specs(specs, str(e.exception))
        self.assertEqual(fixed, [("float", (2, 8, 32))])
        self.assertEqual(tuple(gru(torch.randn(*fixed[0][1]))[0].shape), (2, 8, 8))


class ClassifyTest(unittest.TestCase):
    def test_categories(self):
        c = C.Classifier([])
        self.assertEqual(
            c.classify(RuntimeError("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"), "forward"),
            "forward-shape",
        )
        self.assertEqual(c.classify(ModuleNotFoundError("No module named 'x'", name="x"), "import"), "missing-extern")
        self.assertEqual(c.classify(NameError("y"), "import"), "unresolved-name")
        self.assertEqual(c.classify(MemoryError(), "forward"), "memory")
        # a compiled operator registered without a CPU kernel (torch's dispatcher message)
        self.assertEqual(
            c.classify(
                NotImplementedError(
                    "Could not run 'mmcv::ms_deform_attn' with arguments from the 'CPU' backend. This could be because the operator doesn't exist for this backend"
                ),
                "forward",
            ),
            "native-op-no-cpu",
        )
        self.assertEqual(c.classify(RuntimeError("Not implemented on the CPU"), "forward"), "native-op-no-cpu")
        self.assertEqual(
            c.classify(RuntimeError("carafe_forward_impl: implementation for device cpu not found.\n"), "forward"),
            "native-op-no-cpu",
        )
        self.assertEqual(c.classify(RuntimeError("boom"), "forward"), "runtime-error")
        # a layer that runs only on a GPU: its own category, not a shape failure
        self.assertEqual(c.classify(AssertionError("Torch not compiled with CUDA enabled"), "forward"), "needs-gpu")
        self.assertEqual(c.classify(RuntimeError("Found no NVIDIA driver on your system."), "instantiate"), "needs-gpu")
        self.assertEqual(
            c.classify(ValueError("SyncBatchNorm expected input tensor to be on GPU"), "forward"), "needs-gpu"
        )
        self.assertEqual(
            c.classify(
                RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!"
                ),
                "forward",
            ),
            "needs-gpu",
        )
        self.assertEqual(c.classify(RuntimeError("expected input to have 3 channels"), "forward"), "forward-shape")


CONVENTIONS = """
import torch.nn as nn

VALID_MODELS = ("effnet-b3", "effnet-b0", "effnet-b7")


class EffNet(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    @classmethod
    def from_name(cls, model_name, **override):
        if model_name not in VALID_MODELS:
            raise ValueError(model_name)
        return cls(8 + int(model_name[-1]))


class Cfg(object):
    n_embd = 8


class GPT(nn.Module):
    @staticmethod
    def get_default_config():
        return Cfg()

    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(config.n_embd, config.n_embd)


def model_defaults():
    return dict(width=6, depth=2, learn_sigma=False)


def diffusion_defaults():
    return dict(steps=10)


def create_model(width, depth, use_checkpoint=False):
    return nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])


def create_schedule(steps, sigma):
    return steps
"""


class EntryConventionsTest(unittest.TestCase):
    """Entry points by general conventions: classmethod constructors with the smallest of
    the names they check, a class's own default configuration."""

    def test_from_name_and_default_config(self):
        m = types.ModuleType("conv_fixture")
        exec(CONVENTIONS, m.__dict__)
        sys.modules["conv_fixture"] = m
        try:
            self.assertEqual(H.call_plan(m.EffNet.from_name, [], []), {"model_name": {"value": "effnet-b0"}})
            plan = H.call_plan(m.GPT, [], [])
            self.assertEqual(plan["config"]["config"]["ref"], ["conv_fixture", "GPT.get_default_config"])
            self.assertEqual(H.make_config(plan["config"]["config"], torch).n_embd, 8)
            self.assertIsNone(H.call_plan(m.EffNet, [], []), "a plain width stays unplanned")
            # create_model(**model_defaults()): the defaults dict whose keys cover the
            # required parameters, only the keys the factory takes
            plan = H.call_plan(m.create_model, [], [])
            self.assertEqual(plan, {"**": {"defaults": ["conv_fixture", "model_defaults"], "keys": ["depth", "width"]}})
            built = m.create_model(**H.plan_kwargs(plan, torch))
            self.assertEqual([x.in_features for x in built], [6, 6])
            self.assertIsNone(H.call_plan(m.create_schedule, [], []), "sigma is in no defaults dict")
        finally:
            del sys.modules["conv_fixture"]


class HarvestDocsTest(unittest.TestCase):
    """harvest_docs: Markdown code blocks, docstring examples, the listing of tests and
    documents (read statically), and what happens without pytest."""

    def test_markdown_blocks(self):
        text = (
            "# t\n\n```bash\npip install x\n```\n\n```python\nimport torch\nm = M(3)\n```\n\n"
            "~~~py\nm(torch.ones(1))\n~~~\n\n```python\n...elided code(\n```\n\n```pycon\n>>> y = M(2)\n>>> y\nM()\n```\n"
        )
        blocks = HD.markdown_blocks(text)
        self.assertEqual(
            [b[0] for b in blocks], [8, 13, 21], "bash and unparsable blocks left out; first code line of each"
        )
        self.assertEqual(blocks[0][1], "import torch\nm = M(3)")
        self.assertEqual(blocks[2][1], "y = M(2)\ny\n", "a pycon session read as doctest examples")
        self.assertEqual(HD.import_lines(blocks[0][1]), "import torch")

    def test_doctest_code(self):
        doc = "Scales.\n\nExample:\n    >>> s = S(\n    ...     2)\n    >>> s.w\n    2\n"
        self.assertEqual(HD.doctest_code(doc), "s = S(\n    2)\ns.w\n")

    def test_entries_and_no_pytest(self):
        root = tempfile.mkdtemp()
        os.makedirs(os.path.join(root, "tests"))
        with open(os.path.join(root, "tests", "test_a.py"), "w") as f:
            f.write("from lib import Alpha\n\ndef test_a():\n    Alpha(1)\n")
        with open(os.path.join(root, "tests", "test_none.py"), "w") as f:
            f.write("def test_b():\n    pass\n")
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("```python\nfrom lib import Alpha\n```\n\n```python\nAlpha(2)\n```\n")

        class Alpha(nn.Module):
            """>>> Alpha(3)"""

        by_name = {"Alpha": ["lib.Alpha"]}
        entries, notes = HD.doc_entries(root, {"lib.Alpha": Alpha}, by_name, True)
        self.assertEqual(notes, {})
        vias = sorted(e["via"] for e in entries)
        self.assertEqual(
            [v for v in vias if not v.startswith("doctest:")],
            ["readme:README.md:6", "test:tests/test_a.py"],
            "a test file naming no repository class is left out; the README block that builds one is in",
        )
        readme = next(e for e in entries if e["kind"] == "readme")
        self.assertEqual(readme["prelude"], "from lib import Alpha", "the imports of the blocks above it")
        doc = next(e for e in entries if e["kind"] == "doctest")
        self.assertEqual((doc["code"], doc["reach"]), ("Alpha(3)\n", ["lib.Alpha"]))
        # without pytest: the test files are reported, not run; the documents still are
        entries, notes = HD.doc_entries(root, {"lib.Alpha": Alpha}, by_name, False)
        self.assertIn("pytest is not importable", notes["tests"])
        self.assertFalse([e for e in entries if e["kind"] == "test"])
        self.assertTrue([e for e in entries if e["kind"] == "readme"])


class SourcesTest(unittest.TestCase):
    def test_doc_sources(self):
        self.assertEqual(S.source_of("witness 1 test:tests/t.py::test_a[w 1]"), "test")
        self.assertEqual(S.origin_of("witness 1 test:tests/t.py::test_a[w 1]"), "tests/t.py::test_a[w 1]")
        self.assertEqual(S.source_of("witness 2 readme:README.md:17 +layers"), "readme")
        self.assertEqual(S.origin_of("witness 2 readme:README.md:17 +layers"), "README.md:17")
        self.assertEqual(S.source_of("witness 1 doctest:lib/a.py:40"), "doctest")
        self.assertEqual(S.source_of("witness 1 timm.models.resnet18"), "witness")
        self.assertIsNone(S.origin_of("witness 1 timm.models.resnet18"))
        self.assertEqual(S.source_of("witness 1 test:t.py::x seq"), "guess")

    def test_source_of(self):
        self.assertEqual(S.source_of("witness 1 x.y"), "witness")
        self.assertEqual(S.source_of("witness 1 user-supplied"), "user")
        self.assertEqual(S.source_of("call-site 2 guessed=1"), "call-site")
        self.assertEqual(S.source_of("config cfgs['a']"), "config-table")
        self.assertEqual(S.source_of("defaults"), "guess")
        self.assertEqual(S.source_of("heuristic d=32 h=4"), "guess")
        self.assertEqual(S.source_of("widths d=32 h=4"), "guess")

    def test_witness_candidates_and_inputs(self):
        w = {
            "args": [4],
            "kwargs": {"act": {"$ref": ["torch.nn.modules.activation", "GELU"]}},
            "inputs": {"args": [{"$tensor": [2, 4], "dtype": "float32"}], "kwargs": {}},
            "entry": "e",
            "params": 20,
        }
        bad = {"args": [{"$module": ["repo.x", "Missing"], "args": [], "kwargs": {}}], "kwargs": {}, "entry": "e"}
        res = SW.copy_resolver(NS, ["repo"], {})
        cands, skipped = SW.witness_candidates([bad, w], res, torch)
        self.assertEqual(len(cands), 1)
        self.assertEqual(len(skipped), 1)
        label, args, kwargs, _ = cands[0]
        self.assertEqual(S.source_of(label), "witness")
        m = Lin(*args, **kwargs)
        a, kw = SW.witness_inputs(w, res, torch)
        self.assertEqual(list(m(*a, **kw).shape), [2, 4])
        a2, _ = SW.witness_inputs(w, res, torch)
        self.assertTrue(torch.equal(a[0], a2[0]))  # the same seed: the copy and the original get the same inputs


class Tabled(nn.Module):
    """Configured by one entry of a module table (the config-table source)."""

    def __init__(self, cfg, width):
        super().__init__()
        self.lin = nn.Linear(width, cfg["depth"])


class Wide(nn.Module):
    """Every parameter defaulted, widely (the defaults and widths plans)."""

    def __init__(self, embed_dim=768, depth=2):
        super().__init__()
        self.lin = nn.Linear(embed_dim, embed_dim)


class SourceInterfaceTest(unittest.TestCase):
    """Each argument source on its own, through the one interface of sources.py: a
    source's plans(request) yields Plans named by the source."""

    def names(self, plans):
        return [(p.source, p.label, p.args, p.kwargs) for p in plans]

    def test_witness_source(self):
        w = {
            "args": [4],
            "kwargs": {"act": {"$ref": ["torch.nn.modules.activation", "GELU"]}},
            "inputs": {"args": [{"$tensor": [2, 4], "dtype": "float32"}], "kwargs": {}},
            "entry": "pkg.build",
        }
        bad = {"args": [{"$module": ["repo.x", "Missing"], "args": [], "kwargs": {}}], "kwargs": {}, "entry": "e"}
        src = SW.WitnessSource([bad, w], SW.copy_resolver(NS, ["repo"], {}), torch)
        plans = list(src.plans(S.request(Lin, NS, nn)))
        self.assertEqual(
            [(p.source, p.label, p.args, p.kwargs) for p in plans],
            [("witness", "witness 2 pkg.build", [4], {"act": nn.GELU})],
        )
        self.assertIs(plans[0].witness, w, "the witness record goes with its plan (its inputs)")
        self.assertEqual(len(src.skipped), 1, "a witness naming a class the copy lacks is skipped, with why")

    def test_call_site_source(self):
        ctx = "def f():\n    w = 24\n    return Attn(w, 3)\n"
        sites = ["(48, 6, qkv_bias=True)", "(num_heads=2)", {"text": ctx, "offset": ctx.index("Attn(") + 4}, "(dim="]
        plans = list(SC.CallSiteSource().plans(S.request(Attn, {}, nn, sites)))
        # sites whose arguments all evaluated first (a literal list; a call in a function,
        # its local replayed), then those needing a guess; one that does not parse: none
        self.assertEqual(
            self.names(plans),
            [
                ("call-site", "call-site 1", [48, 6], {"qkv_bias": True}),
                ("call-site", "call-site 3", [24, 3], {}),
                ("call-site", "call-site 2 guessed=1", [], {"num_heads": 2, "dim": 32}),
            ],
        )

    def test_call_site_modules_keep_their_construction(self):
        # guided diffusion's __main__: `model = Unet(dim=64, ...)` then
        # `GaussianDiffusion(model, ...)`; Unet keeps no `dim`, so its attributes cannot
        # say how it was built: the call site's evaluation remembers it (values.BUILT)
        from nnrag_harness import snippet as SN

        class Body(nn.Module):
            def __init__(self, dim, mults=(1, 2)):
                super().__init__()
                self.fc = nn.Linear(dim, dim * mults[-1])
                self.channels = 3

        class Outer(nn.Module):
            def __init__(self, model, scale=1.0):
                super().__init__()
                self.model = model

        ctx = "def main():\n    model = Body(\n        dim=8, mults=(1, 4)\n    )\n    return Outer(model, scale=2.0)\n"
        site = {"text": ctx, "offset": ctx.index("Outer(") + 5}
        [plan] = list(SC.CallSiteSource().plans(S.request(Outer, {"Body": Body}, nn, [site])))
        body = plan.args[0]
        self.assertIsInstance(body, Body)
        self.assertEqual(plan.kwargs, {"scale": 2.0})
        enc = SN.encode_live(list(plan.args), torch)
        self.assertEqual(enc[0]["kwargs"], {"dim": 8, "mults": {"$tuple": [1, 4]}})
        self.assertEqual(enc[0]["$module"][1].split(".")[-1], "Body")
        # a call of something else (a function, a class that is no module) is the same call
        ctx2 = "def main():\n    w = max(*[3, 8], **{})\n    return Outer(Body(w))\n"
        [plan2] = list(
            SC.CallSiteSource().plans(
                S.request(Outer, {"Body": Body}, nn, [{"text": ctx2, "offset": ctx2.index("Outer(") + 5}])
            )
        )
        self.assertEqual(plan2.args[0].fc.in_features, 8)
        self.assertEqual(SN.encode_live(list(plan2.args), torch)[0]["args"], [8])

    def test_config_table_source(self):
        table = {"name": "TABLE", "text": "TABLE = {'s': dict(depth=2), 'm': dict(depth=4), 'x': make(9)}"}
        plans = list(ST.ConfigTableSource().plans(S.request(Tabled, {}, nn, None, [table])))
        # each entry that evaluates, as the configuration parameter; the others guessed
        self.assertEqual(
            self.names(plans),
            [
                ("config-table", "config TABLE['s']", [], {"cfg": {"depth": 2}, "width": 32}),
                ("config-table", "config TABLE['m']", [], {"cfg": {"depth": 4}, "width": 32}),
            ],
        )
        self.assertEqual(
            list(ST.ConfigTableSource().plans(S.request(Attn, {}, nn, None, [table]))),
            [],
            "no configuration parameter: no plan",
        )

    def test_guess_sources(self):
        req = S.request(Attn, {}, nn)
        self.assertEqual(list(SG.DefaultsSource().plans(req)), [], "required parameters: no defaults plan")
        plans = list(SG.GuessSource().plans(req))
        self.assertEqual(
            self.names(plans)[:2],
            [
                ("guess", "heuristic d=32 h=4", [], {"dim": 32, "num_heads": 4}),
                ("guess", "heuristic d=16 h=2", [], {"dim": 16, "num_heads": 2}),
            ],
        )
        wide = S.request(Wide, {}, nn)
        self.assertEqual(self.names(SG.DefaultsSource().plans(wide)), [("guess", "defaults", [], {})])
        self.assertEqual(
            self.names(SG.WidthsSource().plans(wide)),
            [("guess", "widths d=32 h=4", [], {"embed_dim": 32}), ("guess", "widths d=16 h=2", [], {"embed_dim": 16})],
        )

        class Needs(nn.Module):
            def __init__(self, mode: str):
                super().__init__()

        g = SG.GuessSource()
        self.assertEqual(list(g.plans(S.request(Needs, {}, nn))), [])
        self.assertIn("mode", g.unguessable, "no rule makes a string up")

    def test_order_of_the_sources(self):
        # arg_candidates: defaults, call sites, configuration tables, then guesses
        cands, _ = CA.arg_candidates(Wide, ["(embed_dim=8)"], {}, nn)
        self.assertEqual(
            [c[0] for c in cands],
            ["widths d=32 h=4", "widths d=16 h=2", "defaults", "call-site 1"],
            "wide defaults: small widths first, then the defaults before the call sites",
        )
        t = {"name": "T", "text": "T = [dict(depth=3)]"}
        cands, _ = CA.arg_candidates(Tabled, ["(dict(depth=5), 8)"], {}, nn, [t])
        self.assertEqual(
            [S.source_of(c[0]) for c in cands], ["call-site", "config-table"], "no rule guesses a configuration"
        )


class Criterion(nn.Module):
    """Reads targets as a list of dicts: labels and boxes required, 'ignored' only tested."""

    def forward(self, outputs, targets):
        n = sum(len(t["labels"]) for t in targets)
        loss = 0.0
        for t, o in zip(targets, outputs):
            if "ignored" in t:
                continue
            loss = loss + (o - t["boxes"]).abs().sum() + t.get("weight", 1.0)
        return loss / max(n, 1)


class PostProc(nn.Module):
    def forward(self, outputs, target_sizes):
        return outputs * target_sizes[:, :1]


class Base(nn.Module):
    def __init__(self, body, width):
        super().__init__()
        self.body = body
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(self.body(x))


class Sub(Base):
    def __init__(self, width):
        super().__init__(nn.Identity(), width)


class Focal(nn.Module):
    def __init__(self, loss_fcn, gamma):
        super().__init__()
        self.loss_fcn = loss_fcn
        self.reduction = loss_fcn.reduction
        self.gamma = gamma

    def forward(self, pred, true):
        return self.loss_fcn(pred, true) * self.gamma


class Stages(nn.Module):
    def __init__(self, layers, res):
        super().__init__()
        self.a = nn.Linear(layers[0], layers[3])
        self.grid = res // 2


def build_flagged(opts):
    return Stages([4] * 4, 8) if opts.big else Sub(opts.width)


def build_outer(opts):
    return build_flagged(opts)


def build_chosen(opts):
    if opts.big and opts.kind == "wide":
        return Stages([8] * 4, 8)
    return build_flagged(opts)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, feats, n: int):
        return self.fc(torch.repeat_interleave(feats, n, dim=0))


class Whole(nn.Module):
    """A model whose forward takes a list of dicts (one per image) and a flag."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 3)
        self.head = Head()

    def forward(self, batched_input, multimask: bool):
        x = torch.stack([r["image"] for r in batched_input])
        return self.head(self.enc(x).mean(dim=(2, 3)), len(batched_input[0]["labels"]))


class StructuredTest(unittest.TestCase):
    def test_whole_model_structured_input_and_meta_run(self):
        m = Whole()
        cands = H.structured_candidates(m, {}, torch)
        self.assertEqual(len(cands), 1)
        batched, flag = cands[0]
        self.assertEqual(
            (sorted(batched[0]), list(batched[0]["image"].shape), flag), (["image", "labels"], [3, 64, 64], False)
        )
        self.assertEqual(list(m(*cands[0]).shape), [2, 4])  # what its code reads is there
        rec = H.Recorder(torch, {"t.Whole": Whole, "t.Head": Head}, [])
        rec.install(nn)
        try:
            m2 = Whole()
            H.meta_forward(m2, cands[0], rec, torch)  # shapes only: repeat_interleave by an int included
            w = rec.witnesses("e")
        finally:
            for cls, name, orig in reversed(rec.patched):
                setattr(cls, name, orig)
        self.assertIs(torch.repeat_interleave, torch.repeat_interleave)  # put back
        self.assertTrue(next(m2.parameters()).is_meta)
        head_in = w["t.Head"]["witnesses"][0]["inputs"]["args"]
        self.assertEqual(head_in, [{"$tensor": [1, 8], "dtype": "float32"}, 2])  # no statistics of a meta tensor

    def test_list_of_dicts_by_use(self):
        import sys as _sys

        u = T.usage([_sys.modules[__name__]], "targets")
        self.assertEqual(u, ("list", ["boxes", "labels"]))  # 'ignored' and 'weight' are optional
        self.assertIsNone(T.usage([_sys.modules[__name__]], "outputs"))

    def test_every_function_definition_at_any_depth(self):
        import ast

        src = (
            "def a(): \n    def a_inner(): pass\n"
            "class C:\n    def m(self):\n        if x:\n            def in_if(): pass\n        else:\n"
            "            def in_else(): pass\n"
            "try:\n    def in_try(): pass\nexcept E:\n    def in_except(): pass\nelse:\n"
            "    def in_try_else(): pass\nfinally:\n    def in_finally(): pass\n"
            "for i in y:\n    async def in_for(): pass\nelse:\n    def in_for_else(): pass\n"
            "while z:\n    with w:\n        def in_with(): pass\n"
            "f = lambda: 0\n"
        )
        if sys.version_info >= (3, 10):
            src += "match v:\n    case 1:\n        def in_case(): pass\n"
        tree = ast.parse(src)
        want = sorted(n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self.assertEqual(sorted(n.name for n in T._functions(tree)), want)
        self.assertEqual(len(want), 13 if sys.version_info >= (3, 10) else 12)

    def test_companion_arguments_and_call(self):
        out = torch.randn(2, 4)
        args = T.companion_args(Criterion(), out, 2, (8, 8), torch, torch.Generator().manual_seed(0))
        self.assertIs(args[0], out)
        self.assertEqual([sorted(t) for t in args[1]], [["boxes", "labels"]] * 2)
        self.assertEqual(args[1][0]["labels"].dtype, torch.int64)
        self.assertEqual(list(args[1][0]["boxes"].shape), [2, 4])
        Criterion()(*args)  # the synthesized targets are what the code reads
        sizes = T.companion_args(PostProc(), out, 2, (8, 6), torch, torch.Generator())[1]
        self.assertEqual(sizes.tolist(), [[8, 6], [8, 6]])

        class PostSegm(nn.Module):
            def forward(self, results, outputs, sizes):
                return results

        first = torch.ones(1)
        chained = T.companion_args(PostSegm(), out, 2, (8, 6), torch, torch.Generator(), previous=first)
        self.assertIs(chained[0], first)  # `results`: what the companion before it returned
        self.assertIs(chained[1], out)  # `outputs`: the model's output
        self.assertIsNone(T.companion_args(PostSegm(), out, 2, (8, 6), torch, torch.Generator()))  # nothing before it
        model, crit, post = nn.Linear(2, 2), Criterion(), PostProc()
        self.assertEqual(T.companions((model, crit, {"bbox": post}), model, nn), [crit, post])


HARNESS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "src", "validate", "python")

SLOW_PKG = """
import time
import torch.nn as nn


class Coil(nn.Module):
    def __init__(self, width, direction):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x)


class Fails(nn.Module):
    def __init__(self):
        super().__init__()
        self.coil = Coil(8, 'unwind')

    def forward(self, x):
        raise RuntimeError('never runs')


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.coil = Coil(4, 'wind')

    def forward(self, x):
        time.sleep(60)
        return self.coil(x)


def build_fails():
    return Fails()


def build_slow():
    return Slow()
"""


class CompareOutputsTest(unittest.TestCase):
    """The equivalence stage compares outputs in chunks (stages.compare_outputs): an output
    whose comparison in double precision would pass the block's memory limit (ddpm's
    RMSNorm on a 32 x 64 x 128 x 128 input: 256 MiB as doubles, "can't allocate memory")
    is compared within it, with the verdict of the whole tensors."""

    def test_large_outputs_compare_within_a_memory_limit(self):
        # in a child process: the address-space limit (RLIMIT_AS, as the sandbox sets it)
        # leaves 96 MiB beside two 64 MiB outputs, less than one of them as doubles
        code = (
            "import resource, sys\nsys.path.insert(0, %r)\n"
            "import torch\nfrom nnrag_harness import stages\n"
            "torch.set_num_threads(1)\n"
            "x = torch.randn(16, 64, 128, 128)\ny = x.clone()\nz = x.clone()\nz.view(-1)[12345] += 1.0\n"
            "n = torch.full((3,), float('nan'))\n"
            "vm = [int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmSize:')][0]\n"
            "resource.setrlimit(resource.RLIMIT_AS, (vm + 96 * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
            "try:\n    (x.double() - y.double()).abs().max()\n    print('whole fits')\n"
            "except (MemoryError, RuntimeError):\n    print('whole does not fit')\n"
            "print(stages.compare_outputs([x], [y], torch), stages.compare_outputs([x], [z], torch)[0])\n"
            "print(stages.compare_outputs([n], [n.clone()], torch), stages.compare_outputs([n], [torch.zeros(3)], torch)[0])\n"
            "print(stages.compare_outputs([x[:2]], [x[:2].to(torch.float64)], torch)[0])\n"
        ) % HARNESS_DIR
        import subprocess

        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertEqual(
            r.stdout.split("\n")[:4],
            ["whole does not fit", "(True, 0.0) False", "(True, 0.0) False", "False"],
        )


class ConstructorOnlyWitnessTest(unittest.TestCase):
    """A whole model built whose forward fails or runs out of time (on the meta device
    too): the constructions of its blocks are still reported as witnesses, without inputs."""

    def run_entry(self, root, qualname, budget):
        # in a child process, as the harness runs it (the recorder patches torch.nn)
        code = (
            "import json, sys; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
            "import torch\nfrom nnrag_harness import harvest\n"
            "cfg = {'roots': [%r], 'entry': {'kind': 'factory', 'module': 'slowpkg', 'qualname': %r, 'plan': {}}, 'budgetSeconds': %r}\n"
            "harvest.run_entry(cfg, torch, lambda ev: print(json.dumps(ev['result'])))\n"
        ) % (HARNESS_DIR, root, root, qualname, budget)
        import subprocess

        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        import json

        return json.loads(r.stdout.strip().splitlines()[-1])

    def test_forward_fails_or_times_out(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "slowpkg.py"), "w") as f:
                f.write(SLOW_PKG)
            res = self.run_entry(d, "build_fails", 10)
            self.assertTrue(res["built"] and not res["forward"], res)
            self.assertIn("never runs", res["forwardError"])
            w = res["classes"]["slowpkg.Coil"]["witnesses"][0]
            self.assertEqual((w["args"], "inputs" in w), ([8, "unwind"], False))
            res = self.run_entry(d, "build_slow", 2)
            self.assertTrue(res["built"] and not res["forward"], res)
            self.assertTrue(res["forwardError"].startswith("timeout"), res)
            self.assertEqual(res["stopped"], "time")
            w = res["classes"]["slowpkg.Coil"]["witnesses"][0]
            self.assertEqual((w["args"], "inputs" in w), ([4, "wind"], False))


HEAVY_PKG = """
import time
import torch.nn as nn

CHECK = False


class Stage(nn.Module):
    def __init__(self, width, seconds):
        super().__init__()
        self.conv = nn.Conv2d(width, width, 1)
        self.seconds = seconds

    def forward(self, x):
        if not x.is_meta:
            t0 = time.process_time()
            while time.process_time() - t0 < self.seconds:  # CPU work the budget counts
                pass
        return self.conv(x)


class Body(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([Stage(3, 0.4) for _ in range(8)])

    def forward(self, x):
        for i, s in enumerate(self.stages):
            x = s(x)
            if CHECK and i == 3 and not (x.abs().sum() >= 0):  # data-dependent: no meta kernel
                raise ValueError("nan")
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Body()
        self.head = nn.Conv2d(3, 1, 1)

    def forward(self, x):
        return self.head(self.body(x))


def build():
    return Net()
"""


class BudgetStopTest(unittest.TestCase):
    """A real forward stopped by its budget: where it stopped depends on the machine, so
    the step's records must not. The shapes-only run records every block, and the modules
    doing most of the model's work (the model, its body) are recorded without inputs."""

    def test_records_do_not_depend_on_where_the_budget_stopped(self):
        runs = []
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "slowpkg.py"), "w") as f:
                f.write(HEAVY_PKG)
            for budget in (1.2, 3.0):  # the real forward stops in the 2nd stage, then in the 5th
                res = ConstructorOnlyWitnessTest.run_entry(self, d, "build", budget)
                self.assertTrue(res["forwardError"].startswith("timeout"), res)
                runs.append(res["classes"])
        self.assertEqual(runs[0], runs[1])
        classes = runs[0]
        self.assertNotIn("inputs", classes["slowpkg.Net"]["witnesses"][0])
        self.assertNotIn("inputs", classes["slowpkg.Body"]["witnesses"][0])
        self.assertIn("inputs", classes["slowpkg.Stage"]["witnesses"][0])

    def test_a_construction_stopped_by_memory_runs_no_forward(self):
        # the allocator refused in the middle of a construction: which parts were built
        # depends on where it refused, so nothing partly built is run; the parts built stay
        # witnesses (constructions only)
        pkg = (
            "import torch.nn as nn\n\n"
            "class Part(nn.Module):\n"
            "    def __init__(self, width):\n        super().__init__()\n        self.conv = nn.Conv2d(width, width, 1)\n\n"
            "    def forward(self, x):\n        return self.conv(x)\n\n"
            "class Huge(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.a = Part(3)\n"
            "        raise MemoryError('the next part does not fit')\n\n"
            "def build():\n    return Huge()\n"
        )
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "slowpkg.py"), "w") as f:
                f.write(pkg)
            res = ConstructorOnlyWitnessTest.run_entry(self, d, "build", 10)
        self.assertEqual((res["built"], res["forward"], res.get("stopped")), (False, False, "memory"), res)
        self.assertNotIn("forwardError", res)
        self.assertNotIn("inputs", res["classes"]["slowpkg.Part"]["witnesses"][0])

    def test_a_shapes_only_run_that_stops_short_keeps_the_real_forwards_records(self):
        # the forward reads a value after the 4th stage (`if x.abs().sum() >= 0`), which
        # the meta device cannot give: the stages are known only from the real forward
        # (stopped in its 5th stage), whose records stay, values included
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "slowpkg.py"), "w") as f:
                f.write(HEAVY_PKG.replace("CHECK = False", "CHECK = True"))
            res = ConstructorOnlyWitnessTest.run_entry(self, d, "build", 3.0)
        self.assertTrue(res["forwardError"].startswith("timeout"), res)
        w = res["classes"]["slowpkg.Stage"]["witnesses"][0]
        self.assertIn("min", w["inputs"]["args"][0])  # a real tensor's values, not shapes only


WORK_PKG = """
import torch
import torch.nn as nn


class Stage(nn.Module):
    def __init__(self, width, index):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.index = index

    def forward(self, x):
        for _ in range(4):
            x = torch.tanh(self.fc(x))
        return x


class Body(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([Stage(64, i) for i in range(8)])

    def forward(self, x):
        for i, s in enumerate(self.stages):
            x = s(x)
            if i == 1 and not (x.abs().sum() >= 0):  # data-dependent: no meta kernel
                raise ValueError("nan")
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Body()
        self.head = nn.Linear(64, 2)

    def forward(self, x):
        return self.head(self.body(x))


def build():
    return Net()
"""


class WorkBudgetTest(unittest.TestCase):
    """The real forward's work budget (harvest.work_counter): counted operations, not CPU
    time, so a forward too expensive for it stops at the same operation in every run, on
    every machine, and one below it completes. The fixture's shapes-only run stops short
    (a data-dependent test after its 2nd stage), so its records are the interrupted real
    forward's: they depend on where the stop fell."""

    def run_entry(self, root, rate, budget=60):
        # the CPU budget (60 s) is far above what the forward takes: only the work budget
        # (rate x budget) can stop it
        code = (
            "import json, sys; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
            "import torch\nfrom nnrag_harness import harvest\n"
            "harvest.FORWARD_WORK_PER_SECOND = %r\n"
            "cfg = {'roots': [%r], 'entry': {'kind': 'factory', 'module': 'workpkg', 'qualname': 'build', 'plan': {}}, 'budgetSeconds': %r}\n"
            "harvest.run_entry(cfg, torch, lambda ev: print(json.dumps(ev['result'])))\n"
        ) % (HARNESS_DIR, root, rate, root, budget)
        import subprocess

        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return json.loads(r.stdout.strip().splitlines()[-1])

    def test_a_forward_past_its_work_budget_stops_at_the_same_operation(self):
        if H.work_counter(torch) is None:
            self.skipTest("no TorchFunctionMode in this torch")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "workpkg.py"), "w") as f:
                f.write(WORK_PKG)
            # the whole forward's counted work, in millions (a budget far above it)
            whole = self.run_entry(d, 1e6)
            self.assertTrue(whole["forward"], whole)
            self.assertNotIn("stopped", whole)
            work = whole["workSeconds"] * 1e6
            self.assertGreater(work, 8 * 4 * 64 * 64)  # 32 linear layers of 64 x 64, at least
            # a budget of half of it (rate x 60 s): stopped by work, at the same operation
            runs = [self.run_entry(d, work / 2 / 60) for _ in range(2)]
            for res in runs:
                self.assertFalse(res["forward"], res)
                self.assertEqual(res.get("stopped"), "work", res)
                self.assertTrue(res["forwardError"].startswith(H.WORK_STOP), res)
                self.assertEqual(H.budget_stop(res["forwardError"]), "work")
            self.assertEqual(runs[0]["workSeconds"], runs[1]["workSeconds"])
            self.assertGreater(runs[0]["workSeconds"], 60)
            self.assertLess(runs[0]["workSeconds"], 61)
            self.assertEqual(runs[0]["classes"], runs[1]["classes"])
            # stopped past the data-dependent test the meta device cannot pass: the stages
            # before the stop keep the real forward's inputs (values), the model does not
            w = runs[0]["classes"]["workpkg.Stage"]["witnesses"][0]
            self.assertIn("min", w["inputs"]["args"][0])
            self.assertNotIn("inputs", runs[0]["classes"]["workpkg.Net"]["witnesses"][0])
            # a budget of twice the work: the forward completes
            done = self.run_entry(d, work * 2 / 60)
            self.assertTrue(done["forward"], done)
            self.assertNotIn("stopped", done)
            self.assertLess(done["workSeconds"], 31)

    def test_matmul_like_operations_count_their_multiply_adds(self):
        counter = H.work_counter(torch)
        if counter is None:
            self.skipTest("no TorchFunctionMode in this torch")
        conv = nn.Conv2d(3, 16, 3)
        fc = nn.Linear(16 * 30 * 30, 10)
        x = torch.randn(2, 3, 32, 32)
        with torch.no_grad(), counter:
            y = torch.relu(conv(x))
            fc(y.flatten(1))
            torch.einsum("bik,bjk->bij", torch.randn(2, 5, 4), torch.randn(2, 6, 4))
            torch.randn(4, 8) @ torch.randn(8, 3)
        macs = 2 * 16 * 30 * 30 * 27 + 2 * 10 * 16 * 900 + 2 * 5 * 6 * 4 + 4 * 3 * 8
        # the rest: the elements other operations returned (bias-free relu, flatten,
        # the random operands)
        rest = 2 * 16 * 30 * 30 * 2 + 2 * 5 * 4 + 2 * 6 * 4 + 4 * 8 + 8 * 3
        self.assertEqual(counter.total, macs + rest)


# A test suite for the counted stops of a test session (harvest_docs.StepMeter): each test
# builds a layer and runs a few operations and Python calls, test_long far more, and
# test_big allocates live tensors past a small memory budget.
SESSION_PKG = """
import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x)


class Other(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * self.scale
"""

SESSION_TESTS = """
import torch

import sesspkg


def helper(n):
    return sum(int(i) for i in range(n))


def _work(d, n):
    # the layer through its module: the tests name no class of the package, so the greedy
    # gate (harvest_docs IDLE_TESTS) runs every one of them
    m = sesspkg.Layer(d)
    x = torch.randn(2, d)
    for _ in range(n):
        x = torch.tanh(m(x))
    helper(50)
    return x


""" + "".join("def test_step_%02d():\n    _work(%d, 40)\n\n\n" % (i, 8 + i) for i in range(40))

SESSION_LONG = """
import torch

import sesspkg


def test_long():
    # far past a test's counted budget: stopped by it, the tests after it still run
    sesspkg.Other(3)(torch.ones(2, 3))
    for _ in range(100000):
        torch.ones(8) + 1
    sesspkg.Layer(7)
"""

SESSION_BIG = """
import torch

from sesspkg import Layer

kept = []


def test_small():
    Layer(4)(torch.ones(1, 4))


def test_big():
    for _ in range(8):
        kept.append(torch.zeros(1 << 20))  # 4 MB each, held
    Layer(5)(torch.ones(1, 5))


def test_after():
    Layer(6)(torch.ones(1, 6))
"""


class TestSessionStopTest(unittest.TestCase):
    """A test session's stops (harvest_docs.StepMeter): counted work (torch operations,
    Python calls) and the bytes of live tensors, never the CPU timer, which is only a
    backstop: the same tests run, stop and go unrun, and the same witnesses are recorded, in
    every run, however fast the process spends CPU time (a busy thread beside the tests)."""

    def setUp(self):
        try:
            import pytest  # noqa: F401
        except ImportError:
            self.skipTest("pytest is not importable")
        if H.work_counter(torch) is None:
            self.skipTest("no TorchFunctionMode in this torch")
        self.dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.dir, "sesspkg"))
        os.makedirs(os.path.join(self.dir, "tests"))
        for rel, text in (
            ("sesspkg/__init__.py", SESSION_PKG),
            ("tests/test_long.py", SESSION_LONG),
            ("tests/test_session.py", SESSION_TESTS),
            ("tests/test_big.py", SESSION_BIG),
        ):
            with open(os.path.join(self.dir, rel), "w") as f:
                f.write(text)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_step(self, rate, budget, test_seconds, busy=False, files=("tests/test_session.py",), memory_mb=None):
        cfg = {
            "roots": [self.dir],
            "repoRoot": self.dir,
            "entry": {
                "kind": "test",
                "module": "",
                "qualname": files[0],
                "plan": {},
                "via": "test:" + files[0],
                "file": files[0],
            },
            "files": list(files),
            "called": [],
            "budgetSeconds": budget,
            "testSeconds": test_seconds,
        }
        if memory_mb:
            cfg["tensorMemoryMb"] = memory_mb
        # busy: a thread spinning beside the step, started before it (the process spends CPU
        # time twice as fast, as on a slower or loaded machine: a CPU timer fires earlier)
        code = (
            "import json, sys, threading; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
            "import torch\nfrom nnrag_harness import harvest_docs\n"
            "harvest_docs.TEST_WORK_PER_SECOND = %r\n"
            "def spin():\n    while True:\n        pass\n"
            "if %r:\n    threading.Thread(target=spin, daemon=True).start()\n"
            "harvest_docs.run_doc_entry(json.loads(%r), torch, lambda ev: print('RESULT ' + json.dumps(ev['result'])))\n"
        ) % (HARNESS_DIR, self.dir, rate, busy, json.dumps(cfg))
        import subprocess

        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=self.dir)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
        self.assertTrue(lines, r.stdout[-2000:] + r.stderr[-2000:])
        return json.loads(lines[-1][len("RESULT ") :])

    def test_a_session_stops_at_the_same_test_by_counted_work(self):
        # the whole session's counted work, with a budget far above it
        whole = self.run_step(1e9, 300, 300)
        self.assertNotIn("stopped", whole, whole)
        self.assertEqual(whole["tests"]["passed"], 40, whole["tests"])
        total = whole["workSeconds"] * 1e9
        # a rate that gives a 30 s step 60 % of that work and a test 30 s of it: the session
        # stops by work, in a test past the middle, at the same test with a thread spinning
        # beside it (CPU time spent twice as fast: the backstop, 45 s, is far away)
        rate = total * 0.6 / 30
        runs = [self.run_step(rate, 30, 30), self.run_step(rate, 30, 30, busy=True)]
        for res in runs:
            self.assertEqual(res.get("stopped"), "work", res)
            self.assertNotIn("backstop", res)
            self.assertGreater(res["tests"]["unrun"], 0, res["tests"])
            self.assertLess(res["cpuMs"], 45000)
        self.assertGreater(runs[1]["cpuMs"], runs[0]["cpuMs"] * 1.3, "the busy thread spent CPU time")
        for k in ("passed", "failed", "unrun", "stopped"):
            self.assertEqual(runs[0]["tests"][k], runs[1]["tests"][k], k)
        self.assertEqual(runs[0]["classes"], runs[1]["classes"])
        self.assertEqual(runs[0]["work"]["ops"], runs[1]["work"]["ops"])
        # the budget was passed in a test's operation (that test failed with the step's work
        # stop) or in the Python work between tests (checked there: no test failed); either
        # way none after it ran
        by_op = any(H.WORK_STOP[len("timeout: ") :] in e or "WorkBudgetSpent" in e for e in runs[0]["tests"]["errors"])
        self.assertTrue(by_op or runs[0]["tests"]["failed"] == 0, runs[0]["tests"])
        self.assertEqual(H.budget_stop("%s of 30 s" % H.WORK_STOP), "work")

    def test_a_test_past_its_own_counted_budget_is_stopped_and_the_next_runs(self):
        whole = self.run_step(1e9, 300, 300, files=("tests/test_long.py", "tests/test_session.py"))
        total = whole["workSeconds"] * 1e9
        # a test's budget of a tenth of the session's work: test_long (most of it) is
        # stopped, the forty of the next file run and the session completes
        rate = total / 10 / 30
        res = self.run_step(rate, 300, 30, files=("tests/test_long.py", "tests/test_session.py"))
        self.assertNotIn("stopped", res, res)
        self.assertEqual(res["tests"]["stopped"], ["tests/test_long.py::test_long"], res["tests"])
        self.assertNotIn("timedOut", res["tests"])
        self.assertEqual(res["tests"]["passed"], 40, res["tests"])
        # what test_long built before its stop is kept, what it would have built after is not
        self.assertIn("sesspkg.Other", res["classes"])
        self.assertEqual([w["args"] for w in res["classes"]["sesspkg.Layer"]["witnesses"]][:1], [[8]])
        self.assertFalse(any(w["args"] == [7] for w in res["classes"]["sesspkg.Layer"]["witnesses"]))

    def test_an_operation_past_the_live_tensors_budget_is_refused(self):
        if not hasattr(torch.Tensor, "untyped_storage"):
            self.skipTest("no weak references to storages in this torch")
        # test_big would hold 32 MB of tensors, the budget is 18 MB: its fifth 4 MB tensor is
        # refused (a MemoryError) in every run; test_after's small ones fit beside the four
        runs = [self.run_step(1e9, 30, 10, files=("tests/test_big.py",), memory_mb=18) for _ in range(2)]
        for res in runs:
            self.assertEqual(res.get("stopped"), "memory", res)
            self.assertNotIn("backstop", res)
            self.assertEqual(res["tests"]["passed"], 2, res["tests"])
            self.assertEqual(res["tests"]["memory"], ["tests/test_big.py::test_big"], res["tests"])
            self.assertEqual(res["tests"]["stopped"], ["tests/test_big.py::test_big"], res["tests"])
            self.assertIn("TestMemorySpent", res["tests"]["errors"][0])
            self.assertGreaterEqual(res["work"]["tensorMb"], 16)
            self.assertLess(res["work"]["tensorMb"], 21)
            # test_big's Layer(5) came after the refusal: not built
            self.assertEqual(sorted(w["args"][0] for w in res["classes"]["sesspkg.Layer"]["witnesses"]), [4, 6])
        self.assertEqual(runs[0]["classes"], runs[1]["classes"])
        self.assertEqual(runs[0]["work"], runs[1]["work"])
        # a budget above it: every test passes
        done = self.run_step(1e9, 30, 10, files=("tests/test_big.py",), memory_mb=64)
        self.assertNotIn("stopped", done, done)
        self.assertEqual(done["tests"]["passed"], 3, done["tests"])


class CountedMemoryTest(unittest.TestCase):
    """harvest.work_counter's live tensor bytes and harvest_docs.PythonCalls."""

    def test_live_storages_are_counted_once_until_freed(self):
        if not hasattr(torch.Tensor, "untyped_storage"):
            self.skipTest("no weak references to storages in this torch")
        counter = H.work_counter(torch, memory_limit=1 << 40)
        with counter:
            a = torch.zeros(1000)  # 4000 bytes
            v = a[:10]  # a view: nothing new
            a.add_(1)  # in place: nothing new
            p = nn.Parameter(a)  # the same storage
            b = torch.ones(250)  # 1000 bytes
            self.assertEqual(counter.bytes, 5000)
            del b
            self.assertEqual(counter.bytes, 4000)
            self.assertEqual(counter.peak, 5000)
            del a
            self.assertEqual(counter.bytes, 4000)  # the view and the parameter hold it
            del v, p
            self.assertEqual(counter.bytes, 0)
        # past the limit: the operation that passed it raises, every time
        counter = H.work_counter(torch, memory_limit=6000)
        with self.assertRaises(H.MemoryBudgetSpent):
            with counter:
                keep = [torch.zeros(1000), torch.zeros(1000)]  # noqa: F841
        # the second storage passed it; both freed since (the list was never made)
        self.assertEqual(counter.peak, 8000)
        self.assertEqual(counter.bytes, 0)

    def test_a_whole_graph_compile_runs_under_the_counter(self):
        # torch.compile's dynamo traces the active mode too; `fullgraph=True` fails on what
        # it cannot put in a graph unless the mode steps aside while it compiles
        if getattr(getattr(torch, "compiler", None), "is_compiling", None) is None:
            self.skipTest("no torch.compiler.is_compiling in this torch")

        def f(x):
            return (x @ x.t()).relu().sum()

        compiled = torch.compile(f, backend="eager", fullgraph=True)
        counter = H.work_counter(torch, memory_limit=1 << 40, op_work=1)
        x = torch.randn(8, 8)
        with counter:
            got = compiled(x)
        self.assertEqual(float(got), float(f(x)))
        self.assertGreater(counter.ops, 0, "the compiled call itself is seen")

    def test_processes_started_are_counted(self):
        import subprocess

        procs = HD.ProcessStarts().start()
        try:
            subprocess.run([sys.executable, "-c", "pass"], check=True)  # an interpreter
            subprocess.run(["true"], check=True)  # another program
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        finally:
            procs.stop()
        self.assertEqual(procs.n, 3)
        self.assertEqual(procs.work, HD.TEST_PYTHON_START_WORK + HD.TEST_EXEC_WORK + HD.TEST_FORK_WORK)
        # restored: what starts a process after the step is not counted
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        self.assertEqual(procs.n, 3)

    def test_python_calls_are_counted(self):
        def leaf():
            return 1

        def caller(n):
            return sum(leaf() for _ in range(n))

        counts = []
        for _ in range(2):
            calls = HD.PythonCalls().start()
            try:
                caller(10)
            finally:
                calls.stop()
            counts.append(calls.count())
        # caller, its generator expression (one frame start per resumption: 11), leaf x 10
        self.assertEqual(counts[0], counts[1])
        self.assertGreaterEqual(counts[0], 21)
        self.assertIsNone(sys.gettrace())


class WitnessRulesTest(unittest.TestCase):
    def test_base_class_witness(self):
        rec = H.Recorder(torch, {"m.Base": Base, "m.Sub": Sub}, [])
        rec.install(nn)
        try:
            m = Sub(4)
            m(torch.randn(1, 4))
            w = rec.witnesses("e")
        finally:
            for cls, name, orig in reversed(rec.patched):
                setattr(cls, name, orig)
        self.assertEqual(w["m.Sub"]["witnesses"][0]["args"], [4])
        base = w["m.Base"]["witnesses"][0]
        self.assertEqual(base["args"][1], 4)
        self.assertEqual(base["args"][0]["$module"], ["torch.nn.modules.linear", "Identity"])
        self.assertIn("inputs", base)  # Sub runs Base's forward: the inputs are the base's too

    def test_failed_construction_is_no_witness(self):
        rec = H.Recorder(torch, {"m.Stages": Stages}, [])
        rec.install(nn)
        try:
            with self.assertRaises(TypeError):
                Stages(4, 8)
            Stages([2, 2, 2, 2], 8)
            w = rec.witnesses("e")
        finally:
            for cls, name, orig in reversed(rec.patched):
                setattr(cls, name, orig)
        self.assertEqual([x["args"] for x in w["m.Stages"]["witnesses"]], [[[2, 2, 2, 2], 8]])

    def test_call_plan_wrapper_of_a_model(self):
        class Ema(nn.Module):
            def __init__(self, model, decay=0.9):
                super().__init__()
                self.module = model

        class Needs(nn.Module):
            def __init__(self, model: int):
                super().__init__()

        self.assertEqual(H.call_plan(Ema, [], []), {"model": {"instance": True}})
        self.assertIsNone(H.call_plan(Needs, [], []))  # annotated as something else than a module

    def test_forward_keys_need_an_own_type(self):
        class A(nn.Module):
            def forward(self, t: Box):
                return t

        class B(nn.Module):
            def forward(self, t: Box):
                return t

        class Plain(nn.Module):
            def forward(self, x: torch.Tensor):
                return x

        k = H.forward_keys({"m.A": A, "m.B": B, "m.Plain": Plain, "m.Lin": Lin})
        self.assertEqual(sorted(k), ["m.A", "m.B"])  # forward(x) alone is no interface
        self.assertEqual(k["m.A"], k["m.B"])

    def test_choice_variants(self):
        cfg = {"kind": "argparse", "fields": {"big": False, "width": 4, "kind": "narrow"}}
        self.assertEqual(H.choice_variants(build_chosen, "opts", cfg), [{"big": True, "kind": "wide"}])
        self.assertEqual(
            H.choice_variants(build_chosen, "opts", dict(cfg, fields=dict(cfg["fields"], kind="wide"))), []
        )  # the default already

    def test_number_keyed_tables(self):
        t = {i: i < 2 for i in range(5)}
        enc = V.encode(t)
        self.assertEqual(V.decode(enc, resolve, torch), t)
        # a value JSON cannot spell as itself: the general form, keys and values encoded
        self.assertIn("$map", V.encode({1: float("inf")}))
        self.assertEqual(V.decode(V.encode({1: float("inf")}), resolve, torch), {1: float("inf")})
        with self.assertRaises(V.Unencodable):
            V.encode({1.5: 1})  # a float key is no plain key

    def test_flag_variants_read_through_calls(self):
        cfg = {"kind": "argparse", "fields": {"big": False, "width": 4, "quiet": False}}
        self.assertEqual(H.flag_variants(build_outer, "opts", cfg), ["big"])  # 'quiet' is not read
        ns = H.make_config(cfg, torch, {"big": True})
        self.assertIsInstance(build_outer(ns), Stages)


class RulesTest(unittest.TestCase):
    def test_subscript_lengths_and_scalar_variant(self):
        self.assertEqual(A.subscript_lengths(Stages)["layers"], 4)
        self.assertEqual(A.seq_variant([], {"layers": 2}, {"layers": 4})[1], {"layers": [2, 2, 2, 2]})
        self.assertEqual(A.scalar_variant([], {"res": (8, 8), "d": 4})[1], {"res": 8, "d": 4})
        self.assertTrue(A.SCALAR_ERR.search("unsupported operand type(s) for //: 'tuple' and 'int'"))

    def test_duck_module(self):
        import inspect

        params = list(inspect.signature(Focal.__init__).parameters.values())[1:]
        d = A.duck_modules(Focal, params, nn)
        self.assertEqual(list(d), ["loss_fcn"])
        self.assertTrue(hasattr(d["loss_fcn"](), "reduction"))
        self.assertIn(d["loss_fcn"], (nn.MSELoss, nn.L1Loss))

    def test_keyword_only_plan(self):
        class Cond(nn.Module):
            def forward(self, x, *, condition, scale=1.0, mask=None):
                return x * condition * scale

        m = Cond()
        # the positional plan leaves keyword-only parameters out; keywords=True lists the
        # required ones (PEP 3102), classified as inputs after the positional ones
        self.assertEqual(I.forward_plan(m), [("x", "tensor")])
        self.assertEqual(I.forward_plan(m, keywords=True), [("condition", "tensor")])
        self.assertEqual(I.forward_plan(nn.Linear(2, 2), keywords=True), [])

    def test_optional_and_ids_plan(self):
        from typing import Optional

        class Prompt(nn.Module):
            def forward(self, points: Optional[torch.Tensor], boxes: Optional[torch.Tensor]):
                return points

        class Clip(nn.Module):
            def __init__(self):
                super().__init__()
                self.context_length = 5
                self.emb = nn.Embedding(7, 4)

            def forward(self, image, text):
                return text

        self.assertEqual(I.forward_plan(Prompt()), [("points", "none"), ("boxes", "none")])
        m = Clip()
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("image", "tensor"), ("text", "ids")])
        ids = I.make_inputs([("float", (3, 4))], plan, torch, m)[1]
        self.assertEqual((list(ids.shape), ids.dtype), ([3, 5], torch.int64))
        self.assertEqual(
            I.targets_as_tensors([("x", "tensor"), ("label", "target")]), [("x", "tensor"), ("label", "tensor")]
        )


class ConfigsTest(unittest.TestCase):
    def write(self, d, name, text):
        p = os.path.join(d, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_yacs_defaults_read_statically(self):
        src = (
            "from yacs.config import CfgNode as CN\n_C = CN()\n_C.MODEL = CN()\n_C.MODEL.SWIN = CN()\n"
            "_C.MODEL.SWIN.DEPTHS = [2, 2]\n_C.MODEL.TYPE = 'swin'\n_C.MODEL.NAME = os.environ['X']\n_C.DEVICE = 'cuda:0'\n"
        )
        tree = CF.yacs_tree(src)["_C"]
        self.assertEqual(
            tree, {"MODEL": {"SWIN": {"DEPTHS": [2, 2]}, "TYPE": "swin"}, "DEVICE": "cpu"}
        )  # no NAME: not a literal
        cfg = CF.to_attrdict(tree)
        self.assertEqual((cfg.MODEL.SWIN.DEPTHS, cfg["MODEL"]["TYPE"]), ([2, 2], "swin"))
        enc = V.encode(cfg)
        back = V.decode(enc, resolve, torch)
        self.assertEqual(back.MODEL.TYPE, "swin")
        self.assertIsInstance(back, CF.AttrDict)

    def test_dict_type_configs_and_snippets(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(
                d,
                "configs/a.py",
                "_base_ = ['x.py']\nmodel = dict(type='Net', depth=2, head=dict(type='Head', k=[1, 2]))\n",
            )
            self.write(d, "pkg/code.py", "def f():\n    pass\nmodel = dict(type='NotAConfig')\n")
            p = self.write(
                d,
                "pkg/m.py",
                "import torch\nx = 1\nif __name__ == '__main__':\n    net = Net(3)\n    y = net(torch.ones(1))\n",
            )
            got = CF.dict_type_configs([d])
            # the nested dict with a `type` is a call of its own (the registry builds it)
            self.assertEqual(
                [(c["name"], c["type"], c["kwargs"], c["types"]) for c in got],
                [
                    ("model", "Net", {"depth": 2, "head": {"type": "Head", "k": [1, 2]}}, ["Head", "Net"]),
                    ("model.head", "Head", {"k": [1, 2]}, ["Head"]),
                ],
            )
            # a name reads the file's earlier assignment; a rebinding to code drops it; the
            # same call twice is one; at most per_type calls of one class
            self.write(
                d,
                "configs/b.py",
                "norm = dict(type='BN', eps=1e-3)\n"
                "m1 = dict(type='Body', norm=norm, blocks=[dict(type='Block', k=1), dict(type='Block', k=1)])\n"
                "norm = make()\n"
                "m2 = dict(type='Body', norm=norm)\n"
                "m3 = dict(type='Block', k=2)\nm4 = dict(type='Block', k=3)\n",
            )
            got = [(c["name"], c["type"], c["kwargs"]) for c in CF.dict_type_configs([d], per_type=2)]
            self.assertIn(
                ("m1", "Body", {"norm": {"type": "BN", "eps": 1e-3}, "blocks": [{"type": "Block", "k": 1}] * 2}), got
            )
            self.assertIn(("norm", "BN", {"eps": 1e-3}), got)
            self.assertNotIn("m1.norm", [g[0] for g in got])
            self.assertIn(("m1.blocks[0]", "Block", {"k": 1}), got)
            self.assertNotIn("m1.blocks[1]", [g[0] for g in got])
            self.assertNotIn("m2", [g[0] for g in got])
            self.assertEqual([g[2] for g in got if g[1] == "Block"], [{"k": 1}, {"k": 2}])
            code, names = CF.main_snippet(p)
            self.assertTrue({"Net", "torch"} <= names)
            ns = {"Net": lambda n: (lambda t: t * n), "torch": torch}
            exec(code, ns)
            self.assertEqual(ns["y"].tolist(), [3.0])
            self.assertIsNone(CF.main_snippet(self.write(d, "pkg/n.py", "x = 1\n")))


class Trunk(nn.Module):
    """A repository's model: its __init__ sets the attributes a wrapper reads."""

    def __init__(self, dim, depth=1):
        super().__init__()
        self.attn_layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])
        self.dim = dim

    def forward(self, x):
        return self.attn_layers(x)


class Plain(nn.Module):
    """Another class of the repository, without those attributes."""

    def __init__(self, width):
        super().__init__()
        self.width = width

    def forward(self, x):
        return x


class Wrapper(nn.Module):
    """Takes a model and reads its attributes in __init__ (`net.dim`) and, through the
    attribute it stores it in, in forward (`self.net.attn_layers`)."""

    def __init__(self, net, scale=2.0):
        super().__init__()
        self.net = net
        self.head = nn.Linear(net.dim, 3)
        self.scale = scale

    def forward(self, x):
        return self.head(self.net.attn_layers(x)) * self.scale


class TypedWrapper(nn.Module):
    def __init__(self, model: Trunk):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


class LinearHead(nn.Module):
    """A repository model whose classifier is a Linear (has `weight`)."""

    def __init__(self, dim=4):
        super().__init__()
        self.num_features = dim
        self.head = nn.Linear(dim, 3)

    def get_classifier(self):
        return self.head

    def forward(self, x):
        return self.head(x)


class BareHead(LinearHead):
    """The same attributes by name, but a classifier without `weight` (smaller: first)."""

    def __init__(self, dim=4):
        super().__init__(dim)
        self.head = nn.Identity()


class Pooled(nn.Module):
    """Reads `base.num_features` and `base.get_classifier` by name, and the `weight` of
    what the method returns, which no attribute read shows."""

    def __init__(self, base):
        super().__init__()
        self.base = base
        self.fc = nn.Linear(base.num_features, base.get_classifier().weight.shape[0])

    def forward(self, x):
        return self.fc(x)


class ProviderTest(unittest.TestCase):
    """Backbone parameters (source_provider.py): a repository class built from its own
    witness for a parameter used as a module with attributes."""

    def setUp(self):
        me = sys.modules[__name__]
        self.resolve = V.module_resolver(me.__dict__, lambda m: False)
        # one witness per witnessed class, as providersOf sends them (Plain first: the
        # smallest, and called, so only the attributes can rule it out)
        self.provs = {
            "m.Plain": {"args": [4], "kwargs": {}, "params": 0, "entry": "e", "inputs": {"args": [], "kwargs": {}}},
            "m.Trunk": {"args": [], "kwargs": {"dim": 8, "depth": 2}, "params": 144, "entry": "e"},
        }

    def test_attribute_reads(self):
        from nnrag_harness import usage as U

        self.assertEqual(U.attribute_reads(Wrapper), {"net": {"dim", "attn_layers"}})
        self.assertEqual(U.attribute_reads(Plain), {})

    def test_init_sets_and_wanted(self):
        self.assertEqual(PR.init_sets(Trunk), {"attn_layers", "dim"})
        req = S.request(Wrapper, sys.modules[__name__].__dict__, nn)
        self.assertEqual(PR.wanted(req, nn), {"net": ({"dim", "attn_layers"}, None)})
        req = S.request(TypedWrapper, sys.modules[__name__].__dict__, nn)
        self.assertEqual(PR.wanted(req, nn), {"model": (set(), Trunk)})
        # a parameter annotated as a number is not this rule's, nor one whose reads every
        # nn.Module has (`net.parameters()`)

        class Counted(nn.Module):
            def __init__(self, n: int, net):
                super().__init__()
                self.bits = n.bit_length()
                self.count = sum(p.numel() for p in net.parameters())

        req = S.request(Counted, sys.modules[__name__].__dict__, nn)
        self.assertEqual(PR.wanted(req, nn), {})

    def test_wrapper_built_around_provider(self):
        g = sys.modules[__name__].__dict__
        cands, _ = CA.arg_candidates(Wrapper, [], g, nn, providers=(self.provs, self.resolve, torch))
        label, args, kwargs = next(c for c in cands if c[0].startswith("heuristic"))
        net = kwargs["net"]
        self.assertIsInstance(net, Trunk)
        self.assertEqual((net.dim, len(net.attn_layers)), (8, 2), "built from its witness")
        m = Wrapper(*args, **kwargs)
        self.assertEqual(list(m(torch.randn(5, 8)).shape), [5, 3])
        # each plan gets its own instance (a wrapper may change the module it holds)
        req = S.request(Wrapper, g, nn)
        build = PR.module_providers(req, self.provs, self.resolve, torch, nn)["net"][0]
        self.assertIsNot(build(), build())
        # without providers the parameter gets no repository class (the old guess)
        cands, _ = CA.arg_candidates(Wrapper, [], g, nn)
        self.assertFalse(any(isinstance(c[2].get("net"), Trunk) for c in cands))

    def test_annotation_names_the_class(self):
        g = sys.modules[__name__].__dict__
        cands, _ = CA.arg_candidates(TypedWrapper, [], g, nn, providers=(self.provs, self.resolve, torch))
        self.assertIsInstance(cands[0][2]["model"], Trunk)

    def test_next_provider_when_the_first_does_not_build_the_class(self):
        g = sys.modules[__name__].__dict__
        inputs = {"args": [], "kwargs": {}}
        provs = {
            "m.BareHead": {"args": [], "kwargs": {}, "params": 0, "entry": "e", "inputs": inputs},
            "m.LinearHead": {"args": [], "kwargs": {}, "params": 15, "entry": "e", "inputs": inputs},
        }
        cands, _ = CA.arg_candidates(Pooled, [], g, nn, providers=(provs, self.resolve, torch))
        bases = [type(c[2]["base"]).__name__ for c in cands if isinstance(c[2].get("base"), LinearHead)]
        # the smallest first (as before), then the next fitting class in a plan of its own
        self.assertEqual(bases, ["BareHead", "LinearHead"], [c[0] for c in cands])
        built = []
        for label, args, kwargs in cands:
            try:
                built.append((label, Pooled(*args, **kwargs)))
            except AttributeError:
                continue
        self.assertTrue(built, [c[0] for c in cands])
        label, m = built[0]
        self.assertIsInstance(m.base, LinearHead)
        self.assertNotIsInstance(m.base, BareHead)
        self.assertEqual(list(m(torch.randn(2, 4)).shape), [2, 3])
        # a next provider whose instance lacks a read attribute is left out (NoFit)
        req = S.request(Pooled, g, nn)
        builds = PR.module_providers(req, provs, self.resolve, torch, nn)["base"]
        self.assertEqual(len(builds), 2)
        self.assertIsInstance(builds[1](), LinearHead)

    def test_no_fitting_provider(self):
        req = S.request(Wrapper, sys.modules[__name__].__dict__, nn)
        only_plain = {"m.Plain": self.provs["m.Plain"]}
        self.assertEqual(PR.module_providers(req, only_plain, self.resolve, torch, nn), {})
        # a provider whose witness does not build is passed over
        broken = {"m.Trunk": {"args": ["x"], "kwargs": {}, "params": 0, "entry": "e"}}
        self.assertEqual(PR.module_providers(req, broken, self.resolve, torch, nn), {})


class StashTest(unittest.TestCase):
    """hide_new_repository_modules: the repository's modules a step imported leave
    sys.modules but stay in STASH, so the next step (equivalence) gets the same modules
    back instead of running their import-time code a second time against what stayed
    (an installed package's registry that the first import filled)."""

    def test_hidden_modules_are_kept_and_not_imported_again(self):
        import importlib

        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "nnragstash_pkg"))
            with open(os.path.join(root, "nnragstash_pkg", "__init__.py"), "w") as f:
                f.write("import nnragstash_shared\nnnragstash_shared.REG.append(__name__)\n")
            shared = types.ModuleType("nnragstash_shared")
            shared.REG = []
            sys.modules["nnragstash_shared"] = shared
            sys.path.insert(0, root)
            try:
                before = len(sys.modules)
                first = importlib.import_module("nnragstash_pkg")
                STASH_MOD.hide_new_repository_modules(before, [root])
                self.assertNotIn("nnragstash_pkg", sys.modules)
                self.assertIs(STASH_MOD.STASH.get("nnragstash_pkg"), first)
                # put back as the equivalence stage does: the same module, imported once
                for name, m in STASH_MOD.STASH.items():
                    sys.modules.setdefault(name, m)
                self.assertIs(importlib.import_module("nnragstash_pkg"), first)
                self.assertEqual(shared.REG, ["nnragstash_pkg"])
                self.assertIn("nnragstash_shared", sys.modules, "what is not the repository's stays")
            finally:
                sys.path.remove(root)
                for name in ("nnragstash_pkg", "nnragstash_shared"):
                    sys.modules.pop(name, None)
                    STASH_MOD.STASH.pop(name, None)


class BuiltExtensionsTest(unittest.TestCase):
    """stash.same_as_installed and stash.BuiltExtensions: an installed package that holds
    the checkout's modules with the same bytes plus the extension modules its build
    compiled is the checkout's own code, and a submodule the checkout lacks is the
    installed build's extension module of that path; an installed copy with a module of
    its own is not the same code (its extension modules are still the checkout's build),
    and one whose modules differ gives the checkout nothing. The extension files are not
    loaded here (test/validate/built-extensions.test.ts loads a compiled one)."""

    def _case(self, name, edit):
        import importlib
        import importlib.machinery

        root, site = tempfile.mkdtemp(), tempfile.mkdtemp()
        self.addCleanup(lambda: [shutil.rmtree(d, ignore_errors=True) for d in (root, site)])
        for base in (root, site):
            os.makedirs(os.path.join(base, name, "ops"))
            for rel, text in (("__init__.py", ""), ("ops/__init__.py", ""), ("ops/layer.py", "X = 1\n")):
                with open(os.path.join(base, name, rel), "w") as f:
                    f.write(text)
        ext = os.path.join(site, name, "ops", "_ext" + importlib.machinery.EXTENSION_SUFFIXES[0])
        with open(ext, "wb") as f:
            f.write(b"\x7fELF")
        edit(os.path.join(site, name))
        sys.path[:0] = [root, site]

        def undo():
            sys.path.remove(root)
            sys.path.remove(site)
            for n in [n for n in sys.modules if n.partition(".")[0] == name]:
                del sys.modules[n]

        self.addCleanup(undo)
        importlib.import_module(name + ".ops.layer")
        spec = STASH_MOD.BuiltExtensions.find_spec(name + ".ops._ext", [os.path.join(root, name, "ops")])
        return STASH_MOD.same_as_installed(name, [root]), spec, ext

    def test_a_build_that_adds_extension_modules(self):
        same, spec, ext = self._case("nnragbuilt_a", lambda pkg: None)
        self.assertTrue(same)
        self.assertEqual(spec.origin, ext)
        self.assertIsInstance(spec.loader, importlib.machinery.ExtensionFileLoader)

    def test_a_build_that_copies_modules_in(self):
        def copy_in(pkg):
            with open(os.path.join(pkg, "configs.py"), "w") as f:
                f.write("Y = 2\n")

        same, spec, ext = self._case("nnragbuilt_b", copy_in)
        self.assertFalse(same)
        self.assertEqual(spec.origin, ext)

    def test_other_code(self):
        def other(pkg):
            with open(os.path.join(pkg, "ops", "layer.py"), "a") as f:
                f.write("Z = 3\n")

        same, spec, _ = self._case("nnragbuilt_c", other)
        self.assertFalse(same)
        self.assertIsNone(spec)


class InstalledIsolationTest(unittest.TestCase):
    """stash.isolable_installed / hide_installed / restore_installed: an installed
    pure-Python package that the original's import loaded and filled (a registry) is
    imported afresh by the candidate and put back for the equivalence stage; one with an
    extension module, the standard library and the repository's own stay."""

    def test_registry_filled_by_the_original_is_fresh_for_the_copy(self):
        import importlib

        with tempfile.TemporaryDirectory() as site, tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(site, "nnragiso_reg"))
            with open(os.path.join(site, "nnragiso_reg", "__init__.py"), "w") as f:
                f.write("REG = {}\n")
            os.makedirs(os.path.join(root, "nnragiso_repo"))
            with open(os.path.join(root, "nnragiso_repo", "__init__.py"), "w") as f:
                f.write("import json, nnragiso_reg, nnragiso_ext\nnnragiso_reg.REG['Conv'] = 1\n")
            os.makedirs(os.path.join(site, "nnragiso_held"))
            with open(os.path.join(site, "nnragiso_held", "__init__.py"), "w") as f:
                f.write("class Expr: pass\n")
            ext = types.ModuleType("nnragiso_ext")
            ext.__file__ = os.path.join(site, "nnragiso_ext.cpython-311-x86_64-linux-gnu.so")
            sys.path[:0] = [root, site]
            names = ("nnragiso_repo", "nnragiso_reg", "nnragiso_ext", "nnragiso_held")
            try:
                before = set(sys.modules)
                sys.modules["nnragiso_ext"] = ext  # an extension module the import loaded
                # ... holding a class of another pure-Python package: that one stays
                ext.Expr = importlib.import_module("nnragiso_held").Expr
                old = importlib.import_module("nnragiso_repo")
                got = STASH_MOD.isolable_installed(before, [root])
                self.assertEqual(
                    sorted(got), ["nnragiso_reg"], "not the repository's, json, an extension or what one holds"
                )
                STASH_MOD.INSTALLED.update(got)
                STASH_MOD.hide_installed()
                fresh = importlib.import_module("nnragiso_reg")
                self.assertEqual(fresh.REG, {}, "the copy sees the package as a process of its own would")
                self.assertIs(old.nnragiso_reg.REG["Conv"], 1)
                STASH_MOD.restore_installed()
                self.assertIs(sys.modules["nnragiso_reg"], old.nnragiso_reg, "the original's, for equivalence")
            finally:
                STASH_MOD.INSTALLED.clear()
                for p in (root, site):
                    sys.path.remove(p)
                for name in names:
                    sys.modules.pop(name, None)

    def test_registry_filled_by_the_copy_is_fresh_for_the_original(self):
        # the other order: the candidate imported first and registered in the installed
        # package; the original imports after it (namespace stage) and would register the
        # same name again, which a registry refuses
        import importlib

        with tempfile.TemporaryDirectory() as site, tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(site, "nnragiso2_reg"))
            with open(os.path.join(site, "nnragiso2_reg", "__init__.py"), "w") as f:
                f.write(
                    "REG = {}\n"
                    "def register(k):\n"
                    "    if k in REG:\n"
                    "        raise KeyError(k + ' is already registered')\n"
                    "    REG[k] = 1\n"
                )
            os.makedirs(os.path.join(root, "nnragiso2_repo"))
            with open(os.path.join(root, "nnragiso2_repo", "__init__.py"), "w") as f:
                f.write("from nnragiso2_reg import register\nregister('Conv')\n")
            sys.path[:0] = [root, site]
            names = ("nnragiso2_repo", "nnragiso2_reg")
            cand = types.ModuleType(CANDIDATE_MODULE)
            try:
                before = set(sys.modules)
                sys.modules[CANDIDATE_MODULE] = cand
                exec("from nnragiso2_reg import register, REG\nregister('Conv')\n", cand.__dict__)
                # the candidate's module holds the package's objects, yet is no reason to
                # keep it (the original does not see it), and is not taken itself
                got = STASH_MOD.isolable_installed(before, [root], exclude={CANDIDATE_MODULE})
                self.assertEqual(sorted(got), ["nnragiso2_reg"])
                STASH_MOD.COPY_INSTALLED.update(got)
                with STASH_MOD.for_original():
                    orig = importlib.import_module("nnragiso2_repo")  # no "already registered"
                    self.assertIsNot(sys.modules["nnragiso2_reg"], got["nnragiso2_reg"])
                self.assertIs(sys.modules["nnragiso2_reg"], got["nnragiso2_reg"], "the copy's, back")
                self.assertIs(cand.__dict__["REG"], got["nnragiso2_reg"].REG)
                # the namespace stage takes the two registries' definitions as one: the same
                # module and qualified name (`register` is a twin, not a rebinding)
                ended = []

                class Stage:
                    def end(self, stage, t0, status, **kw):
                        ended.append((status, kw))

                ns = {"names": [{"name": "register", "origins": [["nnragiso2_repo", "register"]]}]}
                NS_MOD.check(Stage(), 0, cand, __file__, ns)
                self.assertEqual(ended[-1][0], "pass", ended)
                STASH_MOD.use_original_installed()
                self.assertIs(sys.modules["nnragiso2_reg"].register, orig.register, "the original's, for equivalence")
            finally:
                STASH_MOD.COPY_INSTALLED.clear()
                STASH_MOD.ORIGINAL_INSTALLED.clear()
                for p in (root, site):
                    sys.path.remove(p)
                for name in names + (CANDIDATE_MODULE,):
                    sys.modules.pop(name, None)

    def test_package_holding_state_of_a_visible_package_stays(self):
        # a pure-Python package whose import registered in the state of a package that
        # stays visible (one with an extension module): imported afresh, it would register
        # a second time in that same state ("scope X exists in runner registry")
        import importlib.machinery

        with tempfile.TemporaryDirectory() as site, tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(site, "nnragiso3_core"))
            with open(os.path.join(site, "nnragiso3_core", "__init__.py"), "w") as f:
                f.write("class Registry:\n    def __init__(self):\n        self.children = []\nROOT = Registry()\n")
            suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
            open(os.path.join(site, "nnragiso3_core", "_ops" + suffix), "w").close()
            for name, body in (
                ("nnragiso3_child", "from nnragiso3_core import ROOT\nROOT.children.append('child')\n"),
                ("nnragiso3_grand", "from nnragiso3_child import ROOT as PARENT\nMINE = {}\n"),
                ("nnragiso3_free", "import nnragiso3_core\nREG = {}\n"),
            ):
                os.makedirs(os.path.join(site, name))
                with open(os.path.join(site, name, "__init__.py"), "w") as f:
                    f.write(body)
            os.makedirs(os.path.join(root, "nnragiso3_repo"))
            with open(os.path.join(root, "nnragiso3_repo", "__init__.py"), "w") as f:
                f.write("import nnragiso3_child, nnragiso3_grand, nnragiso3_free\n")
            sys.path[:0] = [root, site]
            names = ("nnragiso3_repo", "nnragiso3_core", "nnragiso3_child", "nnragiso3_grand", "nnragiso3_free")
            try:
                before = set(sys.modules)
                importlib.import_module("nnragiso3_repo")
                got = STASH_MOD.isolable_installed(before, [root])
                # the child holds the visible core's registry, the grandchild the same
                # registry through the child; the free package only the core's module
                self.assertEqual(sorted(got), ["nnragiso3_free"])
            finally:
                for p in (root, site):
                    sys.path.remove(p)
                for name in names:
                    sys.modules.pop(name, None)


class SameAsInstalledTest(unittest.TestCase):
    """stash.same_as_installed: the checkout is the installed code when every importable
    file of the installed package is the checkout's, byte for byte; the checkout may hold
    more (a wheel leaves out a `configs/` folder its package data does not list)."""

    def check(self, edit):
        import importlib

        with tempfile.TemporaryDirectory() as site, tempfile.TemporaryDirectory() as root:
            for base in (root, site):
                os.makedirs(os.path.join(base, "nnragsame_pkg"))
                for f, body in (("__init__.py", "X = 1\n"), ("layers.py", "Y = 2\n")):
                    with open(os.path.join(base, "nnragsame_pkg", f), "w") as fh:
                        fh.write(body)
            os.makedirs(os.path.join(root, "nnragsame_pkg", "configs"))
            with open(os.path.join(root, "nnragsame_pkg", "configs", "base.py"), "w") as fh:
                fh.write("model = dict(depth=2)\n")
            edit(os.path.join(site, "nnragsame_pkg"))
            sys.path[:0] = [root, site]
            STASH_MOD._SAME.pop("nnragsame_pkg", None)
            try:
                importlib.import_module("nnragsame_pkg")
                return STASH_MOD.same_as_installed("nnragsame_pkg", [root])
            finally:
                STASH_MOD._SAME.pop("nnragsame_pkg", None)
                for p in (root, site):
                    sys.path.remove(p)
                sys.modules.pop("nnragsame_pkg", None)

    def test_installed_subset_with_the_same_bytes(self):
        self.assertTrue(self.check(lambda pkg: None))

    def test_installed_package_data_is_not_code(self):
        # a wheel's package data below a folder no import can name (`.mim/configs/…`)
        def edit(pkg):
            os.makedirs(os.path.join(pkg, ".mim", "configs"))
            with open(os.path.join(pkg, ".mim", "configs", "base.py"), "w") as fh:
                fh.write("model = dict(depth=2)\n")

        self.assertTrue(self.check(edit))

    def test_installed_file_that_differs(self):
        def edit(pkg):
            with open(os.path.join(pkg, "layers.py"), "a") as fh:
                fh.write("Z = 3\n")

        self.assertFalse(self.check(edit))

    def test_installed_file_the_checkout_lacks(self):
        def edit(pkg):
            with open(os.path.join(pkg, "extra.py"), "w") as fh:
                fh.write("W = 4\n")

        self.assertFalse(self.check(edit))


class Passing(nn.Module):
    """A message-passing base: no forward of its own worth running (a docstring only)."""

    def forward(self, *args):
        """Subclasses compute here."""


class NoWidths(Passing):
    def forward(self, x):
        return x


class WideConv(Passing):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x):
        return self.lin(x)


class Abstract(Passing):
    def forward(self, x):
        raise NotImplementedError


class Directed(nn.Module):
    """A wrapper taking an instance (`conv: Passing`, PEP 484) and reading its widths."""

    def __init__(self, conv: Passing, alpha: float = 0.5):
        super().__init__()
        self.conv = copy.deepcopy(conv)
        self.lin = nn.Linear(conv.in_channels, conv.out_channels)

    def forward(self, x):
        return self.conv(x) + self.lin(x)


class Typed(nn.Module):
    """Takes the class object (`Type[C]`): builds its layer itself."""

    def __init__(self, block: typing.Type[WideConv], width: int):
        super().__init__()
        self.layer = block(width, width)

    def forward(self, x):
        return self.layer(x)


class Misannotated(nn.Module):
    """Annotated with the class but calls it to build (through a method): a factory."""

    def __init__(self, block: WideConv, width: int):
        super().__init__()
        self.layer = self._make(block, width)

    def _make(self, b, w):
        return b(w, w)

    def forward(self, x):
        return self.layer(x)


class Keyed(nn.Module):
    def __init__(self, convs: typing.Dict[typing.Tuple[str, str, str], Passing]):
        super().__init__()
        self.convs = nn.ModuleDict({"__".join(k): v for k, v in convs.items()})

    def forward(self, x):
        return sum(c(x) for c in self.convs.values())


class InstanceAnnotationTest(unittest.TestCase):
    """PEP 484: a parameter annotated with a class C takes an instance of C (only Type[C]
    takes the class): built from C or a concrete subclass, with the attributes the
    constructor reads of it."""

    def test_class_annotation_kinds(self):
        self.assertEqual(A.class_annotation(Passing, nn), ("instance", [Passing], None))
        self.assertEqual(A.class_annotation(typing.Optional[Passing], nn), ("instance", [Passing], None))
        self.assertEqual(A.class_annotation(typing.Type[Passing], nn), ("class", [Passing], None))
        self.assertEqual(A.class_annotation(typing.Callable[..., Passing], nn), ("class", [Passing], None))
        self.assertEqual(A.class_annotation(typing.List[Passing], nn), ("list", [Passing], None))
        self.assertEqual(A.class_annotation(typing.Dict[str, Passing], nn), ("dict", [Passing], str))
        self.assertIsNone(A.class_annotation(nn.Module, nn), "nn.Module: any module, no class")
        self.assertIsNone(A.class_annotation(int, nn))

    def test_concrete_classes(self):
        got = A.concrete_classes(Passing, nn)
        self.assertNotIn(Passing, got, "a docstring-only forward is a placeholder")
        self.assertNotIn(Abstract, got, "a forward raising NotImplementedError is abstract")
        self.assertEqual(got[:2], [NoWidths, WideConv], "fewest required parameters first")

    def test_instance_with_the_attributes_read(self):
        g = sys.modules[__name__].__dict__
        cands, why = CA.arg_candidates(Directed, [], g, nn)
        self.assertIsNone(why)
        kwargs = next(c for c in cands if c[0].startswith("heuristic"))[2]
        self.assertIsInstance(kwargs["conv"], WideConv, "NoWidths has no in_channels: passed over")
        m = Directed(**kwargs)
        self.assertEqual(list(m(torch.randn(3, kwargs["conv"].in_channels)).shape)[0], 3)

    def test_type_and_factory_keep_the_class(self):
        g = sys.modules[__name__].__dict__
        for cls in (Typed, Misannotated):
            kwargs = next(c for c in CA.arg_candidates(cls, [], g, nn)[0] if c[0].startswith("heuristic"))[2]
            self.assertIs(kwargs["block"], WideConv, cls.__name__)
            cls(**kwargs)

    def test_dict_of_instances(self):
        v = A.guess_value("convs", typing.Dict[typing.Tuple[str, str, str], Passing], 8, 2, nn)
        self.assertEqual(list(v), [("a", "a", "a")])
        self.assertIsInstance(v[("a", "a", "a")], NoWidths)
        Keyed(v)

    def test_tensor_annotation_gets_a_tensor(self):
        # annotated exactly Tensor: a float tensor of the guessed number, which code that
        # checks isinstance(v, Tensor) accepts; a Union naming float first stays a float
        class Turn(nn.Module):
            def __init__(
                self, angle: torch.Tensor, scale_factor: torch.Tensor, gain: typing.Union[float, torch.Tensor]
            ):
                super().__init__()
                if not isinstance(angle, torch.Tensor) or not isinstance(scale_factor, torch.Tensor):
                    raise TypeError("angle and scale_factor must be tensors")
                self.angle, self.scale, self.gain = angle, scale_factor, gain

            def forward(self, x):
                return x * self.angle.mean() * self.scale.mean() * self.gain

        kwargs = next(c for c in CA.arg_candidates(Turn, [], {}, nn)[0] if c[0].startswith("heuristic"))[2]
        self.assertIsInstance(kwargs["angle"], torch.Tensor)
        self.assertEqual((tuple(kwargs["angle"].shape), kwargs["angle"].dtype), ((2,), torch.float32))
        self.assertEqual(kwargs["scale_factor"].tolist(), [2.0, 2.0])  # the name's number
        self.assertEqual(kwargs["gain"], 1.0)
        self.assertEqual(tuple(Turn(**kwargs)(torch.ones(2, 3)).shape), (2, 3))

    def test_dict_keyed_by_tuples_is_recorded(self):
        # a witness keyed by typed names (edge types) encodes and decodes
        enc = V.encode({("a", "to", "b"): 1.5, ("b", "to", "a"): [2]})
        self.assertEqual(V.decode(enc, resolve, torch), {("a", "to", "b"): 1.5, ("b", "to", "a"): [2]})


class MaskInputTest(unittest.TestCase):
    """A required `mask` parameter (no default, not Optional) gets a tensor, boolean when
    the code uses it as one; only an Optional one gets None (PEP 484)."""

    def test_required_masks(self):
        class Weighted(nn.Module):
            def forward(self, x, mask):
                return x * mask.size(1)

        class Filled(nn.Module):
            def forward(self, x, mask):
                return x.masked_fill(mask, 0.0)

        class Positions(nn.Module):
            def forward(self, mask):
                return (~mask).cumsum(1)

        class Maybe(nn.Module):
            def forward(self, x, mask: typing.Optional[torch.Tensor]):
                return x if mask is None else x * mask

        for m, kind, dtype in (
            (Weighted(), "mask", torch.float32),
            (Filled(), "bool-mask", torch.bool),
            (Positions(), "bool-mask", torch.bool),
        ):
            plan = I.forward_plan(m)
            self.assertEqual(plan[-1], ("mask", kind), type(m).__name__)
            specs = I.input_candidates(m, plan, [8], torch, nn, 8)[0]
            inputs = I.make_inputs(specs, plan, torch, m)
            self.assertEqual(inputs[-1].dtype, dtype)
            m(*inputs)
        self.assertEqual(I.forward_plan(Maybe()), [("x", "tensor"), ("mask", "none")])


class Coords:
    """A structured input: features and their integer coordinates."""

    def __init__(self, features: torch.Tensor, indices: torch.Tensor, spatial_shape: typing.List[int], batch_size: int):
        self.features, self.indices, self.spatial_shape, self.batch_size = features, indices, spatial_shape, batch_size


class Selection:
    """A structured input whose constructor requires one-dimensional tensors."""

    def __init__(self, node_index: torch.Tensor, score: torch.Tensor, num_nodes: int):
        if node_index.dim() != 1:
            raise ValueError("node_index must be one-dimensional")
        assert score.ndim == 1
        self.node_index, self.score, self.num_nodes = node_index, score, num_nodes


class Pick(nn.Module):
    def forward(self, x, sel: Selection):
        return x[sel.node_index] * sel.score[:, None]


class TakesCoords(nn.Module):
    def forward(self, input):
        assert isinstance(input, Coords)
        return input.features[input.indices[:, 0].long()]


class AnnotatedCoords(nn.Module):
    def forward(self, x: Coords, scale: float = 1.0):
        return x.features * scale


class ObjectInputTest(unittest.TestCase):
    """A forward parameter asserted (`assert isinstance(p, C)`) or annotated (PEP 484)
    with a class of the code's own gets an instance of it, built from its constructor."""

    def test_object_inputs(self):
        self.assertEqual(I.object_inputs(TakesCoords.forward), {"input": Coords})
        self.assertEqual(I.object_inputs(AnnotatedCoords.forward), {"x": Coords})
        self.assertEqual(I.object_inputs(Lin.forward), {}, "an unannotated tensor")
        for m in (TakesCoords(), AnnotatedCoords()):
            plan = I.forward_plan(m)
            self.assertEqual(plan[0][1], "object")
            specs = I.input_candidates(m, plan, [8], torch, nn, 8)[0]
            (obj,) = I.make_inputs(specs, plan, torch, m)
            self.assertIsInstance(obj, Coords)
            self.assertEqual(obj.indices.dtype, torch.int32, "coordinates are integers")
            self.assertEqual(obj.indices.shape[1], len(obj.spatial_shape) + 1, "batch index and one per dimension")
            m(obj)

    def test_ranks_the_constructor_requires(self):
        # `if node_index.dim() != 1: raise`, `assert score.ndim == 1`: one value per row
        from nnrag_harness.usage import param_ranks

        self.assertEqual(param_ranks(Selection.__init__), {"node_index": 1, "score": 1})
        m = Pick()
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("x", "tensor"), ("sel", "object")])
        x, sel = I.make_inputs([("float", (4, 8)), ("float", (4, 8))], plan, torch, m)
        self.assertEqual(sel.node_index.tolist(), [0, 1, 2, 3])
        self.assertEqual(tuple(sel.score.shape), (4,))
        self.assertEqual(tuple(m(x, sel).shape), (4, 8))


CONFIG_FIXTURE = """
import torch.nn as nn


class TextConfig:
    # a configuration class whose constructor needs no argument (its author's defaults)
    def __init__(self, vocab_size=1000, hidden_size=768, num_attention_heads=12, intermediate_size=3072, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        for k, v in kwargs.items():
            setattr(self, k, v)

    @classmethod
    def from_dict(cls, d):
        if not isinstance(d, dict):
            raise TypeError("a dict")
        return cls(**d)


class Layer(nn.Module):
    # reads the configuration's fields, one of them a field TextConfig does not define
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.cross = nn.Linear(config.encoder_width, config.hidden_size)

    def forward(self, x):
        return self.dense(x)


class Model(nn.Module):
    # the module's evidence: the parameter is checked to be a TextConfig
    def __init__(self, config):
        super().__init__()
        if not isinstance(config, TextConfig):
            config = TextConfig.from_dict(config)
        self.layer = Layer(config)


class FromMapping(nn.Module):
    # the parameter is the mapping a TextConfig is made from
    def __init__(self, med_config):
        super().__init__()
        med_config = TextConfig.from_dict(med_config)
        self.dense = nn.Linear(med_config.hidden_size, med_config.hidden_size)


class VisionConfig(TextConfig):
    pass


class VisionModel(nn.Module):
    # the only evidence for `vision_cfg`: the model makes its configuration from the mapping
    def __init__(self, vision_cfg):
        super().__init__()
        vision_cfg = VisionConfig.from_dict(vision_cfg)
        self.layer = VisionLayer(vision_cfg)


class VisionLayer(nn.Module):
    # takes the configuration once made: an instance, not the mapping
    def __init__(self, vision_cfg):
        super().__init__()
        self.dense = nn.Linear(vision_cfg.hidden_size, vision_cfg.hidden_size)


class Unrelated(nn.Module):
    # nothing of the module names a class for `settings`
    def __init__(self, settings):
        super().__init__()
        self.dense = nn.Linear(settings.width, settings.width)
"""


class ConfigObjectsTest(unittest.TestCase):
    """source_config: a parameter taking a configuration object gets the configuration class
    its module's code names for it, built from its defaults (small widths first)."""

    @classmethod
    def setUpClass(cls):
        import importlib.util

        cls.dir = tempfile.mkdtemp()
        path = os.path.join(cls.dir, "nnrag_cfg_fixture.py")
        with open(path, "w") as f:
            f.write(CONFIG_FIXTURE)
        spec = importlib.util.spec_from_file_location("nnrag_cfg_fixture", path)
        cls.mod = importlib.util.module_from_spec(spec)
        sys.modules["nnrag_cfg_fixture"] = cls.mod
        spec.loader.exec_module(cls.mod)

    @classmethod
    def tearDownClass(cls):
        sys.modules.pop("nnrag_cfg_fixture", None)

    def build(self, name):
        """arg_candidates of class `name`, built as the harness's loop builds them (with the
        missing-attribute variant): (label, kwargs, instance or None)."""
        from nnrag_harness import source_config as SCF

        klass = getattr(self.mod, name)
        cands, unguessable = CA.arg_candidates(klass, None, self.mod.__dict__, nn)
        i = 0
        while i < len(cands):
            label, a, kw = cands[i]
            i += 1
            try:
                return label, kw, klass(*a, **kw), unguessable
            except AttributeError as e:
                v = SCF.missing_attribute_variant(a, kw, e, nn)
                if v is not None and label.count(" +attr") < 4:
                    cands.insert(i, (label + " +attr", v[0], v[1]))
            except Exception:  # noqa: BLE001
                pass
        return None, None, None, unguessable

    def test_classes_from_the_module_evidence(self):
        from nnrag_harness import source_config as SCF

        TextConfig = self.mod.TextConfig
        # Model's isinstance check makes it a TextConfig first; its from_dict also takes the mapping
        self.assertEqual(
            SCF.config_classes(self.mod.Layer, "config", self.mod.__dict__),
            [(TextConfig, "instance"), (TextConfig, "dict")],
        )
        self.assertEqual(
            SCF.config_classes(self.mod.FromMapping, "med_config", self.mod.__dict__), [(TextConfig, "dict")]
        )
        self.assertEqual(SCF.config_classes(self.mod.Unrelated, "settings", self.mod.__dict__), [])

    def test_instance_small_then_missing_field(self):
        label, kw, inst, _ = self.build("Layer")
        self.assertIsNotNone(inst, "the layer builds from a TextConfig")
        cfg = kw["config"]
        self.assertIsInstance(cfg, self.mod.TextConfig)
        # small widths and heads first; the field TextConfig lacks given by name
        self.assertEqual((cfg.hidden_size, cfg.intermediate_size, cfg.num_attention_heads), (32, 32, 4))
        self.assertEqual(cfg.encoder_width, 32)
        self.assertTrue(label.endswith(" +attr"), label)
        self.assertEqual(tuple(inst(torch.randn(2, 32)).shape), (2, 32))
        # the usage line writes the configuration as its construction
        from nnrag_harness import snippet as SN

        enc = SN.encode_live({"config": cfg}, torch)
        self.assertEqual(enc["$dict"]["config"]["$module"][1], "TextConfig")
        self.assertEqual(enc["$dict"]["config"]["kwargs"]["encoder_width"], 32)

    def test_mapping_form(self):
        _, kw, inst, _ = self.build("FromMapping")
        self.assertIsNotNone(inst)
        self.assertEqual(type(kw["med_config"]), dict)
        self.assertEqual(inst.dense.in_features, 32)

    def test_mapping_for_the_converting_class_instance_for_its_layers(self):
        _, kw, inst, _ = self.build("VisionModel")
        self.assertEqual(type(kw["vision_cfg"]), dict)
        _, kw, inst, _ = self.build("VisionLayer")
        self.assertIsInstance(kw["vision_cfg"], self.mod.VisionConfig)
        self.assertEqual(inst.dense.in_features, 32)

    def test_no_evidence_stays_unguessable(self):
        _, _, inst, unguessable = self.build("Unrelated")
        self.assertIsNone(inst)
        self.assertEqual(unguessable, "settings")


class CfgNode(dict):
    """A yacs-style configuration node: read by attribute, built from a dict of its items."""

    def __init__(self, init=None):
        super().__init__()
        for k, v in (init or {}).items():
            self[k] = CfgNode(v) if isinstance(v, dict) else v

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k) from None


class RepositoryConfigTest(unittest.TestCase):
    """A yacs configuration is the repository's own configuration class, in the harvest
    (harvest.repository_config) and when a recorded one is decoded (values.decode)."""

    def test_decode_keeps_the_recorded_class(self):
        cfg = CfgNode({"MODEL": {"WIDTH": 8, "NAMES": ["a"]}})
        enc = V.encode(cfg)
        self.assertEqual(enc["class"][1], "CfgNode")
        dec = V.decode(enc, V.module_resolver(globals(), lambda m: False), torch)
        self.assertIsInstance(dec, CfgNode)
        self.assertIsInstance(dec.MODEL, CfgNode)
        self.assertEqual(dec.MODEL.WIDTH, 8)
        # a class the resolver cannot give: a plain attribute dict, read the same way
        plain = V.decode(enc, V.module_resolver({}, lambda m: False), torch)
        self.assertNotIsInstance(plain, CfgNode)
        self.assertEqual(plain.MODEL.WIDTH, 8)

    def test_decode_as_the_candidates_base_when_the_original_class_is_foreign(self):
        # the recorded class derives from an installed package's class that this process
        # imported afresh (another class object of the same name): the base it resolves to
        class Installed(dict):
            pass

        class Fresh(dict):
            pass

        class Repository(Installed):
            pass

        def resolve(module, qualname):
            return {"Repository": Repository, "Installed": Fresh}[qualname.split(".")[-1]]

        Installed.__qualname__, Repository.__qualname__ = "Installed", "Repository"
        enc = {"$attrdict": {"A": 1}, "class": ["repo.config", "Repository"]}
        dec = V.decode(enc, resolve, torch)
        self.assertIs(type(dec), Fresh)
        self.assertEqual(dec["A"], 1)

        # the same class everywhere (the original's own process): the recorded class
        def same(module, qualname):
            return {"Repository": Repository, "Installed": Installed}[qualname.split(".")[-1]]

        self.assertIs(type(V.decode(enc, same, torch)), Repository)

    def test_harvest_builds_the_repository_defaults_object(self):
        root = tempfile.mkdtemp()
        pkg = os.path.join(root, "cfgpkg_fixture")
        os.makedirs(pkg)
        with open(os.path.join(pkg, "__init__.py"), "w") as f:
            f.write("")
        with open(os.path.join(pkg, "defaults.py"), "w") as f:
            f.write(
                "class CfgNode(dict):\n"
                "    def __getattr__(self, k):\n"
                "        try:\n"
                "            return self[k]\n"
                "        except KeyError:\n"
                "            raise AttributeError(k) from None\n"
                "    def __setattr__(self, k, v):\n"
                "        self[k] = v\n"
                "    def clone(self):\n"
                "        import copy\n"
                "        return copy.deepcopy(self)\n"
                "_C = CfgNode()\n"
                "_C.MODEL = CfgNode()\n"
                "_C.MODEL.DEVICE = 'cuda'\n"
                "_C.MODEL.WIDTH = 96\n"
                "_C.MODEL.DEPTH = 4\n"
            )
        sys.path.insert(0, root)
        try:
            specs = [c for c in CF.yacs_configs([root]) if c["root"] == "_C"]
            self.assertEqual(len(specs), 1)
            cfg = H.make_config(specs[0], torch, {"MODEL": {"WIDTH": 32}})
            defaults = sys.modules["cfgpkg_fixture.defaults"]
            self.assertIsInstance(cfg, defaults.CfgNode)
            self.assertIsInstance(cfg.MODEL, defaults.CfgNode)
            self.assertEqual((cfg.MODEL.DEVICE, cfg.MODEL.WIDTH, cfg.MODEL.DEPTH), ("cpu", 32, 4))
            self.assertEqual(defaults._C.MODEL.WIDTH, 96, "the module's defaults are left alone")
        finally:
            sys.path.remove(root)
            for n in [n for n in sys.modules if n.startswith("cfgpkg_fixture")]:
                del sys.modules[n]


if __name__ == "__main__":
    unittest.main()
