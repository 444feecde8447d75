"""What network a command may reach: the mode, which host names the proxy lets through,
what the kernel must offer for a mode, and the line a refusal leaves.

Example::

    >>> host_allowed("files.pythonhosted.org", ("pypi.org", "*.pythonhosted.org"), ())
    True
    >>> host_allowed("api.github.com", ("*.github.com",), ("api.github.com",))
    False
    >>> refusal_line("example.com")
    'network: example.com not allowed'
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from treadle.domain.rules.approval import ApprovalPolicy
from treadle.domain.values.process import HostGrant
from treadle.domain.values.tools import ApprovalAnswer

NetworkMode = Literal["on", "off", "allowlist"]
NETWORK_MODES: tuple[NetworkMode, ...] = ("on", "off", "allowlist")
StartNetwork = Literal["on", "off", "allowlist", "loopback", "allowlist+loopback"]
"""What the start of a command enforces (the spawner's NETWORK): a mode, or one with
``network_loopback``, which needs a network namespace of the command's own."""
DEFAULT_NETWORK: NetworkMode = "on"
"""Today's behaviour: a session that does not ask keeps the network it always had
(``pip install``, ``git fetch`` and a test suite's own servers go on working)."""

LANDLOCK_NET_ABI = 4
"""The first Landlock ABI with TCP rules (bind and connect, by port)."""


@dataclass(frozen=True, slots=True)
class NetworkSupport:
    """What the kernel offers for the network: its Landlock ABI (0: none, and
    ``reason``), and whether a seccomp filter can be installed (``seccomp``, else
    ``seccomp_reason``)."""

    abi: int
    seccomp: bool
    reason: str = ""
    seccomp_reason: str = ""


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """How commands are confined on the network: ``mode``, the lists the proxy checks
    under ``allowlist``, and ``loopback``: a loopback of the command's own stays open,
    in a network namespace where it is the only interface (Landlock's TCP rules name
    ports, not addresses: they cannot open a loopback alone)."""

    mode: NetworkMode = DEFAULT_NETWORK
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    loopback: bool = False

    @property
    def confined(self) -> bool:
        return self.mode != "on"

    @property
    def start(self) -> StartNetwork:
        """What each command's start enforces.

        >>> NetworkPolicy("off", loopback=True).start, NetworkPolicy("allowlist").start
        ('loopback', 'allowlist')
        """
        if self.loopback and self.mode == "off":
            return "loopback"
        if self.loopback and self.mode == "allowlist":
            return "allowlist+loopback"
        return self.mode

    @property
    def tcp_rules(self) -> bool:
        """Whether Landlock refuses TCP (all but the proxy's port): not in a namespace
        of the command's own, whose loopback it may use and which reaches nothing else."""
        return self.confined and not self.loopback


@dataclass(frozen=True, slots=True)
class NetworkConfine:
    """Commands are confined to ``policy``: Landlock's TCP rules and the socket filter."""

    policy: NetworkPolicy


@dataclass(frozen=True, slots=True)
class NetworkOpen:
    """Commands keep the whole network; ``warning`` (shown once) says why, empty for on."""

    warning: str = ""


@dataclass(frozen=True, slots=True)
class NetworkBlocked:
    """A mode the person asked for cannot be had: no command runs, each says why."""

    reason: str


NetworkDecision = NetworkConfine | NetworkOpen | NetworkBlocked


def missing_for(policy: NetworkPolicy, support: NetworkSupport) -> str:
    """What the kernel lacks for ``policy``, or "" when it has it all.

    >>> missing_for(NetworkPolicy("off"), NetworkSupport(3, True))
    'Landlock ABI 3 has no network rules (they need ABI 4, Linux 6.7)'
    >>> missing_for(NetworkPolicy("on"), NetworkSupport(0, False, "no Landlock"))
    ''
    """
    if not policy.confined:
        return ""
    if support.abi <= 0:
        return support.reason or "the kernel has no Landlock"
    if support.abi < LANDLOCK_NET_ABI:
        return (
            f"Landlock ABI {support.abi} has no network rules "
            f"(they need ABI {LANDLOCK_NET_ABI}, Linux 6.7)"
        )
    if not support.seccomp:
        return support.seccomp_reason or "no seccomp filter can be installed"
    return ""


def decide_network(
    policy: NetworkPolicy, explicit: bool, support: NetworkSupport
) -> NetworkDecision:
    """What commands get on the network, from the setting (``explicit`` when the person
    chose it) and the kernel: an explicit mode is never quietly dropped; a default one
    the kernel cannot give warns once and leaves the network open.

    >>> decide_network(NetworkPolicy("off"), True, NetworkSupport(7, True))
    NetworkConfine(policy=NetworkPolicy(mode='off', allow=(), deny=(), loopback=False))
    >>> decide_network(NetworkPolicy("off"), True, NetworkSupport(3, True)).reason[:36]
    'sandbox_network = off was asked for,'
    """
    missing = missing_for(policy, support)
    if not policy.confined:
        return NetworkOpen()
    if not missing:
        return NetworkConfine(policy)
    if explicit:
        return NetworkBlocked(f"sandbox_network = {policy.mode} was asked for, but {missing}")
    return NetworkOpen(f"commands keep the network: {missing}")


def server_network(session: NetworkPolicy, own: str) -> NetworkPolicy:
    """What network an MCP server started by a command reaches: the session's policy,
    with the server's own ``network`` (on, off, allowlist) over its mode.

    >>> server_network(NetworkPolicy("allowlist", ("pypi.org",)), "off").mode
    'off'
    >>> server_network(NetworkPolicy("off"), "").mode
    'off'
    """
    for mode in NETWORK_MODES:
        if own == mode:
            return replace(session, mode=mode)
    return session


def normal_host(host: str) -> str:
    """A host name as the lists compare it: lower case, no trailing dot, no brackets.

    >>> normal_host("PyPI.org."), normal_host("[::1]")
    ('pypi.org', '::1')
    """
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


def host_matches(host: str, pattern: str) -> bool:
    """Whether ``host`` is named by ``pattern``: a name (that host only) or a glob on
    names (``*.github.com``: any name below github.com, not github.com itself).

    >>> host_matches("api.github.com", "*.github.com"), host_matches("github.com", "*.github.com")
    (True, False)
    >>> host_matches("evilgithub.com", "*github.com")
    True
    """
    return fnmatch.fnmatchcase(normal_host(host), normal_host(pattern))


def host_allowed(host: str, allow: Sequence[str], deny: Sequence[str]) -> bool:
    """Whether the proxy lets a connection to ``host`` through: named by ``allow`` and
    not by ``deny`` (deny wins). An empty host is never allowed.

    >>> host_allowed("pypi.org", (), ())
    False
    """
    if not normal_host(host):
        return False
    if any(host_matches(host, pattern) for pattern in deny):
        return False
    return any(host_matches(host, pattern) for pattern in allow)


def host_named_exactly(host: str, allow: Sequence[str]) -> bool:
    """Whether ``allow`` names ``host`` itself, not by a glob: what reaching the
    machine's own loopback through the proxy takes.

    >>> host_named_exactly("LocalHost.", ("localhost",)), host_named_exactly("localhost", ("*",))
    (True, False)
    """
    name = normal_host(host)
    return any(
        normal_host(pattern) == name and not any(c in pattern for c in "*?[") for pattern in allow
    )


def refusal_line(host: str) -> str:
    """The line a refused connection adds to the command's result and the screen."""
    return f"network: {normal_host(host) or '(no host)'} not allowed"


def refusal_lines(hosts: Sequence[str]) -> tuple[str, ...]:
    """One line per refused host, in the order first refused, each once.

    >>> refusal_lines(["a.test", "b.test", "A.test"])
    ('network: a.test not allowed', 'network: b.test not allowed')
    """
    return tuple(dict.fromkeys(refusal_line(host) for host in hosts))


NETWORK_TOOL = "network"
"""The name an approval question about a refused host goes by."""


def offerable(host: str, deny: Sequence[str]) -> bool:
    """Whether a host the allowlist refused may be offered to the approval policy: not
    one ``network_deny`` names (the person said no to it in advance), nor no host.

    >>> offerable("example.com", ("*.evil.test",)), offerable("a.evil.test", ("*.evil.test",))
    (True, False)
    """
    return bool(normal_host(host)) and not any(host_matches(host, p) for p in deny)


def offers_hosts(approval: ApprovalPolicy) -> bool:
    """Whether a refused host is put to the person: only under ``ask``; ``auto`` and
    ``read-only`` (and a headless turn, which never asks) keep the refusal.

    >>> [offers_hosts(policy) for policy in ("ask", "auto", "read-only")]
    [True, False, False]
    """
    return approval == "ask"


def host_question(host: str) -> str:
    """The question's summary: yes is once, always is for the session.

    >>> host_question("Example.com")
    'allow example.com (once: its next connection; always: for this session)'
    """
    return f"allow {normal_host(host)} (once: its next connection; always: for this session)"


def host_grant(answer: ApprovalAnswer | None) -> HostGrant:
    """The grant an approval answer makes (nobody there to answer: no).

    >>> host_grant("yes"), host_grant("always"), host_grant(None)
    ('once', 'always', 'no')
    """
    if answer == "yes":
        return "once"
    if answer == "always":
        return "always"
    return "no"


def grant_line(host: str, grant: HostGrant) -> str:
    """The line a grant adds after the refusal (the refused connection is not held:
    the command's next try gets through).

    >>> grant_line("example.com", "once")
    'network: example.com allowed once: try again'
    >>> grant_line("example.com", "always")
    'network: example.com allowed for this session: try again'
    """
    match grant:
        case "once":
            return f"network: {normal_host(host)} allowed once: try again"
        case "always":
            return f"network: {normal_host(host)} allowed for this session: try again"
        case "no":
            return f"network: {normal_host(host)} stays refused"


PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "PIP_PROXY",
    "npm_config_proxy",
    "npm_config_https_proxy",
    "YARN_HTTP_PROXY",
    "YARN_HTTPS_PROXY",
)
"""Variables that carry the proxy's address to a command (curl, pip, npm, yarn, git,
Python's urllib and requests, Go, Node's undici with its env support)."""
NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy", "npm_config_noproxy")


LOCAL_NAMES = "localhost,127.0.0.1,::1"


def proxy_environment(url: str, *, loopback: bool = False) -> dict[str, str]:
    """The variables that send a command's HTTP and HTTPS through the proxy at ``url``.
    Nothing bypasses it (``NO_PROXY`` empty): the kernel refuses every other TCP
    destination, so a bypass would only fail; with ``loopback`` the command's own
    loopback is reached directly.

    >>> proxy_environment("http://127.0.0.1:3128")["https_proxy"]
    'http://127.0.0.1:3128'
    >>> proxy_environment("http://127.0.0.1:3128")["NO_PROXY"]
    ''
    >>> proxy_environment("http://127.0.0.1:3128", loopback=True)["no_proxy"]
    'localhost,127.0.0.1,::1'
    """
    bypass = LOCAL_NAMES if loopback else ""
    return {name: url for name in PROXY_VARIABLES} | dict.fromkeys(NO_PROXY_VARIABLES, bypass)
