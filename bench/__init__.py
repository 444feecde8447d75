"""``make bench``: each module's ``run()`` returns its report lines."""
