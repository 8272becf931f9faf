"""Event files written by the real writer (torch.utils.tensorboard) for the TensorBoard tests.

Every helper returns what it wrote so a test can compare the reader's output
with the truth rather than with a second reading of the same bytes.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

import pytest

pytest.importorskip("torch.utils.tensorboard")
from torch.utils.tensorboard import SummaryWriter  # noqa: E402
from torch.utils.tensorboard.summary import hparams as hparams_summary  # noqa: E402
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata  # noqa: E402
from tensorboard.compat.proto.tensor_pb2 import TensorProto  # noqa: E402

REAL = Path(__file__).parents[2] / "shared" / "real-logs"


def event_file(folder: Path) -> Path:
    (path,) = sorted(Path(folder).glob("events.out.tfevents.*"))
    return path


def write_scalars(folder: Path, tags=("train/loss", "val/acc"), steps=range(50), new_style=False, double=False,
                  offset=0.0, extra_values=()) -> dict[tuple[str, int], float]:
    """add_scalar for every tag and step; returns {(tag, step): value as stored} (float32 unless double)."""
    truth = {}
    with SummaryWriter(log_dir=str(folder)) as writer:
        for step in steps:
            for j, tag in enumerate(tags):
                value = math.exp(-step / 20) * (j + 1) + offset + 0.01 * math.sin(step)
                writer.add_scalar(tag, value, step, new_style=new_style, double_precision=double)
                truth[(tag, step)] = value if double else float(np.float32(value))
        for tag, step, value in extra_values:
            writer.add_scalar(tag, value, step, new_style=new_style)
            truth[(tag, step)] = float(np.float32(value))
    return truth


def write_mixed(folder: Path) -> dict[tuple[str, int], float]:
    """Scalars amid histograms, images, text and a graph-free hparams record, plus
    records only the protobuf path decodes: a two-value event, half / double /
    tensor_content tensors and a metadata-less tensor after a tagged one."""
    truth = {}
    rng = np.random.default_rng(0)
    with SummaryWriter(log_dir=str(folder)) as writer:
        fw = writer._get_file_writer()
        for step in range(20):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
            truth[("loss", step)] = float(np.float32(1.0 / (step + 1)))
            writer.add_histogram("weights", rng.normal(size=100), step)
            writer.add_text("note", f"step {step}", step)
            if step % 5 == 0:
                writer.add_image("sample", rng.random((3, 4, 4)), step)
        scalars = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
        # one event holding two values (TF1 merged summaries)
        fw.add_summary(Summary(value=[Summary.Value(tag="a", simple_value=1.5), Summary.Value(tag="b", simple_value=2.5)]), 30)
        truth[("a", 30)], truth[("b", 30)] = 1.5, 2.5
        half = np.array([0.333], dtype=np.float16)
        fw.add_summary(Summary(value=[Summary.Value(tag="half", metadata=scalars, tensor=TensorProto(
            dtype=19, half_val=[int(half.view(np.uint16)[0])]))]), 31)
        truth[("half", 31)] = float(half[0])
        fw.add_summary(Summary(value=[Summary.Value(tag="content", metadata=scalars, tensor=TensorProto(
            dtype=2, tensor_content=np.array([0.1], "<f8").tobytes()))]), 32)
        truth[("content", 32)] = 0.1
        # TF1 writers strip repeated metadata: the second value inherits "scalars" from the first
        for step, value in ((33, 4.0), (34, 5.0)):
            meta = {"metadata": scalars} if step == 33 else {}
            fw.add_summary(Summary(value=[Summary.Value(tag="stripped", tensor=TensorProto(dtype=1, float_val=[value]), **meta)]), step)
            truth[("stripped", step)] = value
        # a metadata-less tensor of a tag never marked as scalars is not a scalar
        fw.add_summary(Summary(value=[Summary.Value(tag="unknown", tensor=TensorProto(dtype=1, float_val=[9.0]))]), 35)
    return truth


def write_hparams(folder: Path) -> dict:
    """A run that logs scalars and then `add_hparams` (which writes a timestamped subfolder)."""
    hp = {"lr": 0.003, "batch_size": 64, "optimizer": "adamw", "amp": True}
    with SummaryWriter(log_dir=str(folder)) as writer:
        for step in range(10):
            writer.add_scalar("train/loss", 2.0 - step / 10, step)
        writer.add_hparams(hp, {"hparam/final_loss": 1.1}, run_name="hp")
    return hp


def hparams_in_main_file(folder: Path, hp: dict) -> None:
    """Lightning style: the hparams records go into the run's own event file."""
    with SummaryWriter(log_dir=str(folder)) as writer:
        exp, ssi, sei = hparams_summary(hp, {})
        for record in (exp, ssi, sei):
            writer._get_file_writer().add_summary(record)
        writer.add_scalar("loss", 0.5, 0)
