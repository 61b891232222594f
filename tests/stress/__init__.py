"""``make stress``: the long versions of the reliability scenarios, summarised in one table.

``python -m tests.stress [--quick]``; see :mod:`tests.stress.__main__`.
"""
