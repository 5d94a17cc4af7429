"""`Record`: a class of named fields, made without `dataclasses`' generated code.

``@dataclass`` writes and compiles an ``__init__``, ``__repr__`` and ``__eq__`` (and more when
frozen) for each class as its module loads. The C renderer's records load with a kernel's first
compile, so they cost that compile: as dataclasses they were most of the renderer's import
(``python -X importtime -c "import cubepy; import cubepy.backends.cstyle.renderer"``: 7.0 ms,
2.5 ms as records, 2-core Zen 4, Python 3.11); a `Record` subclass costs nothing to define.
Fields are the class's annotations, in order; a class attribute is the field's default (a dict,
list or set default is copied for each record). Frozen unless the class says ``frozen=False``.
"""

from __future__ import annotations

from typing import Any, ClassVar

_COPIED = (dict, list, set)


class Record:
    """Fields from annotations, ``__init__`` by position or name, ``replace``, equality, repr,
    a hash of the fields when frozen; pickles as a plain object."""

    _fields: ClassVar[tuple[str, ...]] = ()
    _frozen: ClassVar[bool] = True

    def __init_subclass__(cls, frozen: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            for name, annotation in vars(klass).get("__annotations__", {}).items():
                if "ClassVar" not in str(annotation) and name not in names:
                    names.append(name)
        cls._fields, cls._frozen = tuple(names), frozen
        if not frozen:
            cls.__hash__ = None        # mutable: unhashable, as a dataclass with eq is

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls, fields = type(self), self._fields
        if len(args) > len(fields):
            raise TypeError(f"{cls.__name__}() takes {len(fields)} fields, got {len(args)} values")
        values = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields or name in values:
                raise TypeError(f"{cls.__name__}() got an unexpected or repeated field {name!r}")
            values[name] = value
        if len(values) < len(fields):
            for name in fields:
                if name not in values:
                    if not hasattr(cls, name):
                        raise TypeError(f"{cls.__name__}() is missing the field {name!r}")
                    default = getattr(cls, name)
                    values[name] = default.copy() if type(default) in _COPIED else default
        self.__dict__.update({name: values[name] for name in fields})
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    def replace(self, **changes: Any) -> Record:
        """A copy with ``changes`` to some fields."""
        unknown = changes.keys() - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__, **changes)
        return new

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if self._frozen:
            raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")
        object.__delattr__(self, name)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(tuple(self.__dict__[name] for name in self._fields))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={self.__dict__[name]!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"
