"""Token MLP used by the transformer blocks.

Demonstrates: a subclass of ``torch.nn.Module`` spelled in full, a
``@staticmethod``, a shared init helper (``trunc_normal_``), and a class
named ``Mlp`` that differs from ``tinyvision.models.mixer.Mlp``.
"""
import torch
import torch.nn as nn

from .helpers import trunc_normal_


class Mlp(torch.nn.Module):
    """Linear -> activation -> dropout -> Linear, as in Vision Transformers."""

    def __init__(self, in_features=32, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
        super().__init__()
        hidden_features = hidden_features or in_features * 4
        out_features = out_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)
        trunc_normal_(self.fc1.weight, std=0.02)
        trunc_normal_(self.fc2.weight, std=0.02)

    @staticmethod
    def hidden_dim(in_features, mlp_ratio=4.):
        """Hidden width for a given ratio."""
        return int(in_features * mlp_ratio)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))
