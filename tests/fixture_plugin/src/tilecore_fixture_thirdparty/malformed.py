"""A plugin whose hooks return malformed values (the core must report and skip them)."""

from tilecore.conversion import Pattern
from tilecore.hookspecs import hookimpl


@hookimpl
def tilecore_register_targets():
    return "sm_80"  # not a list of Target


@hookimpl
def tilecore_register_stages():
    raise ValueError("stage table unavailable")


class Rootless(Pattern):
    """A pattern that forgot to say which op it rewrites."""

    def rewrite(self, op, rw):
        pass


@hookimpl
def tilecore_register_patterns(stage, target, options):
    return [Rootless()]
