"""Confining the commands a session runs: the setting, the kernel, and how each starts.

Example::

    sandbox = Sandbox("workspace-write", "/src/app")
    match sandbox.launch():
        case Success(launch):   # confined by launch.ruleset (see spawner.plan_start)
            ...
        case Failure(reason):   # confinement asked for and impossible: do not run
            ...
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from returns.result import Failure, Result, Success

from treadle.adapters.sandbox.landlock import (
    DEVICES,
    SHARED_MEMORY,
    LandlockError,
    Ruleset,
    prepare,
    probe,
    probe_seccomp,
)
from treadle.adapters.sandbox.proxy import NetworkProxy
from treadle.adapters.sandbox.spawner import native_spawner
from treadle.domain.rules.network import (
    NetworkBlocked,
    NetworkConfine,
    NetworkDecision,
    NetworkOpen,
    NetworkPolicy,
    NetworkSupport,
    StartNetwork,
    decide_network,
    offerable,
    proxy_environment,
    refusal_lines,
)
from treadle.domain.rules.sandbox import (
    Blocked,
    Confine,
    SandboxDecision,
    SandboxMode,
    SandboxSupport,
    Unconfined,
    cache_environment,
    decide_sandbox,
    writable_folders,
)
from treadle.domain.values.process import HostGrant


@dataclass
class Launch:
    """What the sandbox asks of one command: the ``ruleset`` to confine it with (None:
    unconfined), the variables ``env`` adds, and ``scratch``, a read-only command's
    folder. :meth:`started` once the process exists, :meth:`finished` once it has ended
    (the scratch folder goes then). A ruleset the launch ``owns`` (read-only's, made for
    its scratch folder) is closed once the command started; the session's stays open.

    ``network`` is the mode the start enforces with its socket filter; under
    ``allowlist``, ``proxy`` is the session's proxy and ``token`` how it knows this
    command (:meth:`network_lines`: what it refused to it).

    How the process starts (the native spawner or the Python helper) is
    :func:`~treadle.adapters.sandbox.spawner.plan_start`'s to say."""

    env: Mapping[str, str] = field(default_factory=dict)
    ruleset: Ruleset | None = None
    scratch: str = ""
    owns: bool = False
    network: StartNetwork = "on"
    proxy: NetworkProxy | None = None
    token: str = ""
    channel: tuple[int, int] = (-1, -1)
    """Under allowlist: (treadle's end, the start's end) of the Unix socket on which the
    start hands over the proxy's port in the command's own network namespace."""
    inside: Callable[[], None] | None = None

    def network_lines(self) -> tuple[str, ...]:
        """One line per host the proxy refused to this command (``network: … not allowed``)."""
        return refusal_lines(self.refused_hosts())

    def refused_hosts(self) -> tuple[str, ...]:
        """The hosts the proxy refused to this command since last asked."""
        return self.proxy.refused(self.token) if self.proxy is not None else ()

    def started(self) -> None:
        """Once the process exists: the owned ruleset goes; under allowlist the start's
        end of the channel too, and the proxy takes the port it handed over (it does
        so at once, before it confines itself: this waits a millisecond, or for the
        Python helper's start)."""
        if self.owns and self.ruleset is not None:
            self.ruleset.close()
        ours, theirs = self.channel
        self.channel = (-1, -1)
        if theirs >= 0:
            os.close(theirs)
        if ours >= 0:
            listener = _received_listener(ours)
            if listener is not None and self.proxy is not None:
                self.inside = self.proxy.serve(listener)

    def finished(self) -> None:
        self.started()
        if self.inside is not None:
            self.inside()
            self.inside = None
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = ""


HANDOVER_TIMEOUT = 10.0
"""How long the start may take to hand over the proxy's port (it does so before it
confines itself, within a millisecond; it closes the socket if it cannot)."""


def _received_listener(channel: int) -> socket.socket | None:
    """The listening socket the start sent on ``channel`` (closed here), or None: the
    kernel gave the command no network of its own (Landlock's port rule alone), or
    the start failed before (its status says why)."""
    with socket.socket(fileno=channel) as link:
        link.settimeout(HANDOVER_TIMEOUT)
        try:
            _, fds, _, _ = socket.recv_fds(link, 1, 1)
        except OSError:
            return None
    return socket.socket(fileno=fds[0]) if fds else None


UNCONFINED = Launch()
OPEN_NETWORK = NetworkPolicy()


class Sandbox:
    """The sandbox of one session: ``mode`` over ``workspace``, plus ``writable`` folders
    (``sandbox_writable``) and ``cache``, the folder package managers' caches go to.

    ``explicit`` says the person chose the mode (not the default): without Landlock,
    commands are then refused rather than run unconfined. The kernel is asked once,
    when the first command starts (``support`` is how).

    ``network`` is ``sandbox_network`` with its lists (``network_explicit``: the
    person chose it); ``seccomp`` asks whether a socket filter can be installed;
    ``hosts`` maps names to addresses for the allowlist's proxy, before DNS (tests).
    """

    def __init__(
        self,
        mode: SandboxMode,
        workspace: str,
        *,
        explicit: bool = False,
        writable: Sequence[str] = (),
        cache: str = "",
        support: Callable[[], SandboxSupport] = probe,
        environ: Mapping[str, str] = os.environ,
        network: NetworkPolicy = OPEN_NETWORK,
        network_explicit: bool = False,
        seccomp: Callable[[], str] = probe_seccomp,
        hosts: Mapping[str, str] | None = None,
    ) -> None:
        self.mode = mode
        self.workspace = os.path.realpath(workspace)
        self.explicit = explicit
        self.writable = tuple(os.path.realpath(os.path.expanduser(p)) for p in writable)
        self.cache = cache
        self._support = support
        self._environ = environ
        self.network = network
        self.network_explicit = network_explicit
        self._seccomp = seccomp
        self._hosts = hosts
        self._proxy: NetworkProxy | None = None
        self._kept: tuple[tuple[tuple[int, int], ...], Ruleset] | None = None

    def allow_writing(self, folder: str) -> None:
        """Let the session's next commands write ``folder`` too (a sub-agent's worktree):
        the next ruleset names it."""
        path = os.path.realpath(folder)
        if path not in self.writable:
            self.writable = (*self.writable, path)

    @functools.cached_property
    def support(self) -> SandboxSupport:
        asked = self.mode != "off" or self.network.confined
        return self._support() if asked else SandboxSupport(0, "off")

    @functools.cached_property
    def decision(self) -> SandboxDecision:
        return decide_sandbox(self.mode, self.explicit, self.support)

    @functools.cached_property
    def network_decision(self) -> NetworkDecision:
        if not self.network.confined:
            return NetworkOpen()
        support = self.support
        why = self._seccomp() if support.abi > 0 else ""
        kernel = NetworkSupport(support.abi, not why, support.reason, why)
        return decide_network(self.network, self.network_explicit, kernel)

    @property
    def warning(self) -> str:
        """What the person should be told once: commands will run unconfined (or keep
        the network), and why."""
        decision, network = self.decision, self.network_decision
        warnings = (
            decision.warning if isinstance(decision, Unconfined) else "",
            network.warning if isinstance(network, NetworkOpen) else "",
        )
        return "; ".join(dict.fromkeys(w for w in warnings if w))

    def launch(self) -> Result[Launch, str]:
        """How the next command starts; Failure(why) when it must not start at all."""
        match self.network_decision:
            case NetworkBlocked(reason=reason):
                return Failure(reason)
            case NetworkConfine(policy=policy):
                network: NetworkPolicy | None = policy
            case NetworkOpen():
                network = None
        match self.decision:
            case Unconfined():
                return Success(UNCONFINED) if network is None else self._confined(None, network)
            case Blocked(reason=reason):
                return Failure(reason)
            case Confine(mode=mode):
                return self._confined(mode, network)
        raise AssertionError("unreachable")

    def allow_host(self, host: str, grant: HostGrant) -> None:
        """Let ``host`` through the session's proxy once or for the session (a yes to a
        refusal); nothing without a proxy."""
        if self._proxy is not None:
            self._proxy.grant(host, grant)

    def offerable(self, hosts: Sequence[str]) -> tuple[str, ...]:
        """Those of the refused ``hosts`` a yes could let through (none ``network_deny``
        names), each once."""
        return tuple(dict.fromkeys(h for h in hosts if offerable(h, self.network.deny)))

    def close(self) -> None:
        """The session ends: its proxy stops (commands still running lose the network)."""
        if self._proxy is not None:
            self._proxy.close()

    def _network_launch(self, policy: NetworkPolicy | None) -> Result[Launch, str]:
        """What the network mode adds to a launch: the proxy (started with the first
        command under ``allowlist``), its variables, the command's token."""
        if policy is None:
            return Success(Launch())
        if policy.mode != "allowlist":
            return Success(Launch(network=policy.start))
        if self._proxy is None:
            proxy = NetworkProxy(policy.allow, policy.deny, hosts=self._hosts)
            try:
                proxy.start()
            except OSError as error:
                return Failure(f"the network proxy could not start: {error.strerror or error}")
            self._proxy = proxy
        token = os.urandom(8).hex()
        env = proxy_environment(self._proxy.url(token), loopback=policy.loopback)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        channel = (ours.detach(), theirs.detach())
        return Success(
            Launch(env, network=policy.start, proxy=self._proxy, token=token, channel=channel)
        )

    def _confined(
        self, mode: SandboxMode | None, network: NetworkPolicy | None
    ) -> Result[Launch, str]:
        if not sys.executable and native_spawner() is None:
            return Failure(
                "the sandbox needs a Python interpreter to start commands, and none is known"
            )
        match self._network_launch(network):
            case Failure() as failure:
                return failure
            case Success(net):
                pass
        ports = (net.proxy.port,) if net.proxy is not None else ()
        tcp = network is not None and network.tcp_rules
        scratch = tempfile.mkdtemp(prefix="treadle-scratch-") if mode == "read-only" else ""
        env: dict[str, str] = dict(net.env)
        if scratch:
            env.update(TMPDIR=scratch, TMP=scratch, TEMP=scratch)
        cache = self._cache_folder() if mode == "workspace-write" else ""
        if cache:
            env.update(cache_environment(cache, list(self._environ)))
        temporary = (os.path.realpath(tempfile.gettempdir()), "/tmp", SHARED_MEMORY)
        folders = writable_folders(
            mode or "off",
            self.workspace,
            temporary=temporary,
            extra=self.writable,
            cache=cache,
            scratch=scratch,
        )
        try:
            if scratch:  # a folder of its own: a ruleset of its own (a tenth of a ms)
                ruleset = prepare(folders, self.support, tcp=tcp, connect_ports=ports)
                return Success(replace(net, env=env, ruleset=ruleset, scratch=scratch, owns=True))
            ruleset = self._session_ruleset(folders, files=mode is not None, tcp=tcp, ports=ports)
            return Success(replace(net, env=env, ruleset=ruleset))
        except LandlockError as error:
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
            for end in net.channel:  # no start will use them
                if end >= 0:
                    os.close(end)
            return Failure(f"the sandbox could not be set up: {error.strerror or error}")

    def _session_ruleset(
        self, folders: Sequence[str], *, files: bool, tcp: bool, ports: Sequence[int]
    ) -> Ruleset:
        """The session's ruleset, built once and kept while every folder it names is the
        same folder: rules bind inodes, so one deleted and made again (or made since)
        gets a new ruleset. (Its network rules, and the proxy's port, are the session's.)"""
        identity = _identities((*folders, *DEVICES))
        if self._kept is not None and self._kept[0] == identity:
            return self._kept[1]
        ruleset = prepare(
            folders, self.support, devices=DEVICES, files=files, tcp=tcp, connect_ports=ports
        )
        if self._kept is not None:
            self._kept[1].close()  # the commands it started keep their own copy
        self._kept = (identity, ruleset)
        return ruleset

    def _cache_folder(self) -> str:
        if not self.cache:
            return ""
        with contextlib.suppress(OSError):
            os.makedirs(self.cache, mode=0o700, exist_ok=True)
            return os.path.realpath(self.cache)
        return ""


def _identities(paths: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """(device, inode) of each path, (0, 0) for one that is not there."""
    found = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            found.append((0, 0))
        else:
            found.append((info.st_dev, info.st_ino))
    return tuple(found)
