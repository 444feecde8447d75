"""The interfaces the core depends on: each port is a :class:`typing.Protocol` over the
domain's values (:mod:`treadle.domain.values`). Expected failures come back as
:class:`returns.result.Result` values; exceptions are for bugs.
"""
