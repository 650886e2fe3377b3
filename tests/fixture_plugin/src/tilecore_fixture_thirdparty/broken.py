"""A plugin that fails on import (the core must report it and keep working)."""

raise RuntimeError("this plugin is deliberately broken")
