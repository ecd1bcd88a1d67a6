"""`python -m geneb.cli`: the `geneb` command."""

import sys

from geneb.cli.app import main

sys.exit(main())
