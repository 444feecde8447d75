"""A batch's outcomes are the turn's own, spelt as the turn spells them, plus the two of
the batch's own; a RESULTS file of an older treadle reads back in today's names."""

from __future__ import annotations

import json

from treadle.adapters.transcript.serialize import NAME_OF_EVENT
from treadle.domain.rules.batch_plan import TurnDefaults, latest_results, plan_batch
from treadle.domain.rules.turn_report import OUTCOME_BY_EXIT, Counted, TurnTally, tally
from treadle.domain.values import events
from treadle.domain.values.batch import OUTCOMES, BatchTask, TaskOutcome
from treadle.domain.values.outcome import EXIT_CODES, OutcomeKind


def test_every_way_a_turn_ends_is_a_batch_outcome_of_the_same_spelling():
    for kind in OutcomeKind:
        assert TaskOutcome.of_turn(kind).value == kind.value
    own = {outcome.value for outcome in TaskOutcome} - {kind.value for kind in OutcomeKind}
    assert own == {"lost", "not started"}
    assert TaskOutcome.WAITING.value == "waiting for input"


def test_the_batch_reads_a_turns_exit_code_from_the_one_table_of_exit_codes():
    assert {code: TaskOutcome(kind.value) for kind, code in EXIT_CODES.items()} == OUTCOME_BY_EXIT
    assert OUTCOME_BY_EXIT[4] is TaskOutcome.WAITING


def test_an_outcome_spelt_as_an_older_results_file_spelt_it_reads_back_as_todays():
    assert TaskOutcome.read("waiting") is TaskOutcome.WAITING
    assert TaskOutcome.read("waiting for input") is TaskOutcome.WAITING
    assert TaskOutcome.read("not started") is TaskOutcome.NOT_STARTED
    assert TaskOutcome.read("maybe") is None
    assert TaskOutcome.read(None) is None
    assert tuple(TaskOutcome) == OUTCOMES


def test_a_rerun_over_an_older_results_file_skips_and_continues_as_it_did():
    lines = [
        json.dumps({"id": "done", "outcome": "finished", "session": "s-done"}),
        json.dumps({"id": "cut", "outcome": "paused", "session": "s-cut"}),
        json.dumps({"id": "asked", "outcome": "waiting", "session": "s-asked"}),
        json.dumps({"id": "odd", "outcome": "maybe", "session": "s-odd"}),
    ]
    tasks = [BatchTask(name, f"task {name}") for name in ("done", "cut", "asked", "odd")]
    plan = plan_batch(
        tasks, latest_results(lines), TurnDefaults(workspace="/w"), new_session=lambda t: "new"
    )
    assert plan.skipped == ("done",)
    assert [(o.id, o.session, o.resuming) for o in plan.orders] == [
        ("cut", "s-cut", True),
        ("asked", "new", False),  # waited for an answer: it runs again as its line says
        ("odd", "new", False),
    ]


def test_the_records_a_turns_tally_reads_are_named_as_the_transcript_names_their_events():
    counted = {
        Counted.TURN_STARTED: events.TurnStarted,
        Counted.REQUEST_SENT: events.RequestSent,
        Counted.USAGE_UPDATED: events.UsageUpdated,
        Counted.TURN_ENDED: events.TurnEnded,
    }
    assert set(counted) == set(Counted)
    for kind, event in counted.items():
        assert kind.value == NAME_OF_EVENT[event]


def test_a_record_of_a_type_the_tally_does_not_read_changes_nothing():
    so_far = TurnTally(requests=2)
    assert tally(so_far, {"type": "answer_delta", "text": "hi"}) == so_far
    assert tally(so_far, {"type": ["request_sent"]}) == so_far
    assert tally(so_far, {"type": "request_sent"}).requests == 3
