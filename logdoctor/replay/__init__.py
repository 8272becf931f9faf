"""Replay mode: probes that re-examine a PyTorch checkpoint to confirm causes.

Logs show symptoms; a checkpoint (and, optionally, the model code and one
batch) can confirm or rule out the causes behind them. Static probes read the
checkpoint alone (weights, optimizer moments, scheduler, GradScaler); dynamic
probes run the model on a batch. Results are ordinary Findings, and
`merge.merge_replay` folds them into a run's log diagnosis.

This package is an optional extra (`pip install logdoctor[replay]`). This
module and `command` (what the CLI imports) never import torch at module
level; the probe modules do, and only a replay run loads them. So `import
logdoctor.replay` stays cheap and the rest of logdoctor never pays for PyTorch.
"""
from __future__ import annotations


#: Every probe's code, listed here (not taken from the catalogue) so that checking a select / ignore
#: list or a config file never imports PyTorch; a test keeps it equal to the catalogue.
PROBE_CODES = (
    "nan_weights", "optimizer_groups", "scheduler_exhausted", "scaler_collapse", "not_in_optimizer",
    "never_updated", "frozen_in_optimizer", "decay_on_norm_bias", "adam_eps_underflow", "update_ratio_low", "update_ratio_high",
    "bn_stats_degenerate", "weight_norm_outlier", "partial_load", "nan_source", "no_grad", "grad_vanish", "grad_explode",
    "dead_relu", "init_loss_off", "lr_range", "overfit_batch_failed",
)


class ReplayError(Exception):
    """A problem the user can fix (bad checkpoint, bad --model spec...); one line naming the file."""


def replay(checkpoint, options=None):
    """Run every applicable probe on `checkpoint`; see `runner.run_replay`."""
    from .runner import run_replay

    return run_replay(checkpoint, options)


__all__ = ["PROBE_CODES", "ReplayError", "replay"]
