"""Self-attention, window attention and a transformer block.

Demonstrates: an optional dependency imported in ``try/except ImportError``
with a fallback used in code (``rearrange``), a constant defined behind an
``if`` guard used as a class attribute (``fused_attn = _USE_FUSED``), a
module-level ``functools.partial`` alias used as a default argument
(``default_norm``), inheritance inside the module (``WindowAttention``) and a
class named ``Block`` that differs from ``tinyvision.models.mixer.Block``.
"""
from functools import partial

import torch.nn as nn
import torch.nn.functional as F

from ..registry import register_block
from .helpers import _USE_FUSED
from .mlp import Mlp

try:
    from einops import rearrange
except ImportError:
    rearrange = None

default_norm = partial(nn.LayerNorm, eps=1e-6)


class Attention(nn.Module):
    """Multi-head self-attention over tokens of shape ``(batch, tokens, dim)``."""

    fused_attn = _USE_FUSED

    def __init__(self, dim=32, num_heads=4, qkv_bias=True):
        super().__init__()
        assert dim % num_heads == 0, 'dim should be divisible by num_heads'
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v)
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)
            x = attn.softmax(dim=-1) @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


@register_block
class WindowAttention(Attention):
    """Local window attention: tokens attend only within non-overlapping windows.

    The sequence is padded to a multiple of ``window_size``, split into windows
    of ``window_size`` consecutive tokens, and self-attention runs per window.
    """

    def __init__(self, dim=32, num_heads=4, window_size=4, qkv_bias=True):
        super().__init__(dim, num_heads, qkv_bias)
        self.window_size = window_size

    @staticmethod
    def window_partition(x, window_size):
        """``(B, N, C)`` -> ``(B * N // window_size, window_size, C)``."""
        if rearrange is not None:
            return rearrange(x, 'b (w n) c -> (b w) n c', n=window_size)
        B, N, C = x.shape
        return x.reshape(B * (N // window_size), window_size, C)

    def forward(self, x):
        B, N, C = x.shape
        pad = (-N) % self.window_size
        if pad:
            x = F.pad(x, (0, 0, 0, pad))
        windows = super().forward(self.window_partition(x, self.window_size))
        return windows.reshape(B, N + pad, C)[:, :N]


class Block(nn.Module):
    """Pre-norm transformer block with global or window attention and an ``Mlp``."""

    def __init__(self, dim=32, num_heads=4, mlp_ratio=4., window_size=0, norm_layer=default_norm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        if window_size:
            self.attn = WindowAttention(dim, num_heads, window_size)
        else:
            self.attn = Attention(dim, num_heads)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, Mlp.hidden_dim(dim, mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))
