"""`python -m handrail` runs the CLI."""

from handrail._cli import main

raise SystemExit(main())
