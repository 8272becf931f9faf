"""The evidence keys rules report, in words a person knows: a name, a unit, a meaning.

JSON keeps each rule's precise key (`val_relative_change`); people read a named
quantity with its unit ("val loss change from its best +84%"). This table is
the one place both come from: the human renderers phrase evidence with it, and
docs/json.md documents every key from it (a test checks that every key the
rules report on the bundled runs is here). A key that is not here, such as a
replay probe's, is still shown, phrased from its name (`report.text`).

Each entry: key -> (label, kind, meaning). `kind` picks the number style:

    level    a loss / metric value            2.301
    step     a training step                  step 1,032
    steps    a list of steps                  steps 743, 1,486, ...
    count    a whole number                   9
    share    a fraction of 1, shown in %      84%
    change   a relative change, signed %      +84%
    times    a ratio                          70.6×
    sigmas   a multiple of the noise          12× the noise
    per1k    a slope per 1,000 steps          -1.15 per 1k steps
    p        a p-value                        p = 1.4e-7
    r        a correlation / rank statistic   r = 0.96
    decades  powers of ten                    2.1 decades
    value    anything else, as it is          yes, max_grad_norm
    title    said by the finding's headline   (JSON only: not repeated in the evidence line)
"""
from __future__ import annotations

#: Shared by every rule that reports the key (a rule-specific meaning goes under "code.key").
TERMS: dict[str, tuple[str, str, str]] = {
    # loss levels: smoothed levels (the glance line shows the raw logged points)
    "loss_start": ("loss level at start", "level", "the loss's smoothed level over the opening of the run"),
    "loss_end": ("loss level at end", "level", "the loss's smoothed level at the end of the run"),
    "loss_best": ("best loss level", "level", "the lowest smoothed loss level reached"),
    # the did-it-learn judgement (logdoctor/learning.py)
    "learned": ("learned", "title", "the did-it-learn judgement: false when the run never learned"),
    "reason": ("why", "title", "what made the judgement: ended no lower than it started, at chance, a metric at 0, validation never improved"),
    "change_noise": ("noise of the change", "level", "how far the end level may lie from the start level by noise alone (2 standard errors of their difference, from the point noise)"),
    "claim": ("claim", "title", "the relation the headline states between its numbers (logdoctor/claims.py checks it before reporting)"),
    "chance_level": ("chance level", "level", "ln K: the cross-entropy of a uniform guess over K classes"),
    "chance_tolerance": ("chance tolerance", "level", "how close to ln K the loss must end to sit at chance (5% of ln K)"),
    "metric_zero_points": ("closing points at 0", "count", "the task metric's closing evaluations that are exactly 0"),
    "accuracy_end": ("accuracy at end", "share", "the accuracy's level at the end, compared with chance 1/K"),
    "metric": ("task metric", "value", "the task metric the judgement read"),
    "metric_end": ("task metric at end", "level", "the task metric's level over its closing points"),
    "val_loss_best": ("best validation loss", "level", "the lowest validation loss after its first evaluation"),
    "val_log10_span": ("validation span", "decades", "how many powers of ten the validation loss spans in the second half"),
    "val_swings": ("validation swings", "count", "turns of the validation loss by 4× or more (0.6 decades) against its previous move"),
    "train_log10_span": ("training span", "decades", "how many powers of ten the training loss spans in the second half"),
    "discriminator_end": ("discriminator loss at end", "level", "a GAN discriminator's loss level at the end (near 0: it won)"),
    "best_step": ("best at", "step", "the step of the best loss level"),
    "loss_initial_level": ("opening level", "level", "the loss's level over the opening tenth of the run"),
    "points": ("points", "count", "points in the judged series"),
    "trend_tau": ("trend steadiness τ", "r", "Mann-Kendall rank correlation of the level with the step: -1 always falling, +1 always rising"),
    "p_value": ("trend", "p", "p-value of the Mann-Kendall trend test"),
    "relative_drop": ("fall start to end", "share", "(start level - end level) / start level"),
    "noise_sigma": ("noise (std dev)", "level", "robust standard deviation of the point-to-point noise"),
    "kind": ("kind", "value", "which form of the problem was found"),
    # flat
    "relative_best_drop": ("fall start to best", "share", "(start level - best level) / start level"),
    "fall_after_opening_sigmas": ("fall after the opening", "sigmas", "fall after the opening tenth, in noise sigmas (a learning curve on a large constant falls many)"),
    "fall_after_opening_share": ("share of the fall after the opening", "share", "the part of the whole fall that comes after the opening tenth"),
    "constant": ("bit-identical values", "value", "every logged value is the same"),
    "validation_frozen": ("val loss frozen", "value", "the validation loss stays within 0.5% over every evaluation (weights that never moved)"),
    "frozen_level": ("frozen at", "level", "the level the training loss repeats after its fall"),
    "frozen_from_step": ("frozen from", "step", "the first step of the frozen stretch"),
    "frozen_share": ("frozen share of the run", "share", "the frozen stretch as a share of the logged points"),
    "frozen_spread": ("spread while frozen", "share", "(max - min) / level over the frozen stretch"),
    # crawl
    "relative_drop_end_to_end": ("fall first to last point", "share", "(first logged value - last logged value) / first logged value"),
    "slope_per_1k_steps": ("slope", "per1k", "Theil-Sen slope of the level, per 1,000 steps"),
    "early_slope_per_1k_steps": ("first-half slope", "per1k", "Theil-Sen slope over the first half, per 1,000 steps"),
    "late_slope_per_1k_steps": ("second-half slope", "per1k", "Theil-Sen slope over the second half, per 1,000 steps"),
    "late_to_early_slope": ("second-half / first-half slope", "times", "below ~0.3 the curve is levelling off (converging), not crawling"),
    # diverge
    "first_nonfinite_step": ("first NaN/inf at", "step", "the first step whose loss is NaN or inf"),
    "nonfinite_points": ("NaN/inf points", "count", "points that are NaN or inf"),
    "total_points": ("points in all", "count", "points in the series"),
    "nan_tail": ("never recovers", "value", "every point after the first NaN/inf is NaN/inf too"),
    "loss_last_finite": ("last finite loss", "level", "the last finite value before the NaN/inf tail"),
    "loss_best_before": ("best loss before", "level", "the lowest finite value before the NaN/inf tail"),
    "onset_step": ("blow-up starts at", "step", "where the climb begins"),
    "rise_over_progress": ("rise / earlier progress", "times", "how far the loss climbed back, as a multiple of what it had gained (1 = back to the start)"),
    "growth_factor": ("end / best", "times", "the end level as a multiple of the best level"),
    "rise_over_noise": ("rise", "sigmas", "the climb in noise sigmas"),
    # oscillate
    "excursion_rate": ("leaps above the running level", "share", "share of the second half's points far above the rolling median"),
    "excursion_burst_lift": ("back-to-back leaps vs chance", "times", "P(leap given a leap before) / P(leap): above 1, leaps cluster"),
    "excursion_median_sigmas": ("typical leap", "sigmas", "median leap height in noise sigmas"),
    "relapse_rate": ("leaps back above the start", "share", "share of leaps that go back above where the run started"),
    "late_noise_over_progress": ("late noise / progress", "share", "the second half's noise as a share of the run's progress"),
    "late_sign_change_rate": ("late direction changes", "share", "share of consecutive steps that change direction in the second half (0.5 = random, ~1 = zigzag)"),
    "late_lag1_autocorrelation": ("late lag-1 autocorrelation", "r", "near -1: a step-to-step zigzag"),
    "late_high_freq_power": ("late high-frequency power", "share", "share of the second half's variance at the highest frequencies"),
    "excursion_threshold_over_progress": ("leap threshold / progress", "share", "how high a point must be above the running level to count as a leap"),
    "max_excursion_over_progress": ("largest leap / progress", "share", "the largest leap as a share of the run's progress"),
    "late_gain_over_progress": ("second-half gain / progress", "share", "what the second half still gained, as a share of the whole progress"),
    "rebound_over_progress": ("climb back / progress", "share", "how far the loss climbed back after its best, as a share of the progress"),
    # spike
    "spikes": ("spikes", "count", "Hampel outliers that recover"),
    "spike_steps": ("spikes at", "steps", "the spikes' steps"),
    "max_height": ("largest spike height", "level", "height of the largest spike above the local level"),
    "max_height_over_progress": ("largest spike / progress", "times", "the largest spike as a multiple of the run's progress"),
    "spike_mass": ("spikes, weighted by height", "count", "sum over the spikes of min(1, height / progress): 1 or more warns"),
    "max_robust_z": ("largest spike", "sigmas", "the largest spike in robust sigmas (rolling MAD) above the local level"),
    "local_level_at_max": ("local level there", "level", "the rolling median at the largest spike"),
    # epoch_jumps
    "epochs": ("epochs", "count", "epochs found"),
    "epochs_from": ("epochs read from", "value", "the epoch counter, or the loss's own period"),
    "points_per_epoch": ("points per epoch", "count", "logged points per epoch"),
    "split_half_r": ("pattern repeat r", "r", "correlation of the within-epoch profile of the first and second half of the epochs"),
    "pattern_amplitude": ("pattern height", "level", "peak-to-peak height of the within-epoch profile"),
    "amplitude_over_progress": ("pattern height / progress", "share", "the pattern's height as a share of the run's progress"),
    "boundary_jump": ("jump at each epoch start", "level", "loss at an epoch's start minus at the previous epoch's end (negative: a drop)"),
    "boundary_steps": ("epoch starts", "steps", "the steps where epochs begin"),
    # overfit
    "val_best": ("best validation level", "level", "the best validation loss (or metric) level"),
    "val_best_step": ("best val at", "step", "the step of the best validation level"),
    "val_end": ("validation at end", "level", "the validation level at the end"),
    "val_relative_change": ("validation change from its best", "change", "(end - best) / best"),
    "val_noise": ("val noise (std dev)", "level", "robust noise of the validation series"),
    "evaluations_after_best": ("evaluations after the best", "count", "validation points after the best one"),
    "val_trend_tau": ("val trend steadiness τ after its best", "r", "rank correlation of the validation level with the step after its best"),
    "val_trend_p": ("val trend", "p", "p-value of that trend"),
    "val_held_share": ("evaluations still up", "share", "share of later evaluations at least half the rise above the best"),
    "train_at_val_best": ("train loss at the val best", "level", "the training level at the best validation step"),
    "train_end": ("train loss at end", "level", "the training level at the end"),
    "task_metric": ("task metric", "value", "the validation accuracy / error metric logged beside the loss"),
    "task_metric_at_val_best": ("task metric at the val best", "level", "its value at the validation loss's best step"),
    "task_metric_end": ("task metric at end", "level", "its value at the end"),
    # lr_schedule_mismatch
    "lr_start": ("LR at start", "level", "the first logged learning rate"),
    "lr_mid": ("LR at mid-run", "level", "the learning rate half way through"),
    "lr_peak": ("peak LR", "level", "the highest learning rate"),
    "lr_final": ("final LR", "level", "the last logged learning rate"),
    "moving_validation_metric": ("moving validation metric", "value", "another validation number of the run that does move (so the evaluation sees the live model)"),
    "boundary_drops": ("drop at each boundary", "value", "the loss level at the end of each epoch minus the level at the start of the next"),
    "fall_90_at_fraction": ("90% of the fall by", "share", "the share of the run by which the loss made 90% of its fall (early: not held back)"),
    "margin_loss": ("margin-scaled loss", "value", "the margin-scaled softmax (ArcFace, CosFace...) the config or metric names: it starts far above ln K by design"),
    "train_loss_low": ("lowest training loss", "level", "the training loss's lowest level at the evaluations of a constant validation metric"),
    "train_loss_high": ("highest training loss", "level", "the training loss's highest level at the evaluations of a constant validation metric"),
    "val_over_train": ("validation / training loss", "times", "the last validation loss as a multiple of the training loss there (the generalisation gap)"),
    "lr_floor": ("LR at the floor", "level", "the learning rate where it reached the floor the finding counts from"),
    "warmup_end_fraction": ("warmup ends at", "share", "where the LR stops rising, as a share of the run"),
    "floor_step": ("LR at its floor from", "step", "the first step at the floor"),
    "floor_at_fraction": ("floor reached at", "share", "that step as a share of the run"),
    "loss_at_floor": ("loss level at the floor", "level", "the loss level when the LR reached its floor"),
    "gain_after_floor_fraction": ("gain after the floor / progress", "share", "what the loss still gained after the floor, as a share of its whole progress"),
    # scaler_collapse
    "scale_peak": ("peak loss scale", "level", "the highest AMP loss scale"),
    "scale_final": ("final loss scale", "level", "the last logged loss scale"),
    "scale_min": ("lowest loss scale", "level", "the lowest loss scale"),
    "halvings_from_peak": ("halvings from the peak", "count", "log2(peak / lowest)"),
    "halvings_logged": ("halvings logged", "count", "logged steps where the scale halved"),
    "late_halvings": ("second-half halvings", "count", "halvings in the second half of the run"),
    "late_growths": ("second-half doublings", "count", "doublings in the second half of the run"),
    # clip_saturation
    "clip_threshold": ("clip threshold", "level", "the gradient clipping threshold from the config"),
    "threshold_key": ("from config key", "value", "the config key it was read from"),
    "fraction_clipped": ("steps clipped", "share", "share of steps whose gradient norm is above the threshold"),
    "median_norm": ("median grad norm", "level", "the median logged gradient norm"),
    "clip_saturation.median_ratio": ("median norm / threshold", "times", "how far above the threshold the typical norm is"),
    # grad_norm_trend
    "direction": ("direction", "value", "exploding or vanishing"),
    "early_norm": ("grad norm early", "level", "the gradient norm's level early in the run"),
    "late_norm": ("grad norm late", "level", "its level late in the run"),
    "decades": ("change", "decades", "log10(late / early)"),
    "trend_p": ("trend", "p", "p-value of the Mann-Kendall trend test"),
    # init_loss
    "classes": ("classes", "count", "K, from num_classes / num_labels / vocab_size in the config, or from an accuracy sitting at 1/K"),
    "ln_k": ("ln K (chance loss)", "level", "the cross-entropy of a uniform guess over K classes"),
    "ratio_to_ln_k": ("first loss / ln K", "times", "3 or more: the initial logits are far too confident"),
    # val_metric_constant
    "val_metric_constant.value": ("constant value", "level", "the value every evaluation repeats"),
    "evaluations": ("evaluations", "count", "evaluations logged"),
    "spread": ("spread", "level", "max - min over the evaluations"),
    "train_loss_first": ("train loss first", "level", "the first training loss"),
    "train_loss_last": ("train loss last", "level", "the last training loss"),
    "train_relative_change": ("train loss change", "share", "(first - last) / first"),
    # not_checked
    "checked": ("checked", "value", "what could be checked: nothing, or NaN / inf only"),
    "metrics_logged": ("metrics logged", "count", "metrics the run logs"),
    # scaler_collapse, from a skipped-step counter
    "skipped_steps": ("steps skipped", "count", "the skipped-step counter's last value (DeepSpeed's skipped=N)"),
    "skipped_share": ("share skipped", "share", "steps counted as skipped per step, over the window it rises in or since the start"),
    # stopped
    "ending": ("ending", "value", "the class of error the log ends on: out of memory, distributed timeout, loss scale at its minimum, killed, error"),
    "error_line": ("error line", "value", "the log's line that says why the run stopped, as printed"),
    "last_step": ("last logged at", "step", "the step of the loss's last point before the error"),
    "last_loss": ("last loss", "level", "the loss at that step"),
    # added by a replay probe to a log finding it explains
    "confirmed_by": ("confirmed by probe", "value", "replay probes that confirmed a documented cause"),
    "ruled_out_by": ("ruled out by probe", "value", "replay probes that ran clean and excluded causes"),
}

#: Keys read together as "label a → b" (both present, in this order).
PAIRS: dict[str, tuple[str, str]] = {
    "loss_start": ("loss_end", "loss level"),
    "val_best": ("val_end", "validation from its best"),
    "train_at_val_best": ("train_end", "train loss from the val best"),
    "task_metric_at_val_best": ("task_metric_end", "task metric from the val best"),
    "early_norm": ("late_norm", "grad norm"),
    "train_loss_first": ("train_loss_last", "train loss"),
    "scale_peak": ("scale_final", "loss scale from its peak"),
}


def term(key: str, code: str | None = None) -> tuple[str, str, str] | None:
    """The (label, kind, meaning) of an evidence key, a rule-specific entry first."""
    return TERMS.get(f"{code}.{key}") or TERMS.get(key)
