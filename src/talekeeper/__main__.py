"""``python -m talekeeper`` runs the command line."""

from talekeeper.cli.main import main

raise SystemExit(main())
