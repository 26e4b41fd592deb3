"""MLP-Mixer block and a linear classification head.

Demonstrates: ``from __future__ import annotations`` (annotations become lazy),
a ``@dataclass`` config used by a block, classes ``Mlp`` and ``Block`` whose
names are also used in ``tinyvision.layers``, a name that reaches this module
through a star import (``GELUTanh``), ``import tinyvision.layers`` used as
``tinyvision.layers.trunc_normal_``, an absolute from-import, and a concrete
head whose abstract base (``BaseHead``) lives in the second package.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch.nn as nn

import tinyvision.layers
from tinybase import BaseHead
from tinyvision.layers.helpers import make_divisible

from ..layers import GELUTanh


@dataclass
class MixerConfig:
    """Sizes of a mixer block (a dataclass, not an nn.Module)."""

    dim: int = 32
    num_tokens: int = 16
    token_ratio: float = 0.5
    channel_ratio: float = 4.0


class Mlp(nn.Module):
    """Two-layer MLP with tanh-GELU and truncated-normal init, for token or channel mixing."""

    def __init__(self, dim=32, hidden=64):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = GELUTanh()
        self.fc2 = nn.Linear(hidden, dim)
        for fc in (self.fc1, self.fc2):
            tinyvision.layers.trunc_normal_(fc.weight, std=0.02)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """Mixer block: an Mlp across tokens, then an Mlp across channels, each residual.

    Input shape: ``(batch, cfg.num_tokens, cfg.dim)``.
    """

    def __init__(self, cfg: MixerConfig | None = None):
        super().__init__()
        cfg = cfg or MixerConfig()
        self.cfg = cfg
        self.norm1 = nn.LayerNorm(cfg.dim)
        self.mlp_tokens = Mlp(cfg.num_tokens, make_divisible(cfg.num_tokens * cfg.token_ratio))
        self.norm2 = nn.LayerNorm(cfg.dim)
        self.mlp_channels = Mlp(cfg.dim, make_divisible(cfg.dim * cfg.channel_ratio))

    def forward(self, x):
        x = x + self.mlp_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.mlp_channels(self.norm2(x))


class LinearHead(BaseHead):
    """Average over tokens, then a linear classifier (``forward`` comes from ``BaseHead``)."""

    def __init__(self, in_features=32, num_classes=10):
        super().__init__(in_features, num_classes)

    def pre_logits(self, x):
        return x.mean(dim=1)
