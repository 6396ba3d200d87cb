"""``python -m edgevoice.device.cli``: the same as the ``edgevoice`` command."""

import sys

from edgevoice.device.cli import main

sys.exit(main())
