"""What dynamic replay is given: a --model that must match the checkpoint, batches of any shape, a budget."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import _replay_models as models  # noqa: E402
from _replay_models import single_thread  # noqa: E402,F401

from logdoctor.replay import ReplayError  # noqa: E402
from logdoctor.replay.runner import ReplayOptions, run_replay  # noqa: E402
from logdoctor.replay.target import split_batch  # noqa: E402

MODELS = Path(models.__file__)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A briefly trained MLP's checkpoint and its batch."""
    folder = tmp_path_factory.mktemp("replay_inputs")
    model = models.mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    models.train(model, opt, 5)
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 5}, folder / "ckpt.pt")
    torch.save(models.batch(), folder / "batch.pt")
    return folder


def replay(run_dir: Path, factory: str = "mlp", **options):
    options.setdefault("batch", str(run_dir / "batch.pt"))
    return run_replay(run_dir / "ckpt.pt", ReplayOptions(model=f"{MODELS}:{factory}", device="cpu", **options))


def by_code(result) -> dict:
    return {o.probe.code: o for o in result.outcomes}


def test_a_model_that_does_not_match_is_critical_and_dynamic_probes_do_not_pretend(run_dir):
    result = replay(run_dir, "mlp_other_head", config=_only("partial_load", "no_grad", "overfit_batch_failed"))
    outcomes = by_code(result)
    finding = outcomes["partial_load"].findings[0]
    assert finding.severity == "critical" and finding.evidence["shape_mismatch"] == ["5.weight", "5.bias"]
    assert outcomes["no_grad"].status == "skipped" and "partial_load" in outcomes["no_grad"].reason
    assert outcomes["overfit_batch_failed"].status == "skipped"
    assert by_code(replay(run_dir, config=_only("partial_load")))["partial_load"].status == "clear"


def _only(*codes):
    from logdoctor.config import Config

    return Config(select=list(codes))


def test_tuple_batches_put_inputs_first_and_targets_second():
    x, y, ids = torch.randn(4, 3), torch.tensor([0, 1, 0, 1]), torch.arange(4)
    inputs, targets = split_batch((x, y, ids), "b.pt")
    assert inputs is x and targets is y  # the ids after the targets are no input
    inputs, targets = split_batch((x, x, y), "b.pt", targets_index=2)
    assert inputs == (x, x) and targets is y  # two inputs before the targets: positional arguments
    inputs, targets = split_batch((y, x), "b.pt", targets_index=0)
    assert inputs is x and targets is y
    with pytest.raises(ReplayError, match="--targets-index 5 is outside a batch of 3"):
        split_batch((x, y, ids), "b.pt", targets_index=5)


def test_mapping_batches_such_as_batch_encoding():
    from collections import UserDict  # what transformers' BatchEncoding is

    ids, mask, labels = torch.ones(2, 5, dtype=torch.long), torch.ones(2, 5), torch.zeros(2, dtype=torch.long)
    inputs, targets = split_batch(UserDict({"input_ids": ids, "attention_mask": mask, "labels": labels}), "b.pt")
    assert set(inputs) == {"input_ids", "attention_mask"} and targets is labels


class Opaque:
    """A class the safe loader does not know."""


def test_the_batch_file_has_its_own_trust_flag(run_dir, tmp_path):
    x, y = models.batch()
    torch.save((x, y, Opaque()), tmp_path / "odd_batch.pt")
    with pytest.raises(ReplayError, match="refusing to unpickle.*--trust-batch"):
        replay(run_dir, batch=str(tmp_path / "odd_batch.pt"), trust=True)  # trusting the checkpoint is not enough
    said = []
    result = replay(run_dir, batch=str(tmp_path / "odd_batch.pt"), trust_batch=True, say=said.append, config=_only("no_grad"))
    assert by_code(result)["no_grad"].status == "clear"
    assert any(line.startswith("warning: --trust-batch") for line in said) and result.warnings[0].startswith("warning: --trust-batch")


def test_a_spent_budget_cuts_the_dynamic_probes_and_says_so(run_dir):
    result = replay(run_dir, budget=1e-9, config=_only("nan_weights", "no_grad", "lr_range"))
    outcomes = by_code(result)
    assert outcomes["nan_weights"].status == "clear"  # static probes are cheap and always run
    assert outcomes["no_grad"].status == "skipped" and outcomes["no_grad"].reason == "the --budget was spent"
    assert "--budget" in result.summary()


def test_hf_causal_lm_uses_its_own_shifted_loss(tmp_path):
    """--model hf on a folder with config.json; with `labels` in the batch the model's own loss is used (a causal
    LM shifts the labels itself, which a loss applied from outside would not)."""
    transformers = pytest.importorskip("transformers")
    from logdoctor.replay.checkpoint import load_checkpoint
    from logdoctor.replay.target import build_target

    config = transformers.GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=1, n_head=2, architectures=["GPT2LMHeadModel"])
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    model.save_pretrained(tmp_path / "checkpoint-1")
    ids = torch.randint(0, 50, (8, 12), generator=torch.Generator().manual_seed(0))
    torch.save(transformers.BatchEncoding({"input_ids": ids, "labels": ids}), tmp_path / "batch.pt")
    target = build_target(load_checkpoint(tmp_path / "checkpoint-1"), "hf", str(tmp_path / "batch.pt"), None, None, "cpu")
    assert target.own_loss and not target.partial
    model.eval(), target.model.eval()  # dropout off on both sides
    loss, logits = target.loss(target.model)
    with torch.no_grad():
        assert torch.allclose(loss, model(input_ids=ids, labels=ids).loss) and target.classes(logits) == 50


def test_timm_model_is_built_from_the_saved_args(monkeypatch, tmp_path):
    """timm does not install beside the CPU torch build here, so its create_model is stood in for: the name and
    class count come from the checkpoint's args, and pretrained weights are never asked for."""
    import argparse
    import types

    from logdoctor.replay.checkpoint import load_checkpoint
    from logdoctor.replay.target import model_factory

    calls = []
    fake = types.SimpleNamespace(create_model=lambda name, **kw: calls.append((name, kw)) or models.mlp())
    monkeypatch.setitem(__import__("sys").modules, "timm", fake)
    args = argparse.Namespace(model="resnet18", num_classes=models.CLASSES, epochs=5)
    torch.save({"arch": "resnet18", "state_dict": models.mlp().state_dict(), "epoch": 4, "args": args}, tmp_path / "last.pth.tar")
    ckpt = load_checkpoint(tmp_path / "last.pth.tar")
    model_factory("timm", ckpt)()
    model_factory("timm:other_net", ckpt)()
    assert calls == [("resnet18", {"pretrained": False, "num_classes": 10}), ("other_net", {"pretrained": False, "num_classes": 10})]


def test_a_lightning_class_missing_a_required_argument_is_named(run_dir, tmp_path):
    (tmp_path / "nets.py").write_text("from torch import nn\nclass Net(nn.Module):\n    def __init__(self, width, depth=2):\n        super().__init__()\n")
    with pytest.raises(ReplayError, match=r"Net\(\) needs width, which the checkpoint's saved hyperparameters do not hold"):
        run_replay(run_dir / "ckpt.pt", ReplayOptions(model=f"{tmp_path / 'nets.py'}:Net", batch=str(run_dir / "batch.pt"), device="cpu"))
