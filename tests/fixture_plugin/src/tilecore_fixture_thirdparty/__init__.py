"""A third-party tilecore plugin used by the core's tests."""
