"""Unit tests of nnrag_harness.snippet (usage snippets rendered from recorded values
through a whitelist IR, checked with ast, run as written). Run with a Python that has
torch (test/validate/harness-package.test.ts)."""

import dataclasses
import os
import sys
import types
import typing
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "validate", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from nnrag_harness import snippet as S  # noqa: E402
from nnrag_harness import values as V  # noqa: E402

LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


class Sneaky(str):
    """A str whose repr / str / iteration lie: what a hostile default or witness holds."""

    def __repr__(self):
        return "'x'\nopen('/tmp/pwned', 'w').write('1')\n#"

    __str__ = __repr__

    def __iter__(self):
        return iter(self.__repr__())


@dataclasses.dataclass
class Config:
    n_layer: int = 2
    n_embd: int = 16
    vocab_size: int = 50
    bias: bool = True
    dropout: float = 0.0


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.blocks = nn.Sequential(
            *[nn.Linear(config.n_embd, config.n_embd, bias=config.bias) for _ in range(config.n_layer)]
        )

    def forward(self, idx):
        return self.blocks(self.emb(idx))


class Wrap(nn.Module):
    def __init__(self, inner, scale=1.0, name="w"):
        super().__init__()
        self.inner, self.scale, self.name = inner, scale, name

    def forward(self, x, mask=None):
        y = self.inner(x) * self.scale
        return y if mask is None else y.masked_fill(~mask[..., None], 0)


class Pair(typing.NamedTuple):
    """A configuration passed as a named tuple."""

    width: int
    scale: float = 1.0


class Nested(object):
    """A container input rebuilt from its fields (as detr's NestedTensor)."""

    def __init__(self, tensors, mask):
        self.tensors = tensors
        self.mask = mask


class Holder(object):
    """A plain object whose fields are set after construction."""

    def __init__(self):
        self.width = 4


class Needy(object):
    """An object whose constructor takes something that is not one of its fields."""

    def __init__(self, spec):
        self.width = int(spec)


class CfgNode(dict):
    """A configuration read by attribute and by key (as yacs's CfgNode)."""

    def __init__(self, init=None):
        super().__init__()
        for k, v in (init or {}).items():
            self[k] = CfgNode(v) if type(v) is dict else v

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k) from None


class FromPair(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(cfg.width, cfg.width)
        self.scale = cfg.scale

    def forward(self, x):
        return self.fc(x) * self.scale


class FromHolder(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.fc = nn.Linear(h.width, h.extra)

    def forward(self, x):
        return self.fc(x)


class FromCfg(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(cfg.MODEL.WIDTH, cfg["MODEL"]["OUT"])

    def forward(self, x):
        return self.fc(x)


class Masked(nn.Module):
    def forward(self, nt):
        return nt.tensors.masked_fill(nt.mask, 0.0)


def namespace():
    mod = types.ModuleType("nnrag_candidate")
    for c in (Config, Model, Wrap, Pair, Nested, Holder, Needy, CfgNode, FromPair, FromHolder, FromCfg, Masked):
        c.__module__ = "nnrag_candidate"
        setattr(mod, c.__name__, c)
    mod.nn = nn
    mod._private = 1
    return S.star_namespace(mod)


class QuoteTest(unittest.TestCase):
    def test_no_line_break_escapes_a_string(self):
        for br in LINE_BREAKS:
            s = "a%sb\x00\x1b[2J\U0001f600'\"\\" % br
            q = S.quote(s)
            self.assertTrue(all(0x20 <= ord(c) < 0x7F for c in q), q)
            self.assertEqual(len(q.splitlines()), 1)
            self.assertEqual(eval(q), s)  # noqa: S307 - the literal reads back as the string

    def test_a_str_subclass_is_read_as_its_data(self):
        q = S.quote(Sneaky("plain"))
        self.assertEqual(q, '"plain"')


class RenderTest(unittest.TestCase):
    def setUp(self):
        self.ns = namespace()
        self.spell = S.spell_in(self.ns, torch)

    def text(self, args, kwargs, inputs, ikw=None, eval_mode=False, cls="Model"):
        return S.snippet_text(
            cls,
            S.encode_live(list(args), torch),
            S.encode_live(dict(kwargs), torch)["$dict"],
            S.encode_live(list(inputs), torch),
            S.encode_live(dict(ikw or {}), torch)["$dict"],
            self.spell,
            eval_mode,
        )

    def test_dataclass_argument(self):
        t = self.text([Config(n_layer=1)], {}, [torch.randint(0, 50, (1, 300))])
        self.assertEqual(
            t,
            "Model(Config(n_layer=1, n_embd=16, vocab_size=50, bias=True, dropout=0.0))(torch.randint(0, 50, (1, 300)))",
        )
        y = S.run_snippet(t, self.ns, torch)
        self.assertEqual(list(y.shape), [1, 300, 16])

    def test_nested_module_tensor_and_mask(self):
        mask = torch.tensor([[True, False, True]])
        t = self.text(
            [nn.Linear(4, 6, bias=False)],
            {"scale": 2.0, "name": Sneaky("w")},
            [torch.randn(1, 3, 4)],
            {"mask": mask},
            cls="Wrap",
        )
        self.assertEqual(
            t,
            'Wrap(torch.nn.Linear(in_features=4, out_features=6, bias=False), scale=2.0, name="w")'
            "(torch.randn(1, 3, 4), mask=torch.tensor([[True, False, True]], dtype=torch.bool))",
        )
        self.assertNotIn("open(", t)
        y = S.run_snippet(t, self.ns, torch)
        self.assertEqual(list(y.shape), [1, 3, 6])
        self.assertTrue(bool((y[0, 1] == 0).all()))

    def test_hostile_string_stays_a_literal(self):
        for br in LINE_BREAKS:
            t = self.text(
                [nn.Identity()],
                {"name": Sneaky("a%sopen('/tmp/x','w').write('1')" % br)},
                [torch.randn(2, 3)],
                cls="Wrap",
            )
            self.assertEqual(len(t.splitlines()), 1, repr(t))
            S.check_snippet(t)
            self.assertEqual(list(S.run_snippet(t, self.ns, torch).shape), [2, 3])

    def test_tensor_spellings(self):
        r = S.Renderer(self.spell)
        big = V.encode(torch.zeros(2, 100, dtype=torch.long) + 7)
        self.assertEqual(S.render(r.value(big)), "torch.randint(7, 8, (2, 100))")
        self.assertEqual(
            S.render(r.value(V.encode(-torch.ones(1, 3, 224, 224, dtype=torch.float16)))),
            "torch.randn(1, 3, 224, 224, dtype=torch.float16)",
        )
        # non-negative values (an image in [0, 1], pixels in [0, 255]): uniform over the
        # recorded range, as the validated values were
        self.assertEqual(
            S.render(r.value(V.encode(torch.rand(1, 3, 224, 224, dtype=torch.float16)))),
            "torch.rand(1, 3, 224, 224, dtype=torch.float16)",
        )
        pixels = torch.tensor([[0.0, 255.0], [3.0, 7.5]])
        t = S.render(r.value(V.encode(pixels)))
        self.assertEqual(t, "torch.empty(2, 2).uniform_(0.0, 255.0)")
        S.check_snippet("Model()(%s)" % t)
        made = eval(t, {"torch": torch})  # noqa: S307 - the rendered, checked expression
        self.assertTrue(bool((made >= 0).all() and (made <= 255).all()) and made.dtype == torch.float32)
        self.assertEqual(S.render(r.value(V.encode(torch.randn(8) - 10))), "torch.randn(8)")
        self.assertEqual(
            S.render(r.value(V.encode(torch.ones(200, dtype=torch.bool)))), "torch.ones((200,), dtype=torch.bool)"
        )
        self.assertEqual(S.render(r.value(V.encode(torch.tensor(-3.0)))), "torch.randn(())")
        # one value throughout: that value
        self.assertEqual(S.render(r.value(V.encode(torch.tensor(3.0)))), "torch.full((), 3.0)")
        self.assertEqual(S.render(r.value(V.encode(torch.ones(2, 3)))), "torch.full((2, 3), 1.0)")
        self.assertEqual(S.render(r.value({"$float": "inf"})), 'float("inf")')
        # an integral float as values.encode keeps it through node's JSON: written a float
        self.assertEqual(S.render(r.value(V.encode((0.5, 1.0, 2.0)))), "(0.5, 1.0, 2.0)")
        self.assertEqual(S.render(r.value({"$float": "2.0"})), "2.0")
        self.assertEqual(S.render(r.value({"$tuple": [-1, 2.5e-06]})), "(-1, 2.5e-06)")

    def test_partial_imports_functools(self):
        import functools

        t = self.text([nn.Identity()], {"scale": 0.5}, [torch.randn(2, 3)], cls="Wrap")
        self.assertTrue(t.startswith("Wrap(torch.nn.Identity()"), t)
        r = S.Renderer(self.spell)
        node = r.value(V.encode(functools.partial(nn.LayerNorm, eps=1e-6)))
        self.assertEqual(S.render(node), "functools.partial(torch.nn.LayerNorm, eps=1e-06)")
        self.assertEqual(r.imports, {"functools"})

    def test_witness_record_of_the_original_module(self):
        # a witness names the original's module; the copy defines the same qualified name
        enc = {
            "$dataclass": ["model", "Config"],
            "fields": {"n_layer": 1, "n_embd": 8, "vocab_size": 10, "bias": False, "dropout": 0.0},
        }
        t = S.snippet_text(
            "Model", [enc], {}, [{"$tensor": [1, 4], "dtype": "int64", "values": [1, 2, 3, 9]}], {}, self.spell
        )
        self.assertEqual(
            t,
            "Model(Config(n_layer=1, n_embd=8, vocab_size=10, bias=False, dropout=0.0))(torch.tensor([[1, 2, 3, 9]], dtype=torch.int64))",
        )
        self.assertEqual(list(S.run_snippet(t, self.ns, torch).shape), [1, 4, 8])

    def test_a_torch_class_is_not_spelled_by_a_module_class_of_the_same_name(self):
        class Linear(nn.Module):
            pass

        ns = dict(self.ns, Linear=Linear, ReLU=nn.ReLU)
        spell = S.spell_in(ns, torch)
        self.assertEqual(S.render(spell("torch.nn.modules.linear", "Linear")), "torch.nn.Linear")
        self.assertEqual(S.render(spell("torch.nn.modules.activation", "ReLU")), "ReLU")
        self.assertEqual(S.render(spell("torch.nn.functional", "gelu")), "torch.nn.functional.gelu")

    def test_usage_namespace_adds_the_block_class_that_star_leaves_out(self):
        mod = types.ModuleType("nnrag_candidate")
        mod.__all__ = ["Model"]
        mod.Model, mod._Hidden, mod.Wrap = Model, Wrap, Wrap
        self.assertEqual(sorted(S.star_namespace(mod)), ["Model"])
        self.assertEqual(sorted(S.usage_namespace(mod, "_Hidden", Wrap)), ["Model", "_Hidden"])
        self.assertEqual(sorted(S.usage_namespace(mod, "Wrap", Wrap)), ["Model", "Wrap"])
        with self.assertRaises(S.Unrenderable):
            S.usage_namespace(mod, "Model", Wrap)  # the name is bound to another class

    def test_copy_names_spell_a_renamed_definition_and_refuse_another_of_the_same_name(self):
        # the module's own Gate (from repo.blocks) and repo.acts.Gate met in one module:
        # the copy renamed the latter Gate_acts; a private root keeps its name
        class Gate(nn.Module):
            pass

        class GateActs(nn.Module):
            pass

        class _Shift(nn.Module):
            pass

        mod = types.ModuleType("nnrag_candidate")
        mod.Model, mod.Gate, mod.Gate_acts, mod._Shift = Model, Gate, GateActs, _Shift
        names = S.CopyNames(
            [
                {"name": "Model", "origins": [["repo.blocks", "Model"]]},
                {"name": "Gate", "origins": [["repo.blocks", "Gate"]]},
                {"name": "Gate_acts", "origins": [["repo.acts", "Gate"]]},
                {"name": "_Shift", "origins": [["repo.norms", "_Shift"]]},
            ]
        )
        ns = S.usage_namespace(mod, "Model", Model, names)
        self.assertEqual(sorted(ns), ["Gate", "Gate_acts", "Model", "_Shift"])
        spell = S.spell_in(ns, torch, names)
        self.assertEqual(S.render(spell("repo.acts", "Gate")), "Gate_acts")
        self.assertEqual(S.render(spell("repo.blocks", "Gate")), "Gate")
        self.assertEqual(S.render(spell("repo.norms", "_Shift")), "_Shift")
        # a Gate of a third module is neither: the module lacks it (a usage root)
        with self.assertRaises(S.NotInModule):
            spell("repo.other", "Gate")
        self.assertEqual(S.usage_needs([{"$ref": ["repo.other", "Gate"]}], spell), [["repo.other", "Gate"]])
        # a live value of the copy names the candidate module: its own name
        from nnrag_harness import CANDIDATE_MODULE

        self.assertEqual(S.render(spell(CANDIDATE_MODULE, "Gate")), "Gate")
        # without copy names (an older request) the name is taken as before
        self.assertEqual(S.render(S.spell_in(ns, torch)("repo.other", "Gate")), "Gate")
        # a definition whose __module__ names another module than where it was found
        # (re-exported with `X.__module__ = "repo"`) is the same one
        orig = types.ModuleType("repo_found_here")
        orig.Gate = type("Gate", (), {"__module__": "repo"})
        sys.modules["repo_found_here"] = orig
        try:
            found = S.CopyNames([{"name": "Gate", "origins": [["repo_found_here", "Gate"]]}])
            self.assertFalse(found.other("Gate", "repo", "Gate"))
            self.assertTrue(found.other("Gate", "repo.elsewhere", "Gate"))
        finally:
            del sys.modules["repo_found_here"]

    def test_witness_values_resolve_to_the_copy_name_of_their_definition(self):
        from nnrag_harness import source_witness

        class Gate(nn.Module):
            pass

        class GateActs(nn.Module):
            pass

        acts = types.ModuleType("repo.acts")
        acts.Gate = type("Gate", (nn.Module,), {})
        other = types.ModuleType("repo.other")
        other.Gate = type("Gate", (nn.Module,), {})
        originals = {"repo.acts": acts, "repo.other": other}
        names = S.CopyNames(
            [
                {"name": "Gate", "origins": [["repo.blocks", "Gate"]]},
                {"name": "Gate_acts", "origins": [["repo.acts", "Gate"]]},
            ]
        )
        ns = {"Gate": Gate, "Gate_acts": GateActs}
        resolve = source_witness.copy_resolver(ns, ["repo"], originals, names)
        self.assertIs(resolve("repo.acts", "Gate"), GateActs)
        self.assertIs(resolve("repo.blocks", "Gate"), Gate)
        # another module's Gate: the original's, not the copy's own Gate
        self.assertIs(resolve("repo.other", "Gate"), other.Gate)
        from nnrag_harness import CANDIDATE_MODULE

        self.assertIs(resolve(CANDIDATE_MODULE, "Gate"), Gate)
        # without copy names, the copy's name as before
        self.assertIs(source_witness.copy_resolver(ns, ["repo"], originals)("repo.other", "Gate"), Gate)

    def test_a_call_that_draws_random_numbers_runs_under_more_seeds(self):
        # a random augmentation: one operation takes any image, the other 8-bit ones only
        # (torchvision's RandAugment on a float image fails for about half the draws)
        class Augment(nn.Module):
            def forward(self, img):
                if int(torch.randint(0, 4, ())) == 0 and img.dtype != torch.uint8:
                    raise TypeError("Only torch.uint8 image tensors are supported, but found %s" % img.dtype)
                return img

        class Steady(nn.Module):
            calls = 0

            def forward(self, img):
                Steady.calls += 1
                return img

        ns = dict(self.ns, Augment=Augment, Steady=Steady)
        # which draws fail, seed by seed, as run_snippet makes them (the input first)
        fails = []
        for n in (1,) + S.RESEEDS:
            S.seed_all(torch, n)
            torch.randn(1, 3, 4, 4)
            fails.append(int(torch.randint(0, 4, ())) == 0)
        self.assertTrue(not fails[0] and any(fails[1:]), "the first run passes, a later seed draws the 8-bit operation")
        # run once, as before, the snippet passes; the runs under more seeds fail it
        S.run_snippet("Augment()(torch.randn(1, 3, 4, 4))", ns, torch)
        S.run_snippet("Augment()(torch.randn(1, 3, 4, 4))", ns, torch, S.RESEEDS, lambda: 0.0)
        # the error says which draw failed, and keeps the block's own (wanted_dtype reads it)
        with self.assertRaisesRegex(
            S.OtherDraw,
            r"^another random draw than the validated one \(seed \d+\) fails .*: TypeError: Only torch.uint8",
        ) as caught:
            S.run_snippet("Augment()(torch.randn(1, 3, 4, 4))", ns, torch, S.RESEEDS)
        self.assertIsInstance(caught.exception.error, TypeError)
        self.assertEqual(S.wanted_dtype(str(caught.exception), {"float32"}), ("float32", "uint8"))
        # an 8-bit image works for every draw
        y = S.run_snippet("Augment()(torch.randint(0, 256, (1, 3, 4, 4), dtype=torch.uint8))", ns, torch, S.RESEEDS)
        self.assertEqual(y.dtype, torch.uint8)
        # a call that draws nothing runs once
        S.run_snippet("Steady()(torch.randn(2))", ns, torch, S.RESEEDS)
        self.assertEqual(Steady.calls, 1)

    def test_a_line_whose_values_pass_on_some_draws_only_is_seeded_and_runs_as_written(self):
        # a random augmentation built with a value its operation refuses (torchvision's
        # RandomPosterize with bits=32): the draws that skip the operation pass, the others
        # fail; Python's random decides in one, torch's generator in the other
        import random

        class Levels(nn.Module):
            def __init__(self, levels):
                super().__init__()
                self.levels = levels

            def forward(self, img):
                if float(torch.rand(())) < 0.5:
                    return img
                if self.levels > 8:
                    raise ValueError("levels should be at most 8. Got %d" % self.levels)
                return img

        class PyLevels(Levels):
            def forward(self, img):
                if random.random() < 0.5:
                    return img
                if self.levels > 8:
                    raise ValueError("levels should be at most 8. Got %d" % self.levels)
                return img

        ns = dict(self.ns, Levels=Levels, PyLevels=PyLevels)
        line = "Levels(32)(torch.rand(1, 3, 4, 4))"
        # the seed of a run that passes and one that fails, drawn as run_snippet draws
        # (the input first, then the call's draw)
        passing, failing = [], []
        for n in range(12):
            S.seed_all(torch, n)
            torch.rand(1, 3, 4, 4)
            (passing if float(torch.rand(())) < 0.5 else failing).append(n)
        self.assertTrue(passing and failing)
        # the generators the call drew from travel with the other draw's failure
        S.seed_all(torch, 0)
        with self.assertRaises(S.OtherDraw) as caught:
            S.run_snippet(line, ns, torch, tuple(failing[:1] + passing[:1]) * 2)
        self.assertEqual(caught.exception.moved, {"torch"})
        # seeded with a seed whose draw passes: the line seeds torch first and runs as
        # written, once, whatever seeds run_snippet would otherwise try
        text = S.seeded_text(line, {"torch"}, passing[0])
        self.assertEqual(text, "torch.manual_seed(%d)\n%s" % (passing[0], line))
        S.run_snippet(text, ns, torch, tuple(failing))
        # a seed whose draw fails fails the line: the seeded draw is the one that runs
        with self.assertRaisesRegex(ValueError, "at most 8"):
            S.run_snippet(S.seeded_text(line, {"torch"}, failing[0]), ns, torch, ())
        # Python's generator: `import random` joins the imports, `random.seed(N)` follows
        # torch's seed; the line's other imports and generated statements stay in order
        seeded = S.seeded_text("import math\nPyLevels(32)(torch.rand(1))", {"random", "torch"}, 3)
        self.assertEqual(
            seeded, "import math\nimport random\ntorch.manual_seed(3)\nrandom.seed(3)\nPyLevels(32)(torch.rand(1))"
        )
        ok = []
        for n in range(12):
            try:
                S.run_snippet(S.seeded_text("PyLevels(32)(torch.rand(1))", {"random", "torch"}, n), ns, torch, (1, 2))
                ok.append(n)
            except ValueError:
                pass
        self.assertTrue(0 < len(ok) < 12, "some seeds pass, others fail: the seed decides the draw")
        # a seeded line whose call draws from a generator it does not seed is refused
        with self.assertRaisesRegex(S.Unseeded, "seeds torch, it also draws from random"):
            S.run_snippet(S.seeded_text("PyLevels(4)(torch.rand(1))", {"torch"}, 1), ns, torch, ())
        # NumPy's generator cannot be seeded by a line (numpy is not imported by one)
        with self.assertRaises(S.Unrenderable):
            S.seeded_text(line, {"torch", "numpy"}, 1)
        # the check accepts seeding statements only after the imports, before the rest,
        # `random.seed` only after `import random`, non-negative int literals only
        S.check_snippet(
            "import random\ntorch.manual_seed(0)\nrandom.seed(7)\nvalue1 = Levels(32)\nvalue1(torch.rand(1))"
        )
        for bad in (
            "random.seed(1)\nLevels(32)(torch.rand(1))",
            "value1 = Levels(32)\ntorch.manual_seed(1)\nvalue1(torch.rand(1))",
            "torch.manual_seed(1)\nimport random\nLevels(32)(torch.rand(1))",
            "torch.manual_seed(-1)\nLevels(32)(torch.rand(1))",
            "torch.manual_seed(1.5)\nLevels(32)(torch.rand(1))",
            "torch.manual_seed(seed=1)\nLevels(32)(torch.rand(1))",
            "torch.seed()\nLevels(32)(torch.rand(1))",
        ):
            with self.assertRaises(S.Unrenderable, msg=bad):
                S.check_snippet(bad)

    def test_an_attribute_set_after_construction_is_written_when_the_block_reads_it(self):
        # detr's build: `backbone = Joiner(...)`, then `backbone.num_channels = 2048`,
        # which DETR's constructor reads
        class Joiner(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.width = width

        class Detr(nn.Module):
            def __init__(self, backbone):
                super().__init__()
                self.proj = nn.Linear(backbone.num_channels, 4)

            def forward(self, x):
                return self.proj(x)

        ns = dict(self.ns, Joiner=Joiner, Detr=Detr)
        spell = S.spell_in(ns, torch)
        joiner = {
            "$module": ["repo.backbone", "Joiner"],
            "args": [8],
            "kwargs": {},
            "attrs": {"training": False, "width": 8, "num_channels": 6},
        }
        x = {"$tensor": [2, 6], "dtype": "float32", "min": -1.0, "max": 1.0}
        t = S.snippet_text("Detr", [joiner], {}, [x], {}, spell, taken=ns)
        self.assertEqual(t, "Detr(Joiner(8))(torch.randn(2, 6))")
        with self.assertRaises(AttributeError) as e:
            S.run_snippet(t, ns, torch)
        read = S.attributes_read(str(e.exception), [[joiner], {}, [x], {}])
        self.assertEqual(read, ("Joiner", "num_channels"))
        t = S.snippet_text("Detr", [joiner], {}, [x], {}, spell, taken=ns, set_attrs=[read])
        self.assertEqual(t, "value1 = Joiner(8)\nvalue1.num_channels = 6\nDetr(value1)(torch.randn(2, 6))")
        self.assertEqual(list(S.run_snippet(t, ns, torch).shape), [2, 4])
        # an attribute no recorded module of that class had: nothing to write
        self.assertIsNone(S.attributes_read("'Joiner' object has no attribute 'depth'", [[joiner]]))
        self.assertIsNone(S.attributes_read("'Other' object has no attribute 'num_channels'", [[joiner]]))

    def test_an_error_naming_the_dtype_an_input_must_have(self):
        self.assertEqual(
            S.wanted_dtype("Only torch.uint8 image tensors are supported, but found torch.float32", {"float32"}),
            ("float32", "uint8"),
        )
        self.assertEqual(S.wanted_dtype("expected scalar type Long but found Float", {"float32"}), ("float32", "int64"))
        self.assertEqual(
            S.wanted_dtype("Expected input dtype torch.float32, but got torch.float64", {"float64"}),
            ("float64", "float32"),
        )
        # a dtype no input has, an unknown one, none named
        self.assertIsNone(
            S.wanted_dtype("Only torch.uint8 image tensors are supported, but found torch.int16", {"float32"})
        )
        self.assertIsNone(
            S.wanted_dtype("Only torch.nothing tensors are supported, but found torch.float32", {"float32"})
        )
        self.assertIsNone(S.wanted_dtype("mat1 and mat2 shapes cannot be multiplied", {"float32"}))
        img = V.encode(torch.randn(1, 3, 64, 64))
        mask = V.encode(torch.ones(1, 64, dtype=torch.bool))
        self.assertEqual(S.tensor_dtypes([[img], {"mask": mask}]), {"float32", "bool"})
        r = S.Renderer(self.spell)
        # an 8-bit image over its whole range; other tensors as they were
        self.assertEqual(
            S.render(r.value(S.retyped(img, "float32", "uint8"))),
            "torch.randint(0, 256, (1, 3, 64, 64), dtype=torch.uint8)",
        )
        self.assertEqual(S.retyped(mask, "float32", "uint8"), mask)
        self.assertEqual(S.render(r.value(S.retyped(img, "float32", "int64"))).split(", (")[1], "1, 3, 64, 64))")
        self.assertEqual(
            S.render(r.value(S.retyped(img, "float32", "bool"))), "torch.ones((1, 3, 64, 64), dtype=torch.bool)"
        )

    def test_unrenderable_values(self):
        r = S.Renderer(self.spell)
        for enc in (
            {"$object": ["m", "Thing"], "fields": {}},
            {"$object": ["nnrag_candidate", "Holder"], "fields": {"__class__": 1}},
            {"$object": ["nnrag_candidate", "Holder"], "fields": {"a\nimport os": 1}},
            {"$namedtuple": ["nnrag_candidate", "Pair"], "fields": {"__class__": 1}},
            {"$attrdict": {"not an identifier": 1}},
            {"$ref": ["nnrag_candidate", "_private"]},
            {"$ref": ["os", "system"]},
            {"$dataclass": ["m", "Config"], "fields": {"a b": 1}},
            {"$enum": ["nnrag_candidate", "Config"], "name": "__class__"},
            {"$dtype": "float32\nimport os"},
        ):
            with self.assertRaises(S.Unrenderable, msg=repr(enc)):
                S.render(r.value(enc))

    def test_values_check_compares_with_the_validated_values(self):
        cfg = Config(n_layer=1)
        x = torch.randint(0, 50, (1, 8))
        t = self.text([cfg], {}, [x])
        S.check_values(t, self.ns, torch, [cfg], {}, [x], {})
        with self.assertRaises(S.Unrenderable):
            S.check_values(t, self.ns, torch, [Config(n_layer=3)], {}, [x], {})
        with self.assertRaises(S.Unrenderable):
            S.check_values(t, self.ns, torch, [cfg], {}, [torch.randint(0, 50, (1, 9))], {})
        lin = nn.Linear(4, 6)
        t = self.text([lin], {"name": Sneaky("w")}, [torch.randn(1, 3, 4)], cls="Wrap")
        S.check_values(t, self.ns, torch, [lin], {"name": Sneaky("w")}, [torch.randn(1, 3, 4)], {})

    def test_inputs_are_compared_as_they_were_before_a_forward_that_writes_into_them(self):
        # as YOLO's Detect: the forward puts its outputs into the list of feature maps
        class Detect(nn.Module):
            def forward(self, x):
                for i in range(len(x)):
                    x[i] = x[i].flatten(1)
                return x

        ns = dict(self.ns, Detect=Detect)
        x = [torch.randn(1, 4, 8, 8), torch.randn(1, 4, 4, 4)]
        before = S.snapshot([x], torch)
        t = S.snippet_text("Detect", [], {}, S.encode_live(before, torch), {}, S.spell_in(ns, torch))
        self.assertEqual(t, "Detect()([torch.randn(1, 4, 8, 8), torch.randn(1, 4, 4, 4)])")
        Detect()(x)
        self.assertEqual(list(before[0][0].shape), [1, 4, 8, 8])
        S.check_values(t, ns, torch, [], {}, before, {})
        with self.assertRaises(S.Unrenderable):
            S.check_values(t, ns, torch, [], {}, [x], {})  # the list after the forward

    def test_named_tuple_argument_by_its_fields(self):
        t = self.text([Pair(8, 2.0)], {}, [torch.randn(2, 8)], cls="FromPair")
        self.assertEqual(t, "FromPair(Pair(width=8, scale=2.0))(torch.randn(2, 8))")
        self.assertEqual(list(S.run_snippet(t, self.ns, torch).shape), [2, 8])
        S.check_values(t, self.ns, torch, [Pair(8, 2.0)], {}, [torch.randn(2, 8)], {})
        with self.assertRaises(S.Unrenderable):
            S.check_values(t, self.ns, torch, [Pair(8, 3.0)], {}, [torch.randn(2, 8)], {})

    def test_container_input_built_by_its_constructor(self):
        nt = Nested(torch.randn(2, 3), torch.zeros(2, 3, dtype=torch.bool))
        t = self.text([], {}, [nt], cls="Masked")
        self.assertEqual(t, "Masked()(Nested(tensors=torch.randn(2, 3), mask=torch.zeros((2, 3), dtype=torch.bool)))")
        self.assertEqual(list(S.run_snippet(t, self.ns, torch).shape), [2, 3])
        S.check_values(t, self.ns, torch, [], {}, [nt], {})

    def test_object_built_field_by_field_in_generated_statements(self):
        h = Holder()
        h.width, h.extra, h.tag = 4, 6, Sneaky("t")
        t = self.text([h], {}, [torch.randn(2, 4)], cls="FromHolder")
        self.assertEqual(
            t,
            'value1 = Holder()\nvalue1.width = 4\nvalue1.extra = 6\nvalue1.tag = "t"\nFromHolder(value1)(torch.randn(2, 4))',
        )
        self.assertEqual(list(S.run_snippet(t, self.ns, torch).shape), [2, 6])
        S.check_values(t, self.ns, torch, [h], {}, [torch.randn(2, 4)], {})
        h2 = Holder()
        h2.width, h2.extra, h2.tag = 4, 7, "t"
        with self.assertRaises(S.Unrenderable):
            S.check_values(t, self.ns, torch, [h2], {}, [torch.randn(2, 4)], {})

    def test_generated_names_avoid_the_module_names(self):
        h = Holder()
        h.extra = 5
        ns = dict(self.ns, value1=1, value2=2)
        t = S.snippet_text(
            "FromHolder",
            S.encode_live([h], torch),
            {},
            S.encode_live([torch.randn(1, 4)], torch),
            {},
            S.spell_in(ns, torch),
            taken=ns,
        )
        self.assertTrue(t.startswith("value3 = Holder()\n"), t)
        self.assertEqual(list(S.run_snippet(t, ns, torch).shape), [1, 5])
        self.assertEqual(ns["value1"], 1)

    def test_attribute_dict_as_its_own_class(self):
        cfg = CfgNode({"MODEL": {"WIDTH": 4, "OUT": 3}})
        t = self.text([cfg], {}, [torch.randn(2, 4)], cls="FromCfg")
        self.assertEqual(t, 'FromCfg(CfgNode({"MODEL": CfgNode({"WIDTH": 4, "OUT": 3})}))(torch.randn(2, 4))')
        self.assertEqual(list(S.run_snippet(t, self.ns, torch).shape), [2, 3])
        S.check_values(t, self.ns, torch, [cfg], {}, [torch.randn(2, 4)], {})

    def test_attribute_dict_of_a_class_the_snippet_cannot_name(self):
        # the harness's own AttrDict (a configuration read from a defaults file): the
        # items as an argparse.Namespace, which attribute reads accept
        from nnrag_harness.configs import to_attrdict

        cfg = to_attrdict({"MODEL": {"WIDTH": 4, "OUT": 3}})
        enc = S.encode_live([cfg], torch)
        self.assertEqual(enc[0]["class"], ["nnrag_harness.configs", "AttrDict"])
        t = S.snippet_text("Model", enc, {}, [], {}, self.spell)
        self.assertEqual(t, "import argparse\nModel(argparse.Namespace(MODEL=argparse.Namespace(WIDTH=4, OUT=3)))()")

    def test_named_tuple_and_object_records_decode_as_before(self):
        enc = V.encode(Pair(3, 0.5))
        self.assertEqual(enc, {"$namedtuple": ["nnrag_candidate", "Pair"], "fields": {"width": 3, "scale": 0.5}})
        resolve = V.module_resolver(self.ns, lambda m: False)
        self.assertEqual(V.decode(enc, resolve, torch), Pair(3, 0.5))

    def test_object_whose_constructor_does_not_take_its_fields_is_made_without_it(self):
        # Needy(spec) computes `width` from `spec`: the snippet makes the object with
        # object.__new__ and gives it the recorded field, as values.decode rebuilt it
        n = Needy("4")
        t = self.text([n], {}, [torch.randn(2, 4)], cls="FromHolder")
        self.assertEqual(t, "value1 = Needy.__new__(Needy)\nvalue1.width = 4\nFromHolder(value1)(torch.randn(2, 4))")
        n.extra = 3
        t = self.text([n], {}, [torch.randn(2, 4)], cls="FromHolder")
        self.assertEqual(list(S.run_snippet(t, self.ns, torch).shape), [2, 3])
        S.check_values(t, self.ns, torch, [n], {}, [torch.randn(2, 4)], {})

    def test_a_list_of_configuration_objects_stays_whole_up_to_the_bound(self):
        # a model given a list of configuration objects (each made field by field) gets
        # its whole snippet up to MAX_LEN, and none past it: a cut snippet would not parse
        def holders(n, tag=""):
            out = []
            for i in range(n):
                h = Holder()
                h.width, h.extra, h.kernel, h.stride, h.dilation = 4, 4 + i, 3, 1 + i % 2, 1
                if tag:
                    h.tag = tag
                out.append(h)
            return out

        t = self.text([holders(20)], {}, [torch.randn(2, 4)], cls="Wrap")
        self.assertGreater(len(t), 2000)
        self.assertLessEqual(len(t), S.MAX_LEN)
        self.assertEqual(t.count(" = Holder()"), 20)
        self.assertTrue(t.endswith("Wrap([" + ", ".join("value%d" % i for i in range(1, 21)) + "])(torch.randn(2, 4))"))
        with self.assertRaises(S.Unrenderable):
            self.text([holders(50, "t" * 100)], {}, [torch.randn(2, 4)], cls="Wrap")

    def test_needs_are_the_names_the_values_use_that_the_module_lacks(self):
        # a class passed by name and a module instance built with another class, both of
        # the original's modules the copy does not define (usage roots, pipeline.ts)
        enc = [
            {"$ref": ["repo.norms", "FrozenNorm"]},
            {
                "$module": ["repo.layers", "TwoLayer"],
                "args": [3],
                "kwargs": {"act": {"$partial": {"$ref": ["repo.acts", "Gate"]}, "args": [], "kwargs": {}}},
            },
            {"$ref": ["torch.nn.modules.linear", "Linear"]},
            {"$dataclass": ["nnrag_candidate", "Config"], "fields": {}},
            {"$ref": ["repo.norms", "FrozenNorm"]},
        ]
        self.assertEqual(
            S.usage_needs(enc, self.spell),
            [["repo.norms", "FrozenNorm"], ["repo.layers", "TwoLayer"], ["repo.acts", "Gate"]],
        )
        with self.assertRaises(S.NotInModule):
            S.snippet_text("Model", enc, {}, [], {}, self.spell)
        self.assertEqual(S.usage_needs([[1, {"$tensor": [2]}], {"$dtype": "float32"}], self.spell), [])

    def test_check_accepts_only_generated_assignments(self):
        S.check_snippet("value1 = Holder()\nvalue1.width = 4\nFromHolder(value1)(torch.randn(2, 4))")
        S.check_snippet("value1 = Needy.__new__(Needy)\nvalue1.width = 4\nFromHolder(value1)(torch.randn(2, 4))")
        for bad in (
            "value1 = Needy.__new__(Holder)\nModel(value1)",
            "value1 = Needy.__new__(Needy, 1)\nModel(value1)",
            "value1 = Needy.__new__(cls=Needy)\nModel(value1)",
            "value1 = Needy.__class__.__new__(Needy.__class__)\nModel(value1)",
            "value1 = Needy.__init__(Needy)\nModel(value1)",
            "value1 = Needy()\nvalue1.x = Needy.__new__(Needy)\nModel(value1)",
            "Model(Needy.__new__(Needy))",
            "value1.width = 4\nModel(value1)",
            "value1 = Holder()\nvalue1.__class__ = Model\nModel(value1)",
            "value1 = Holder()\nvalue1[0] = 1\nModel(value1)",
            "value1 = value2 = Holder()\nModel(value1)",
            "value1 = Holder()\nvalue1.a.b = 1\nModel(value1)",
            "value1: int = 1\nModel(value1)",
            "value1 = 1\nvalue1 += 1\nModel(value1)",
            "__builtins__ = 1\nModel()",
            "value1 = Holder()\nimport math\nModel(value1)",
            "value1 = Holder()",
            "(value1, value2) = (1, 2)\nModel(value1)",
        ):
            with self.assertRaises(S.Unrenderable, msg=repr(bad)):
                S.check_snippet(bad)

    def test_check_refuses_anything_but_plain_expressions(self):
        for bad in (
            "__import__('os').system('x')",
            "Model()\nopen('f', 'w')",
            "x = 1",
            "import os",
            "Model(lambda: 1)",
            "Model(*a)",
            "Model(**k)",
            "Model().__class__",
            "Model(1 + 2)",
            "Model(f'{x}')",
            "Model(b'x')",
            "Model(not 1)",
            "Model(x[0])",
            "Model(\u2028)",
            "Model()\r(1)",
            "Model([i for i in x])",
            "Model(-x)",
            "Model(1) ; open('f')",
            "Model(\n1)",
        ):
            with self.assertRaises(S.Unrenderable, msg=repr(bad)):
                S.check_snippet(bad)
        S.check_snippet(
            "import functools\nWrap(functools.partial(torch.nn.LayerNorm, eps=-1e-06), scale=-2)(torch.randn(2, 3))"
        )


class InstalledNamesTest(unittest.TestCase):
    """Public names of an installed distribution the block's module imports (the
    request's usagePackages, snippet.installed_spelling): `from P import N` lines, the
    shortest public path that exports the same definition; checked with ast."""

    @classmethod
    def setUpClass(cls):
        import tempfile

        cls.tmp = tempfile.mkdtemp(prefix="nnrag-instpkg-")
        pkg = os.path.join(cls.tmp, "instpkg")
        os.mkdir(pkg)
        files = {
            "__init__.py": "from instpkg._impl import Scale\n",
            "_impl.py": "import torch.nn as nn\n\nclass Scale(nn.Module):\n"
            "    def __init__(self, width):\n        super().__init__()\n        self.width = width\n"
            "    def forward(self, x):\n        return 2 * x\n",
            "blocks.py": "import torch.nn as nn\n\nclass Shift(nn.Module):\n"
            "    def __init__(self, width):\n        super().__init__()\n"
            "    def forward(self, x):\n        return x + 1\n\nRenamed = Shift\n",
            "_hidden.py": "class Secret:\n    pass\n",
        }
        for name, text in files.items():
            with open(os.path.join(pkg, name), "w") as f:
                f.write(text)
        sys.path.insert(0, cls.tmp)

    @classmethod
    def tearDownClass(cls):
        import shutil

        sys.path.remove(cls.tmp)
        for m in [m for m in sys.modules if m == "instpkg" or m.startswith("instpkg.")]:
            del sys.modules[m]
        shutil.rmtree(cls.tmp)

    def setUp(self):
        class Block(nn.Module):
            def __init__(self, body, layer=None):
                super().__init__()
                self.body = body
                self.layer = layer(4) if layer is not None else nn.Identity()

            def forward(self, x):
                return self.layer(self.body(x))

        self.Block = Block
        self.ns = {"Block": Block}

    def test_public_paths_of_the_same_definition(self):
        spell = S.spell_in(self.ns, torch, None, ["instpkg"])
        # defined in a private module, exported by the package: the package's name
        self.assertEqual(spell("instpkg._impl", "Scale"), ("from", "instpkg", "Scale"))
        # exported by its own module only
        self.assertEqual(spell("instpkg.blocks", "Shift"), ("from", "instpkg.blocks", "Shift"))
        # no public path, no such name, or another definition under that name: not spelled
        for ref in (("instpkg._hidden", "Secret"), ("instpkg.blocks", "Gone"), ("instpkg.blocks", "Renamed")):
            with self.assertRaises(S.NotInModule, msg=ref):
                spell(*ref)
        # a package the request does not name
        with self.assertRaises(S.NotInModule):
            S.spell_in(self.ns, torch)("instpkg.blocks", "Shift")
        # a name the module binds is the copy's definition (as before), never imported over it
        ns = dict(self.ns, Shift=object())
        self.assertEqual(S.spell_in(ns, torch, None, ["instpkg"])("instpkg.blocks", "Shift"), ("name", "Shift"))
        self.assertEqual(
            S.usage_needs([{"$ref": ["instpkg.blocks", "Shift"]}, {"$ref": ["instpkg._hidden", "Secret"]}], spell),
            [["instpkg._hidden", "Secret"]],
        )

    def test_the_line_imports_them_and_runs(self):
        spell = S.spell_in(self.ns, torch, None, ["instpkg"])
        text = S.snippet_text(
            "Block",
            [{"$module": ["instpkg._impl", "Scale"], "args": [4], "kwargs": {}}],
            {"layer": {"$ref": ["instpkg.blocks", "Shift"]}},
            [{"$tensor": [2, 4], "dtype": "float32"}],
            {},
            spell,
            taken=self.ns,
            packages=["instpkg"],
        )
        self.assertEqual(
            text,
            "from instpkg import Scale\nfrom instpkg.blocks import Shift\n"
            "Block(Scale(4), layer=Shift)(torch.randn(2, 4))",
        )
        self.assertEqual(S.imported_from(text), ["instpkg", "instpkg.blocks"])
        y = S.run_snippet(text, self.ns, torch)
        self.assertEqual(list(y.shape), [2, 4])
        # without the package in the request, the same text does not pass the check
        with self.assertRaises(S.Unrenderable):
            S.check_snippet(text)

    def test_check_allows_exactly_public_imports_of_the_packages(self):
        S.check_snippet("from instpkg import Scale, Other\nBlock(Scale(4))(x)", ["instpkg"])
        S.check_snippet("import math\nfrom instpkg.blocks import Shift\nBlock(Shift)(math.inf)", ["instpkg"])
        with self.assertRaises(S.Unrenderable):
            S.check_snippet("from instpkg import Scale\nBlock(Scale(4))(x)", [])  # package not named
        for bad in (
            "from otherpkg import Scale\nBlock(Scale(4))(x)",
            "from . import Scale\nBlock(Scale(4))(x)",
            "from instpkg import Scale as S\nBlock(S(4))(x)",
            "from instpkg import _Scale\nBlock(_Scale(4))(x)",
            "from instpkg._impl import Scale\nBlock(Scale(4))(x)",
            "from instpkg import *\nBlock(Scale(4))(x)",
            "from torch import nn\nBlock(nn.ReLU())(x)",
            "import instpkg\nBlock(instpkg.Scale(4))(x)",
            "value1 = H()\nfrom instpkg import Scale\nBlock(value1)(x)",
            "from instpkg import Scale; import os\nBlock(Scale(4))(x)",
        ):
            with self.assertRaises(S.Unrenderable, msg=bad):
                S.check_snippet(bad, ["instpkg"])


class ProvidedModulesTest(unittest.TestCase):
    def test_a_module_the_harness_built_is_written_as_that_construction(self):
        import weakref

        from nnrag_harness import arguments as A

        class Net(nn.Module):
            # keeps no attribute named like its parameter: its attributes cannot say it
            def __init__(self, dim, depth=1):
                super().__init__()
                self.lin = nn.Linear(dim, dim)

        made, other = Net(4, depth=2), Net(4, depth=2)
        V.BUILT[id(made)] = (weakref.ref(made), Net, [4], {"depth": 2})
        # built from guessed arguments (arguments.build_module): recorded the same way
        guessed = A.build_module(Net, 8, 2, nn)
        try:
            enc = S.encode_live([made, other, guessed], torch)
        finally:
            del V.BUILT[id(made)]
        self.assertEqual((enc[0]["args"], enc[0]["kwargs"]), ([4], {"depth": 2}))
        self.assertEqual((enc[1]["args"], enc[1]["kwargs"]), ([], {}))
        self.assertEqual(enc[2]["$module"][1].split(".")[-1], "Net")
        self.assertTrue(enc[2]["args"] or enc[2]["kwargs"].get("dim"), enc[2])


@dataclasses.dataclass
class UnitCfg:
    """One unit of a stage: most fields keep their defaults."""

    kind: str
    width: int
    stride: int = 1
    groups: typing.Optional[int] = None
    expand: float = 1.0
    attn: typing.Optional[str] = None
    attn_kwargs: typing.Optional[dict] = None
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class NetCfg:
    stages: typing.Any
    stem_width: int = 4
    act: str = "relu"


class StagedNet(nn.Module):
    """A network built from a nested configuration: stages of unit configurations."""

    def __init__(self, cfg, num_classes=10):
        super().__init__()
        layers, ch = [nn.Conv2d(3, cfg.stem_width, 3, padding=1)], cfg.stem_width
        for stage in cfg.stages:
            for u in stage:
                layers.append(nn.Conv2d(ch, u.width, 3, stride=u.stride, padding=1, groups=u.groups or 1))
                ch = u.width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(ch, num_classes)

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))


class LayoutTest(unittest.TestCase):
    """A long value becomes a few generated lines (LINE_MAX), never one line of thousands
    of characters or no line."""

    def setUp(self):
        mod = types.ModuleType("nnrag_candidate")
        for c in (UnitCfg, NetCfg, StagedNet):
            c.__module__ = "nnrag_candidate"
            setattr(mod, c.__name__, c)
        self.ns = S.star_namespace(mod)
        self.spell = S.spell_in(self.ns, torch)

    def text(self, cfg):
        return S.snippet_text(
            "StagedNet",
            S.encode_live([cfg], torch),
            {"num_classes": 5},
            S.encode_live([torch.randn(1, 3, 8, 8)], torch),
            {},
            self.spell,
            taken=self.ns,
        )

    def test_a_nested_configuration_is_laid_out_in_named_lines_that_run(self):
        stages = [[UnitCfg("conv", 4 + (i % 2) * 4, attn_kwargs=None, extra={}) for i in range(30)] for _ in range(4)]
        cfg = NetCfg(stages=stages)
        # as one line, with every field: longer than the bound a recorded line may have
        r = S.Renderer(self.spell)
        one = S.render(r.value(S.encode_live([cfg], torch)[0]))
        self.assertGreater(len(one), S.MAX_LEN)
        t = self.text(cfg)
        lines = t.split("\n")
        self.assertLessEqual(len(t), S.MAX_LEN)
        self.assertTrue(all(len(line) <= S.LINE_MAX for line in lines), [len(x) for x in lines])
        # a few lines: one per stage, then the call naming them
        self.assertEqual([x.split(" = ")[0] for x in lines[:-1]], ["stages_1", "stages_2", "stages_3", "stages_4"])
        self.assertTrue(
            lines[-1].startswith("StagedNet(NetCfg(stages=[stages_1, stages_2, stages_3, stages_4]), num_classes=5)("),
            lines[-1],
        )
        # the fields equal to their defaults (PEP 557) are left out, the others kept
        self.assertIn('UnitCfg(kind="conv", width=8)', lines[0])
        self.assertNotIn("attn_kwargs", t)
        self.assertNotIn("extra=", t)
        S.check_snippet(t)
        y = S.run_snippet(t, self.ns, torch)
        self.assertEqual(list(y.shape), [1, 5])

    def test_a_short_configuration_keeps_its_one_line_with_every_field(self):
        t = self.text(NetCfg(stages=[[UnitCfg("conv", 4)]]))
        self.assertEqual(
            t,
            'StagedNet(NetCfg(stages=[[UnitCfg(kind="conv", width=4, stride=1, groups=None, expand=1.0, attn=None, '
            'attn_kwargs=None, extra={})]], stem_width=4, act="relu"), num_classes=5)(torch.randn(1, 3, 8, 8))',
        )

    def test_laid_out_names_avoid_the_module_names_and_keep_the_order_of_evaluation(self):
        taken = {"stages", "stages_1"}
        r = S.Renderer(self.spell, taken)
        long_list = ("list", [S.const("x" * 150) for _ in range(12)])
        node = ("call", ("name", "f"), [long_list], [("stages", long_list), ("b", long_list)])
        out = S.laid_out(node, "arg", r, r.taken)
        names = [st[1][1] for st in r.stmts]
        # the longest bound first (the leftmost of equals) until the call fits, each list
        # whole (within LINE_MAX), written in the order Python evaluates them
        self.assertEqual(names, ["arg_1", "stages_2"])
        self.assertEqual(S.render(out)[:32], 'f(arg_1, stages=stages_2, b=["xx')


class MemoryTest(unittest.TestCase):
    """What a usage line's check keeps alive: the runs under more seeds do not hold the
    first run's autograd graph, and a failed draw kept for the seeded line does not hold
    the block (a large block's two graphs, or a graph and a second build, exceed a memory
    limit its one forward fits)."""

    def test_the_first_runs_graph_is_let_go_before_the_runs_under_more_seeds(self):
        import weakref

        class Drawn(nn.Module):
            refs = []
            earlier_alive = []

            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(4))

            def forward(self, x):
                Drawn.earlier_alive.append(any(r() is not None for r in Drawn.refs))
                x = x + 0.01 * torch.rand(())  # draws: the call runs again under more seeds
                h = (x * self.w).exp()  # exp saves its result for backward: the graph holds h
                Drawn.refs.append(weakref.ref(h))
                return h * 3

        y = S.run_snippet("Drawn()(torch.randn(2, 4))", dict(namespace(), Drawn=Drawn), torch, S.RESEEDS)
        self.assertEqual(len(Drawn.earlier_alive), 1 + len(S.RESEEDS))
        self.assertEqual(Drawn.earlier_alive, [False] * len(Drawn.earlier_alive))
        self.assertEqual(list(y.shape), [2, 4])
        self.assertIsNone(y.grad_fn)

    def test_a_failed_draw_is_kept_without_the_block(self):
        import gc
        import weakref

        class Flaky(nn.Module):
            built = []

            def __init__(self):
                super().__init__()
                Flaky.built.append(weakref.ref(self))

            def forward(self, img):
                if int(torch.randint(0, 4, ())) == 0:
                    raise TypeError("this draw fails")
                return img

        # the draws of the test above: the first run passes, a later seed fails
        kept = None
        try:
            S.run_snippet("Flaky()(torch.randn(1, 3, 4, 4))", dict(namespace(), Flaky=Flaky), torch, S.RESEEDS)
        except S.OtherDraw as e:
            kept = S.without_frames(e)
        self.assertIsNotNone(kept, "a later seed fails")
        gc.collect()
        self.assertIsNone(Flaky.built[0](), "the kept error holds no frame with the block")
        self.assertIn("this draw fails", str(kept))
        self.assertIsInstance(kept.error, TypeError)


if __name__ == "__main__":
    unittest.main()
