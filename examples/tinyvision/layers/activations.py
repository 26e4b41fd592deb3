"""Activation layers, exported to ``tinyvision.layers`` by a star import.

Demonstrates: a literal ``__all__`` consumed by ``from .activations import *``,
a private helper that the star import does not export (``_hard_sigmoid``), and
``Module`` imported under an alias (``from torch.nn import Module as M``).
"""
import math

import torch
from torch.nn import Module as M

__all__ = ['GELUTanh', 'HardSigmoid', 'get_act_layer']


def _hard_sigmoid(x, inplace=False):
    if inplace:
        return x.add_(3.).clamp_(0., 6.).div_(6.)
    return (x + 3.).clamp(0., 6.) / 6.


class GELUTanh(torch.nn.Module):
    """GELU with the tanh approximation."""

    def forward(self, x):
        return 0.5 * x * (1. + torch.tanh(math.sqrt(2. / math.pi) * (x + 0.044715 * x.pow(3))))


class HardSigmoid(M):
    """Piecewise-linear sigmoid."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return _hard_sigmoid(x, self.inplace)


def get_act_layer(name='gelu_tanh'):
    """Return an activation class by name."""
    return {'gelu_tanh': GELUTanh, 'hard_sigmoid': HardSigmoid}[name]
