"""The shop API (demo)."""
