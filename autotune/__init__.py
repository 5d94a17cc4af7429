"""Autotuning of launch shapes (installed as ``cubepy.autotune``). Not built yet: see the README's
status table."""
