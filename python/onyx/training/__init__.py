"""On-device training with onnxruntime.training's API shape, in Python over
onyx.InferenceSession::

    from onyx.training import artifacts
    from onyx.training.api import CheckpointState, Module, Optimizer

    artifacts.generate_artifacts(model, requires_grad=[...], loss=artifacts.LossType.CrossEntropyLoss,
                                 optimizer=artifacts.OptimType.AdamW, artifact_directory="out")
    state = CheckpointState.load_checkpoint("out/checkpoint")
    module = Module("out/training_model.onnx", state, "out/eval_model.onnx")
    optimizer = Optimizer("out/optimizer_model.onnx", module)
    loss = module(x, labels); optimizer.step(); module.lazy_reset_grad()

The training model holds a Gradient node (ai.onnx.preview.training) that
onyx expands into the backward graph when the session is created; see
docs/training.md for the files' formats.
"""

from . import api, artifacts
from .api import CheckpointState, LinearLRScheduler, Module, Optimizer
from .artifacts import LossType, OptimType, generate_artifacts

__all__ = [
    "api",
    "artifacts",
    "CheckpointState",
    "LinearLRScheduler",
    "LossType",
    "Module",
    "OptimType",
    "Optimizer",
    "generate_artifacts",
]
