"""The URL rules every backend shares: ``redact_url``, strict option readers, user parts that must be escaped."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_stores.core import redact_url
from agent_stores.core.redaction import is_secret_option
from agent_stores.core.urls import (
    check_user_part,
    parse_bool,
    parse_bytes,
    parse_count,
    parse_optional_count,
    parse_seconds,
)

SPECIALS = "#?/@:%"
SCHEMES = ("redis", "rediss+cluster", "mongodb", "mongodb+srv", "fsspec+sftp", "s3", "x-custom")


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("special", [*SPECIALS, SPECIALS, "%zz", "%41"])
@pytest.mark.parametrize("escaped", [False, True])
def test_the_whole_user_part_is_hidden_whatever_it_holds(scheme: str, special: str, escaped: bool) -> None:
    password = f"Qx7v{special}Kp2w"
    written = quote(password, safe="") if escaped else password
    url = f"{scheme}://Uz9n:{written}@db.example:6380/0?socket_timeout=5"
    shown = redact_url(url)
    assert shown == f"{scheme}://***@db.example:6380/0?socket_timeout=5"
    for piece in ("Qx7v", "Kp2w", "Uz9n"):
        assert piece not in shown


@given(st.text(alphabet=st.sampled_from("ab12" + SPECIALS + "=&;"), min_size=1, max_size=20))
def test_no_password_survives_redaction(password: str) -> None:
    secret = f"Zq{password}Zq"
    shown = redact_url(f"redis://user:{secret}@host:1/0?key_prefix=p")
    assert "Zq" not in shown


@given(st.text(alphabet=st.sampled_from("ab12" + SPECIALS + "&;"), min_size=1, max_size=20))
def test_no_secret_option_survives_redaction(value: str) -> None:
    """Whatever the value holds but ``&name=`` (which starts another option as every parser reads it)."""
    secret = f"Zq{value}Zq"
    for url in (f"s3://b/p?region=eu&password={secret}&path_keys=1", f"redis://u:pw@h/0?token={secret}"):
        assert "Zq" not in redact_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///agent.db?password=Zq5a#Zq5b?Zq5c/Zq5d@Zq5e:Zq5f%Zq5g",  # an '@' in a secret option
        "mongodb:/user:Zq5pw@host/db",  # one slash: malformed, still hidden
        "user:Zq5pw@host",  # no scheme at all
        "redis://:Zq5pw@",  # no host
    ],
)
def test_malformed_urls_are_redacted_too(url: str) -> None:
    assert "Zq5" not in redact_url(url)


def test_a_non_string_shows_only_its_type() -> None:
    assert redact_url(b"redis://:Zq5pw@h") == "<bytes>"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("ssl_password", True),
        ("tlsCertificateKeyFilePassword", True),
        ("passphrase", True),
        ("pwd", True),
        ("secret", True),
        ("aws_secret_access_key", True),
        ("client_secret", True),
        ("token", True),
        ("sas_token", True),
        ("credentials", True),
        ("signature", True),
        ("sig", True),
        ("SIG", True),
        ("connection_string", True),
        ("connectionString", True),
        ("authMechanismProperties", True),
        ("key", True),
        ("account_key", True),
        ("AccountKey", True),
        ("api-key", True),
        ("pass%77ord", True),  # percent-encoded names are read as a parser reads them
        ("key_prefix", False),
        ("ssl_keyfile", False),
        ("key_filename", False),
        ("tlsCertificateKeyFile", False),
        ("ssl_ca_certs", False),
        ("authSource", False),
        ("endpoint_url", False),
        ("region", False),
    ],
)
def test_secret_option_names(name: str, secret: bool) -> None:
    assert is_secret_option(name, "value") is secret


@pytest.mark.parametrize(
    "value",
    [
        "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Zq5k",
        "https://acct.blob.example/c?sv=1&sig=Zq5k",
        "Endpoint=sb://x/;SharedAccessKeyName=n;SharedAccessKey=Zq5k",
        "a%3BAccountKey%3DZq5k",
    ],
)
def test_values_holding_secrets_are_hidden_whatever_their_name(value: str) -> None:
    assert is_secret_option("misc", value)
    shown = redact_url(f"fsspec+abfs://c/root?misc={value}&region=eu")
    assert "Zq5k" not in shown and shown.endswith("&region=eu")


@pytest.mark.parametrize(
    "url",
    [
        "s3://b/p?token=Zq5k&Zq5m&region=eu",  # an unescaped '&' in the value
        "s3://b/p?token=Zq5k#Zq5m",
        "s3://b/p#token=Zq5k",
        "s3://b/p?a=1;password=Zq5k",  # ';' as pymongo's separator
    ],
)
def test_secret_values_are_hidden_up_to_the_next_option(url: str) -> None:
    shown = redact_url(url)
    assert "Zq5k" not in shown and "Zq5m" not in shown


def test_what_says_where_the_store_is_stays() -> None:
    for url in (
        "redis://h:6379/0?key_prefix=app:&socket_timeout=5&ssl_keyfile=/k.pem",
        "sqlite:///agent.db",
        "file:///srv/agent",
        "mongodb://h1,h2/db?replicaSet=rs&authSource=admin",
    ):
        assert redact_url(url) == url


# -- strict booleans ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "True", "yes", "Yes", "on", "ON"])
def test_true_spellings(text: str) -> None:
    assert parse_bool(text, option="x") is True


@pytest.mark.parametrize("text", ["0", "false", "FALSE", "no", "No", "off", "Off"])
def test_false_spellings(text: str) -> None:
    assert parse_bool(text, option="x") is False


@pytest.mark.parametrize(
    "value",
    ["required", "enabled", "disabled", "t", "f", "y", "n", "", " true", "true ", "2", "-1", "truee", None, 2, 1.0, []],
)
def test_every_other_spelling_is_an_error_naming_the_option(value: object) -> None:
    with pytest.raises(ValueError, match="option ssl_check_hostname takes 1, true, yes, on or 0, false, no, off"):
        parse_bool(value, option="ssl_check_hostname")


def test_bools_and_the_ints_zero_and_one_pass() -> None:
    assert [parse_bool(v, option="x") for v in (True, False, 1, 0)] == [True, False, True, False]


# -- user parts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "redis://:Zq5#k@host/0",
        "redis://:Zq5?k@host/0",
        "redis://:Zq5/k@host/0",
        "redis://user:Zq5/k@host",
        "fsspec+sftp://h/data@2024",  # ambiguous with a user part holding '/': refused
    ],
)
def test_an_at_after_the_authority_is_refused_without_quoting(url: str) -> None:
    with pytest.raises(ValueError, match="percent-encoded") as caught:
        check_user_part(url, what="test URL")
    assert "Zq5" not in str(caught.value) and "test URL" in str(caught.value)


def test_a_bad_percent_escape_in_the_user_part_is_refused() -> None:
    with pytest.raises(ValueError, match="%25") as caught:
        check_user_part("redis://:Zq5%zz@host/0")
    assert "Zq5" not in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "redis://:Zq5%23%3F%2F%40%25k@host/0",
        "redis://:Zq5@k:x@host/0",  # '@' and ':' need no escape in a password
        "redis://host/0?client_name=a%40b",
        "file:///srv/data@2024",  # no authority: an '@' in the path is a path
        "sqlite:///a@b.db",
        "redis://host:6379/0",
    ],
)
def test_well_formed_urls_pass(url: str) -> None:
    check_user_part(url)


@pytest.mark.parametrize(("value", "size"), [("0", 0), ("8388608", 8388608), (0, 0), (4096, 4096)])
def test_a_size_in_bytes_is_a_whole_non_negative_number(value: object, size: int) -> None:
    assert parse_bytes(value, option="opened_bytes") == size


@pytest.mark.parametrize("value", ["-1", "1.5", "8MiB", " 8", "8 ", "", "0x10", "١٢", -1, 1.5, True, None])
def test_any_other_size_is_an_error_naming_the_option(value: object) -> None:
    with pytest.raises(ValueError, match="option opened_bytes takes a whole non-negative number of bytes"):
        parse_bytes(value, option="opened_bytes")


# Spellings no number option takes: signs, spaces, other digits and bases, units, exponents, empty.
_NOT_DIGITS = ["-1", "+1", " 8", "8 ", "", "0x10", "1e3", "1_000", "\u0661\u0662", "8k", "none!", True, False, [8]]


@pytest.mark.parametrize(("value", "count"), [("1", 1), ("32", 32), ("007", 7), (1, 1), (10**6, 10**6)])
def test_a_count_is_a_whole_positive_number(value: object, count: int) -> None:
    assert parse_count(value, option="concurrency") == count


@pytest.mark.parametrize("value", ["0", 0, -3, "1.5", 1.0, 2.5, "none", None, *_NOT_DIGITS])
def test_any_other_count_is_an_error_naming_the_option(value: object) -> None:
    with pytest.raises(ValueError, match="option concurrency takes a whole positive number; got "):
        parse_count(value, option="concurrency")


@pytest.mark.parametrize(
    ("value", "count"), [("0", 0), ("8", 8), (0, 0), (12, 12), (None, None), ("none", None), ("None", None)]
)
def test_an_optional_count_is_a_whole_non_negative_number_or_none(value: object, count: int | None) -> None:
    assert parse_optional_count(value, option="tail_after") == count


@pytest.mark.parametrize("value", [-1, "1.5", 1.0, "null", "nil", " none", *_NOT_DIGITS])
def test_any_other_optional_count_is_an_error_naming_the_option(value: object) -> None:
    with pytest.raises(ValueError, match="option tail_after takes a whole non-negative number or none; got "):
        parse_optional_count(value, option="tail_after")


@pytest.mark.parametrize(
    ("value", "seconds"), [("60", 60.0), ("0.5", 0.5), ("2.", 2.0), (".25", 0.25), (30, 30.0), (1.5, 1.5)]
)
def test_seconds_are_a_positive_finite_number(value: object, seconds: float) -> None:
    found = parse_seconds(value, option="timeout")
    assert found == seconds and isinstance(found, float)
    assert parse_seconds(value, option="key_refresh", zero=True) == seconds


@pytest.mark.parametrize(
    "value",
    [
        "0", "0.0", 0, 0.0, -1, -0.5, "inf", "Infinity", "nan", "NaN", float("inf"), float("nan"), float("-inf"),
        "1" * 400, 10**400, "60s", "1,5", ".", "1.2.3", None, *_NOT_DIGITS,
    ],
)  # fmt: skip
def test_any_other_duration_is_an_error_naming_the_option(value: object) -> None:
    with pytest.raises(ValueError, match="option timeout takes a positive, finite number of seconds; got "):
        parse_seconds(value, option="timeout")
    if value not in ("0", "0.0", 0, 0.0):
        with pytest.raises(ValueError, match="option key_refresh takes a finite, non-negative number of seconds; got "):
            parse_seconds(value, option="key_refresh", zero=True)


@pytest.mark.parametrize("value", ["0", "0.0", "0.", 0, 0.0])
def test_zero_seconds_only_where_the_option_takes_it(value: object) -> None:
    assert parse_seconds(value, option="key_refresh", zero=True) == 0.0
    with pytest.raises(ValueError, match="option timeout takes a positive, finite number of seconds"):
        parse_seconds(value, option="timeout")


def test_a_refused_value_is_shown_cut_and_never_as_a_whole_object() -> None:
    with pytest.raises(ValueError, match=r"got '9{39}x'\.\.\.$"):
        parse_count("9" * 39 + "x" * 30, option="concurrency")
    with pytest.raises(ValueError, match=r"got a list$"):
        parse_count([1], option="concurrency")
