"""``python -m switchboard`` is the ``switchboard`` command."""

from switchboard.cli import main

raise SystemExit(main())
