"""The memory backends: one package per agent, Qt-free, independent of each other (see ARCHITECTURE.md)."""
