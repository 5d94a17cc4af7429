"""`cubepy.record.Record`: the records the C renderer loads with a kernel's first compile, made
without dataclasses' generated code."""

from __future__ import annotations

import pickle
from typing import ClassVar

import pytest
from cubepy.backends.cstyle import CUDA, ArgSlot, Rendered

from cubepy.record import Record


class Point(Record):
    x: int
    y: int = 0
    tags: dict = {}
    kind: ClassVar[str] = "point"


class Loose(Record, frozen=False):
    name: str
    label: str = ""

    def __post_init__(self):
        self.label = self.label or self.name


def test_fields_come_from_annotations_and_take_positions_names_and_defaults():
    assert Point._fields == ("x", "y", "tags")
    p = Point(1, tags={"a": 1})
    assert (p.x, p.y, p.tags) == (1, 0, {"a": 1})
    assert repr(Point(2, 3)) == "Point(x=2, y=3, tags={})"
    assert Point(1).tags is not Point(1).tags           # a mutable default is each record's own
    with pytest.raises(TypeError, match="missing the field 'x'"):
        Point()
    with pytest.raises(TypeError, match="'z'"):
        Point(1, z=2)
    with pytest.raises(TypeError, match="repeated field 'x'"):
        Point(1, x=2)


def test_a_frozen_record_refuses_assignment_and_replace_copies_it():
    p = Point(1, 2)
    with pytest.raises(AttributeError, match="frozen Point"):
        p.x = 5
    q = p.replace(y=7)
    assert (q.x, q.y, p.y) == (1, 7, 2) and type(q) is Point
    with pytest.raises(TypeError, match="no field 'w'"):
        p.replace(w=1)
    assert Point(1, 2) == Point(1, 2) != Point(1, 3)
    assert hash(Point(1, 2, None)) == hash(Point(1, 2, None))


def test_an_unfrozen_record_runs_its_post_init_and_is_unhashable():
    r = Loose("k")
    assert r.label == "k"
    r.label = "other"
    assert r.label == "other"
    with pytest.raises(TypeError):
        hash(r)


def test_records_pickle_as_the_renderers_snapshots_do():
    slot = ArgSlot("shape", 1, 0)
    rendered = Rendered("k", "src", [slot], [], 256, 32, 0)
    back = pickle.loads(pickle.dumps(rendered))
    assert back == rendered and back.kernel_name == "k" and back.args[0] == slot
    assert CUDA.with_(name="other").name == "other" and CUDA.name == "cuda"
