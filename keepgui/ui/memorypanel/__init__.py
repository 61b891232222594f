"""The Memories panel: filter bar, tag chips, the memory table and the detail panel.

One room per concern, each layer built on the one before it:

- :mod:`~keepgui.ui.memorypanel.model`: the table's source model and the proxy that filters and
  sorts it in bulk; :mod:`~keepgui.ui.memorypanel.table` its view and
  :mod:`~keepgui.ui.memorypanel.columns` its column widths;
- :mod:`~keepgui.ui.memorypanel.search`: the word index, asked as the person types;
- :mod:`~keepgui.ui.memorypanel.chips`: the tag chips;
- :mod:`~keepgui.ui.memorypanel.view`: the widgets, the filters, the status line, the selection;
- :mod:`~keepgui.ui.memorypanel.feed`: the hub's deliveries of rows, and the tables built off the
  GUI thread;
- :mod:`~keepgui.ui.memorypanel.panel`: :class:`MemoryPanel`, the panel and its actions.
"""

from keepgui.ui.memorypanel.panel import MemoryPanel

__all__ = ["MemoryPanel"]
