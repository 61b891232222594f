"""Entry script for the frozen (PyInstaller) keepgui: the same ``keepgui.cli:main``
that the ``keepgui`` console script and ``python -m keepgui`` run.

Before that it gives back the environment the user started keepgui with. The
PyInstaller bootloader and its PySide6 run-time hook point ``LD_LIBRARY_PATH``,
``QT_PLUGIN_PATH`` and ``QML2_IMPORT_PATH`` into the bundle; keepgui runs other
programs (``iii trigger memory::reload``, the ``--via`` rewrite commands), and they
would inherit those paths and load the bundle's libssl, libstdc++ or Qt plugins
instead of their own. This process needs none of them any more: the dynamic loader
read ``LD_LIBRARY_PATH`` when the process started, and PySide6 finds its plugins
through the ``qt.conf`` it embeds on import (the bundle keeps the wheel's layout).
"""

import os
import sys


def _restore_environment() -> None:
    if not getattr(sys, "frozen", False):
        return
    original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if original is not None:
        os.environ["LD_LIBRARY_PATH"] = original
    else:
        os.environ.pop("LD_LIBRARY_PATH", None)
    bundle = getattr(sys, "_MEIPASS", None)
    for name in ("QT_PLUGIN_PATH", "QML2_IMPORT_PATH"):
        value = os.environ.get(name, "")
        if bundle and value.startswith(bundle):
            del os.environ[name]


_restore_environment()

from keepgui.cli import main  # noqa: E402  (after the environment is restored)

if __name__ == "__main__":
    sys.exit(main())
