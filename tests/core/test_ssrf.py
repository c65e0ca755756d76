"""The SSRF rule (core.ssrf) and webhook signatures (core.signing), as tables of inputs."""

from __future__ import annotations

import ipaddress

import pytest

from openbot.core import signing
from openbot.core.ssrf import Target, first_refusal, parse_url, refusal

ALWAYS = "always refused"
PRIVATE = "private only"
PUBLIC = "public"


@pytest.mark.parametrize(
    ("address", "verdict"),
    [
        ("169.254.169.254", ALWAYS),
        ("169.254.170.2", ALWAYS),
        ("169.254.1.1", ALWAYS),
        ("fe80::1", ALWAYS),
        ("fd00:ec2::254", ALWAYS),
        ("100.100.100.200", ALWAYS),
        ("::ffff:169.254.169.254", ALWAYS),
        ("0.0.0.0", ALWAYS),
        ("::", ALWAYS),
        ("224.0.0.1", ALWAYS),
        ("255.255.255.255", ALWAYS),
        ("127.0.0.1", PRIVATE),
        ("::1", PRIVATE),
        ("::ffff:127.0.0.1", PRIVATE),
        ("10.0.0.1", PRIVATE),
        ("172.16.5.4", PRIVATE),
        ("192.168.1.1", PRIVATE),
        ("100.64.0.1", PRIVATE),
        ("fd12:3456::1", PRIVATE),
        ("93.184.216.34", PUBLIC),
        ("2606:4700::1111", PUBLIC),
    ],
)
def test_the_rule_per_address(address: str, verdict: str) -> None:
    ip = ipaddress.ip_address(address)
    strict, lenient = refusal(ip, allow_private=False), refusal(ip, allow_private=True)
    assert (strict is None, lenient is None) == {
        ALWAYS: (False, False),
        PRIVATE: (False, True),
        PUBLIC: (True, True),
    }[verdict]


def test_one_refused_address_refuses_the_host() -> None:
    good, bad = ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("169.254.169.254")
    assert first_refusal([good], allow_private=False) is None
    assert first_refusal([good, bad], allow_private=True) == "169.254.169.254 is a cloud metadata address"
    assert first_refusal([], allow_private=True) == "the host resolved to no address"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://hooks.example.com/x", ("https", "hooks.example.com", 443)),
        ("http://[::1]:8080/x", ("http", "::1", 8080)),
        ("ftp://example.com/", "the scheme must be http or https"),
        ("http:///nohost", "the URL has no host"),
        ("https://user:pw@example.com/", "credentials in the URL are not allowed"),
        ("http://example.com:99999/", "not a valid URL"),
        ("http://" + "a" * 64 + ".com/", "'" + "a" * 64 + ".com' is not a valid host name"),
        ("http://a..b/", "'a..b' is not a valid host name"),
        ("http://./", "'.' is not a valid host name"),
        ("http://bücher.example/", ("http", "bücher.example", 80)),
    ],
)
def test_parse_url(url: str, expected: tuple[str, str, int] | str) -> None:
    target = parse_url(url)
    if isinstance(expected, tuple):
        assert isinstance(target, Target) and (target.scheme, target.host, target.port) == expected
    else:
        assert isinstance(target, str) and target.startswith(expected)


def test_a_signature_is_the_hmac_of_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    body = b'{"type":"message.created"}'
    expected = hmac.new(b"s3cret", b"1767225600." + body, hashlib.sha256).hexdigest()
    assert signing.signature("s3cret", "1767225600", body) == "sha256=" + expected
    headers = signing.headers("s3cret", "whd_1", "1767225600", body)
    assert headers["X-OpenBot-Signature"] == "sha256=" + expected
    assert headers["X-OpenBot-Delivery"] == "whd_1" and headers["X-OpenBot-Timestamp"] == "1767225600"
    assert "X-OpenBot-Signature" not in signing.headers(None, "whd_1", "1767225600", body)
    assert signing.verify("s3cret", "1767225600", body, headers["X-OpenBot-Signature"])
    assert not signing.verify("s3cret", "1767225600", body + b" ", headers["X-OpenBot-Signature"])
