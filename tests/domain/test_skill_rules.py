"""The pure rules of skills (issue 23): the list and its cap, the front matter's checks,
what the skill tool says."""

from __future__ import annotations

from treadle.domain.rules.skills import (
    ASSUMED_WINDOW,
    HEADING,
    SkillFields,
    allowed_tools_note,
    cap_bytes,
    check_skill,
    offer_skills,
    skill_result,
    tool_names,
)
from treadle.domain.values.workflows import Skill


def skill(name: str, description: str = "Does one thing.", **values: object) -> Skill:
    return Skill(name, description, f"/r/.claude/skills/{name}/SKILL.md", 100, "project", **values)  # type: ignore[arg-type]


def test_the_cap_is_two_percent_of_the_window_in_bytes() -> None:
    assert cap_bytes(100_000) == 7_000  # 2,000 tokens at 3.5 bytes a token
    assert cap_bytes(None) == cap_bytes(ASSUMED_WINDOW)


def test_every_skill_is_listed_when_the_list_fits() -> None:
    offered = offer_skills([skill("a"), skill("b", "Does another.")], window=100_000)
    assert offered.listed == ("a", "b") and offered.left_out == ()
    assert offered.text == f"{HEADING}\n\n- a: Does one thing.\n- b: Does another."
    assert offered.line() == "skills offered to the model: a, b"


def test_the_skills_past_the_cap_are_left_out_and_the_list_says_so() -> None:
    many = [skill(f"s-{n:03}", "x" * 200) for n in range(100)]
    offered = offer_skills(many, window=20_000)  # 1,400 bytes
    assert 0 < len(offered.listed) < 10
    assert offered.listed + offered.left_out == tuple(s.name for s in many)
    assert len(offered.text.encode()) <= offered.cap
    assert f"{len(offered.left_out)} more skills left out" in offered.text
    assert "left out by the cap of 1,400 bytes" in offered.line()


def test_a_long_description_is_cut_in_the_list_and_its_lines_joined() -> None:
    offered = offer_skills([skill("a", "line one\nline two " + "y" * 400)], window=None)
    (entry,) = offered.text.splitlines()[-1:]
    assert entry.startswith("- a: line one line two") and entry.endswith("…")
    assert len(entry) < 260


def test_the_user_s_skills_are_marked_as_the_user_s() -> None:
    mine = Skill("a", "Mine.", "/home/me/.claude/skills/a/SKILL.md", 10, "user")
    assert "- a (the user's): Mine." in offer_skills([mine], None).text


def test_no_skills_offer_nothing() -> None:
    offered = offer_skills([], None)
    assert offered.text == "" and offered.line() == ""


def test_front_matter_checks() -> None:
    assert check_skill({"description": "Fills forms."}, "pdf") == SkillFields(
        "pdf", "Fills forms.", ()
    )
    assert check_skill(
        {"name": "pdf", "description": " d ", "allowed-tools": "Read, Grep"}, "x"
    ) == (SkillFields("pdf", "d", ("Read", "Grep")))
    assert "name must be" in str(check_skill({"name": "Not_OK", "description": "d"}, "x"))
    assert "name must be" in str(check_skill({"name": "a" * 65, "description": "d"}, "x"))
    assert "description is missing" in str(check_skill({"name": "pdf"}, "pdf"))
    assert "at most 1,024" in str(check_skill({"description": "d" * 1025}, "pdf"))
    assert "allowed-tools must be" in str(
        check_skill({"description": "d", "allowed-tools": 3}, "p")
    )


def test_tool_names_read_lists_and_strings() -> None:
    assert tool_names(["Read", " Grep "]) == ("Read", "Grep")
    assert tool_names("Read Grep,Glob") == ("Read", "Grep", "Glob")
    assert tool_names(None) == ()
    assert tool_names({"Read": True}) is None


def test_the_skill_result_holds_the_body_the_files_and_what_allowed_tools_means() -> None:
    loaded = skill("pdf", files=("a.txt", "b/c.py"), allowed_tools=("Read",))
    text = skill_result(loaded, "\nDo this.\n")
    assert text.startswith("# Skill pdf (/r/.claude/skills/pdf/SKILL.md)\n\nDo this.\n")
    assert "- a.txt\n- b/c.py" in text
    assert text.endswith(allowed_tools_note(loaded)) and "changes nothing" in text
    assert allowed_tools_note(skill("plain")) == ""
    assert "more" in skill_result(skill("x", files=tuple(map(str, range(60)))), "b", files_most=50)
