"""Every PII kind of the default patterns is found, and its near-miss is not.

Card and IBAN examples are the published test values (Visa 4111..., Stripe's test
cards, the IBAN registry's GB/DE/FR/NL examples). Token-shaped examples are built
from pieces at run time so that no secret scanner mistakes this file for a leak.
"""

from __future__ import annotations

import string

import pytest

from llm_observe.scan import Scanner, load_patterns, redact

ALNUM = string.ascii_letters + string.digits


def body(n: int, alphabet: str = ALNUM) -> str:
    """A deterministic token body of ``n`` characters."""
    return "".join(alphabet[(i * 7 + 3) % len(alphabet)] for i in range(n))


def p(*parts: str) -> str:
    return "".join(parts)


# name -> examples; an example is the text that must be found, or (text, expected match)
# when the pattern deliberately stops short of the text (closing quotes).
FOUND: dict[str, list[str | tuple[str, str]]] = {
    "email": ["jane.doe@example.com", "first.last+tag@mail.example.co.uk", "a_b@sub.example.io"],
    "phone_number": ["(212) 555-0147", "212-555-0147", "212.555.0147", "+1 212 555 0147",
                     "+1 (212) 555-0147", "+44 20 7946 0958", "+442079460958",
                     "+49 30 901820", "+33 1 42 68 53 00", "+39 0925141776",
                     "+44(0)1174960504", "+49 (0) 9141 777631", "+44115 496 0777",
                     "+1-780-563-6083x7783", "206.269.0743 ext. 915"],
    "phone_number_national": ["(030) 1234567", "04 15 39 15 00", "(0161) 496 0066",
                              "0837 783533", "08-170 669 07", "0049 30 1234567",
                              "01620466109", "033292106"],
    "credit_card": ["4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111",
                    "5555 5555 5555 4444", "4242 4242 4242 4242", "3782 822463 10005",
                    "378282246310005", "6011 1111 1111 1117", "3530 1113 3330 0000",
                    "6759649826438453", "630495060000000000", "180001234567899"],
    "us_ssn": ["536-22-1234", "536 22 1234", "001-01-0001", "665-99-9999", "899-12-3456"],
    "iban": ["GB82WEST12345698765432", "GB82 WEST 1234 5698 7654 32", "DE89370400440532013000",
             "DE89 3704 0044 0532 0130 00", "FR1420041010050500013M02606", "NL91ABNA0417164300",
             "NO9386011117947", "CH9300762011623852957"],
    "ipv4_address": ["192.168.1.20", "10.0.0.1", "8.8.8.8", "255.255.255.255"],
    "ipv6_address": ["2001:db8::8a2e:370:7334", "fe80::1ff:fe23:4567:890a",
                     "2001:0db8:85a3:0000:0000:8a2e:0370:7334", "2001:DB8:0:0:8:800:200C:417A"],
    "openai_api_key": [p("sk-", body(48)), p("sk-", "proj-", body(80, ALNUM + "_-")),
                       p("sk-", "proj-", body(156, ALNUM + "_-")),
                       p("sk-", "svcacct-", body(60)), p("sk-", "svcacct-", body(24)),
                       p("sk-", body(20), "T3Blbk", "FJ", body(20))],
    "anthropic_api_key": [p("sk-", "ant-", "api03-", body(93, ALNUM + "_-"), "AA"),
                          p("sk-", "ant-", "admin01-", body(60))],
    "aws_access_key_id": ["AKIAIOSFODNN7EXAMPLE", p("ASIA", body(16, string.ascii_uppercase))],
    "aws_secret_access_key": ["aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                              'AWS_SECRET_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"'[:-1]],
    "github_token": [p("gh", "p_", body(36)), p("gh", "s_", body(36)),
                     p("github", "_pat_", body(22), "_", body(59))],
    "gitlab_token": [p("gl", "pat-", body(20))],
    "google_api_key": [p("AI", "za", body(35, ALNUM + "_-"))],
    "slack_token": [p("xo", "xb-", "123456789012-1234567890123-", body(24)),
                    p("xo", "xp-", "123456789012-", body(30)),
                    p("xa", "pp-1-", "A0123456789-", body(20))],
    "slack_webhook_url": [p("https://hooks.", "slack.com/services/T00000000/B00000000/", body(24))],
    "stripe_secret_key": [p("sk", "_live_", body(24)), p("rk", "_test_", body(34))],
    "huggingface_token": [p("hf", "_", body(34))],
    "sendgrid_api_key": [p("SG", ".", body(22), ".", body(43))],
    "npm_token": [p("npm", "_", body(36))],
    "pypi_token": [p("pypi-", "AgEIcHlwaS5vcmc", body(70))],
    "jwt": ["eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4"
            "gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"],
    "private_key": [p("-----BEGIN RSA ", "PRIVATE KEY-----\nMIIEowIBAAKCAQEA",
                      body(64, ALNUM + "+/"), "\n", body(40), "==\n-----END RSA ",
                      "PRIVATE KEY-----"),
                    p("-----BEGIN OPENSSH ", "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE", body(50),
                      "\n-----END OPENSSH ", "PRIVATE KEY-----")],
    # The match ends at the host: the port and path are not secret.
    "url_credentials": [("postgres://app:s3cretPw@db.internal:5432/orders",
                         "postgres://app:s3cretPw@db.internal"),
                        ("https://deploy:hunter2@git.example.com/repo.git",
                         "https://deploy:hunter2@git.example.com")],
    "credential_assignment": ["password=hunter2!x9",
                              ('api_key: "a1b2c3d4e5f6"', 'api_key: "a1b2c3d4e5f6'),
                              ("DB_PASSWORD: Tr0ub4dor&3", "PASSWORD: Tr0ub4dor&3"),
                              "client_secret = 9f8e7d6c5b4a"],
}

# name -> text that looks close but must NOT be reported as that kind.
NOT_FOUND: dict[str, list[str]] = {
    "email": ["jane.doe@localhost", "@jane_doe", "user at example dot com", "a@b"],
    "phone_number": ["555-0147", "123-456-7890", "+12", "Decimal('+35236450.6')",
                     "2024-03-15", "1990-2005", "ISBN 978-0-306-40615-7"],
    "phone_number_national": ["0123456789", "01.02.2023", "0.25", "1234 567890",
                              "0000 000000", "1 0 1", "015-22"],
    "credit_card": ["4111 1111 1111 1112", "4111111111111112", "1234 5678 9012 3456",
                    "4111 1111-1111 1111", "0000 0000 0000 0000", "order 41111111111111112"],
    "us_ssn": ["000-12-3456", "666-12-3456", "912-34-5678", "536-00-1234", "536-22-0000",
               "078-05-1120", "219-09-9999", "123-45-6789", "536221234", "536-22 1234"],
    "iban": ["GB82WEST12345698765433", "GB82WEST1234569876543", "XX82WEST12345698765432",
             "GB82 WEST 1234 5698 7654 33", "gb82west12345698765432"],
    "ipv4_address": ["256.1.1.1", "1.2.3.4.5", "version 2.14.1", "192.168.1", "v1.2.3.4",
                     "version 1.2.3.4 released", "Version: 10.0.19041.1", "release 4.2.0.1"],
    "ipv6_address": ["std::vector", "::1", "12:30:45", "a::b", "fe80::1", "Note: this"],
    "openai_api_key": ["sk-short", "task-force", p("sk-", body(47)), "desk-" + body(48)],
    "anthropic_api_key": [p("sk-", "ant-", "xyz")],
    "aws_access_key_id": ["AKIAIOSFODNN7EXAMPL", "Asia is a continent", "AKIAIOSFODNN7EXAMPLEX"],
    "aws_secret_access_key": ["aws_secret_access_key = <your-secret>",
                              "the AWS secret key is stored in the vault"],
    "github_token": [p("gh", "p_", "short"), p("gh", "x_", body(36))],
    "gitlab_token": [p("gl", "pat-", "short")],
    "google_api_key": [p("AI", "za", body(20))],
    "slack_token": [p("xo", "xb-", "123")],
    "slack_webhook_url": ["https://hooks.slack.com/"],
    "stripe_secret_key": [p("pk", "_live_", body(24)), p("sk", "_live_", "short")],
    "huggingface_token": [p("hf", "_", "short"), "the hf_ prefix"],
    "sendgrid_api_key": ["SG.short.key"],
    "npm_token": [p("npm", "_", body(10))],
    "pypi_token": ["pypi-token"],
    "jwt": ["eyJhbGciOiJIUzI1NiJ9", "hey Jude"],
    "private_key": ["-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n"
                    "-----END PUBLIC KEY-----", "-----BEGIN CERTIFICATE-----"],
    "url_credentials": ["https://user@example.com/path", "https://example.com:8443/a", "ftp://host"],
    "credential_assignment": ["password: ********", "api_key = <YOUR_API_KEY>",
                              "the password is strong", "password: ${DB_PASSWORD}",
                              "secret: nobody", "password: xxxxxxxx1"],
}


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner(load_patterns())


def test_every_pii_entry_has_examples_both_ways() -> None:
    names = set(load_patterns().names("pii"))
    assert set(FOUND) == names
    assert set(NOT_FOUND) == names


@pytest.mark.parametrize(("name", "example"),
                         [(n, e) for n, examples in FOUND.items() for e in examples])
def test_pii_found_at_its_exact_offsets(scanner: Scanner, name: str,
                                        example: str | tuple[str, str]) -> None:
    secret, expected = example if isinstance(example, tuple) else (example, example)
    text = f"Details follow: {secret}\nThanks, see you."
    result = scanner.scan(text)
    assert result.pii_detected
    assert not result.injection_attempt
    spans = [(f.start, f.end) for f in result.findings if f.name == name]
    start = text.index(expected)
    assert (start, start + len(expected)) in spans
    assert redact(text, result.findings).count(f"[REDACTED:{name.upper()}]") == 1


def test_truncated_private_key_is_still_found(scanner: Scanner) -> None:
    text = "my key:\n" + p("-----BEGIN EC ", "PRIVATE KEY-----\nMHcCAQEEIB", body(40))
    result = scanner.scan(text)
    assert [f.name for f in result.findings] == ["private_key"]
    assert result.findings[0].end == len(text)


@pytest.mark.parametrize(("name", "text"),
                         [(n, t) for n, texts in NOT_FOUND.items() for t in texts])
def test_near_miss_not_reported(scanner: Scanner, name: str, text: str) -> None:
    found = [f.name for f in scanner.scan(f"Details follow: {text}\nThanks.").findings]
    assert name not in found


@pytest.mark.parametrize("number", ["4111 1111 1111 1112", "GB82WEST12345698765433",
                                    "000-12-3456", "1234 5678 9012 3456"])
def test_checksum_failures_are_not_pii_at_all(scanner: Scanner, number: str) -> None:
    assert not scanner.scan(f"Reference {number} for your records.").pii_detected


def test_findings_do_not_carry_the_secret(scanner: Scanner) -> None:
    secret = p("sk", "_live_", body(24))
    result = scanner.scan(f"key {secret}")
    assert result.findings
    assert secret not in repr(result)
    assert secret not in str(result.as_dict())
    assert result.as_dict()["findings"][0] == {
        "type": "pii", "name": "stripe_secret_key", "start": 4, "end": 4 + len(secret),
        "severity": "critical", "field": "text", "detector": "regex"}
