"""Which environment variables hold secrets: one rule for what commands may not see and
for what is redacted wherever treadle writes or shows text.

A variable is secret when its name contains one of :data:`SECRET_WORDS` (any case), or
has one of :data:`SECRET_PARTS` as a whole part between underscores (``DB_PASS``,
``MYSQL_PWD``, ``BASIC_AUTH``; not ``PASSAGE`` or ``AUTHOR``, and not ``PWD`` or
``OLDPWD``, the working folder), or when its value is a URL with a password in it
(``DATABASE_URL=postgres://app:hunter2@db/app``), whatever its name.

Example::

    >>> is_secret("DATABASE_URL", "postgres://app:hunter2@db/app"), looks_secret("HOME")
    (True, False)
    >>> url_password("postgres://app:hunter2@db/app")
    'hunter2'
"""

from __future__ import annotations

import re

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
SECRET_PARTS = ("PASS", "PWD", "AUTH")
NOT_SECRET = frozenset({"PWD", "OLDPWD"})

_WORDS = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)
_PARTS = frozenset(SECRET_PARTS)

URL_PASSWORD = r"://[^\s/:@]*:(?P<password>[^\s/@]+)@"
"""A URL with a password (``scheme://user:password@``); the password is its group.
The scheme is not needed to see it, so text cut just after the scheme still shows none."""

_URL_PASSWORD = re.compile(URL_PASSWORD)


def looks_secret(name: str) -> bool:
    """Whether a variable of this name holds a secret, by its name alone."""
    if name.upper() in NOT_SECRET:
        return False
    return _WORDS.search(name) is not None or not _PARTS.isdisjoint(name.upper().split("_"))


def url_password(value: str) -> str | None:
    """The password of the first URL in ``value`` that has one, else None."""
    found = _URL_PASSWORD.search(value)
    return found.group("password") if found else None


def is_secret(name: str, value: str) -> bool:
    """Whether the variable ``name=value`` holds a secret (its name, or a URL password)."""
    return looks_secret(name) or url_password(value) is not None
