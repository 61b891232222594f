"""Commands added by a later issue."""


def register(sub, common) -> None:
    """No commands yet."""
    return None
