"""What to write instead, for a call a kernel cannot make (``math.sqrt(x)``, ``np.exp(x)``)."""

from __future__ import annotations

# math / NumPy names whose cubepy function has another name
_RENAMED = {"fabs": "abs", "absolute": "abs", "fmin": "min", "fmax": "max", "minimum": "min", "maximum": "max",
            "power": "pow", "clip": "clamp", "where": "select"}


def _cubepy_function(name: str) -> str | None:
    import cubepy

    target = _RENAMED.get(name, name)
    return target if callable(getattr(cubepy, target, None)) else None


def not_a_cubepy_function_hint(func) -> str:
    """The end of the "is not a cubepy function" message: the cubepy function to use for a
    ``math``/NumPy one, else how to make a Python function callable."""
    module = getattr(func, "__module__", None) or type(func).__module__ or ""
    name = getattr(func, "__name__", "")
    if module.partition(".")[0] in ("math", "numpy", "cmath", "cupy", "torch", "jax") or module == "builtins":
        ours = _cubepy_function(name)
        if ours is not None:
            return f"use cb.{ours}(...) instead"
        return (f"cubepy has no {name}; write it from cubepy's functions (cb.sqrt, cb.exp, cb.log, "
                "cb.fma, ...) in a @cb.func")
    return "decorate it with @cb.func to call it from kernels"
