"""``treadle batch``'s engines and files: turns as processes of this machine
(:mod:`.local`) or as Ray tasks (:mod:`.ray_engine`, the optional extra ``treadle[ray]``),
the RESULTS file and the progress on stderr."""
