"""Shared helpers used by several blocks.

Demonstrates: plain helper functions (``to_2tuple``, ``make_divisible``,
``trunc_normal_``), a type alias used in annotations (``_int_or_tuple_2_t``)
and a constant defined behind an ``if`` guard (``_USE_FUSED``).
"""
import collections.abc
import math
from itertools import repeat
from typing import Tuple, Union

import torch

_int_or_tuple_2_t = Union[int, Tuple[int, int]]

# Fused attention needs PyTorch 2 (torch.compile and F.scaled_dot_product_attention).
if hasattr(torch, 'compile'):
    _USE_FUSED = True
else:
    _USE_FUSED = False


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))
    return parse


to_2tuple = _ntuple(2)


def make_divisible(v, divisor=8, min_value=None, round_limit=0.9):
    """Round ``v`` to the nearest multiple of ``divisor``, never going below 90% of ``v``."""
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < round_limit * v:
        new_v += divisor
    return new_v


def trunc_normal_(tensor, mean=0., std=1., a=-2., b=2.):
    """Fill ``tensor`` in place with a normal distribution truncated to ``[a, b]``."""
    def norm_cdf(x):
        return (1. + math.erf(x / math.sqrt(2.))) / 2.

    with torch.no_grad():
        lo = norm_cdf((a - mean) / std)
        hi = norm_cdf((b - mean) / std)
        tensor.uniform_(2 * lo - 1, 2 * hi - 1)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
    return tensor
