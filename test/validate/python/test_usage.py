"""Unit tests of nnrag_harness.usage (what a forward does with its parameters, read from
its code) and of the inputs it leads to (inputs.forward_plan / make_inputs). Run with a
Python that has torch (test/validate/harness-package.test.ts)."""

import os
import sys
import types
import typing
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "validate", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from nnrag_harness import inputs as I  # noqa: E402
from nnrag_harness.usage import (  # noqa: E402
    callable_value,
    called_params,
    member_choices,
    param_ranks,
    param_uses,
    pattern_rank,
    record_attrs,
    refused_none,
)

try:
    import einops
except ImportError:  # einops is not a dependency of the harness: its tests skip
    einops = None


class Gather(nn.Module):
    def forward(self, x, edge):
        src, dst = edge
        return x[src] + x[dst]


class Delegates(nn.Module):
    """Hands its inputs to the modules it holds: one by attribute, a list by index and in
    a loop; none of its own code indexes with them."""

    def __init__(self):
        super().__init__()
        self.first = Gather()
        self.convs = nn.ModuleList([Gather(), Gather()])

    def forward(self, x, edges):
        x = self.first(x, edges)
        x = self.convs[0](x, edges)
        for conv in self.convs:
            x = conv(x, edges)
        return x


class LoopOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([Gather()])

    def forward(self, x, e):
        for conv in self.convs:
            x = conv(x, e)
        return x


KINDS = {"wide": 2, "narrow": 1}


class ByDepth(nn.Module):
    arch_settings = {50: (3, 4, 6, 3), 18: (2, 2, 2, 2), 34: (3, 4, 6, 3)}

    def __init__(self, depth, mode, kind, width=8):
        super().__init__()
        if depth not in self.arch_settings:
            raise KeyError(depth)
        assert mode in ["collect", "distribute"]
        assert kind in KINDS and width in range(100)
        self.blocks = self.arch_settings[depth]


def node_norm(self, batch):
    batch.x = self.bn(batch.x)
    return batch


def heads(batch):
    return batch.x, batch.y


def tensor_attrs(x):
    return x.view(-1).shape


def passed_on(batch):
    return len(batch.x) + sum(batch)


def gather_rows(src, index):
    return src.index_select(0, index)


def subscript(x, idx):
    return x[idx]


def column(x, idx):
    return x[:, idx]


def unpacked(x, edge):
    row, col = edge
    return x[row] + x[col]


def rows_inline(z, e):
    return (z[e[0]] * z[e[1]]).sum(1)


def torch_function(x, i):
    return torch.gather(x, 1, i)


def keyword(x, b):
    return x.scatter_add(0, index=b, src=x)


def through_helper(x, batch):
    return gather_rows(x, batch)


def counts(labels):
    return torch.bincount(labels)


def like_index(x, batch, w):
    # a tensor made like `batch` (its dtype) used as an index: `batch` holds integers
    cluster = torch.empty_like(batch)
    order = batch.clone()
    weights = torch.zeros_like(w, dtype=torch.long)  # another dtype: says nothing of w
    return x.index_select(0, order).index_add(0, cluster, x) + x[weights]


def plain(x, y):
    return x[0] + y * 2


class PositionBias(nn.Module):
    # forward(i, j): sequence lengths of queries and keys, used as arange's bounds
    def __init__(self, heads=2):
        super().__init__()
        self.heads = heads

    def forward(self, i, j):
        q = torch.arange(j - i, j)
        k = torch.arange(j)
        return -(k[None, :] - q[:, None]).abs().float().expand(self.heads, i, j)


def count_range(x, n):
    return [x * k for k in range(n)]


def arange_of_shape(x):
    return torch.arange(x.shape[0])


class Pairs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, z, edges):
        return self.score(z, edges)

    def score(self, z, edges):
        return (self.lin(z)[edges[0]] * z[edges[1]]).sum(-1)


class Lookup(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 4)

    def forward(self, tokens):
        return self.emb(tokens)


class Stage(nn.Module):
    def __init__(self, dim, make_act, gate, pool, width=4):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.act = make_act()
        self.gate = gate
        self.pool_fn = pool
        self.width = width

    def forward(self, x):
        return self.gate(self.act(self.lin(x)))


class Builds(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.block = block
        self.body = self.block(4)


def checked_dtype(x, edge):
    # the code refuses a non-integer tensor and one without two rows: (2, E) int64
    int_dtypes = (torch.int32, torch.int64)
    if edge.dtype not in int_dtypes:
        raise ValueError("integer edges expected")
    if edge.size(0) != 2:
        raise ValueError("two rows expected")
    return x


def asserted_dtype(x, batch):
    assert batch.dtype == torch.long
    return x


def float_branch(x, y):
    # a dtype test that only chooses a branch says nothing about the input
    if y.dtype == torch.long:
        return x
    return x + y


def annotated(x, labels: torch.LongTensor):
    return x * 2


def lift(src, edge, dim: int):
    # a row chosen by an int parameter, then used as an index
    index = edge[dim]
    return src.index_select(0, index)


class Labels(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 8)

    def forward(self, x, y, mask):
        # a selection of `y` is looked up: `y` holds ids
        return x + self.emb(y[mask]).sum()


class Zipped(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([Gather()])
        self.lins = nn.ModuleList([nn.Linear(8, 8)])

    def forward(self, x, e):
        for conv, lin in zip(self.convs, self.lins):
            x = lin(conv(x, e))
        return x


class Enumerated(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([Gather()])

    def forward(self, x, e):
        for _i, conv in enumerate(self.convs):
            x = conv(x, e)
        return x


class RecordConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Gather()

    def forward(self, batch):
        batch.x = self.model(batch.x, batch.edge_index)
        return batch


class RoIs(nn.Module):
    def forward(self, input, rois):
        # one crop per region: batch index, then x1, y1, x2, y2 in the map
        assert rois.size(1) == 5
        out = []
        for r in rois:
            b, x1, y1, x2, y2 = [int(v) for v in r]
            assert 0 <= b < input.shape[0] and 0 <= x1 < x2 <= input.shape[-1] and 0 <= y1 < y2 <= input.shape[-2]
            out.append(input[b, :, y1:y2, x1:x2].mean((-2, -1)))
        return torch.stack(out)


class RotatedRoIs(nn.Module):
    """Pools rotated regions: rois with shape (n, 6), each (batch_index, center_x,
    center_y, w, h, angle)."""

    def forward(self, input, rois):
        return input.mean() + rois[:, 5].sum()


def eval_only_edges(x, edge_index=None, training=False):
    if not training and edge_index is None:
        raise ValueError("edges needed at inference")
    return x


def any_of_two(x, type_vec=None, type_ptr=None):
    # either one given suffices: only the first is required
    if type_vec is None and type_ptr is None:
        raise ValueError("give type_vec or type_ptr")
    return x


def each_of_two(x, a=None, b=None, c=None):
    if a is None or b is None:
        raise ValueError("a and b are needed")
    assert c is not None
    return x


def exists(val):
    return val is not None


def asserted_exists(x, hiddens=None, context=None):
    # a module helper that tests `is not None`, asserted or raised on
    assert exists(hiddens), "hiddens must be passed"
    if not exists(context):
        raise ValueError("context must be passed")
    return x


def checked_on_a_branch(x=None, prepend=None):
    # required only when x is missing: a check nested in a branch does not count
    if x is None:
        assert prepend is not None
        x = prepend
    return x


def checked_after_default(x, steps=None):
    # the None is replaced before the check
    steps = steps or 3
    assert steps is not None
    return x * steps


def defaulted_none(x, scale=None):
    # a None the code replaces, never refuses
    if scale is None:
        scale = 1.0
    return x * scale


class EvalEdges(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, edge_index=None):
        if not self.training and edge_index is None:
            raise ValueError("edge_index is needed at inference")
        x = self.lin(x)
        if not self.training:
            src, dst = edge_index
            x = x.index_add(0, dst, x[src])
        return x


class EdgeLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def propagate(self, x, edge):
        src, dst = edge
        return x.index_add(0, dst, x[src])

    def forward(self, batch):
        batch.x = self.propagate(self.lin(batch.x), batch.edge_index)
        return batch


class EitherLayer(nn.Module):
    # takes a tensor or a record: itself not a record, but what it reads of one counts
    def __init__(self):
        super().__init__()
        self.layer = EdgeLayer()

    def forward(self, batch):
        batch = self.layer(batch)
        if isinstance(batch, torch.Tensor):
            return batch.relu()
        batch.x = batch.x.relu()
        return batch


def tensor_or_image(img):
    # accepts a tensor (tested), reads image attributes in the other branch (torchvision's
    # F.resize, F.get_dimensions)
    if not isinstance(img, torch.Tensor):
        return img.getbands()
    return img * 2


class TensorOrImage(nn.Module):
    def forward(self, img):
        return tensor_or_image(img)


class ChildStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer0 = EitherLayer()
        self.layer1 = EitherLayer()

    def forward(self, batch):
        for layer in self.children():
            x = batch.x
            batch = layer(batch)
            batch.x = x + batch.x
        return batch


class Outputs(nn.Module):
    def forward(self, x):
        return types.SimpleNamespace(last_hidden_state=x * 2)


class ReadsTheOutput(nn.Module):
    # `.last_hidden_state` is read of what the backbone returned, not of the input
    def __init__(self):
        super().__init__()
        self.backbone = Outputs()

    def forward(self, x):
        x = self.backbone(x)
        return x.last_hidden_state


class RowLabels(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 8)

    def forward(self, x, y, mask):
        x = torch.clone(x)
        x[mask] += self.emb(y[mask])
        return x


class IdsFirst(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(7, 8)
        self.lin = nn.Linear(24, 8)

    def forward(self, z, feats, i, j):
        h = self.emb(z)
        return self.lin(torch.cat([h[i], h[j], feats], dim=-1))


class TimeEmbedding(nn.Module):
    # a time step per sample: `t[:, None]` needs (B,), unpacked as its shape first
    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim

    def forward(self, t):
        (b,) = t.shape
        return torch.cat([t[:, None].sin()] * self.dim, dim=-1)


class Denoiser(nn.Module):
    # the time goes through an nn.Sequential whose first module states its rank
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.time_mlp = nn.Sequential(TimeEmbedding(8), nn.Linear(8, 3))

    def forward(self, x, time):
        b, c, h, w = x.shape
        t = self.time_mlp(time)
        return self.conv(x) + t[:, :, None, None]


class PerSample(nn.Module):
    # states a (B, D) input
    def forward(self, t):
        b, d = t.shape
        return t.view(b, 1, d)


class Modulated(nn.Module):
    # the condition goes through rank-keeping layers before the one that states its rank
    def __init__(self):
        super().__init__()
        self.to_shift = nn.Sequential(nn.SiLU(), nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.0)), PerSample())

    def forward(self, x, cond):
        return x + self.to_shift(cond)


class Unpacks4(nn.Module):
    def forward(self, x):
        res, shape = x, x.shape
        b, c, h, w = shape
        return res


class PairedLayers(nn.Module):
    # `for conv, norm in self.layers`: each item a module list, unpacked
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([Unpacks4(), nn.Identity()])])
        self.edges = nn.ModuleList([nn.ModuleList([Gather(), nn.Identity()])])

    def forward(self, x, e):
        for attn, ff in self.layers:
            x = attn(x)
            x = ff(x)
        for conv, norm in self.edges:
            x = norm(conv(x, e))
        return x


class Rebound(nn.Module):
    def forward(self, x):
        x = x.flatten(1)
        b, n = x.shape  # the rank of what x became, not of the input
        return x


class SortsBatch(nn.Module):
    # required, annotated Optional, and still used: None fails, a value works
    def forward(self, x, edges, batch: typing.Optional[torch.Tensor]):
        batch, perm = batch.sort()
        return x.index_select(0, perm)[edges[0]] + x[batch]


class UsageTest(unittest.TestCase):
    def test_dtype_guards(self):
        # what the code requires of the dtype (and of the first dimension) is an index
        self.assertEqual(param_uses(checked_dtype), {"edge": "pairs"})
        self.assertEqual(param_uses(asserted_dtype), {"batch": "index"})
        self.assertEqual(param_uses(float_branch), {})
        self.assertEqual(param_uses(annotated), {"labels": "index"})

    def test_rows_by_int_parameter(self):
        self.assertEqual(param_uses(lift), {"edge": "pairs", "dim": "index"})

    def test_selection_keeps_dtype(self):
        m = Labels()
        self.assertEqual(param_uses(type(m).forward, m), {"y": "ids", "mask": "index"})

    def test_zip_and_enumerate_loops(self):
        for m in (Zipped(), Enumerated()):
            self.assertEqual(param_uses(type(m).forward, m), {"e": "pairs"}, type(m).__name__)
            plan = I.forward_plan(m)
            self.assertEqual(plan, [("x", "tensor"), ("e", "pairs")])
            self.assertEqual(tuple(m(*I.make_inputs([("float", (4, 8))], plan, torch, m)).shape), (4, 8))

    def test_record_attribute_index(self):
        m = RecordConv()
        self.assertEqual(param_uses(type(m).forward, m), {"batch.edge_index": "pairs"})
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("batch", "record:x,edge_index=pairs")])
        (batch,) = I.make_inputs([("float", (4, 8))], plan, torch, m)
        self.assertEqual(batch.edge_index.dtype, torch.long)
        self.assertEqual(tuple(batch.edge_index.shape), (2, 4))
        self.assertEqual(tuple(m(batch).x.shape), (4, 8))

    def test_rois(self):
        m = RoIs()
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("input", "tensor"), ("rois", "rois")])
        args = I.make_inputs([("float", (2, 3, 16, 12))], plan, torch, m)
        self.assertEqual(tuple(args[1].shape), (4, 5))
        self.assertEqual(tuple(m(*args).shape), (4, 3))
        # a docstring that gives the regions another column count is followed: not (K, 5)
        self.assertEqual(I.roi_columns(RotatedRoIs(), "rois"), 6)
        self.assertEqual(I.forward_plan(RotatedRoIs()), [("input", "tensor"), ("rois", "tensor")])
        self.assertIsNone(I.roi_columns(m, "rois"))

    def test_index_uses(self):
        self.assertEqual(param_uses(subscript), {"idx": "index"})
        self.assertEqual(param_uses(column), {"idx": "index"})
        self.assertEqual(param_uses(gather_rows), {"index": "index"})
        self.assertEqual(param_uses(torch_function), {"i": "index"})
        self.assertEqual(param_uses(keyword), {"b": "index"})
        self.assertEqual(param_uses(counts), {"labels": "index"})
        self.assertEqual(param_uses(like_index), {"batch": "index"})

    def test_pairs(self):
        self.assertEqual(param_uses(unpacked), {"edge": "pairs"})
        self.assertEqual(param_uses(rows_inline), {"e": "pairs"})

    def test_follows_calls(self):
        # a module-level helper, and the model's own method
        self.assertEqual(param_uses(through_helper), {"batch": "index"})
        m = Pairs()
        self.assertEqual(param_uses(type(m).forward, m), {"edges": "pairs"})
        self.assertEqual(param_uses(type(m).forward, None), {}, "without the model its methods are unknown")

    def test_embedding_input(self):
        m = Lookup()
        self.assertEqual(param_uses(type(m).forward, m), {"tokens": "ids"})

    def test_sizes(self):
        # bounds of range / torch.arange, alone or in arithmetic, are ints
        self.assertEqual(param_uses(count_range), {"n": "size"})
        self.assertEqual(param_uses(arange_of_shape), {})
        m = PositionBias()
        self.assertEqual(param_uses(type(m).forward, m), {"i": "size", "j": "size"})
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("i", "int"), ("j", "int")])
        self.assertEqual(tuple(m(*I.make_inputs([], plan, torch, m)).shape), (2, 8, 8))

    def test_nothing_for_other_uses(self):
        self.assertEqual(param_uses(plain), {})
        self.assertEqual(param_uses(len), {}, "a builtin has no code to read")

    def test_called_params(self):
        self.assertEqual(called_params(Stage), {"make_act": "factory", "gate": "callable"})
        self.assertEqual(called_params(Builds), {"block": "factory"})
        self.assertEqual(called_params(nn.Linear), {})

    def test_callable_values(self):
        self.assertIs(callable_value(10, "factory", nn), nn.Identity)
        self.assertIs(callable_value(nn.ReLU, "factory", nn), nn.ReLU)
        self.assertIs(callable_value(nn.ReLU(), "factory", nn), nn.ReLU)
        self.assertIsInstance(callable_value(32, "callable", nn), nn.Identity)
        self.assertIsInstance(callable_value(nn.GELU, "callable", nn), nn.GELU)
        self.assertEqual(callable_value(3, None, nn), 3)
        m = Stage(8, callable_value(10, "factory", nn), callable_value(32, "callable", nn), None)
        self.assertEqual(tuple(m(torch.ones(2, 8)).shape), (2, 8))

    def test_held_modules(self):
        # what the sub-modules' forward does with the inputs the model hands them
        m = Delegates()
        self.assertEqual(param_uses(type(m).forward, m), {"edges": "pairs"})
        m = LoopOnly()
        self.assertEqual(param_uses(type(m).forward, m), {"e": "pairs"})
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("x", "tensor"), ("e", "pairs")])
        self.assertEqual(tuple(m(*I.make_inputs([("float", (4, 8))], plan, torch, m)).shape), (4, 8))

    def test_member_choices(self):
        # tested for membership in a class table, a list display, a module global: one of
        # the members, the smallest; `width in range(100)` is not a table of constants
        self.assertEqual(member_choices(ByDepth), {"depth": 18, "mode": "collect", "kind": "narrow"})
        self.assertEqual(member_choices(nn.Linear), {})

    def test_records(self):
        # used only through attributes a tensor lacks, and maybe handed back: a record
        self.assertEqual(record_attrs(node_norm, torch), {"batch": ["x"]})
        self.assertEqual(record_attrs(heads, torch), {"batch": ["x", "y"]})
        # an attribute a tensor has, or the object passed on: not a record
        self.assertEqual(record_attrs(tensor_attrs, torch), {})
        self.assertEqual(record_attrs(passed_on, torch), {})
        args = I.make_inputs([("float", (3, 4))], [("batch", "record:x,y")], torch)
        self.assertEqual(heads(args[0])[1].shape, (3, 4))
        again = I.fresh_inputs(args, torch)
        again[0].x.add_(1)
        self.assertFalse(torch.equal(again[0].x, args[0].x), "a record is copied with its tensors")

    def test_refused_none(self):
        # a None default the code raises on is a value the call must give
        self.assertEqual(refused_none(eval_only_edges), {"edge_index"})
        self.assertEqual(refused_none(any_of_two), {"type_vec"})
        self.assertEqual(refused_none(each_of_two), {"a", "b", "c"})
        self.assertEqual(refused_none(defaulted_none), set())
        self.assertEqual(refused_none(asserted_exists), {"hiddens", "context"})
        self.assertEqual(refused_none(checked_on_a_branch), set())
        self.assertEqual(refused_none(checked_after_default), set())
        m = EvalEdges().eval()
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("x", "tensor"), ("edge_index", "pairs")])
        args = I.make_inputs([("float", (4, 8))], plan, torch, m)
        self.assertEqual(tuple(m(*args).shape), (4, 8))

    def test_record_passed_on(self):
        # passed whole to the sub-modules it loops over (self.children()): a record,
        # with the attributes they read; their index uses carry over
        m = ChildStage()
        self.assertEqual(record_attrs(type(m).forward, torch, m), {"batch": ["x", "edge_index"]})
        self.assertEqual(record_attrs(type(m).forward, torch), {}, "without the model its modules are unknown")
        self.assertEqual(record_attrs(EitherLayer.forward, torch, m.layer0), {}, "also used as a tensor")
        # handed to a function that tests it for a tensor: what it reads of an image in its
        # other branch makes no record
        t = TensorOrImage()
        self.assertEqual(record_attrs(type(t).forward, torch, t), {})
        self.assertEqual(I.forward_plan(t), [("img", "tensor")])
        r = ReadsTheOutput()
        self.assertEqual(record_attrs(type(r).forward, torch, r), {}, "read after it was rebound")
        self.assertEqual(I.forward_plan(r), [("x", "tensor")])
        self.assertEqual(param_uses(type(m).forward, m), {"batch.edge_index": "pairs"})
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("batch", "record:x,edge_index=pairs")])
        (batch,) = I.make_inputs([("float", (4, 8))], plan, torch, m)
        self.assertEqual(tuple(m(batch).x.shape), (4, 8))

    def test_rows_variant(self):
        # masks and embedding ids per row of the first feature input
        m = RowLabels()
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("x", "tensor"), ("y", "ids"), ("mask", "bool-mask")])
        with self.assertRaises((IndexError, RuntimeError)):  # a mask of the input's whole shape
            m(*I.make_inputs([("float", (4, 8))] * 2, plan, torch, m))
        rows = I.rows_variant(m, plan)
        self.assertEqual(rows, [("x", "tensor"), ("y", "row-ids"), ("mask", "row-bool-mask")])
        x, y, mask = I.make_inputs([("float", (4, 8))], rows, torch, m)
        self.assertEqual((tuple(y.shape), y.dtype, tuple(mask.shape), mask.dtype), ((4,), torch.long, (4,), torch.bool))
        self.assertTrue(int(y.max()) < 5)
        self.assertEqual(tuple(m(x, y, mask).shape), (4, 8))
        # a first input only looked up in an embedding, beside other inputs: ids per row
        m = IdsFirst()
        plan = I.forward_plan(m)
        self.assertEqual(plan[0], ("z", "tensor"))
        rows = I.rows_variant(m, plan)
        self.assertEqual(rows, [("z", "row-ids"), ("feats", "tensor"), ("i", "index"), ("j", "index")])
        args = I.make_inputs([("float", (4, 8))], rows, torch, m)
        self.assertEqual(tuple(args[0].shape), (4,))
        self.assertEqual(tuple(m(*args).shape), (4, 8))
        self.assertIsNone(I.rows_variant(Pairs(), I.forward_plan(Pairs())), "no mask, no ids: no variant")

    def test_ranks(self):
        self.assertEqual(pattern_rank("b -> b 1"), 1)
        self.assertEqual(pattern_rank("b (h w) c -> b c h w"), 3)
        self.assertEqual(pattern_rank("b c () w -> b c w"), 4)
        self.assertIsNone(pattern_rank("b ... c -> b c ..."))
        self.assertIsNone(pattern_rank("b c"))
        m = Denoiser()
        self.assertEqual(param_ranks(type(m).forward, m), {"x": 4, "time": 1})
        self.assertEqual(param_ranks(type(m).forward), {"x": 4}, "without the model its modules are unknown")
        self.assertEqual(param_ranks(Rebound.forward), {})
        pl = PairedLayers()
        self.assertEqual(param_ranks(type(pl).forward, pl), {"x": 4})
        self.assertEqual(param_uses(type(pl).forward, pl), {"e": "pairs"})
        mod = Modulated()
        self.assertEqual(param_ranks(type(mod).forward, mod), {"cond": 2})
        plan = I.forward_plan(m)
        cands = I.input_candidates(m, plan, [8], torch, nn, 16)
        self.assertTrue(all(len(c[1][1]) == 1 for c in cands), cands)
        x, t = I.make_inputs(cands[0], plan, torch, m)
        self.assertEqual(t.dim(), 1)
        self.assertEqual(m(x, t).shape, x.shape)
        self.assertEqual(I.with_rank(("float", (2, 16, 8, 8)), 2), ("float", (2, 16)))
        self.assertEqual(I.with_rank(("float", (2, 8, 16)), 4), ("float", (2, 16, 8, 8)))
        self.assertEqual(I.with_rank(("long", (2, 8), 11), 1), ("long", (2,), 11))

    @unittest.skipIf(einops is None, "einops is not installed")
    def test_einops_ranks(self):
        # the left side of an einops pattern, called or held as a layer
        from einops.layers.torch import Rearrange

        def fourier(x):
            x = einops.rearrange(x, "b -> b 1")
            return x

        class Patches(nn.Module):
            def __init__(self):
                super().__init__()
                self.to_tokens = nn.Sequential(Rearrange("b c h w -> b (h w) c"), nn.Linear(3, 8))

            def forward(self, img):
                return self.to_tokens(img)

        self.assertEqual(param_ranks(fourier), {"x": 1})
        m = Patches()
        self.assertEqual(param_ranks(type(m).forward, m), {"img": 4})

    def test_given_variant(self):
        m = SortsBatch()
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("x", "tensor"), ("edges", "pairs"), ("batch", "none")])
        with self.assertRaises(AttributeError):
            m(*I.make_inputs([("float", (4, 8))], plan, torch, m))
        given = I.given_variant(m, plan)
        self.assertEqual(given, [("x", "tensor"), ("edges", "pairs"), ("batch", "index")])
        self.assertEqual(tuple(m(*I.make_inputs([("float", (4, 8))], given, torch, m)).shape), (4, 8))
        self.assertIsNone(I.given_variant(m, [("x", "tensor")]))

    def test_inputs_from_uses(self):
        m = Pairs()
        plan = I.forward_plan(m)
        self.assertEqual(plan, [("z", "tensor"), ("edges", "pairs")])
        args = I.make_inputs([("float", (4, 8))], plan, torch, m)
        self.assertEqual(tuple(args[1].shape), (2, 4))
        self.assertEqual(args[1].dtype, torch.long)
        self.assertTrue(int(args[1].max()) < 4)
        self.assertEqual(tuple(m(*args).shape), (4,))


if __name__ == "__main__":
    unittest.main()
