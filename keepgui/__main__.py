"""``python -m keepgui``: the same entry point as the ``keepgui`` command."""

import sys

from keepgui.cli import main

sys.exit(main())
