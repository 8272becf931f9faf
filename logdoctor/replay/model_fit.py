"""The probe that checks the --model is the network the checkpoint was saved from."""
from __future__ import annotations

from ..model import Finding
from .probe import Probe, ReplayContext, Skip, listed


class PartialLoad(Probe):
    """The --model does not match the checkpoint: tensors missing, unexpected or of another shape.

    Symptom:
        Loading the checkpoint into the model built by --model leaves model
        tensors at their random initialisation, finds checkpoint tensors the
        model has no place for, or finds the same name with another shape (a
        head for another class count). The dynamic probes would then examine
        a different network, so they are skipped instead of pretending.
    Root causes:
        - the factory builds another configuration than the run's (class count, width, depth, vocabulary)
        - the code changed since the checkpoint was saved (renamed or added modules)
        - the checkpoint holds only part of the model (an adapter, an EMA copy, a backbone)
    Fix:
        - build the model with the run's own hyperparameters (`--model module:LightningClass` and `--model hf` read them from the checkpoint)
        - load with model.load_state_dict(state, strict=True) in the training code too, so a mismatch fails loudly
    Example:
        2 of 41 tensors with another shape (classifier.weight [2, 32] vs [3, 32]).
    """

    code, severity, kind = "partial_load", "critical", "dynamic"
    needs_matching_model = False
    explains = ()

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        fit = ctx.target.fit
        if fit is None:
            raise Skip("the checkpoint holds no model weights to load")
        if not fit.partial:
            return []
        parts = [
            f"{len(names)} {what} ({listed(names, 3)})"
            for names, what in ((fit.mismatched, "with another shape"), (fit.missing, "missing from the checkpoint"), (fit.unexpected, "unused by the model"))
            if names
        ]
        return [
            self.report(
                ctx,
                title=f"the --model does not match the checkpoint ({fit.matched}/{fit.total} tensors loaded): " + "; ".join(parts),
                confidence=0.95,
                where=(fit.mismatched or fit.missing or fit.unexpected)[0],
                evidence={
                    "loaded": fit.matched,
                    "model_tensors": fit.total,
                    "shape_mismatch": fit.mismatched[:20],
                    "missing": fit.missing[:20],
                    "unexpected": fit.unexpected[:20],
                },
            )
        ]
