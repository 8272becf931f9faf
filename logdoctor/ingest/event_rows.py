"""What the vectorised event decoder made of each record of a batch, one array per column.

Two decoders fill it: the field parser in `tfevents` (any layout it knows) and `event_shapes`
(records shaped like one the parser already read). A batch's parts are put together here, and
their tag codes brought onto one list of names, before the values are collected in file order.
Names are listed in order of first appearance, so parts read in file order append to the list.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ACCEPT, PENDING = 0, 1  # a scalar; a metadata-less tensor waiting for its tag's plugin
#: `value_kind`: how a record's value is stored (0: not at a fixed place, e.g. a varint half).
VALUE_DTYPES = {1: "<f4", 2: "<f8", 3: "<f2"}


@dataclass
class Decoded:
    """Per record of a batch (arrays of its length): what the decoder made of it.

    `code` indexes `names`, the distinct tags in order of first appearance. The layout columns say where a record's varying bytes lie, relative to its start: wall time (8 bytes at
    `wall_at`), the step's varint (bytes `step_at` to `step_end`), the value (at `value_at`, of
    `value_kind`); -1 where a record has none."""

    fallback: np.ndarray
    take: np.ndarray
    tagged: np.ndarray
    code: np.ndarray
    step: np.ndarray
    wall: np.ndarray
    value: np.ndarray
    state: np.ndarray
    has_md: np.ndarray
    is_scalars: np.ndarray
    wall_at: np.ndarray
    step_at: np.ndarray
    step_end: np.ndarray
    value_at: np.ndarray
    value_kind: np.ndarray
    names: list[bytes]

    ROWS = ("fallback", "take", "tagged", "code", "step", "wall", "value", "state", "has_md", "is_scalars",
            "wall_at", "step_at", "step_end", "value_at", "value_kind")

    @classmethod
    def empty(cls, n: int) -> Decoded:
        """n records nothing was decoded from yet."""
        def none() -> np.ndarray:
            return np.full(n, -1, np.int64)

        def no() -> np.ndarray:
            return np.zeros(n, bool)

        return cls(fallback=no(), take=no(), tagged=no(), code=none(), step=np.zeros(n, np.int64), wall=np.zeros(n),
                   value=np.full(n, np.nan), state=np.zeros(n, np.int8), has_md=no(), is_scalars=no(),
                   wall_at=none(), step_at=none(), step_end=none(), value_at=none(), value_kind=np.zeros(n, np.int8),
                   names=[])

    def put(self, at: np.ndarray, part: Decoded) -> None:
        """Copy `part`'s records into records `at` of this one, tag codes onto this one's names."""
        codes = on_names(part, self)
        for name in self.ROWS:
            getattr(self, name)[at] = getattr(part, name)
        if len(codes):
            self.code[at] = np.where(part.code >= 0, codes[np.maximum(part.code, 0)], -1)


def on_names(part: Decoded, whole: Decoded) -> np.ndarray:
    """`part`'s tag codes as codes of `whole`, appending the names `whole` lacked. Parts are put
    in file order and each part's new names first appear after every name already listed (its
    records follow every record put before them that the earlier names were first read from), so
    the list stays in order of first appearance."""
    where = {name: i for i, name in enumerate(whole.names)}
    for name in part.names:
        where.setdefault(name, len(where))
    whole.names = list(where)
    return np.array([where[name] for name in part.names], np.int64)
