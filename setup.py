"""What pyproject.toml cannot say by itself: find keepgui's packages, and ship resources/ inside them.

Every package under ``keepgui/`` is found (a new backend package cannot drop out
of the wheel by being left off a list); ``resources/`` (icons, the desktop
entry, the demo data) sits at the top of the repository and is installed as
the data of ``keepgui.resources``. Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["keepgui", "keepgui.*"]), "keepgui.resources"],
    package_dir={"keepgui.resources": "resources"},
)
