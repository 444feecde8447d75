"""The interfaces the core depends on, and the values that cross them.

Every port is a :class:`typing.Protocol`; the values are frozen dataclasses.
Expected failures come back as :class:`returns.result.Result` values.
"""
