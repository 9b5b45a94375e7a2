"""PII recall, precision and speed: ours vs Presidio's pattern recognizers vs detect-secrets.

One synthetic corpus (Faker, ten locales, seeded): prompts that each hold one known
entity (email, phone, card, US SSN, IBAN, IP, and current API-key formats built from
their published shapes), plus as many clean prose prompts. For each detector:
recall per entity kind, precision over everything it reported on its kinds, and µs
per prompt, all in the same run.

Presidio runs its predefined recognizers directly, without the NLP engine: its spaCy
model is a separate download the machine cannot fetch offline, so context words do
not boost its scores, and every result is counted (score threshold 0, its default).
detect-secrets runs its default plugin set line by line (its entropy limits applied).

Run: python -m bench.scan_pii [--quick]   (needs the [bench] extra)
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from bench._common import emit, median_time, quick
from llm_observe.scan import Scanner, load_patterns
from llm_observe.scan.patterns import ClassifierConfig
from tests.scan.prose import generate_prose

LOCALES = ["en_US", "en_GB", "de_DE", "fr_FR", "it_IT", "es_ES", "nl_NL", "pl_PL", "pt_PT",
           "sv_SE"]
TEMPLATES = ["Please update my record: {x}.", "{x} is the one to use, thanks!",
             "Customer wrote: \"my details are {x}\" - can you check?",
             "Summarise this ticket. Contact: {x}. Issue: login fails after reset."]
A = string.ascii_letters + string.digits
# Our finding names / Presidio entity types per corpus kind.
OURS = {"email": {"email"}, "phone": {"phone_number", "phone_number_national"},
        "credit_card": {"credit_card"}, "us_ssn": {"us_ssn"}, "iban": {"iban"},
        "ip": {"ipv4_address", "ipv6_address"}}
PRESIDIO = {"email": "EMAIL_ADDRESS", "phone": "PHONE_NUMBER", "credit_card": "CREDIT_CARD",
            "us_ssn": "US_SSN", "iban": "IBAN_CODE", "ip": "IP_ADDRESS"}
SECRETS = ("openai_project", "openai_svcacct", "anthropic", "github", "aws", "google",
           "slack", "stripe", "jwt")
Span = tuple[int, int]


def _key(kind: str, r: random.Random) -> str:
    def rnd(n: int, alphabet: str = A) -> str:
        return "".join(r.choice(alphabet) for _ in range(n))
    if kind == "jwt":
        head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
        body = base64.urlsafe_b64encode(json.dumps({"sub": rnd(8), "iat": r.randint(
            1_600_000_000, 1_800_000_000)}).encode()).rstrip(b"=").decode()
        return f"{head}.{body}.{rnd(43, A + '_-')}"
    return {"openai_project": lambda: "sk-" + "proj-" + rnd(r.choice([48, 74, 156]), A + "_-"),
            "openai_svcacct": lambda: "sk-" + "svcacct-" + rnd(r.choice([48, 74, 156]), A + "_-"),
            "anthropic": lambda: "sk-" + "ant-api03-" + rnd(93, A + "_-") + "AA",
            "github": lambda: r.choice(["ghp_", "gho_", "ghs_"]) + rnd(36),
            "aws": lambda: "AKIA" + rnd(16, string.ascii_uppercase + "234567"),
            "google": lambda: "AI" + "za" + rnd(35, A + "_-"),
            "slack": lambda: "xo" + "xb-" + rnd(12, string.digits) + "-" +
            rnd(13, string.digits) + "-" + rnd(24),
            "stripe": lambda: "sk" + "_live_" + rnd(r.choice([24, 99])),
            }[kind]()


def corpus(n_per_kind: int) -> list[tuple[str, str | None, Span | None]]:
    """(text, kind or None, span) rows; None rows are clean prose prompts."""
    from faker import Faker

    r = random.Random(15)
    fakers = [Faker(loc) for loc in LOCALES]
    for i, f in enumerate(fakers):
        f.seed_instance(100 + i)
    us = fakers[0]
    make: dict[str, Callable[[], str]] = {
        "email": lambda: r.choice(fakers).email(), "phone": lambda: r.choice(fakers).phone_number(),
        "credit_card": lambda: r.choice(fakers).credit_card_number(), "us_ssn": us.ssn,
        "iban": lambda: r.choice(fakers).iban(),
        "ip": lambda: us.ipv4() if r.random() < 0.7 else us.ipv6()}
    make.update({k: (lambda k=k: _key(k, r)) for k in SECRETS})  # type: ignore[misc]
    rows: list[tuple[str, str | None, Span | None]] = []
    for kind, fn in make.items():
        for _ in range(n_per_kind):
            value, template = fn(), r.choice(TEMPLATES)
            start = template.index("{x}")
            rows.append((template.replace("{x}", value), kind, (start, start + len(value))))
    clean = generate_prose(len(rows) * 180, seed=15)
    rows.extend((t, None, None) for t in clean[:len(rows)])
    return rows


def ours_detector(pii_only: bool = False) -> Callable[[str], list[tuple[str, Span]]]:
    """The full scan (PII, phrases, regexes, classifier), or PII entries alone."""
    patterns = load_patterns()
    if pii_only:
        patterns = replace(patterns, entries=tuple(e for e in patterns.entries if e.kind == "pii"),
                           classifier=ClassifierConfig(enabled=False))
    scanner = Scanner(patterns)
    by_name = {n: k for k, names in OURS.items() for n in names}

    def run(text: str) -> list[tuple[str, Span]]:
        return [(by_name.get(f.name, "secret"), (f.start, f.end))
                for f in scanner.scan(text, every_injection=False).findings if f.type == "pii"]
    return run


def presidio_detector() -> Callable[[str], list[tuple[str, Span]]]:
    import tldextract
    import tldextract.tldextract as tld

    # Presidio's email check asks tldextract, which would download the public-suffix
    # list; the bench runs offline, so it uses the snapshot tldextract ships.
    tld.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UsSsnRecognizer,
    )
    recognizers = [EmailRecognizer(), PhoneRecognizer(), CreditCardRecognizer(),
                   UsSsnRecognizer(), IbanRecognizer(), IpRecognizer()]
    kind_of = {v: k for k, v in PRESIDIO.items()}

    def run(text: str) -> list[tuple[str, Span]]:
        out = []
        for rec in recognizers:
            for res in rec.analyze(text, rec.supported_entities, None):
                out.append((kind_of.get(res.entity_type, "other"), (res.start, res.end)))
        return out
    return run


def detect_secrets_detector() -> Callable[[str], list[tuple[str, Span]]]:
    from detect_secrets.settings import default_settings, get_plugins

    with default_settings():
        plugins = list(get_plugins())

    def run(text: str) -> list[tuple[str, Span]]:
        out = []
        for plugin in plugins:
            for secret in plugin.analyze_line(filename="prompt.txt", line=text, line_number=1):
                value = secret.secret_value or ""
                at = text.find(value) if value else -1
                if at >= 0:
                    out.append(("secret", (at, at + len(value))))
        return out
    return run


def score(name: str, detect: Callable[[str], list[tuple[str, Span]]],
          rows: list[tuple[str, str | None, Span | None]], kinds: set[str]) -> None:
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    reported = correct = 0
    for text, kind, span in rows:
        hits = [(k, s) for k, s in detect(text) if k in kinds or k == "secret"]
        want = "secret" if kind in SECRETS else kind
        for k, (s, e) in hits:
            if want in kinds and span is not None and k == want and s < span[1] and span[0] < e:
                correct += 1
            reported += 1
        if kind is not None and want in kinds:
            found[kind][1] += 1
            found[kind][0] += any(k == want and s < span[1] and span[0] < e  # type: ignore[index]
                                  for k, (s, e) in hits)
    for kind, (f, n) in sorted(found.items()):
        emit("scan_pii", "recall", f / n, "fraction", detector=name, entity=kind, found=f, of=n)
    emit("scan_pii", "precision", correct / reported if reported else 1.0, "fraction",
         detector=name, reported=reported)
    texts = [t for t, _, _ in rows]
    seconds = median_time(lambda: [detect(t) for t in texts], repeats=3)
    emit("scan_pii", "us_per_prompt", seconds / len(texts) * 1e6, "us", detector=name)


def main() -> None:
    rows = corpus(60 if quick() else 300)
    common = set(OURS)
    score("llm_observe", ours_detector(), rows, common | {"secret"})
    score("llm_observe_pii_only", ours_detector(pii_only=True), rows, common | {"secret"})
    score("presidio_patterns", presidio_detector(), rows, common)
    score("detect_secrets", detect_secrets_detector(), rows, {"secret"})


if __name__ == "__main__":
    main()
