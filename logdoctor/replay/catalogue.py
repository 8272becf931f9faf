"""Every replay probe, in the order they run (cheap static checks first)."""
from __future__ import annotations

from .dynamic_forward import DeadRelu, NanSource
from .dynamic_grads import GradExplode, GradVanish, NoGrad
from .dynamic_loss import InitLossOff, OverfitBatchFailed
from .lr_range import LrRange
from .model_fit import PartialLoad
from .probe import Probe
from .static_optim import AdamEpsUnderflow, DecayOnNormBias, FrozenInOptimizer, NeverUpdated, NotInOptimizer, OptimizerGroups
from .static_schedule import ScalerCollapse, SchedulerExhausted
from .static_weights import BatchNormStats, NanWeights, WeightNormOutlier
from .update_ratio import UpdateRatioHigh, UpdateRatioLow

PROBES: tuple[type[Probe], ...] = (
    NanWeights,
    OptimizerGroups,
    SchedulerExhausted,
    ScalerCollapse,
    NotInOptimizer,
    NeverUpdated,
    FrozenInOptimizer,
    DecayOnNormBias,
    AdamEpsUnderflow,
    UpdateRatioLow,
    UpdateRatioHigh,
    BatchNormStats,
    WeightNormOutlier,
    PartialLoad,  # first of the dynamic probes: the others skip when it fires
    NanSource,
    NoGrad,
    GradVanish,
    GradExplode,
    DeadRelu,
    InitLossOff,
    LrRange,  # before overfit_batch_failed, which tries its best LR
    OverfitBatchFailed,
)


def all_probes() -> dict[str, type[Probe]]:
    """code -> Probe class."""
    return {p.code: p for p in PROBES}
