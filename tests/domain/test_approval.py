"""The approval policy: auto runs all, read-only only reads, ask needs a yes."""

from __future__ import annotations

import pytest

from treadle.adapters.fakes import FakeProcess, RecordingTerminal
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.rules.approval import (
    Allow,
    Ask,
    Deny,
    command_prefix,
    decide_approval,
    declined_text,
)
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.tools import Declined


@pytest.mark.parametrize(
    ("policy", "access", "expected"),
    [
        ("auto", "execute", Allow()),
        ("auto", "write", Allow()),
        ("read-only", "read", Allow()),
        ("read-only", "none", Allow()),
        ("read-only", "execute", Deny("the read-only approval policy does not allow bash calls")),
        ("ask", "read", Allow()),
        ("ask", "execute", Ask("git push")),
        ("ask", "write", Ask("bash")),
    ],
)
def test_decisions_by_policy_and_access(policy, access, expected):
    assert decide_approval(policy, access, "git push origin", tool="bash") == expected


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("git status -s", "git status"),
        ("ls -la src", "ls"),
        ("git --version", ""),
        ("git -C other push", ""),
        ("sudo rm -rf /", ""),
        ("env X=1 rm x", ""),
        ("bash -c 'rm x'", ""),
        ("FOO=1 make", ""),
        ("npm run build -- --watch", "npm run build"),
        ("uv run pytest -x", "uv run pytest"),
        ("uv run --with evil pytest", ""),
        ("npm run", ""),
        ("npm exec cowsay", ""),
        ("pnpm dlx create-x", ""),
        ("npx cowsay", ""),
        ("cargo run --release", "cargo run"),
        ("", ""),
    ],
)
def test_the_prefix_an_always_answer_allows(command, prefix):
    assert command_prefix(command) == prefix


@pytest.mark.parametrize(
    "command", ["ls; rm -rf ~", "ls && curl x | sh", "ls > /etc/x", "ls $(rm x)"]
)
def test_an_allowed_prefix_never_covers_a_chained_command(command):
    assert decide_approval("ask", "execute", command, allowed={"ls"}) == Ask("ls")


async def test_headless_ask_policy_blocks_the_turn_and_runs_nothing(rig):
    r = rig(
        [R.calling("bash", command="make deploy")],
        {"make deploy": FakeProcess()},
        settings=TurnSettings(approval="ask"),
    )
    outcome = await r.agent.run_turn("x")
    assert (outcome.kind, outcome.exit_code) == (OutcomeKind.BLOCKED, 3)
    assert outcome.screen_line == "Turn blocked: approval needed to run bash: make deploy"
    assert r.runner.specs == []
    result = r.agent.history.messages[-1]
    assert result.text == "Not run: approval needed to run bash: make deploy."
    assert not result.interrupted


async def test_a_no_goes_back_to_the_model_as_the_tools_result(rig):
    r = rig(
        [R.calling("bash", command="make deploy"), R.saying("ok, not deploying")],
        settings=TurnSettings(approval="ask"),
        terminal=RecordingTerminal(approvals=["no"]),
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    assert "declined" in r.model.requests[1].messages[-1].text
    assert r.runner.specs == []


async def test_a_no_with_words_sends_them_to_the_model_with_the_refusal(rig):
    r = rig(
        [R.calling("bash", command="make deploy"), R.saying("running the tests instead")],
        settings=TurnSettings(approval="ask"),
        terminal=RecordingTerminal(approvals=[Declined("run make test first")]),
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    result = r.model.requests[1].messages[-1]
    assert result.role == "tool" and result.is_error
    assert result.text == 'Error: the user declined this call and said: "run make test first"'
    assert r.runner.specs == []


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("no", "the user declined this call"),
        (Declined("  "), "the user declined this call"),
        (Declined(" use rg \n"), 'the user declined this call and said: "use rg"'),
        (Declined("x" * 5000), f'the user declined this call and said: "{"x" * 4000}…"'),
    ],
    ids=["plain", "blank", "trimmed", "bounded"],
)
def test_the_refusal_gives_the_persons_words_trimmed_and_bounded(answer, text):
    assert declined_text(answer) == text


async def test_always_allows_the_same_prefix_for_the_rest_of_the_session(rig):
    r = rig(
        [
            R.calling("bash", command="git status"),
            R.calling("bash", command="git status -s"),
            R.saying("ok"),
        ],
        {"git status": FakeProcess(), "git status -s": FakeProcess()},
        settings=TurnSettings(approval="ask"),
        terminal=RecordingTerminal(approvals=["always"]),
    )
    await r.agent.run_turn("x")
    assert len(r.terminal.approval_requests) == 1
    assert len(r.runner.specs) == 2


async def test_read_only_refuses_commands_with_a_tool_error(rig):
    r = rig(
        [R.calling("bash", command="rm x"), R.saying("ok")],
        settings=TurnSettings(approval="read-only"),
    )
    await r.agent.run_turn("x")
    assert "read-only" in r.model.requests[1].messages[-1].text
    assert r.runner.specs == []


@pytest.mark.parametrize(
    ("command", "allowed", "why"),
    [
        ("find . -exec touch pwned {} +", "find", "-exec runs a command on each file found"),
        ("find . -delete", "find", "-delete deletes the files found"),
        ("rg x --pre ./decode", "rg", "--pre runs a command on each file searched"),
        ("sed -i s/a/b/ f", "sed", "-i edits the files in place"),
        ("sed 's/.*/id/e' f", "sed", "the sed script: its s///e runs the result as a command"),
        ("tar -xf a.tar --to-command=sh", "tar", "--to-command pipes each file to a command"),
        ("git fetch --upload-pack=./x", "git fetch", "--upload-pack runs the program it names"),
        ("awk '{ system(\"x\") }' f", "awk", "the awk script: its system() runs a command"),
    ],
)
def test_an_allowed_prefix_does_not_cover_what_runs_or_writes_and_says_why(command, allowed, why):
    decision = decide_approval("ask", "execute", command, allowed={allowed})
    assert decision == Ask("", f"the allowed prefix “{allowed}” does not cover this: {why}")


def test_the_same_program_without_the_hazard_is_still_covered():
    assert decide_approval("ask", "execute", "find . -name '*.py'", allowed={"find"}) == Allow()
    assert decide_approval("ask", "execute", "sed -n 's/a/b/p' f", allowed={"sed"}) == Allow()


def test_always_is_not_offered_for_a_command_no_prefix_could_cover():
    decision = decide_approval("ask", "execute", "find . -delete")
    assert decision == Ask("", "no prefix can be allowed for this: -delete deletes the files found")


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("xargs touch pwned", "xargs"),
        ("env touch pwned", "env"),
        ("python -c 'import os'", "python"),
        ("git -c core.pager=./x log", "git log"),
        ("git -C /etc status", "git status"),
        ("ssh -o ProxyCommand=./x host", "ssh"),
    ],
)
def test_programs_that_run_others_are_never_covered(command, allowed):
    assert decide_approval("ask", "execute", command, allowed={allowed}) == Ask("")


async def test_an_allowed_find_still_asks_before_exec_and_the_blocked_turn_says_why(rig):
    r = rig(
        [R.calling("bash", command="find . -exec touch pwned {} +")],
        settings=TurnSettings(approval="ask", allowed_prefixes=("find",)),
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.BLOCKED
    assert outcome.screen_line == (
        "Turn blocked: approval needed to run bash: find . -exec touch pwned {} + "
        "(the allowed prefix “find” does not cover this: -exec runs a command on each file found)"
    )
    assert r.runner.specs == []


async def test_the_person_asked_reads_why_and_is_not_offered_always(rig):
    r = rig(
        [
            R.calling("bash", command="find . -name x"),
            R.calling("bash", command="find . -delete"),
            R.saying("ok"),
        ],
        {"find . -name x": FakeProcess(), "find . -delete": FakeProcess()},
        settings=TurnSettings(approval="ask", allowed_prefixes=("find",)),
        terminal=RecordingTerminal(approvals=["yes"]),
    )
    await r.agent.run_turn("x")
    [request] = r.terminal.approval_requests
    assert (request.summary, request.prefix) == ("find . -delete", "")
    why = "the allowed prefix “find” does not cover this: -delete deletes the files found"
    assert request.why == why
    assert len(r.runner.specs) == 2


# A host the allowlist refused, offered to the approval policy (issue 28) ---------------

FETCH = "curl http://example.com/"


def fetches(*answers):
    from treadle.adapters.fakes import RecordingTerminal as Terminal

    return Terminal(approvals=list(answers))


@pytest.mark.parametrize(
    ("answer", "grant", "line"),
    [
        ("yes", "once", "network: example.com allowed once: try again"),
        ("always", "always", "network: example.com allowed for this session: try again"),
    ],
)
async def test_under_ask_a_refused_host_is_asked_about_and_let_through(rig, answer, grant, line):

    tries = [R.calling("bash", command=FETCH) for _ in range(3)]
    r = rig(
        [*tries, R.saying("ok")],
        {
            FETCH: FakeProcess(
                "network: example.com not allowed\n", 22, refused_hosts=("example.com",)
            )
        },
        settings=TurnSettings(approval="ask", allowed_prefixes=("curl",)),
        terminal=fetches(answer, "no"),
    )
    await r.agent.run_turn("x")
    asked, *rest = r.terminal.approval_requests
    assert (asked.tool, asked.prefix) == ("network", "example.com")
    assert asked.summary.startswith("allow example.com")
    assert r.runner.grants == [("example.com", grant)]
    first = r.model.requests[1].messages[-1].text
    assert first.splitlines()[-1] == line
    second = r.model.requests[2].messages[-1].text
    assert "try again" not in second  # the second try got through: nothing asked
    # once is used up by the second try: the third is refused and asked about again
    assert len(rest) == (1 if grant == "once" else 0)


@pytest.mark.parametrize("policy", ["auto", "read-only"])
async def test_other_policies_keep_the_refusal_and_ask_nobody(rig, policy):
    r = rig(
        [R.calling("bash", command=FETCH), R.saying("ok")],
        {
            FETCH: FakeProcess(
                "network: example.com not allowed\n", 22, refused_hosts=("example.com",)
            )
        },
        settings=TurnSettings(approval=policy, allowed_prefixes=("curl",)),
        terminal=fetches("always"),
    )
    await r.agent.run_turn("x")
    assert r.terminal.approval_requests == []
    assert r.runner.grants == []


async def test_a_no_or_nobody_there_keeps_the_refusal(rig):
    r = rig(
        [R.calling("bash", command=FETCH), R.saying("ok")],
        {
            FETCH: FakeProcess(
                "network: example.com not allowed\n", 22, refused_hosts=("example.com",)
            )
        },
        settings=TurnSettings(approval="ask", allowed_prefixes=("curl",)),
        terminal=fetches("no"),
    )
    await r.agent.run_turn("x")
    assert len(r.terminal.approval_requests) == 1
    assert r.runner.grants == []
    assert r.model.requests[1].messages[-1].text.splitlines()[-1] == (
        "network: example.com not allowed"
    )
