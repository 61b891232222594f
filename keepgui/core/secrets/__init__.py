"""Secrets in agents' memory: found, shown for what they cost, and removed (no Qt, no backend).

* :mod:`~keepgui.core.secrets.detect`: Yelp's detect-secrets plugins and the model providers' key formats, over a text;
* :mod:`~keepgui.core.secrets.scan`: every bank's rows and documents through the protocol, findings, cache, allowlist;
* :mod:`~keepgui.core.secrets.redact`: one undoable Change through each backend's own writes;
* :mod:`~keepgui.core.secrets.purge`: keepgui's own history, journals and caches rid of them.
"""
