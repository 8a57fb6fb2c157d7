"""The harness profiles (``kiana.harness``): one rule per test, and the loader's SQL of
each rule agreeing with the profile's Python."""

from __future__ import annotations

import json

import duckdb
import pytest

from kiana.harness import (
    DEFAULT,
    LIGER,
    PLAIN_ROLE_LABEL,
    PLAIN_VERSION_LABEL,
    Harness,
    display_name,
    harness_sql,
    plain,
    profile,
    role_label_sql,
    role_sql,
    version_sql,
)


def test_liger_is_the_default_profile() -> None:
    assert DEFAULT is LIGER
    assert (LIGER.name, LIGER.version_label, LIGER.display) == (
        "liger-kernel-bench",
        "liger_version",
        "Liger",
    )


def test_a_document_without_a_source_is_the_default_profile_s() -> None:
    assert profile(None) is LIGER
    assert profile("  ") is LIGER


def test_liger_s_source_is_liger_s() -> None:
    assert profile("liger-kernel-bench") is LIGER


def test_a_source_no_profile_claims_gets_the_plain_profile() -> None:
    found = profile("tritonbench")
    assert found == plain("tritonbench")
    assert (found.name, found.display, found.sources) == (
        "tritonbench",
        "tritonbench",
        ("tritonbench",),
    )
    assert (found.version_label, found.role_label) == (PLAIN_VERSION_LABEL, PLAIN_ROLE_LABEL)


@pytest.mark.parametrize(
    ("provider", "role"),
    [
        ("liger", "subject"),
        ("liger_triton", "subject"),
        ("torch", "baseline"),
        ("ligerx", "baseline"),
    ],
)
def test_liger_s_providers_under_test_are_liger_and_liger_star(provider: str, role: str) -> None:
    assert LIGER.role(provider) == role


def test_liger_reads_no_role_label() -> None:
    assert LIGER.role("torch", {"role": "subject"}) == "baseline"


def test_a_plain_provider_is_under_test_when_its_document_says_so() -> None:
    assert plain("h").role("anything", {"role": "subject"}) == "subject"


def test_a_plain_provider_is_a_baseline_otherwise() -> None:
    harness = plain("h")
    assert harness.role("liger") == "baseline"  # no name rule outside Liger's profile
    assert harness.role("x", {"role": "baseline"}) == "baseline"


def test_a_profile_s_name_is_its_first_source() -> None:
    with pytest.raises(ValueError, match="first source"):
        Harness(name="a", display="A", sources=("b",), version_label="v")


def test_the_display_name_is_the_one_harness_s() -> None:
    assert display_name(["liger-kernel-bench", None]) == "Liger"  # no source: Liger's
    assert display_name(["tritonbench"]) == "tritonbench"


def test_several_harnesses_or_none_have_no_display_name() -> None:
    assert display_name(["liger-kernel-bench", "tritonbench"]) is None
    assert display_name([]) is None


CASES = [
    # (source, provider, labels)
    ("liger-kernel-bench", "liger", {"liger_version": "0.6.0"}),
    ("liger-kernel-bench", "liger_cutile", {"liger_version": "0.6.0", "role": "baseline"}),
    ("liger-kernel-bench", "torch", {"liger_version": "0.6.0", "role": "subject"}),
    (None, "liger", {"liger_version": "0.6.0"}),
    ("tritonbench", "fused", {"version": "1.2", "role": "subject"}),
    ("tritonbench", "liger", {"version": "1.2"}),
    ("tritonbench", "cublas", {"version": "1.2", "role": "baseline"}),
    ("o'brien", "x", {"version": "7", "liger_version": "0.1"}),
]


def test_the_loader_s_sql_computes_what_the_profiles_say() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (source VARCHAR, provider VARCHAR, labels JSON)")
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?)", [(s, p, json.dumps(lab)) for s, p, lab in CASES]
    )
    rows = con.execute(
        f"""SELECT harness, {role_sql("harness", "provider", "said")},
                   json_extract_string({version_sql("harness", "labels")}, '$')
            FROM (SELECT *, json_extract_string({role_label_sql("harness", "labels")}, '$') AS said
                  FROM (SELECT *, {harness_sql("source")} AS harness FROM t))"""
    ).fetchall()
    expected = []
    for source, provider, labels in CASES:
        harness = profile(source)
        expected.append(
            (harness.name, harness.role(provider, labels), labels.get(harness.version_label))
        )
    assert rows == expected
