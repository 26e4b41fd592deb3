"""A wrapper around another network: it needs a real backbone to be built.

Demonstrates: a block whose constructor takes a whole model (``backbone: nn.Module``)
and reads its ``feature_info``, as feature extractors and EMA / distillation wrappers
do. No constructor argument can be guessed for it, so validation reports it as
``needs-args`` at the instantiate stage: the example corpus's one honest failure.
"""
from typing import Sequence

import torch
import torch.nn as nn


class FeatureTap(nn.Module):
    """Return the feature maps of the chosen stages of a backbone that reports ``feature_info``."""

    def __init__(self, backbone: nn.Module, out_indices: Sequence[int] = (1, 2)):
        super().__init__()
        self.backbone = backbone
        self.out_indices = tuple(out_indices)
        self.channels = [backbone.feature_info[i]["num_chs"] for i in self.out_indices]

    def forward(self, x: torch.Tensor):
        feats = []
        for i, stage in enumerate(self.backbone.stages):
            x = stage(x)
            if i in self.out_indices:
                feats.append(x)
        return feats
