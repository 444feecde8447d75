"""What network a command may reach, decided on plain values."""

from __future__ import annotations

from treadle.domain.rules.network import (
    DEFAULT_NETWORK,
    NetworkBlocked,
    NetworkConfine,
    NetworkOpen,
    NetworkPolicy,
    NetworkSupport,
    decide_network,
    host_allowed,
    host_matches,
    missing_for,
    proxy_environment,
    refusal_line,
    refusal_lines,
)

KERNEL = NetworkSupport(7, True)
OLD = NetworkSupport(3, True)
NO_LANDLOCK = NetworkSupport(0, False, "Landlock is unavailable: not enabled at boot")
NO_SECCOMP = NetworkSupport(7, False, seccomp_reason="no socket filter is known for mips")


def test_a_name_matches_itself_in_any_case_and_with_a_trailing_dot() -> None:
    assert host_matches("PyPI.org.", "pypi.org")
    assert not host_matches("pypi.org.evil.test", "pypi.org")
    assert not host_matches("test.pypi.org", "pypi.org")


def test_a_glob_names_the_hosts_below_a_domain_but_not_the_domain() -> None:
    assert host_matches("api.github.com", "*.github.com")
    assert host_matches("a.b.github.com", "*.github.com")
    assert not host_matches("github.com", "*.github.com")
    assert not host_matches("github.com.evil.test", "*.github.com")


def test_deny_wins_over_allow() -> None:
    allow, deny = ("*.github.com", "pypi.org"), ("gist.github.com",)
    assert host_allowed("api.github.com", allow, deny)
    assert not host_allowed("gist.github.com", allow, deny)
    assert host_allowed("pypi.org", allow, deny)


def test_nothing_is_allowed_unless_listed_and_an_empty_host_never() -> None:
    assert not host_allowed("pypi.org", (), ())
    assert not host_allowed("", ("*",), ())
    assert host_allowed("anything.test", ("*",), ())


def test_an_address_is_a_name_like_any_other_not_a_range() -> None:
    assert not host_allowed("140.82.112.3", ("*.github.com",), ())
    assert host_allowed("[::1]", ("::1",), ())


def test_a_refusal_is_one_line_per_host_in_order() -> None:
    assert refusal_line("Example.COM") == "network: example.com not allowed"
    assert refusal_lines(["b.test", "a.test", "b.test"]) == (
        "network: b.test not allowed",
        "network: a.test not allowed",
    )
    assert refusal_lines([]) == ()


def test_the_default_keeps_the_network_and_asks_nothing_of_the_kernel() -> None:
    assert DEFAULT_NETWORK == "on"
    assert decide_network(NetworkPolicy(), False, NO_LANDLOCK) == NetworkOpen()
    assert decide_network(NetworkPolicy("on"), True, NO_LANDLOCK) == NetworkOpen()
    assert missing_for(NetworkPolicy("on", loopback=True), NO_LANDLOCK) == ""
    assert missing_for(NetworkPolicy("off"), KERNEL) == ""


def test_off_and_allowlist_are_confined_where_the_kernel_has_it_all() -> None:
    for mode in ("off", "allowlist"):
        policy = NetworkPolicy(mode, ("pypi.org",))
        assert decide_network(policy, True, KERNEL) == NetworkConfine(policy)


def test_an_explicit_mode_the_kernel_cannot_give_blocks_naming_why() -> None:
    assert decide_network(NetworkPolicy("off"), True, OLD) == NetworkBlocked(
        "sandbox_network = off was asked for, but Landlock ABI 3 has no network rules "
        "(they need ABI 4, Linux 6.7)"
    )
    blocked = decide_network(NetworkPolicy("allowlist"), True, NO_LANDLOCK)
    assert isinstance(blocked, NetworkBlocked)
    assert blocked.reason.endswith("Landlock is unavailable: not enabled at boot")
    no_filter = decide_network(NetworkPolicy("off"), True, NO_SECCOMP)
    assert no_filter == NetworkBlocked(
        "sandbox_network = off was asked for, but no socket filter is known for mips"
    )


def test_a_mode_that_was_only_a_default_warns_and_keeps_the_network() -> None:
    decision = decide_network(NetworkPolicy("off"), False, OLD)
    assert isinstance(decision, NetworkOpen)
    assert decision.warning.startswith("commands keep the network: Landlock ABI 3")


def test_the_loopback_under_off_is_a_namespace_of_the_commands_own_without_tcp_rules() -> None:
    policy = NetworkPolicy("off", loopback=True)
    assert decide_network(policy, True, KERNEL) == NetworkConfine(policy)
    assert (policy.start, policy.tcp_rules) == ("loopback", False)
    assert (NetworkPolicy("off").start, NetworkPolicy("off").tcp_rules) == ("off", True)
    assert not NetworkPolicy("on", loopback=True).tcp_rules


def test_the_loopback_beside_the_allowlist_is_a_namespace_too_and_reached_directly() -> None:
    policy = NetworkPolicy("allowlist", ("pypi.org",), loopback=True)
    assert decide_network(policy, True, KERNEL) == NetworkConfine(policy)
    assert (policy.start, policy.tcp_rules) == ("allowlist+loopback", False)
    assert NetworkPolicy("allowlist").tcp_rules
    env = proxy_environment("http://t:-@127.0.0.1:4000", loopback=True)
    assert env["NO_PROXY"] == "localhost,127.0.0.1,::1"


def test_the_proxy_variables_send_every_client_through_it_and_none_around() -> None:
    env = proxy_environment("http://t:-@127.0.0.1:4000")
    for name in ("HTTP_PROXY", "https_proxy", "ALL_PROXY", "PIP_PROXY", "npm_config_proxy"):
        assert env[name] == "http://t:-@127.0.0.1:4000"
    assert env["NO_PROXY"] == env["no_proxy"] == ""


def test_only_a_name_listed_as_itself_is_named_exactly() -> None:
    from treadle.domain.rules.network import host_named_exactly

    assert host_named_exactly("LOCALHOST.", ("localhost",))
    assert not host_named_exactly("localhost", ("*",))
    assert not host_named_exactly("localhost", ("localhos?",))
    assert not host_named_exactly("127.0.0.1", ("127.0.0.[0-9]",))
