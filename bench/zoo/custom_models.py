#!/usr/bin/env python3
"""Hand-written benchmark models for the CPU zoo: detection, OCR, streaming,
dense vision, audio and tabular workloads that torchvision and transformers do
not ship ready-made. Each is written in plain PyTorch (or scikit-learn) after a
real, widely deployed architecture, given seeded random weights (nothing is
downloaded) and exported to ONNX beside a realistic feed.

    python bench/zoo/custom_models.py                          # build + verify all
    python bench/zoo/custom_models.py --only yolo_c2f_n vad_stream
    python bench/zoo/custom_models.py --verify-only            # check existing files

`MODELS` maps NAME -> (kind, make): make(out) writes out (NAME.onnx) and
NAME.inputs.npz (the feed, keyed by input name, dtypes exactly as the ONNX
inputs) and says how the file was made ("torchscript", "dynamo", "skl2onnx",
"torchscript+onnx.helper"). `verify(name, out)` checks a written file: the ONNX
checker, onnxruntime against the PyTorch (or scikit-learn) model on the saved
feed, and that the outputs are finite, not all ~0 and change with the input.

Weights: convolutions get He-normal weights and BatchNorm layers random running
statistics (make_zoo.randomize_batchnorm, and the same for BatchNorm1d), so
activations keep a trained network's scale through the depth of the model and
BatchNorm folding is exercised; every model is in eval mode.
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
OPSET = 17
ML_OPSET = 3
RTOL, ATOL = 1e-3, 1e-4


def _make_zoo():
    """make_zoo's helpers, imported when first needed: make_zoo may import this
    module at its top, so importing it back here at load time would be circular."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import make_zoo

    return make_zoo


def _seed(seed: int = 0) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _he_init(model: nn.Module) -> None:
    """He-normal weights for convolutions and linear layers (std sqrt(2/fan_in),
    fan_in counting only the taps one output actually sees), small random biases:
    activations keep their scale through deep stacks, as in a trained model, so
    that the outputs are neither ~0 nor saturated."""
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv1d, nn.Conv2d)):
                fan_in = m.weight[0].numel()
            elif isinstance(m, (nn.ConvTranspose1d, nn.ConvTranspose2d)):
                # weight [in, out/groups, *k]; with kernel == stride each output
                # position sees one tap of every input channel of its group
                taps = math.prod(m.kernel_size) / math.prod(m.stride)
                fan_in = max(1.0, m.in_channels / m.groups * max(1.0, taps))
            elif isinstance(m, nn.Linear):
                fan_in = m.in_features
            else:
                continue
            m.weight.copy_(torch.randn(m.weight.shape, generator=g) * math.sqrt(2.0 / fan_in))
            if m.bias is not None:
                m.bias.copy_((torch.rand(m.bias.shape, generator=g) - 0.5) * 0.2)


def _randomize_norms(model: nn.Module) -> None:
    """Random BatchNorm statistics: make_zoo.randomize_batchnorm for BatchNorm2d,
    the same distribution here for BatchNorm1d."""
    _make_zoo().randomize_batchnorm(model)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)


def _prepare(model: nn.Module) -> nn.Module:
    _he_init(model)
    _randomize_norms(model)
    return model.eval()


def _calibrate_logits(module: nn.Module, fc: nn.Linear, args: tuple, target: float) -> None:
    """Scales the classifier fc so that its logits have standard deviation
    `target` on the example inputs: a trained classifier is confident, while
    random weights give a near-uniform Softmax whose values (1/6625 for OCR) are
    below any useful comparison tolerance, or a saturated one."""
    seen = []
    hook = fc.register_forward_hook(lambda _m, _i, o: seen.append(o.detach()))
    try:
        with torch.no_grad():
            module(*args)
    finally:
        hook.remove()
    k = target / float(seen[0].std())
    with torch.no_grad():
        fc.weight.mul_(k)
        if fc.bias is not None:
            fc.bias.mul_(k)


def _image(batch: int, h: int, w: int) -> torch.Tensor:
    """A smooth image-like batch in [0, 1]: low-frequency colour fields plus fine
    noise, rather than white noise."""
    coarse = torch.rand(batch, 3, max(1, h // 32), max(1, w // 32))
    img = F.interpolate(coarse, size=(h, w), mode="bilinear", align_corners=False)
    return (img * 0.8 + torch.rand(batch, 3, h, w) * 0.2).clamp(0, 1)


def _speech(batch: int, samples: int, sr: int = 16000) -> torch.Tensor:
    """Speech-like audio: a few harmonics of a gliding pitch under a syllable-rate
    envelope, plus noise; amplitude about 0.1 to 0.3."""
    t = torch.arange(samples, dtype=torch.float64) / sr
    out = []
    for _ in range(batch):
        f0 = 110 + 80 * torch.rand(1, dtype=torch.float64)
        pitch = 2 * math.pi * torch.cumsum(f0 * (1 + 0.1 * torch.sin(2 * math.pi * 3 * t)), 0) / sr
        voiced = sum(torch.sin(k * pitch) / k for k in range(1, 6))
        env = 0.5 + 0.5 * torch.sin(2 * math.pi * 4 * t + 6.28 * torch.rand(1, dtype=torch.float64))
        out.append(0.1 * voiced * env + 0.01 * torch.randn(samples, dtype=torch.float64))
    return torch.stack(out).float()


# ---- YOLOv8 (ultralytics) -------------------------------------------------------------


class ConvBnSiLU(nn.Module):
    """ultralytics `Conv`: Conv2d (no bias, 'same' padding) + BatchNorm + SiLU."""

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class YoloBottleneck(nn.Module):
    """Two 3x3 Convs, with a residual add when shortcut and shapes allow."""

    def __init__(self, c1: int, c2: int, shortcut: bool):
        super().__init__()
        self.cv1 = ConvBnSiLU(c1, c2, 3)
        self.cv2 = ConvBnSiLU(c2, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """YOLOv8's C2f: cv1 (1x1 to 2c) -> split in two halves -> n Bottlenecks on the
    last half, each result appended -> Concat of (2 + n) c channels -> cv2 (1x1)."""

    def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = ConvBnSiLU(c1, 2 * self.c, 1)
        self.cv2 = ConvBnSiLU((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(YoloBottleneck(self.c, self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: cv1 halves the channels, three chained 5x5
    stride-1 max pools, Concat of the four, cv2."""

    def __init__(self, c1: int, c2: int, k: int = 5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = ConvBnSiLU(c1, c_, 1)
        self.cv2 = ConvBnSiLU(c_ * 4, c2, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class DetectV8(nn.Module):
    """YOLOv8's anchor-free decoupled head with its inference decode.

    Per level: box branch (Conv3x3, Conv3x3, 1x1 to 4*16 DFL logits) and class
    branch (Conv3x3, Conv3x3, 1x1 to 80), concatenated to 144 channels. Decode:
    flatten and concat the levels to [B, 144, 8400], DFL (view [B,4,16,A],
    Transpose, Softmax over the 16 bins, 1x1 conv with fixed weights 0..15),
    distances -> xywh boxes around constant anchor points, times the constant
    strides; Sigmoid on the classes. Output [B, 84, 8400]."""

    def __init__(self, nc: int, chs: tuple[int, ...], img: int = 640, strides=(8, 16, 32), reg_max: int = 16):
        super().__init__()
        self.nc, self.reg_max = nc, reg_max
        self.no = nc + 4 * reg_max
        c2 = max(16, chs[0] // 4, 4 * reg_max)
        c3 = max(chs[0], min(nc, 100))
        self.cv2 = nn.ModuleList(
            nn.Sequential(ConvBnSiLU(c, c2, 3), ConvBnSiLU(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1)) for c in chs
        )
        self.cv3 = nn.ModuleList(
            nn.Sequential(ConvBnSiLU(c, c3, 3), ConvBnSiLU(c3, c3, 3), nn.Conv2d(c3, nc, 1)) for c in chs
        )
        self.dfl = nn.Conv2d(reg_max, 1, 1, bias=False).requires_grad_(False)
        points, stride_of = [], []
        for s in strides:
            n = img // s
            sy, sx = torch.meshgrid(torch.arange(n) + 0.5, torch.arange(n) + 0.5, indexing="ij")
            points.append(torch.stack((sx, sy), -1).view(-1, 2))
            stride_of.append(torch.full((n * n, 1), float(s)))
        self.register_buffer("anchors", torch.cat(points).T.contiguous().unsqueeze(0))  # [1, 2, A]
        self.register_buffer("strides", torch.cat(stride_of).T.contiguous().unsqueeze(0))  # [1, 1, A]

    def set_dfl_weights(self) -> None:
        with torch.no_grad():
            self.dfl.weight.copy_(torch.arange(self.reg_max, dtype=torch.float32).view(1, self.reg_max, 1, 1))

    def forward(self, feats):
        b = feats[0].shape[0]
        x = [torch.cat((self.cv2[i](f), self.cv3[i](f)), 1) for i, f in enumerate(feats)]
        x_cat = torch.cat([xi.view(b, self.no, -1) for xi in x], 2)
        box, cls = x_cat.split((4 * self.reg_max, self.nc), 1)
        a = box.shape[2]
        dist = self.dfl(box.view(b, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(b, 4, a)
        lt, rb = dist.chunk(2, 1)
        x1y1 = self.anchors - lt
        x2y2 = self.anchors + rb
        dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * self.strides
        return torch.cat((dbox, cls.sigmoid()), 1)


class YoloV8(nn.Module):
    """YOLOv8 detector (ultralytics yolov8.yaml) at a width/depth multiple:
    backbone Conv s2 x2, C2f, then (Conv s2, C2f) x3 and SPPF; PAN-FPN neck with
    nearest x2 Upsample + Concat top-down and Conv s2 + Concat bottom-up, C2f
    after each Concat; DetectV8 on the stride 8/16/32 maps."""

    def __init__(self, width: float, depth: float, nc: int = 80, img: int = 640):
        super().__init__()

        def c(ch):
            return int(min(ch, 1024) * width)

        def n(k):
            return max(round(k * depth), 1)

        self.stem = nn.Sequential(ConvBnSiLU(3, c(64), 3, 2), ConvBnSiLU(c(64), c(128), 3, 2), C2f(c(128), c(128), n(3), True))
        self.p3 = nn.Sequential(ConvBnSiLU(c(128), c(256), 3, 2), C2f(c(256), c(256), n(6), True))
        self.p4 = nn.Sequential(ConvBnSiLU(c(256), c(512), 3, 2), C2f(c(512), c(512), n(6), True))
        self.p5 = nn.Sequential(ConvBnSiLU(c(512), c(1024), 3, 2), C2f(c(1024), c(1024), n(3), True), SPPF(c(1024), c(1024)))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.td4 = C2f(c(1024) + c(512), c(512), n(3))
        self.td3 = C2f(c(512) + c(256), c(256), n(3))
        self.down3 = ConvBnSiLU(c(256), c(256), 3, 2)
        self.bu4 = C2f(c(256) + c(512), c(512), n(3))
        self.down4 = ConvBnSiLU(c(512), c(512), 3, 2)
        self.bu5 = C2f(c(512) + c(1024), c(1024), n(3))
        self.detect = DetectV8(nc, (c(256), c(512), c(1024)), img)

    def forward(self, images):
        x3 = self.p3(self.stem(images))
        x4 = self.p4(x3)
        x5 = self.p5(x4)
        t4 = self.td4(torch.cat((self.up(x5), x4), 1))
        t3 = self.td3(torch.cat((self.up(t4), x3), 1))
        b4 = self.bu4(torch.cat((self.down3(t3), t4), 1))
        b5 = self.bu5(torch.cat((self.down4(b4), x5), 1))
        return self.detect([t3, b4, b5])


# ---- MobileNetV3 blocks (PaddleOCR's backbones) ---------------------------------------


def _divisible(v: float, d: int = 8) -> int:
    new = max(d, int(v + d / 2) // d * d)
    return new + d if new < 0.9 * v else new


def _act(name: str | None) -> nn.Module:
    return {"relu": nn.ReLU(), "hs": nn.Hardswish(), None: nn.Identity()}[name]


class ConvBnAct(nn.Module):
    def __init__(self, c1, c2, k=1, s=1, groups=1, act: str | None = "relu"):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = _act(act)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SqueezeExcite(nn.Module):
    """MobileNetV3 SE: AdaptiveAvgPool to 1x1, 1x1 conv to c/4, ReLU, 1x1 conv
    back, HardSigmoid gate multiplied onto the input."""

    def __init__(self, c: int):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, _divisible(c / 4), 1)
        self.fc2 = nn.Conv2d(_divisible(c / 4), c, 1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x):
        return x * self.gate(self.fc2(F.relu(self.fc1(self.pool(x)))))


class InvertedResidual(nn.Module):
    """MobileNetV3 bneck: 1x1 expand, depthwise kxk (stride s), optional SE,
    1x1 project; residual add when stride 1 and channels match."""

    def __init__(self, cin, k, exp, cout, se, act, stride):
        super().__init__()
        layers = []
        if exp != cin:
            layers.append(ConvBnAct(cin, exp, 1, act=act))
        layers.append(ConvBnAct(exp, exp, k, stride, groups=exp, act=act))
        if se:
            layers.append(SqueezeExcite(exp))
        layers.append(ConvBnAct(exp, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.residual = stride in (1, (1, 1)) and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


# (kernel, expansion, out, SE, activation, stride) of MobileNetV3-large
MBV3_LARGE = [
    (3, 16, 16, False, "relu", 1),
    (3, 64, 24, False, "relu", 2),
    (3, 72, 24, False, "relu", 1),
    (5, 72, 40, True, "relu", 2),
    (5, 120, 40, True, "relu", 1),
    (5, 120, 40, True, "relu", 1),
    (3, 240, 80, False, "hs", 2),
    (3, 200, 80, False, "hs", 1),
    (3, 184, 80, False, "hs", 1),
    (3, 184, 80, False, "hs", 1),
    (3, 480, 112, True, "hs", 1),
    (3, 672, 112, True, "hs", 1),
    (5, 672, 160, True, "hs", 2),
    (5, 960, 160, True, "hs", 1),
    (5, 960, 160, True, "hs", 1),
]

# MobileNetV3-small as PaddleOCR's recognizer uses it: strides (2, 1) keep the
# width (the time axis) while the height shrinks.
MBV3_SMALL_REC = [
    (3, 16, 16, True, "relu", (2, 1)),
    (3, 72, 24, False, "relu", (2, 1)),
    (3, 88, 24, False, "relu", 1),
    (5, 96, 40, True, "hs", (2, 1)),
    (5, 240, 40, True, "hs", 1),
    (5, 240, 40, True, "hs", 1),
    (5, 120, 48, True, "hs", 1),
    (5, 144, 48, True, "hs", 1),
    (5, 288, 96, True, "hs", (2, 2)),
    (5, 576, 96, True, "hs", 1),
    (5, 576, 96, True, "hs", 1),
]


class MobileNetV3Det(nn.Module):
    """PaddleOCR's detection backbone: MobileNetV3-large at scale 0.5 (stem 3x3 s2
    HardSwish, the 15 bnecks, last 1x1 conv to 480), returning the maps at
    strides 4, 8, 16, 32 (16, 24, 56, 480 channels at 640x640: 160, 80, 40, 20)."""

    def __init__(self, scale: float = 0.5):
        super().__init__()
        cin = _divisible(16 * scale)
        self.stem = ConvBnAct(3, cin, 3, 2, act="hs")
        stages, blocks, self.out_channels = [], [], []
        for i, (k, e, c, se, act, s) in enumerate(MBV3_LARGE):
            if s == 2 and i > 1:  # a new stride starts: close the stage
                stages.append(nn.Sequential(*blocks))
                self.out_channels.append(cin)
                blocks = []
            cout = _divisible(c * scale)
            blocks.append(InvertedResidual(cin, k, _divisible(e * scale), cout, se, act, s))
            cin = cout
        blocks.append(ConvBnAct(cin, _divisible(960 * scale), 1, act="hs"))
        stages.append(nn.Sequential(*blocks))
        self.out_channels.append(_divisible(960 * scale))
        self.stages = nn.ModuleList(stages)

    def forward(self, x):
        x = self.stem(x)
        outs = []
        for st in self.stages:
            x = st(x)
            outs.append(x)
        return outs


class DBFPN(nn.Module):
    """DBNet's FPN (PaddleOCR DBFPN): 1x1 laterals to 96 channels, top-down
    nearest x2 upsample + add, 3x3 convs to 24 channels, bilinear upsample of all
    to stride 4, Concat -> 96 channels."""

    def __init__(self, in_chs, out: int = 96):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, out, 1, bias=False) for c in in_chs)
        self.smooth = nn.ModuleList(nn.Conv2d(out, out // 4, 3, padding=1, bias=False) for _ in in_chs)

    def forward(self, feats):
        in2, in3, in4, in5 = (lat(f) for lat, f in zip(self.lateral, feats))
        out4 = in4 + F.interpolate(in5, scale_factor=2, mode="nearest")
        out3 = in3 + F.interpolate(out4, scale_factor=2, mode="nearest")
        out2 = in2 + F.interpolate(out3, scale_factor=2, mode="nearest")
        p2, p3, p4, p5 = (sm(t) for sm, t in zip(self.smooth, (out2, out3, out4, in5)))
        p5 = F.interpolate(p5, scale_factor=8, mode="bilinear", align_corners=False)
        p4 = F.interpolate(p4, scale_factor=4, mode="bilinear", align_corners=False)
        p3 = F.interpolate(p3, scale_factor=2, mode="bilinear", align_corners=False)
        return torch.cat((p5, p4, p3, p2), 1)


class DBNet(nn.Module):
    """DBNet text detector (PaddleOCR ch_det mobile): MobileNetV3Det -> DBFPN ->
    DB probability head (Conv3x3+BN+ReLU, ConvTranspose 2x2 s2+BN+ReLU,
    ConvTranspose 2x2 s2, Sigmoid). [B,3,640,640] -> shrink map [B,1,640,640]."""

    def __init__(self):
        super().__init__()
        self.backbone = MobileNetV3Det(0.5)
        self.neck = DBFPN(self.backbone.out_channels, 96)
        self.head = nn.Sequential(
            nn.Conv2d(96, 24, 3, padding=1, bias=False),
            nn.BatchNorm2d(24),
            nn.ReLU(),
            nn.ConvTranspose2d(24, 24, 2, 2),
            nn.BatchNorm2d(24),
            nn.ReLU(),
            nn.ConvTranspose2d(24, 1, 2, 2),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.head(self.neck(self.backbone(x)))


# ---- CRNN and SVTR recognizers --------------------------------------------------------


class CRNN(nn.Module):
    """CRNN text recognizer (PaddleOCR rec mobile, CTC): MobileNetV3-small x0.5
    with height-only strides, [B,3,48,320] -> [B,288,2,80]; max pool over the
    height -> [B,288,1,80]; squeeze to the sequence [T=80, B, 288]; two-layer
    bidirectional LSTM (hidden 48); Linear to 6625 classes; Softmax.
    Output [B, 80, 6625]."""

    def __init__(self, scale: float = 0.5, hidden: int = 48, classes: int = 6625):
        super().__init__()
        cin = _divisible(16 * scale)
        layers = [ConvBnAct(3, cin, 3, 2, act="hs")]
        for k, e, c, se, act, s in MBV3_SMALL_REC:
            cout = _divisible(c * scale)
            layers.append(InvertedResidual(cin, k, _divisible(e * scale), cout, se, act, s))
            cin = cout
        self.last = _divisible(576 * scale)
        layers.append(ConvBnAct(cin, self.last, 1, act="hs"))
        self.backbone = nn.Sequential(*layers)
        self.rnn = nn.LSTM(self.last, hidden, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        f = self.backbone(x)
        f = F.max_pool2d(f, kernel_size=(f.shape[2], 1))  # pool the height away
        seq = f.squeeze(2).permute(2, 0, 1)  # [T, B, C]
        y, _ = self.rnn(seq)
        return self.fc(y).softmax(-1).permute(1, 0, 2)


class SvtrBlock(nn.Module):
    """Pre-norm transformer encoder block with hand-written multi-head attention
    (MatMul, scale, Softmax, MatMul) and a GELU MLP."""

    def __init__(self, dim: int, heads: int, mlp: int):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, mlp)
        self.fc2 = nn.Linear(mlp, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1) * (self.hd**-0.5)).softmax(-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class SVTR(nn.Module):
    """SVTR-style recognizer (PaddleOCR SVTR-Tiny-like, global mixing only): conv
    stem of two 3x3 stride-2 Conv+BN+GELU (3->96->192), [B,3,48,320] ->
    [B,192,12,80]; flatten to 960 tokens + learned position embedding; 4 encoder
    blocks (dim 192, 6 heads, MLP 768); LayerNorm; mean over the height ->
    [B,80,192]; Linear to 6625 + Softmax. Output [B, 80, 6625]."""

    def __init__(self, dim: int = 192, depth: int = 4, heads: int = 6, mlp: int = 768, classes: int = 6625, hw=(12, 80)):
        super().__init__()
        self.hw = hw
        self.stem = nn.Sequential(
            nn.Conv2d(3, dim // 2, 3, 2, 1, bias=False),
            nn.BatchNorm2d(dim // 2),
            nn.GELU(),
            nn.Conv2d(dim // 2, dim, 3, 2, 1, bias=False),
            nn.BatchNorm2d(dim),
            nn.GELU(),
        )
        self.pos = nn.Parameter(torch.randn(1, hw[0] * hw[1], dim) * 0.02)
        self.blocks = nn.ModuleList(SvtrBlock(dim, heads, mlp) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.stem(x)
        b, c = x.shape[0], x.shape[1]
        x = x.flatten(2).transpose(1, 2) + self.pos
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x).reshape(b, self.hw[0], self.hw[1], c).mean(1)
        return self.fc(x).softmax(-1)


# ---- streaming: VAD and keyword spotting ----------------------------------------------


def _stft_weights(n_fft: int) -> torch.Tensor:
    """[n_fft + 2, 1, n_fft]: Hann-windowed cos rows (bins 0..n_fft/2), then the
    -sin rows, so that a strided Conv1d is a one-sided STFT."""
    n = np.arange(n_fft)
    k = np.arange(n_fft // 2 + 1)[:, None]
    win = 0.5 - 0.5 * np.cos(2 * np.pi * n / n_fft)
    ang = 2 * np.pi * k * n / n_fft
    basis = np.concatenate([np.cos(ang) * win, -np.sin(ang) * win])
    return torch.from_numpy(basis.astype(np.float32)).unsqueeze(1)


class VadPath(nn.Module):
    """One sample rate's path of a Silero-VAD-v5-like model: reflect-pad the chunk
    on the right, STFT as a Conv1d with fixed cos/sin weights, magnitude, four
    Conv1d+ReLU encoder layers down to one frame of 128, one LSTMCell step on the
    state (h, c), decoder ReLU + Conv1d(128->1) + Sigmoid, mean over time.
    (x [1, samples], state [2, 1, 128]) -> (output [1, 1], stateN [2, 1, 128])."""

    def __init__(self, n_fft: int, pad: int, strides, rnn: nn.LSTMCell, decoder: nn.Conv1d):
        super().__init__()
        self.pad = pad
        self.stft = nn.Conv1d(1, n_fft + 2, n_fft, stride=n_fft // 2, bias=False).requires_grad_(False)
        self.bins = bins = n_fft // 2 + 1
        chans = [bins, 128, 64, 64, 128]
        layers = []
        for i, s in enumerate(strides):
            layers += [nn.Conv1d(chans[i], chans[i + 1], 3, stride=s, padding=1), nn.ReLU()]
        self.encoder = nn.Sequential(*layers)
        self.rnn = rnn
        self.decoder = decoder

    def set_stft_weights(self) -> None:
        with torch.no_grad():
            self.stft.weight.copy_(_stft_weights(self.stft.kernel_size[0]))

    def _lstm_step(self, x, h, c):
        """nn.LSTMCell's step written out (the TorchScript exporter cannot split
        LSTMCell's gates): gates = x W_ih' + b_ih + h W_hh' + b_hh, split into
        input, forget, cell, output gates of 128 each."""
        r = self.rnn
        gates = F.linear(x, r.weight_ih, r.bias_ih) + F.linear(h, r.weight_hh, r.bias_hh)
        i, f, g, o = gates.split(r.hidden_size, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def forward(self, x, state):
        x = F.pad(x.unsqueeze(1), (0, self.pad), mode="reflect")
        spec = self.stft(x)
        mag = torch.sqrt(spec[:, : self.bins] ** 2 + spec[:, self.bins :] ** 2)
        feat = self.encoder(mag)  # [1, 128, 1]
        h, c = self._lstm_step(feat.flatten(1), state[0], state[1])
        y = torch.sigmoid(self.decoder(F.relu(h.unsqueeze(-1))))  # [1, 1, 1]
        return y.mean(dim=2), torch.stack((h, c))


class SileroLikeVad(nn.Module):
    """Silero-VAD-like detector: a 16 kHz path (STFT 256/128 -> 129 bins, pad 64,
    3 frames) and an 8 kHz path (STFT 128/64 -> 65 bins, pad 32, 7 frames), both
    on a 512-sample chunk, sharing the LSTMCell(128) and decoder; `sr` picks the
    path. In ONNX the choice is an If node on Equal(sr, 16000)."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTMCell(128, 128)
        self.decoder = nn.Conv1d(128, 1, 1)
        self.path16 = VadPath(256, 64, (1, 2, 2, 1), self.rnn, self.decoder)
        self.path8 = VadPath(128, 32, (2, 2, 2, 1), self.rnn, self.decoder)

    def forward(self, x, state, sr):
        return (self.path16 if int(sr) == 16000 else self.path8)(x, state)


class KwsGru(nn.Module):
    """Streaming keyword spotter (GRU KWS as in "Hello Edge"/streaming KWS): per
    call 16 frames of 40 log-mels; two Conv1d(k3)+ReLU over time (40->64->64),
    one-layer GRU(128) started from the carried state h, Linear(128->12) on the
    last step + Softmax. (feats [1,16,40], h [1,1,128]) -> (probs [1,12],
    hN [1,1,128])."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(40, 64, 3, padding=1)
        self.conv2 = nn.Conv1d(64, 64, 3, padding=1)
        self.gru = nn.GRU(64, 128)
        self.fc = nn.Linear(128, 12)

    def forward(self, feats, h):
        x = F.relu(self.conv2(F.relu(self.conv1(feats.transpose(1, 2)))))
        y, h_n = self.gru(x.permute(2, 0, 1), h)
        return self.fc(y[-1]).softmax(-1), h_n


# ---- dense vision and audio -----------------------------------------------------------


def _double_conv(c1: int, c2: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c1, c2, 3, padding=1, bias=False),
        nn.BatchNorm2d(c2),
        nn.ReLU(),
        nn.Conv2d(c2, c2, 3, padding=1, bias=False),
        nn.BatchNorm2d(c2),
        nn.ReLU(),
    )


class UNet(nn.Module):
    """U-Net (Ronneberger et al.) at half width: 4 down levels of double
    Conv3x3+BN+ReLU and MaxPool 2x2 (32, 64, 128, 256 channels), bottleneck 512,
    4 up levels of ConvTranspose 2x2 s2 + Concat skip + double conv, 1x1 conv to
    2 classes. [B,3,256,256] -> logits [B,2,256,256]."""

    def __init__(self, chs=(32, 64, 128, 256), bottleneck: int = 512, classes: int = 2):
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for c in chs:
            self.down.append(_double_conv(cin, c))
            cin = c
        self.mid = _double_conv(cin, bottleneck)
        self.ups, self.up_convs = nn.ModuleList(), nn.ModuleList()
        cin = bottleneck
        for c in reversed(chs):
            self.ups.append(nn.ConvTranspose2d(cin, c, 2, 2))
            self.up_convs.append(_double_conv(2 * c, c))
            cin = c
        self.out = nn.Conv2d(cin, classes, 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.mid(x)
        for up, conv, skip in zip(self.ups, self.up_convs, reversed(skips)):
            x = conv(torch.cat((skip, up(x)), 1))
        return self.out(x)


class CausalBlock(nn.Module):
    """TCN residual block (Bai et al.): dilated Conv1d(k=3) padded (k-1)*d on both
    sides with the extra right-hand frames chomped off (causal), ReLU, 1x1 conv,
    residual add, ReLU."""

    def __init__(self, c: int, dilation: int, k: int = 3):
        super().__init__()
        self.chomp = (k - 1) * dilation
        self.conv = nn.Conv1d(c, c, k, dilation=dilation, padding=self.chomp)
        self.mix = nn.Conv1d(c, c, 1)

    def forward(self, x):
        y = F.relu(self.conv(x)[:, :, : -self.chomp])
        return F.relu(x + self.mix(y))


class TCN(nn.Module):
    """Temporal convolutional network keyword classifier on raw audio (TCN / M5
    style, Speech Commands' 35 classes): Conv1d(1->64, k=80, s=4)+BN+ReLU, eight
    dilated causal residual blocks (dilation 1..128), global average pool,
    Linear(64->35). [B,1,16000] -> logits [B,35]."""

    def __init__(self, c: int = 64, classes: int = 35):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(1, c, 80, stride=4), nn.BatchNorm1d(c), nn.ReLU())
        self.blocks = nn.Sequential(*(CausalBlock(c, 2**i) for i in range(8)))
        self.fc = nn.Linear(c, classes)

    def forward(self, audio):
        return self.fc(self.blocks(self.front(audio)).mean(-1))


class Wav2VecWrapper(nn.Module):
    """transformers' Wav2Vec2Model with tuple output: last_hidden_state."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_values):
        return self.m(input_values=input_values, return_dict=True).last_hidden_state


def _wav2vec2():
    """wav2vec 2.0 base-style model shrunk to 4 encoder layers of hidden 384:
    7-layer conv feature extractor (512 channels, kernels 10,3,3,3,3,2,2, strides
    5,2,2,2,2,2,2, GroupNorm on the first, GELU), feature projection (LayerNorm +
    Linear 512->384), positional conv (k=128, groups 16, weight norm removed),
    4 post-norm encoder layers (6 heads, FFN 1536). [B,16000] -> [B,49,384]."""
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    config = Wav2Vec2Config(
        hidden_size=384,
        num_hidden_layers=4,
        num_attention_heads=6,
        intermediate_size=1536,
        conv_dim=(512,) * 7,
        conv_kernel=(10, 3, 3, 3, 3, 2, 2),
        conv_stride=(5, 2, 2, 2, 2, 2, 2),
        feat_extract_norm="group",
        num_conv_pos_embeddings=128,
        num_conv_pos_embedding_groups=16,
        do_stable_layer_norm=False,
        apply_spec_augment=False,
    )
    try:
        model = Wav2Vec2Model(config, attn_implementation="eager")
    except TypeError:
        config._attn_implementation = "eager"
        model = Wav2Vec2Model(config)
    conv = model.encoder.pos_conv_embed.conv
    from torch.nn.utils import parametrize

    if parametrize.is_parametrized(conv):
        parametrize.remove_parametrizations(conv, "weight", leave_parametrized=True)
    elif hasattr(conv, "weight_g"):
        torch.nn.utils.remove_weight_norm(conv)
    return Wav2VecWrapper(model.eval()).eval()


# ---- tabular / text -------------------------------------------------------------------


class ByteClassifier(nn.Module):
    """Byte-level CNN text classifier (char-CNN style, 4 classes as AG News):
    int32 bytes -> Cast to int64 -> Embedding(256, 64) (Gather) -> Conv1d(64->128,
    k=5)+ReLU -> global max pool -> Linear(128->64)+ReLU -> Linear(64->4) ->
    Softmax. ids [B,256] int32 -> probs [B,4]."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(256, 64)
        self.conv = nn.Conv1d(64, 128, 5)
        self.fc1 = nn.Linear(128, 64)
        self.fc2 = nn.Linear(64, 4)

    def forward(self, ids):
        x = self.emb(ids.long()).transpose(1, 2)
        x = F.relu(self.conv(x)).amax(-1)
        return self.fc2(F.relu(self.fc1(x))).softmax(-1)


_WORDS = (
    "the a market shares rose fell percent company quarter profit team won match season coach "
    "players league government minister election vote parliament scientists study space launch "
    "software users data phone release update price oil bank rates inflation growth city police "
    "report said on in of to and for with after before new first last week year today officials"
).split()


def _text_bytes(batch: int, length: int = 256) -> torch.Tensor:
    """News-like ASCII sentences as byte values, zero-padded/truncated to length."""
    rows = []
    for _ in range(batch):
        words = []
        while len(" ".join(words)) < length + 20:
            words.append(random.choice(_WORDS))
        text = " ".join(words).capitalize()[: random.randint(length // 2, length)] + "."
        b = np.frombuffer(text.encode("ascii"), np.uint8)[:length]
        row = np.zeros(length, np.int32)
        row[: len(b)] = b
        rows.append(row)
    return torch.from_numpy(np.stack(rows))


# ---- cases: what is exported, and its torch reference ---------------------------------


@dataclass
class TorchCase:
    module: nn.Module  # what is exported (and run as the reference)
    input_names: list
    inputs: tuple
    output_names: list
    reference: Callable | None = None  # feed dict -> outputs, when not module(*inputs)


def _case_yolo(width: float, batch: int = 1) -> TorchCase:
    m = YoloV8(width, 0.33)
    _prepare(m)
    m.detect.set_dfl_weights()
    return TorchCase(m, ["images"], (_image(batch, 640, 640),), ["output0"])


def _case_dbnet() -> TorchCase:
    m = _prepare(DBNet())
    return TorchCase(m, ["x"], (_image(1, 640, 640),), ["maps"])


def _case_crnn(batch: int = 1) -> TorchCase:
    m = _prepare(CRNN())
    _calibrate_logits(m, m.fc, (_image(1, 48, 320) * 2 - 1,), 4.0)  # same weights at any batch
    x = _image(batch, 48, 320) * 2 - 1  # PaddleOCR normalizes to [-1, 1]
    return TorchCase(m, ["x"], (x,), ["probs"])


def _case_svtr() -> TorchCase:
    m = _prepare(SVTR())
    x = _image(1, 48, 320) * 2 - 1
    _calibrate_logits(m, m.fc, (x,), 4.0)
    return TorchCase(m, ["x"], (x,), ["probs"])


def _case_vad() -> TorchCase:
    m = SileroLikeVad()
    _prepare(m)
    m.path16.set_stft_weights()
    m.path8.set_stft_weights()
    x = _speech(1, 512)
    state = torch.tanh(torch.randn(2, 1, 128)) * 0.5  # a mid-stream state
    sr = torch.tensor(16000, dtype=torch.int64)

    def reference(feed):
        x_, st_ = torch.from_numpy(feed["input"]), torch.from_numpy(feed["state"])
        with torch.no_grad():
            return [t.numpy() for t in m(x_, st_, torch.from_numpy(np.asarray(feed["sr"])))]

    return TorchCase(m, ["input", "state", "sr"], (x, state, sr), ["output", "stateN"], reference)


def _case_gru() -> TorchCase:
    m = _prepare(KwsGru())
    feats = torch.randn(1, 16, 40)  # mean/variance-normalized log-mels
    h = torch.tanh(torch.randn(1, 1, 128))
    _calibrate_logits(m, m.fc, (feats, h), 2.0)
    return TorchCase(m, ["feats", "h"], (feats, h), ["probs", "hN"])


def _case_unet() -> TorchCase:
    return TorchCase(_prepare(UNet()), ["input"], (_image(1, 256, 256),), ["logits"])


def _case_tcn() -> TorchCase:
    return TorchCase(_prepare(TCN()), ["audio"], (_speech(1, 16000).unsqueeze(1),), ["logits"])


def _case_wav2vec() -> TorchCase:
    m = _wav2vec2()
    _randomize_norms(m)
    x = _speech(1, 16000)
    x = (x - x.mean()) / (x.std() + 1e-7)  # as Wav2Vec2FeatureExtractor normalizes
    return TorchCase(m, ["input_values"], (x,), ["last_hidden_state"])


def _case_bytes(batch: int = 1) -> TorchCase:
    m = _prepare(ByteClassifier())
    with torch.no_grad():
        m.emb.weight.normal_(0, 1)
    _calibrate_logits(m, m.fc2, (_text_bytes(8),), 2.0)  # same weights at any batch
    ids = _text_bytes(batch)
    return TorchCase(m, ["ids"], (ids,), ["probs"])


_TORCH_CASES: dict[str, tuple[str, Callable[[], TorchCase]]] = {
    "yolo_c2f_n": ("detection", lambda: _case_yolo(0.25)),
    "yolo_c2f_s": ("detection", lambda: _case_yolo(0.5)),
    "yolo_c2f_n_b4": ("detection", lambda: _case_yolo(0.25, 4)),
    "dbnet_mbv3": ("ocr", _case_dbnet),
    "crnn_bilstm": ("ocr", _case_crnn),
    "crnn_bilstm_b8": ("ocr", lambda: _case_crnn(8)),
    "svtr_rec": ("ocr", _case_svtr),
    "vad_stream": ("streaming", _case_vad),
    "gru_stream": ("streaming", _case_gru),
    "unet": ("vision", _case_unet),
    "tcn_audio": ("audio", _case_tcn),
    "wav2vec_fe": ("audio", _case_wav2vec),
    "byte_classifier": ("tabular", _case_bytes),
    "byte_classifier_b32": ("tabular", lambda: _case_bytes(32)),
}

_cache: dict[str, object] = {}


def _torch_case(name: str) -> TorchCase:
    if name not in _cache:
        _seed(0)
        _cache[name] = _TORCH_CASES[name][1]()
    return _cache[name]


def _make_torch(name: str, out: Path) -> str:
    case = _torch_case(name)
    mz = _make_zoo()
    mz.save_inputs(out.with_suffix(".inputs.npz"), case.input_names, case.inputs)
    return mz.export(case.module, case.inputs, out, case.input_names, case.output_names)


# ---- vad_stream: two exported paths under an If on sr ---------------------------------


def _export_to_proto(module: nn.Module, args: tuple, names, outputs):
    """TorchScript export (dynamo when unavailable) into memory, via a temp file."""
    import tempfile

    import onnx

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.onnx"
        how = _make_zoo().export(module, args, p, names, outputs)
        return onnx.load(str(p)), how


def _as_branch(proto, prefix: str, outer: set):
    """Turns an exported graph into an If branch body: no inputs (the outer graph's
    are read from the enclosing scope), every internal value, node and
    initializer renamed with prefix (then/else bodies must not share names),
    nested subgraphs included; the outputs renamed too. Returns (branch graph,
    initializers to put in the outer graph)."""
    import onnx
    from onnx import helper

    g = proto.graph
    rename = {}

    def collect(graph):
        for t in graph.initializer:
            rename[t.name] = prefix + t.name
        for node in graph.node:
            rename.update((o, prefix + o) for o in node.output if o)
            for a in node.attribute:
                for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                    collect(sub)

    def apply(graph):
        for t in graph.initializer:
            t.name = rename[t.name]
        for i, node in enumerate(graph.node):
            node.name = prefix + (node.name or f"{node.op_type}_{i}")
            node.input[:] = [x if x in outer else rename.get(x, x) for x in node.input]
            node.output[:] = [rename.get(x, x) for x in node.output]
            for a in node.attribute:
                for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                    apply(sub)
        for vi in list(graph.output) + list(graph.value_info):
            vi.name = rename.get(vi.name, vi.name)

    body = onnx.GraphProto()
    body.CopyFrom(g)
    collect(body)
    apply(body)
    inits = list(body.initializer)
    branch = helper.make_graph(list(body.node), prefix.strip("/") + "_branch", [], list(body.output))
    return branch, inits


def _make_vad(out: Path) -> str:
    """Exports the 16 kHz and 8 kHz paths separately (TorchScript), then writes the
    top graph with onnx.helper: Equal(sr, 16000) -> If(then: 16 kHz body, else:
    8 kHz body) -> output, stateN; initializers in the top graph, opset 17."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    case = _torch_case("vad_stream")
    m = case.module
    x, state, sr = case.inputs
    _make_zoo().save_inputs(out.with_suffix(".inputs.npz"), case.input_names, case.inputs)
    p16, how = _export_to_proto(m.path16, (x, state), ["input", "state"], ["output", "stateN"])
    p8, _ = _export_to_proto(m.path8, (x, state), ["input", "state"], ["output", "stateN"])
    outer = {"input", "state"}
    then_g, inits16 = _as_branch(p16, "sr16k/", outer)
    else_g, inits8 = _as_branch(p8, "sr8k/", outer)
    nodes = [
        helper.make_node("Constant", [], ["sr_16000"], name="sr_16000", value=numpy_helper.from_array(np.array(16000, np.int64))),
        helper.make_node("Equal", ["sr", "sr_16000"], ["is_16k"], name="is_16k"),
        helper.make_node("If", ["is_16k"], ["output", "stateN"], name="sr_switch", then_branch=then_g, else_branch=else_g),
    ]
    graph = helper.make_graph(
        nodes,
        "silero_like_vad",
        [
            helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 512]),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, 1, 128]),
            helper.make_tensor_value_info("sr", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1]),
            helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, 1, 128]),
        ],
        initializer=inits16 + inits8,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="custom_models.py")
    model.ir_version = p16.ir_version
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(out))
    return how + "+onnx.helper"


# ---- scikit-learn pipelines -----------------------------------------------------------


def _sk_data():
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    X, y = make_classification(
        n_samples=4000, n_features=64, n_informative=24, n_redundant=16, n_classes=5, n_clusters_per_class=2, random_state=0
    )
    X = X.astype(np.float32)
    return train_test_split(X, y, test_size=0.25, random_state=0)


def _sk_pipeline(kind: str):
    key = "sk_" + kind
    if key in _cache:
        return _cache[key]
    import warnings

    from sklearn.decomposition import PCA
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X_train, X_test, y_train, _ = _sk_data()
    if kind == "mlp":
        clf = MLPClassifier(hidden_layer_sizes=(128, 64), max_iter=300, random_state=0)
        pipe = Pipeline([("scale", StandardScaler()), ("pca", PCA(32, random_state=0)), ("mlp", clf)])
    else:
        clf = RandomForestClassifier(n_estimators=100, max_depth=10, random_state=0, n_jobs=2)
        pipe = Pipeline([("scale", StandardScaler()), ("forest", clf)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(X_train, y_train)
    _cache[key] = (pipe, clf, X_test)
    return _cache[key]


def _make_sklearn(kind: str, batch: int, out: Path) -> str:
    """Pipeline -> skl2onnx (zipmap off: probabilities as a float tensor), input
    "input" float32 [None, 64]; feed: `batch` held-out rows."""
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType

    pipe, clf, X_test = _sk_pipeline(kind)
    onx = to_onnx(
        pipe,
        initial_types=[("input", FloatTensorType([None, 64]))],
        options={id(clf): {"zipmap": False}},
        target_opset={"": OPSET, "ai.onnx.ml": ML_OPSET},
    )
    # skl2onnx may list the default domain twice (same version): keep one entry
    seen, keep = set(), []
    for o in onx.opset_import:
        if o.domain not in seen:
            seen.add(o.domain)
            keep.append((o.domain, o.version))
    del onx.opset_import[:]
    for domain, version in keep:
        onx.opset_import.add(domain=domain, version=version)
    out.write_bytes(onx.SerializeToString())
    np.savez(out.with_suffix(".inputs.npz"), input=np.ascontiguousarray(X_test[:batch], dtype=np.float32))
    return "skl2onnx"


# ---- the registry ---------------------------------------------------------------------

DESCRIPTIONS = {  # one line per model, for --list
    "yolo_c2f_n": "YOLOv8n (width 0.25, depth 0.33), [1,3,640,640] -> [1,84,8400]",
    "yolo_c2f_s": "YOLOv8s (width 0.5, depth 0.33), [1,3,640,640] -> [1,84,8400]",
    "yolo_c2f_n_b4": "YOLOv8n at batch 4, [4,3,640,640] -> [4,84,8400]",
    "dbnet_mbv3": "DBNet + MobileNetV3-large x0.5, [1,3,640,640] -> [1,1,640,640]",
    "crnn_bilstm": "CRNN MobileNetV3-small + 2x BiLSTM(48), [1,3,48,320] -> [1,80,6625]",
    "crnn_bilstm_b8": "CRNN at batch 8, [8,3,48,320] -> [8,80,6625]",
    "svtr_rec": "SVTR-like, 4 blocks dim 192, [1,3,48,320] -> [1,80,6625]",
    "vad_stream": "Silero-VAD-like, If on sr, input [1,512] state [2,1,128] sr int64",
    "gru_stream": "GRU keyword spotter, feats [1,16,40] h [1,1,128] -> probs [1,12], hN",
    "unet": "U-Net 32..256 + 512, [1,3,256,256] -> [1,2,256,256]",
    "tcn_audio": "dilated causal TCN, [1,1,16000] -> [1,35]",
    "wav2vec_fe": "wav2vec2 conv extractor + 4 layers of 384, [1,16000] -> [1,49,384]",
    "byte_classifier": "byte CNN, int32 [1,256] -> [1,4]",
    "byte_classifier_b32": "byte CNN at batch 32, int32 [32,256] -> [32,4]",
    "sklearn_mlp": "StandardScaler + PCA(32) + MLP(128,64), [1,64] -> label, probabilities [1,5]",
    "sklearn_mlp_b256": "the sklearn_mlp model on a [256,64] feed",
    "sklearn_forest": "StandardScaler + RandomForest(100, depth 10), [1,64] -> label, probabilities [1,5]",
}

MODELS: dict[str, tuple[str, Callable[[Path], str]]] = {}
for _name, (_kind, _) in _TORCH_CASES.items():
    MODELS[_name] = (_kind, _make_vad if _name == "vad_stream" else functools.partial(_make_torch, _name))
MODELS["sklearn_mlp"] = ("tabular", functools.partial(_make_sklearn, "mlp", 1))
MODELS["sklearn_mlp_b256"] = ("tabular", functools.partial(_make_sklearn, "mlp", 256))
MODELS["sklearn_forest"] = ("tabular", functools.partial(_make_sklearn, "forest", 1))


# ---- verification ---------------------------------------------------------------------


class VerifyError(AssertionError):
    pass


def _ort_session(path: Path):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


_ORT_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(bool)": np.bool_,
}


def _perturbed(feed: dict) -> dict:
    """The feed with its float inputs changed by noise and its non-scalar integer
    inputs rolled: outputs of a sensible model must change."""
    rng = np.random.default_rng(7)
    out = {}
    for k, v in feed.items():
        if v.dtype.kind == "f":
            out[k] = (v + rng.standard_normal(v.shape) * (0.2 * (v.std() + 1e-3))).astype(v.dtype)
        elif v.ndim and v.size > 1:
            out[k] = np.roll(v, 17, axis=-1)
        else:
            out[k] = v
    return out


def _reference(name: str, feed: dict) -> list:
    if name.startswith("sklearn_"):
        pipe, _, _ = _sk_pipeline("forest" if "forest" in name else "mlp")
        x = feed["input"]
        return [pipe.predict(x).astype(np.int64), pipe.predict_proba(x).astype(np.float32)]
    case = _torch_case(name)
    if case.reference is not None:
        return case.reference(feed)
    with torch.no_grad():
        y = case.module(*(torch.from_numpy(np.asarray(feed[n])) for n in case.input_names))
    return [t.numpy() for t in (y if isinstance(y, (tuple, list)) else (y,))]


def _compare(got: list, want: list, names: list) -> float:
    worst = 0.0
    for g, w, n in zip(got, want, names):
        if g.shape != w.shape:
            raise VerifyError(f"output {n}: shape {g.shape} != reference {w.shape}")
        if g.dtype.kind in "iub":
            if not np.array_equal(g, w):
                raise VerifyError(f"output {n}: {np.sum(g != w)} of {g.size} values differ")
            continue
        d = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if g.size else 0.0
        worst = max(worst, d)
        if not np.allclose(g, w, rtol=RTOL, atol=ATOL):
            raise VerifyError(f"output {n}: max abs diff {d:.3g} beyond rtol {RTOL} atol {ATOL}")
    return worst


def verify(name: str, out_path) -> str:
    """Checks NAME's written file: onnx.checker; the feed's names and dtypes
    against the graph's inputs; onnxruntime (CPU) against the PyTorch model (the
    scikit-learn pipeline's predict / predict_proba for sklearn_*) at rtol 1e-3,
    atol 1e-4; float outputs finite, not all ~0, not constant and changing when
    the input changes. vad_stream is also checked with sr = 8000 (the If's else
    branch). Raises VerifyError on a failure; returns a one-line summary."""
    import onnx

    out_path = Path(out_path)
    onnx.checker.check_model(str(out_path))
    feed = dict(np.load(out_path.with_suffix(".inputs.npz")))
    sess = _ort_session(out_path)
    for i in sess.get_inputs():
        if i.name not in feed:
            raise VerifyError(f"feed lacks input {i.name}")
        want = _ORT_DTYPES.get(i.type)
        if want is None or feed[i.name].dtype != want:
            raise VerifyError(f"input {i.name}: feed dtype {feed[i.name].dtype}, graph {i.type}")
    names = [o.name for o in sess.get_outputs()]
    got = sess.run(None, feed)
    diff = _compare(got, _reference(name, feed), names)
    changed = sess.run(None, _perturbed(feed))
    for g, c, n in zip(got, changed, names):
        if g.dtype.kind != "f":
            continue
        if not np.all(np.isfinite(g)):
            raise VerifyError(f"output {n} has NaN or inf")
        scale = float(np.max(np.abs(g)))
        if scale < 1e-6:
            raise VerifyError(f"output {n} is all ~0 (max |y| {scale:.3g})")
        if g.size > 1 and float(g.std()) < 1e-7 * max(scale, 1.0):
            raise VerifyError(f"output {n} is constant")
        if float(np.max(np.abs(g - c))) < 1e-6 * max(scale, 1.0):
            raise VerifyError(f"output {n} does not change with the input")
    extra = ""
    if name == "vad_stream":
        feed8 = dict(feed, sr=np.array(8000, np.int64))
        g8 = sess.run(None, feed8)
        d8 = _compare(g8, _reference(name, feed8), names)
        if np.allclose(g8[1], got[1]):
            raise VerifyError("sr 8000 gives the same state as sr 16000: the If is not branching")
        diff = max(diff, d8)
        extra = ", sr 8000 branch checked"
    stats = ", ".join(f"{n}{list(g.shape)}" for n, g in zip(names, got))
    return f"ok: ORT vs reference max abs diff {diff:.3g}; outputs {stats}{extra}"


def _opset(path: Path) -> str:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    return ",".join(f"{o.domain or 'ai.onnx'}:{o.version}" for o in m.opset_import)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "models", help="output folder (default bench/zoo/models)")
    ap.add_argument("--only", nargs="*", choices=sorted(MODELS), help="build only these models")
    ap.add_argument("--verify-only", action="store_true", help="check already written files, do not export")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    args = ap.parse_args()
    if args.list:
        for name, (kind, _) in MODELS.items():
            print(f"{name:22} {kind:10} {DESCRIPTIONS[name]}")
        return 0

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.only or list(MODELS):
        kind, make = MODELS[name]
        out = args.out / f"{name}.onnx"
        t0 = time.perf_counter()
        try:
            how = "existing"
            if not args.verify_only:
                _seed(0)
                how = make(out)
            result = verify(name, out)
        except Exception as e:  # noqa: BLE001 - build the others, report this one
            print(f"{name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        size = out.stat().st_size / 2**20
        print(
            f"{name} [{kind}]: {size:.1f} MiB, {how}, opset {_opset(out)}, {time.perf_counter() - t0:.1f} s; {result}",
            flush=True,
        )
    if failed:
        print("failed: " + " ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
