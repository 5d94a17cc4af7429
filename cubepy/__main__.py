"""``python -m cubepy COMMAND ...``: the same as the ``cubepy`` console script."""

from cubepy.cli import main

raise SystemExit(main())
