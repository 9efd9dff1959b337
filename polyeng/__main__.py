"""``python -m polyeng``: the command line."""
from .cli import main

raise SystemExit(main())
