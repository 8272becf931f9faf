"""spike: sudden loss spikes that recover."""
from __future__ import annotations

import numpy as np

from .. import curves
from ..model import Finding, Series
from ..view import RunView
from ._loss import primary_loss
from .base import Rule
from ..numbers import fmt_num


class Spike(Rule):
    """Sudden loss spikes that recover.

    Symptom:
        The loss jumps far above its local level for a short stretch, then
        returns to it. A spike counts when it is a Hampel outlier (many
        robust sigmas above the rolling median) and undoes a real share of
        the progress the run had made (in a run that barely learned, of a
        fifth of its opening level); on long runs each bucket's maximum is
        tested, so a one-step spike is never averaged away. Spikes whose
        heights (as shares of the progress, each capped at 1) add up to less
        than one whole progress are reported as info: heavy-tailed batch
        noise and the odd bad batch are normal. A broad excursion counts
        too: the smoothed loss climbs half its start level or more above
        where the run started (a warmup's peak LR wrecking a pretrained
        model) and takes a tenth of the run or more to come back below it.
    Root causes:
        - a single bad batch: corrupt or extreme examples, a label outlier
        - learning rate too high for the phase (no warmup, or peak LR too high): an update overshoots and recovers
        - gradient explosion in attention / RNN layers without clipping
        - fp16 overflow that GradScaler absorbs by skipping a step
    Fix:
        - clip gradients: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        - lower the peak LR 2-3x or lengthen the warmup
        - log the batch indices at spike steps and inspect or filter those examples; use a robust loss (Huber) for regression
        - for transformers: z-loss / qk-norm, attention logits in fp32
    Probe:
        grad_explode, update_ratio_high
    Example:
        Train loss settles around 0.8, jumps to 3.9 at step 12 400 and is
        back at 0.8 by step 12 700; twice more later in the run.
    """

    code = "spike"
    severity = "warning"
    #: each spike kicks the weights: a validation loss that climbs after them is their echo
    outranks = ("overfit",)
    explains_only_earlier = True
    defaults = {
        "min_points": 20,
        # Hampel: robust sigmas above the rolling median of the bucket maxima
        "k_sigma": 10.0,
        # a spike must rise at least this share of the run's progress...
        "min_height": 0.25,
        # ...where a run that barely learned counts this share of its opening level as its
        # progress: a crawling loss that fell 2 % would otherwise see every 10 %-of-the-level
        # batch outlier as 'five times the progress'
        "min_progress_level": 0.2,
        # the loss must fall back to within this share of the spike height...
        "recover_to": 0.5,
        # ...within this share of the run (in buckets; at least 2)
        "recover_window": 0.05,
        # warning (not info) when the spikes' heights, each as a share of the progress and
        # capped at 1, add up to this: one spike back to the starting loss, or several smaller
        "warn_mass": 1.0,
        # ...or when the largest spike is at least this multiple of the local level above it, and
        # this many robust sigmas
        "warn_over_level": 1.0,
        "warn_over_level_sigmas": 20.0,
        # the opening share of the run is ignored: the first steps from init are not a settled level
        "skip_start": 0.05,
        # a broad excursion: the smoothed loss climbs this share of its start level (and this many
        # noise sigmas) above where the run started, then comes back below it
        "min_excursion": 0.5,
        "min_excursion_noise": 10.0,
        # ...and takes at least this share of the run to get back below its start
        "min_excursion_recovery": 0.1,
    }

    def check(self, view: RunView) -> list[Finding]:
        series = primary_loss(view)
        c = curves.curve(series)
        if c is None or len(c) < self.params["min_points"]:
            return []
        n = len(c)
        # the progress from the loss at init (the first logged value, when a steep first descent
        # already pulls the median start level below it) to the best level
        top = max(c.start, c.y[0])
        ref = max(top - c.best, self.params["min_progress_level"] * abs(top), 4 * c.y_noise, curves.TINY)
        h = curves.hampel(c.hi, k=self.params["k_sigma"], floor=max(c.y_noise, c.quantum))
        height = c.hi - h.center
        hit = h.outliers & (h.score > 0) & (height >= self.params["min_height"] * ref)
        hit[: int(self.params["skip_start"] * n)] = False
        window = max(2, int(round(self.params["recover_window"] * n)))
        spikes = []
        for start, stop in _runs(hit):
            peak = start + int(np.argmax(height[start:stop]))
            after = c.y[stop : stop + window]
            if len(after) == 0:
                continue  # at the very end: nothing shows it recovered (diverge's business)
            base = h.center[peak]
            if np.min(after) > base + self.params["recover_to"] * height[peak]:
                continue  # did not come back: a level shift, not a spike
            spikes.append((peak, float(height[peak]), float(h.score[peak]), stop - start))
        if not spikes:
            found = self._excursion(series, c)
            return [found] if found else []
        top = max(spikes, key=lambda s: s[1])
        tall = top[1] / ref
        mass = sum(min(1.0, s[1] / ref) for s in spikes)
        # ...or one spike at least doubles the loss where it strikes, far beyond its noise, over two
        # logged points or more: on a run
        # whose first loss was huge (11.6 -> 0.55) a jump 5.4 -> 12 is a small share of the progress
        # and still the event a reader sees first
        local = float(h.center[top[0]])
        doubles = (
            local > 0
            and top[1] >= self.params["warn_over_level"] * local
            and top[2] >= self.params["warn_over_level_sigmas"]
            and top[3] >= 2  # held over two logged points at least: one hard batch is batch noise
        )
        warn = mass >= self.params["warn_mass"] or doubles
        confidence = 0.5 + 0.45 * min(1.0, mass / (2 * self.params["warn_mass"])) * curves.sigmoid((top[2] - self.params["k_sigma"]) / 2)
        steps = [_peak_step(series, c, s[0]) for s in spikes]
        return [
            self.finding(
                series,
                title=f"{series.name} spikes {len(spikes)} time{'s' if len(spikes) != 1 else ''} and recovers; the largest (+{fmt_num(top[1])}) at step {fmt_num(_peak_step(series, c, top[0]))}",
                steps=(min(steps), max(steps)),
                confidence=confidence,
                severity="warning" if warn else "info",
                evidence={
                    "spikes": len(spikes),
                    "spike_steps": steps[:20],
                    "max_height": top[1],
                    "max_height_over_progress": tall,
                    "spike_mass": mass,
                    "max_robust_z": top[2],
                    "local_level_at_max": float(h.center[top[0]]),
                },
            )
        ]

    def _excursion(self, series: Series, c: curves.Curve) -> Finding | None:
        """One broad climb far above where the run started that it later undoes.

        Too wide for the Hampel test (the rolling median rides up with it) and often in the
        opening stretch that test skips: the peak LR of a warmup wrecking a pretrained model's
        features, then many epochs spent getting back to where it began.
        """
        smooth = curves.smooth(c.y, 3)
        start = c.start
        peak_i = int(np.argmax(smooth))
        rise = float(smooth[peak_i]) - start
        if rise < max(self.params["min_excursion"] * abs(start), self.params["min_excursion_noise"] * c.y_noise, curves.TINY):
            return None
        back = np.flatnonzero(smooth[peak_i:] <= start)
        if not len(back) or smooth[-1] > start:
            return None  # never came back below its start: `diverge` or `oscillate`
        back_i = peak_i + int(back[0])
        lost = (back_i - peak_i) / max(len(c) - 1, 1)
        if lost < self.params["min_excursion_recovery"]:
            return None  # a quick wobble from init, or a spike the Hampel test judges
        peak_step, back_step = _peak_step(series, c, peak_i), c.step_at(back_i)
        confidence = 0.55 + 0.4 * min(1.0, rise / (4 * self.params["min_excursion"] * abs(start) + curves.TINY)) * min(1.0, lost / 0.3)
        return self.finding(
            series,
            title=(
                f"{series.name} climbs to {fmt_num(smooth[peak_i])} ({fmt_num(smooth[peak_i] / start)}× its start {fmt_num(start)}) "
                f"at step {fmt_num(peak_step)} and only gets back below its start at step {fmt_num(back_step)}"
            ),
            steps=(c.first_step, back_step),
            confidence=confidence,
            evidence={
                "loss_start": start,
                "excursion_peak": float(smooth[peak_i]),
                "excursion_peak_step": peak_step,
                "recovered_step": back_step,
                "share_of_run_recovering": lost,
                "spike_steps": [peak_step],
            },
        )


def _peak_step(series: Series, c: curves.Curve, bucket: int) -> int:
    """The exact step of the highest raw value inside a bucket (full resolution where it matters)."""
    lo, hi = np.searchsorted(series.steps, [c.first[bucket], c.last[bucket]], side="left")
    values = series.values[lo : hi + 1]
    values = np.where(np.isfinite(values), values, -np.inf)
    return int(series.steps[lo + int(np.argmax(values))])


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of consecutive True values."""
    padded = np.r_[False, mask, False].astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))
