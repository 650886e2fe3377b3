"""A plugin whose hooks return malformed values (the core must report and skip them)."""

from tilecore.hookspecs import hookimpl


@hookimpl
def tilecore_register_targets():
    return "sm_80"  # not a list of Target


@hookimpl
def tilecore_register_stages():
    raise ValueError("stage table unavailable")
