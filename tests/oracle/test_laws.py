"""Laws the oracle must obey, and one reject/accept pair per validity guard."""

from __future__ import annotations

import copy
from typing import Any

import naive
import pytest
import strategies as gen
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import drop_turn, make, set_turn, simple_turn, undo_ref_turn
from sweep import CI, examples

import oracle
from oracle.catalogue import COUPLINGS, KEYS, SPEC_VALUES, apply_couplings, canonical_initial
from oracle.replay import Rules

UNDO_LAST = simple_turn("undo_last")
UNDO_EARLIEST = simple_turn("undo_earliest")
REDO = simple_turn("redo")
DISTRACTOR = simple_turn("distractor")


def turns_of(scenario: oracle.Scenario) -> list[dict[str, Any]]:
    return naive.turn_dicts(scenario)[1]


def kind(scenario: oracle.Scenario) -> str | None:
    """The guard the oracle says the scenario violates (short code), or None; naive agrees."""
    v = oracle.check(scenario)
    got = None if v is None else naive.oracle_kind(v.reason)
    expected = naive.naive(scenario)
    assert got == (expected[1] if isinstance(expected, tuple) else None), scenario.to_json()
    return got


def violation(scenario: oracle.Scenario) -> tuple[int, str] | None:
    v = oracle.check(scenario)
    return None if v is None else (v.turn, naive.oracle_kind(v.reason))


def final(scenario: oracle.Scenario) -> dict[str, str]:
    return oracle.replay(scenario)[-1]


def with_(**changes: str) -> dict[str, str]:
    spec = canonical_initial()
    spec.update(changes)
    return spec


# ============================================================================ laws


@settings(CI, max_examples=examples(200))
@given(gen.valid_scenarios(max_turns=8), st.data())
def test_undo_then_redo_restores_the_spec(scenario: oracle.Scenario, data: st.DataObject) -> None:
    """After any prefix, an undo (of any kind) immediately redone gives back the same spec."""
    turns = turns_of(scenario)
    specs = oracle.replay(scenario)
    all_undos = [UNDO_LAST, UNDO_EARLIEST, *(undo_ref_turn(s) for s in gen.POOL)]
    # per prefix, the undos the guards accept there (e.g. not undo_last right after a redo)
    accepted: dict[int, list[dict[str, Any]]] = {}
    state: Any = naive.start(scenario.initial)
    for k in range(len(turns) + 1):
        if k:
            state = naive.step(state, turns[k - 1])
        ok = [u for u in all_undos if isinstance(naive.step(state, u), naive.State)]
        if ok:
            accepted[k] = ok
    assume(accepted)
    k = data.draw(st.sampled_from(sorted(accepted)), label="cut")
    undo = data.draw(st.sampled_from(accepted[k]), label="undo")
    candidate = make(*turns[:k], undo, REDO, initial=scenario.initial)
    assert violation(candidate) is None, candidate.to_json()
    out = oracle.replay(candidate)
    assert out[: k + 1] == specs[: k + 1]
    assert out[k + 2] == specs[k]


@settings(CI, max_examples=examples(200))
@given(gen.valid_scenarios(max_turns=9), st.data())
def test_a_distractor_changes_nothing(scenario: oracle.Scenario, data: st.DataObject) -> None:
    turns = turns_of(scenario)
    i = data.draw(st.integers(0, len(turns)), label="position")
    longer = make(*turns[:i], DISTRACTOR, *turns[i:], initial=scenario.initial)
    specs = oracle.replay(scenario)
    assert oracle.check(longer) is None
    assert oracle.replay(longer) == [*specs[: i + 1], specs[i], *specs[i + 1 :]]


@settings(CI, max_examples=examples(200))
@given(gen.scenarios(), st.data())
def test_a_distractor_moves_a_violation_by_one_turn(
    scenario: oracle.Scenario, data: st.DataObject
) -> None:
    turns = turns_of(scenario)[:9]
    scenario = make(*turns, initial=scenario.initial)
    i = data.draw(st.integers(0, len(turns)), label="position")
    longer = make(*turns[:i], DISTRACTOR, *turns[i:], initial=scenario.initial)
    before, after = violation(scenario), violation(longer)
    if before is None:
        assert after is None
    else:
        turn, what = before
        assert after == (turn + (turn > i), what)


@settings(CI, max_examples=examples(200))
@given(gen.valid_scenarios(), st.data())
def test_undo_last_until_nothing_is_active_returns_the_initial_spec(
    scenario: oracle.Scenario, data: st.DataObject
) -> None:
    turns = turns_of(scenario)
    # a prefix short enough to undo every active change within 10 turns
    fits = []
    state: Any = naive.start(scenario.initial)
    for k in range(len(turns) + 1):
        if k:
            state = naive.step(state, turns[k - 1])
        active = len(naive.active_indices(state))
        if 0 < k + active <= 10:
            fits.append((k, active))
    k, active = data.draw(st.sampled_from(fits), label="prefix, active")
    undone = make(*turns[:k], *[UNDO_LAST] * active, initial=scenario.initial)
    v = violation(undone)
    if v is not None:
        # undo_last after a redo of an earlier change is ambiguous by design, and an undo may
        # make a setting inapplicable again (input csv undone back to an initial json input
        # leaves the delimiter without a use: the applicability guard, v2); skip those
        assert v[1] in ("undo_last_ambiguous", "inapplicable"), v
        assume(False)
    assert final(undone) == scenario.initial
    # and one more undo_last has nothing left to undo
    if k + active < 10:
        extra = make(*turns[:k], *[UNDO_LAST] * (active + 1), initial=scenario.initial)
        assert violation(extra) == (k + active + 1, "nothing_to_undo")


@settings(CI, max_examples=examples(300))
@given(st.one_of(gen.valid_scenarios(), gen.scenarios()))
def test_every_output_spec_is_coupled_and_in_the_catalogue(scenario: oracle.Scenario) -> None:
    outputs = []
    if oracle.check(scenario) is None:
        outputs.append(oracle.replay(scenario))
    if apply_couplings(dict(scenario.initial)) == scenario.initial:
        # guards off, but a coupled start (with guards off an uncoupled initial spec is echoed
        # as spec 0 uncoupled, and coupled from turn 1 on)
        outputs.append(oracle.replay(scenario, Rules(guards=False)))
    for specs in outputs:
        assert len(specs) == len(scenario.turns) + 1
        for spec in specs:
            assert tuple(spec) == KEYS
            for k, v in spec.items():
                assert v in SPEC_VALUES[k], (k, v)
            assert apply_couplings(dict(spec)) == spec
            for c in COUPLINGS:
                assert spec[c.trigger] != c.when or spec[c.forced] == c.then


@settings(CI, max_examples=examples(200))
@given(st.one_of(gen.valid_scenarios(), gen.scenarios()))
def test_replay_is_deterministic_and_does_not_touch_the_scenario(
    scenario: oracle.Scenario,
) -> None:
    dumped = scenario.model_dump()
    initial = copy.deepcopy(scenario.initial)
    for rules in (oracle.ORACLE, Rules(guards=False), Rules(undo=False, guards=False)):
        try:
            first = oracle.replay(scenario, rules)
        except oracle.InvalidScenario as e:
            with pytest.raises(oracle.InvalidScenario) as again:
                oracle.replay(scenario, rules)
            assert again.value.violation == e.violation
            continue
        assert oracle.replay(scenario, rules) == first
        # the output is fresh data: scribbling on it changes neither the scenario nor a replay
        for spec in first:
            spec["delimiter"] = "scribbled"
        assert oracle.replay(scenario, rules) != first
    assert scenario.model_dump() == dumped
    assert scenario.initial == initial
    assert oracle.check(scenario) == oracle.check(scenario)


@settings(CI, max_examples=examples(300))
@given(gen.scenarios())
def test_without_undo_and_guards_only_sets_and_drops_count(scenario: oracle.Scenario) -> None:
    got = oracle.replay(scenario, Rules(undo=False, guards=False))
    turns = turns_of(scenario)
    spec = dict(scenario.initial)
    expected = [dict(spec)]  # turn 0 is the initial spec as given
    for turn in turns:
        if turn["op"] == "set":
            spec[turn["setting"]] = turn["value"]
        elif turn["op"] == "drop":
            spec[turn["setting"]] = oracle.UNSPECIFIED
        expected.append(apply_couplings(dict(spec)))
    assert got == expected
    # the same as replaying a scenario made of the set and drop turns alone
    edits = [(t, turn) for t, turn in enumerate(turns, 1) if turn["op"] in ("set", "drop")]
    if edits:
        only = oracle.replay(
            make(*(turn for _, turn in edits), initial=scenario.initial), Rules(guards=False)
        )
        for j, (t, _) in enumerate(edits, 1):
            assert got[t] == only[j]
        assert got[-1] == only[-1]


# ============================================================================ order guard


def test_order_guard_is_implied_by_the_undo_guards() -> None:
    """The contract's "replay in order made == replay in order (re)activated" guard never fires.

    Exhaustive over every scenario of up to 7 turns on a small universe (two settings, one with
    two values and a drop, undo of every kind, redo): the naive engine, which checks the order
    guard right after the undo guards, never reports order_mismatch. Why: an undo of a change X
    is only accepted when no later-made active change assigns X's setting (undo_last: X is the
    last made; undo_ref: exactly one; undo_earliest: not shadowed), so any later-made change on
    that setting is inactive and sits *below* X on the redo stack; it is reactivated after X.
    """
    universe = [
        set_turn("timeout_seconds", "10"),
        set_turn("timeout_seconds", "60"),
        drop_turn("timeout_seconds"),
        set_turn("log_level", "debug"),
        undo_ref_turn("timeout_seconds"),
        undo_ref_turn("log_level"),
        UNDO_LAST,
        UNDO_EARLIEST,
        REDO,
    ]
    start = naive.start(canonical_initial())
    assert isinstance(start, naive.State)
    frontier = {(start.changes, start.redo): start}
    seen_kinds: set[str] = set()
    for _ in range(7):
        nxt: dict[Any, naive.State] = {}
        for state in frontier.values():
            for turn in universe:
                r = naive.step(state, turn)
                if isinstance(r, naive.Bad):
                    seen_kinds.add(r.kind)
                    continue
                # activation times only matter by rank
                rank = sorted(range(len(r.changes)), key=lambda i: r.changes[i].activated)
                key = (tuple((c.setting, c.value, c.active, rank.index(i))
                             for i, c in enumerate(r.changes)), r.redo)
                nxt.setdefault(key, r)
        frontier = nxt
    assert "order_mismatch" not in seen_kinds
    assert {"undo_last_ambiguous", "undo_earliest_shadowed", "undo_ref_count"} <= seen_kinds


def test_order_guard_itself_rejects_a_mismatch() -> None:
    """The oracle's order guard, called directly (no scenario can reach it, see above)."""
    from oracle.guards import Change, Invalid, order_guard

    early = Change(0, 1, "timeout_seconds", "60", activated=2)  # made first, redone last
    late = Change(1, 2, "timeout_seconds", "10", activated=1)
    base = with_(timeout_seconds="10")  # replay in the order made ends with the later change
    with pytest.raises(Invalid, match="order made"):
        order_guard([early, late], "timeout_seconds", base, 5)
    early.activated = 0
    order_guard([early, late], "timeout_seconds", base, 5)


# ============================================================================ guards, one by one


def test_initial_spec_must_satisfy_the_couplings() -> None:
    bad = make(DISTRACTOR, initial=with_(input_format="tsv"))
    assert violation(bad) == (0, "initial_coupling")
    good = make(DISTRACTOR, initial=with_(input_format="tsv", delimiter="tab"))
    assert kind(good) is None
    for c in COUPLINGS:
        other = next(v for v in oracle.BY_KEY[c.forced].domain if v != c.then)
        assert kind(make(DISTRACTOR, initial=with_(**{c.trigger: c.when, c.forced: other}))) == (
            "initial_coupling"
        )
        coupled = with_(**{c.trigger: c.when, c.forced: c.then})
        assert kind(make(DISTRACTOR, initial=coupled)) is None


@pytest.mark.parametrize("undo", [UNDO_LAST, UNDO_EARLIEST, undo_ref_turn("timeout_seconds")])
def test_undo_needs_an_active_change(undo: dict[str, Any]) -> None:
    assert violation(make(undo)) == (1, "nothing_to_undo")
    assert violation(make(DISTRACTOR, undo)) == (2, "nothing_to_undo")
    t60 = set_turn("timeout_seconds", "60")
    assert violation(make(t60, UNDO_LAST, undo)) == (3, "nothing_to_undo")
    ok = make(t60, undo)
    assert kind(ok) is None
    assert final(ok) == canonical_initial()


def test_redo_needs_something_undone_since_the_last_change() -> None:
    t60 = set_turn("timeout_seconds", "60")
    debug = set_turn("log_level", "debug")
    assert violation(make(REDO)) == (1, "nothing_to_redo")
    assert violation(make(t60, REDO)) == (2, "nothing_to_redo")
    assert violation(make(t60, UNDO_LAST, debug, REDO)) == (4, "nothing_to_redo")  # set clears
    assert violation(make(t60, UNDO_LAST, drop_turn("log_level"), REDO)) == (4, "nothing_to_redo")
    assert violation(make(t60, UNDO_LAST, REDO, REDO)) == (4, "nothing_to_redo")
    ok = make(t60, UNDO_LAST, DISTRACTOR, REDO)
    assert kind(ok) is None
    assert final(ok) == with_(timeout_seconds="60")
    # redo takes the most recently undone change back
    two = make(t60, debug, UNDO_LAST, UNDO_LAST, REDO)
    assert final(two) == with_(timeout_seconds="60")
    assert final(make(*turns_of(two), REDO)) == with_(timeout_seconds="60", log_level="debug")


def test_undo_last_after_redo_of_an_earlier_change_is_ambiguous() -> None:
    t60 = set_turn("timeout_seconds", "60")
    debug = set_turn("log_level", "debug")
    # the earlier change is redone while a later one is active: "the last change" has two readings
    assert violation(make(t60, debug, UNDO_EARLIEST, REDO, UNDO_LAST)) == (
        5,
        "undo_last_ambiguous",
    )
    assert violation(make(t60, debug, undo_ref_turn("timeout_seconds"), REDO, UNDO_LAST)) == (
        5,
        "undo_last_ambiguous",
    )
    # the last change itself undone and redone: one reading
    ok = make(t60, debug, UNDO_LAST, REDO, UNDO_LAST)
    assert kind(ok) is None
    assert final(ok) == with_(timeout_seconds="60")
    # a new change after the redo is last both ways
    ok = make(t60, debug, UNDO_EARLIEST, REDO, drop_turn("retries"), UNDO_LAST)
    assert kind(ok) is None
    assert final(ok) == with_(timeout_seconds="60", log_level="debug")


def test_undo_ref_needs_exactly_one_active_change_of_that_setting() -> None:
    t60 = set_turn("timeout_seconds", "60")
    t10 = set_turn("timeout_seconds", "10")
    debug = set_turn("log_level", "debug")
    ref = undo_ref_turn("timeout_seconds")
    assert violation(make(debug, ref)) == (2, "undo_ref_count")  # none
    assert violation(make(t60, t10, ref)) == (3, "undo_ref_count")  # two
    assert violation(make(t60, drop_turn("timeout_seconds"), ref)) == (3, "undo_ref_count")
    assert violation(make(t60, debug, ref, ref)) == (4, "undo_ref_count")  # already undone
    assert violation(make(t60, ref, ref)) == (3, "nothing_to_undo")  # nothing active at all
    ok = make(t60, debug, ref)
    assert kind(ok) is None
    assert final(ok) == with_(log_level="debug")
    ok = make(t60, t10, UNDO_LAST, ref)  # the other one is no longer active
    assert kind(ok) is None
    assert final(ok) == canonical_initial()


@pytest.mark.parametrize("c", COUPLINGS, ids=lambda c: c.forced)
def test_undo_ref_of_a_setting_an_active_change_forces(c: oracle.Coupling) -> None:
    explicit = set_turn(c.forced, c.then)
    trigger = set_turn(c.trigger, c.when)
    ref = undo_ref_turn(c.forced)
    assert violation(make(explicit, trigger, ref)) == (3, "undo_ref_forced")
    assert violation(make(trigger, explicit, ref)) == (3, "undo_ref_forced")
    other = next(v for v in oracle.BY_KEY[c.forced].domain if v != c.then)
    assert violation(make(set_turn(c.forced, other), trigger, ref)) == (3, "undo_ref_forced")
    # the trigger undone first: nothing forces the setting any more
    ok = make(explicit, trigger, undo_ref_turn(c.trigger), ref)
    assert kind(ok) is None
    assert final(ok) == canonical_initial()
    # undoing the trigger by reference is fine
    assert kind(make(explicit, trigger, undo_ref_turn(c.trigger))) is None
    # forced by the initial spec, not by an active change: allowed (the oracle's reading)
    coupled = with_(**{c.trigger: c.when, c.forced: c.then})
    ok = make(explicit, ref, initial=coupled)
    assert kind(ok) is None
    assert final(ok) == coupled


def test_undo_earliest_must_not_undo_a_shadowed_change() -> None:
    t60 = set_turn("timeout_seconds", "60")
    t10 = set_turn("timeout_seconds", "10")
    debug = set_turn("log_level", "debug")
    assert violation(make(t60, t10, UNDO_EARLIEST)) == (3, "undo_earliest_shadowed")
    assert violation(make(t60, t60, UNDO_EARLIEST)) == (3, "undo_earliest_shadowed")  # same value
    ok = make(t60, debug, UNDO_EARLIEST)
    assert kind(ok) is None
    assert final(ok) == with_(log_level="debug")
    ok = make(t60, t10, UNDO_LAST, UNDO_EARLIEST)  # the shadowing change is undone first
    assert kind(ok) is None
    assert final(ok) == canonical_initial()
    # shadowed by a rule whose trigger holds
    semicolon = set_turn("delimiter", "semicolon")
    tsv = set_turn("input_format", "tsv")
    assert violation(make(semicolon, tsv, UNDO_EARLIEST)) == (3, "undo_earliest_shadowed")
    # ... even when the forced value happens to equal the change's own value (oracle's reading)
    tab = set_turn("delimiter", "tab")
    assert violation(make(tab, tsv, UNDO_EARLIEST)) == (3, "undo_earliest_shadowed")
    ok = make(semicolon, tsv, UNDO_LAST, UNDO_EARLIEST)
    assert kind(ok) is None
    assert final(ok) == canonical_initial()
    # ... and when the trigger holds from the initial spec
    coupled = with_(input_format="tsv", delimiter="tab")
    assert violation(make(tab, UNDO_EARLIEST, initial=coupled)) == (2, "undo_earliest_shadowed")


@pytest.mark.parametrize("c", COUPLINGS, ids=lambda c: c.forced)
def test_no_explicit_value_overridden_by_an_earlier_trigger(c: oracle.Coupling) -> None:
    other = next(v for v in oracle.BY_KEY[c.forced].domain if v != c.then)
    explicit = set_turn(c.forced, other)
    trigger = set_turn(c.trigger, c.when)
    # trigger first, then a contradicting value (or a drop): rejected
    assert violation(make(trigger, explicit)) == (2, "coupling_override")
    assert violation(make(trigger, drop_turn(c.forced))) == (2, "coupling_override")
    assert violation(make(explicit, initial=with_(**{c.trigger: c.when, c.forced: c.then}))) == (
        1,
        "coupling_override",
    )
    # the forced value itself after the trigger is no contradiction
    assert kind(make(trigger, set_turn(c.forced, c.then))) is None
    # the same two turns the other way round: the later trigger overrides ...
    ok = make(explicit, trigger)
    assert kind(ok) is None
    assert final(ok) == with_(**{c.trigger: c.when, c.forced: c.then})
    # ... and undoing the trigger brings the earlier value back
    for undo in (UNDO_LAST, undo_ref_turn(c.trigger)):
        back = make(explicit, trigger, undo)
        assert kind(back) is None
        assert final(back) == with_(**{c.forced: other})
    back = make(drop_turn(c.forced), trigger, UNDO_LAST)
    assert final(back) == with_(**{c.forced: oracle.UNSPECIFIED})
    # after the trigger is gone, the contradicting value is fine again
    assert kind(make(trigger, UNDO_LAST, explicit)) is None
    not_when = next(v for v in oracle.BY_KEY[c.trigger].domain if v != c.when)
    assert kind(make(trigger, set_turn(c.trigger, not_when), explicit)) is None


def test_an_undo_that_brings_back_an_earlier_trigger_is_rejected() -> None:
    """The initial spec counts as made before every change: undoing a later input_format change
    brings the initial tsv back, which would override the explicit semicolon made after it."""
    coupled = with_(input_format="tsv", delimiter="tab")
    csv = set_turn("input_format", "csv")
    semicolon = set_turn("delimiter", "semicolon")
    for undo in (undo_ref_turn("input_format"), UNDO_EARLIEST):
        assert violation(make(csv, semicolon, undo, initial=coupled)) == (3, "coupling_override")
    ok = make(csv, semicolon, UNDO_LAST, UNDO_LAST, initial=coupled)
    assert kind(ok) is None
    assert final(ok) == coupled


def test_coupling_example_from_the_brief() -> None:
    tsv = set_turn("input_format", "tsv")
    semicolon = set_turn("delimiter", "semicolon")
    assert violation(make(tsv, semicolon)) == (2, "coupling_override")
    ok = make(semicolon, tsv, UNDO_LAST)
    assert kind(ok) is None
    specs = oracle.replay(ok)
    assert [s["delimiter"] for s in specs] == ["comma", "semicolon", "tab", "semicolon"]


@pytest.mark.parametrize(
    "text",
    [
        "I don't care about the timeout any more.",
        "Drop the timeout.",  # does not say the requirement is removed
        "No requirement, no limit on the timeout.",
        "The timeout requirement doesn't matter.",
        "Remove the requirement; timeout none.",
        "Please disable the timeout requirement.",
        "Switch off the timeout requirement.",
        "TURN OFF the timeout requirement.",
    ],
)
def test_drop_wording_rejected(text: str) -> None:
    t60 = set_turn("timeout_seconds", "60")
    assert violation(make(t60, drop_turn("timeout_seconds", text))) == (2, "drop_wording")


@pytest.mark.parametrize(
    "text",
    [
        "Remove the requirement on the timeout per file.",
        "Leave the timeout per file unspecified.",
        "REQUIREMENT on the timeout: removed.",
        "Remove the requirement on the timeout; nonessential.",  # 'none' only inside a word
    ],
)
def test_drop_wording_accepted(text: str) -> None:
    t60 = set_turn("timeout_seconds", "60")
    ok = make(t60, drop_turn("timeout_seconds", text))
    assert kind(ok) is None
    assert final(ok) == with_(timeout_seconds=oracle.UNSPECIFIED)


def test_drop_wording_is_checked_before_the_coupling_guard() -> None:
    tsv = set_turn("input_format", "tsv")
    bad = drop_turn("delimiter", "I don't care about the delimiter requirement.")
    assert violation(make(tsv, bad)) == (2, "drop_wording")
    assert violation(make(tsv, drop_turn("delimiter"))) == (2, "coupling_override")


# ------------------------------------------------ drop wording (gaps found by the naive comparison)


def test_drop_wording_typographic_apostrophe() -> None:
    # "don\u2019t care" is the same wording as "don't care", typed with a curly apostrophe
    text = "I don\u2019t care about the timeout requirement any more."
    t60 = set_turn("timeout_seconds", "60")
    assert violation(make(t60, drop_turn("timeout_seconds", text))) == (2, "drop_wording")


@pytest.mark.parametrize(
    ("setting", "text"),
    [
        ("progress_bar", "The progress bar requirement: disabled."),
        ("progress_bar", "Requirement removed, the progress bar is turned off."),
        ("timeout_seconds", "The timeout requirement no longer matters."),
        ("max_rows", "No limits on the rows, requirement removed."),
    ],
)
def test_drop_wording_inflections(setting: str, text: str) -> None:
    # inflections of ambiguous wording ("disabled", "turned off", "matters", "limits") are caught
    assert violation(make(drop_turn(setting, text))) == (1, "drop_wording")


def test_drop_wording_that_keeps_the_requirement() -> None:
    # naming the requirement is not enough: the text must say it is removed
    text = "Keep the requirement on the timeout per file as it is."
    t60 = set_turn("timeout_seconds", "60")
    assert violation(make(t60, drop_turn("timeout_seconds", text))) == (2, "drop_wording")


def test_every_documented_ambiguous_example_is_caught() -> None:
    from oracle.replay import DROP_AMBIGUOUS, DROP_AMBIGUOUS_EXAMPLES

    for phrase in DROP_AMBIGUOUS_EXAMPLES:
        assert DROP_AMBIGUOUS.search(phrase), phrase
