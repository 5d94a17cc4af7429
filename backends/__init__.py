"""Backends, installed as ``cubepy.backends``: one package each (see cubepy/runtime/backend.py)."""
