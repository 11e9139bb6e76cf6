"""`python -m synclog`."""

import sys

from synclog.cli.main import main

sys.exit(main())
