"""The depth and width limits read JSON text as a parser would: brackets, colons and escaped quotes
inside strings do not count, and a file scanned in chunks measures as one scanned whole."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logdoctor.ingest import limits
from logdoctor.ingest.limits import MAX_DEPTH, TooDeep, loads, shape

#: Text that fools a naive count: brackets, colons, quotes and runs of backslashes.
tricky = st.text(alphabet='ab{}[]:"\\', max_size=8)
values = st.recursive(
    st.none() | st.floats(allow_nan=False) | st.integers() | tricky,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky, inner, max_size=4),
    max_leaves=30,
)


def _depth(value) -> int:
    if isinstance(value, (dict, list)):
        return 1 + max((_depth(v) for v in (value.values() if isinstance(value, dict) else value)), default=0)
    return 0


def _keys(value) -> int:
    if isinstance(value, dict):
        return len(value) + sum(_keys(v) for v in value.values())
    return sum(_keys(v) for v in value) if isinstance(value, list) else 0


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(values, min_size=1, max_size=5), chunk=st.sampled_from([1, 3, 7, 1 << 20]))
def test_shape_is_the_deepest_nesting_and_the_most_keys_of_a_line(monkeypatch, rows, chunk):
    monkeypatch.setattr(limits, "_CHUNK", chunk)
    text = "\n".join(json.dumps(row) for row in rows).encode()
    assert shape(text) == (max(map(_depth, rows)), max(map(_keys, rows)))


@pytest.mark.parametrize("text", ['{"a":' * 1000 + "1" + "}" * 1000, "[" * 100_000 + "]" * 100_000])
def test_loads_refuses_what_is_nested_past_the_limit(text):
    with pytest.raises(TooDeep, match=f"nested more than {MAX_DEPTH} levels deep"):
        loads(text)


def test_loads_reads_what_is_within_it():
    text = '{"a": "[[[[", "b": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"  # the dict is a level too
    assert loads(text)["a"] == "[[[[" and loads(text.encode())["a"] == "[[[["


json_texts = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers(min_value=-(2**80), max_value=2**80) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=25,
).map(json.dumps)  # json.dumps writes NaN, Infinity and integers past 64 bits, which orjson reads otherwise


@settings(max_examples=400, deadline=None, derandomize=True)
@given(text=json_texts, as_bytes=st.booleans(), bom=st.booleans())
def test_loads_reads_every_text_as_json_loads_does(text, as_bytes, bom):
    """Parsed by orjson where it is sure to agree, else by json: the value is json's either way
    (compared through its repr, so NaN, -0.0 and int-versus-float count)."""
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode() if as_bytes else text
    assert repr(loads(data)) == repr(json.loads(data))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(value=values, limit=st.integers(min_value=0, max_value=6))
def test_deeper_than_is_the_nesting_depth_past_the_limit(value, limit):
    assert limits._deeper_than(value, limit) == (_depth(value) > limit)


@pytest.mark.parametrize("text,integer", [
    (b"[12345678901234567890]", True), (b"[-12345678901234567890]", True), (b"12345678901234567890", True),
    (b"1234567890123456789", True), (b"[123456789012345678]", False),  # 18 digits fit 64 bits
    (b"[0.00028000000000000003]", False),  # a float's fraction: a long run, no integer
    (b"[1.5, 2]", False), (b"", False),
])
def test_an_integer_of_19_digits_is_told_from_a_long_fraction(text, integer):
    assert limits._long_integer(text) is integer
