from __future__ import annotations

import json

import pytest

from llm_observe import providers
from llm_observe.providers import Detection, detect, provider_for_url

CHAT_BODY = {"model": "m-1", "messages": [{"role": "user", "content": "hi"}]}

# (url, body, provider, model, operation, streaming, wire) — one or more real request
# shapes per provider, from each provider's API reference.
def _case(
    url: str, body: dict[str, object] | None, provider: str, model: str | None, operation: str,
    streaming: bool = False, wire: str = "openai",
) -> tuple[str, dict[str, object] | None, Detection]:
    return url, body, Detection(provider, model, operation, streaming, wire)


OPENAI = "https://api.openai.com/v1"
GEMINI = "https://generativelanguage.googleapis.com/v1beta"
VERTEX = "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1"
BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com/model"

# One or more real request shapes per provider, from each provider's API reference.
CASES = [
    _case(f"{OPENAI}/chat/completions", CHAT_BODY, "openai", "m-1", "chat"),
    _case(f"{OPENAI}/chat/completions", {**CHAT_BODY, "stream": True}, "openai", "m-1", "chat",
          True),
    _case(f"{OPENAI}/responses", {"model": "gpt-4o"}, "openai", "gpt-4o", "chat"),
    _case(f"{OPENAI}/embeddings", {"model": "te-3"}, "openai", "te-3", "embeddings"),
    _case(f"{OPENAI}/completions", {"model": "gpt-3.5-turbo-instruct"}, "openai",
          "gpt-3.5-turbo-instruct", "text_completion"),
    _case("https://myres.openai.azure.com/openai/deployments/prod-gpt4o/chat/completions"
          "?api-version=2024-10-21", {"messages": []}, "azure_openai", "prod-gpt4o", "chat"),
    _case("https://myres.cognitiveservices.azure.com/openai/v1/chat/completions", CHAT_BODY,
          "azure_openai", "m-1", "chat"),
    _case("https://api.anthropic.com/v1/messages", {"model": "claude-x", "stream": True},
          "anthropic", "claude-x", "chat", True, "anthropic"),
    _case("https://api.anthropic.com/v1/messages/count_tokens", {"model": "claude-x"},
          "anthropic", "claude-x", "other", False, "anthropic"),
    _case(f"{GEMINI}/models/gemini-2.0-flash:generateContent", {"contents": []}, "gemini",
          "gemini-2.0-flash", "generate_content", False, "gemini"),
    _case(f"{GEMINI}/models/gemini-2.0-flash:streamGenerateContent?alt=sse", None, "gemini",
          "gemini-2.0-flash", "generate_content", True, "gemini"),
    _case(f"{GEMINI}/openai/chat/completions", CHAT_BODY, "gemini", "m-1", "chat"),
    _case(f"{VERTEX}/publishers/google/models/gemini-1.5-pro:generateContent", None,
          "vertex_ai", "gemini-1.5-pro", "generate_content", False, "gemini"),
    _case(f"{VERTEX}/publishers/anthropic/models/claude-3-5-sonnet-v2@20241022:streamRawPredict",
          {"anthropic_version": "vertex-2023-10-16"}, "vertex_ai", "claude-3-5-sonnet-v2@20241022",
          "chat", True, "anthropic"),
    _case("https://api.mistral.ai/v1/chat/completions", {"model": "mistral-large-latest"},
          "mistral", "mistral-large-latest", "chat"),
    _case("https://api.mistral.ai/v1/fim/completions", {"model": "codestral-latest"},
          "mistral", "codestral-latest", "text_completion"),
    _case("https://api.cohere.com/v2/chat", {"model": "command-r-plus", "stream": True},
          "cohere", "command-r-plus", "chat", True, "cohere"),
    _case("https://api.cohere.ai/v1/embed", {"model": "embed-english-v3.0"},
          "cohere", "embed-english-v3.0", "embeddings", False, "cohere"),
    _case("https://api.groq.com/openai/v1/chat/completions", {"model": "llama-3.3-70b"},
          "groq", "llama-3.3-70b", "chat"),
    _case("https://api.deepseek.com/chat/completions", {"model": "deepseek-chat"},
          "deepseek", "deepseek-chat", "chat"),
    _case("https://api.x.ai/v1/chat/completions", {"model": "grok-4"}, "xai", "grok-4", "chat"),
    _case("https://api.x.ai/v1/messages", {"model": "grok-4"}, "xai", "grok-4", "chat", False,
          "anthropic"),
    _case("https://api.together.xyz/v1/chat/completions", {"model": "meta-llama/Llama-3-70b"},
          "together", "meta-llama/Llama-3-70b", "chat"),
    _case("https://openrouter.ai/api/v1/chat/completions", {"model": "anthropic/claude-3.5"},
          "openrouter", "anthropic/claude-3.5", "chat"),
    _case(f"{BEDROCK}/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke", {"messages": []},
          "bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0", "chat", False, "anthropic"),
    _case(f"{BEDROCK}/amazon.nova-pro-v1%3A0/converse-stream", {"messages": []},
          "bedrock", "amazon.nova-pro-v1:0", "chat", True, "bedrock"),
    _case("http://localhost:11434/api/chat", {"model": "llama3.2"}, "ollama", "llama3.2", "chat",
          True, "ollama"),
    _case("http://gpu-box:11434/api/generate", {"model": "llama3.2", "stream": False},
          "ollama", "llama3.2", "text_completion", False, "ollama"),
    _case("http://localhost:11434/v1/chat/completions", {"model": "llama3.2"},
          "ollama", "llama3.2", "chat"),
    _case("https://api.fireworks.ai/inference/v1/chat/completions", {"model": "acc/llama-v3p1"},
          "fireworks", "acc/llama-v3p1", "chat"),
    _case("https://api.perplexity.ai/chat/completions", {"model": "sonar-pro"},
          "perplexity", "sonar-pro", "chat"),
]


@pytest.mark.parametrize(("url", "body", "expected"), CASES)
def test_detect_known_providers(
    url: str, body: dict[str, object] | None, expected: Detection
) -> None:
    assert detect(url, body) == expected
    assert provider_for_url(url) == expected.provider


def test_at_least_thirteen_providers_are_covered() -> None:
    assert len({case[2].provider for case in CASES}) >= 13


@pytest.mark.parametrize("encode", [json.dumps, lambda d: json.dumps(d).encode(), lambda d: d])
def test_body_as_text_bytes_or_dict(encode: object) -> None:
    body = encode({"model": "gpt-4o-mini", "stream": True})  # type: ignore[operator]
    found = detect("https://api.openai.com/v1/chat/completions", body)
    assert found is not None and found.model == "gpt-4o-mini" and found.streaming


@pytest.mark.parametrize("body", [None, "", "not json", b"\xff\xfe", "[1, 2]", '{"model": 42}'])
def test_unusable_body_gives_provider_without_model(body: object) -> None:
    found = detect("https://api.openai.com/v1/chat/completions", body)  # type: ignore[arg-type]
    assert found == Detection("openai", None, "chat", False, "openai")


@pytest.mark.parametrize("url", [
    "https://example.com/v1/chat/completions",
    "http://127.0.0.1:8080/v1/messages",
    "https://s3.us-east-1.amazonaws.com/model/x/invoke",  # AWS but not Bedrock runtime
    "not a url",
    "http://host:notaport/v1/chat/completions",
    "",
])
def test_unknown_or_malformed_urls_are_none(url: str) -> None:
    assert detect(url, CHAT_BODY) is None
    assert provider_for_url(url) is None


def test_non_llm_path_on_provider_host_is_other() -> None:
    found = detect("https://api.openai.com/v1/models", None)
    assert found is not None and found.operation == "other" and not found.is_llm_call


def test_registered_base_url_is_detected_then_forgotten() -> None:
    base = "http://127.0.0.1:8123/proxy/v1"
    url = base + "/messages"
    assert detect(url, CHAT_BODY) is None
    providers.register_base_url(base, "anthropic")
    try:
        assert detect(url, CHAT_BODY) == Detection("anthropic", "m-1", "chat", False, "anthropic")
        # Other ports and paths outside the prefix stay unknown.
        assert provider_for_url("http://127.0.0.1:8124/proxy/v1/messages") is None
        assert provider_for_url("http://127.0.0.1:8123/elsewhere") is None
        providers.register_base_url("http://127.0.0.1:8123", "vllm")
        assert provider_for_url("http://127.0.0.1:8123/elsewhere") == "vllm"
        assert provider_for_url(url) == "anthropic"  # the longer prefix still wins
    finally:
        providers.unregister_base_url(base)
        providers.unregister_base_url("http://127.0.0.1:8123")
    assert detect(url, CHAT_BODY) is None


@pytest.mark.parametrize(("name", "expected"), [
    ("OpenAI", "openai"), ("aws.bedrock", "bedrock"), ("gcp.vertex_ai", "vertex_ai"),
    ("azure", "azure_openai"), ("mistralai", "mistral"), ("together_ai", "together"),
    ("x_ai", "xai"), ("google_genai", "gemini"), ("somethingnew", "somethingnew"), ("", None),
])
def test_canonical_provider(name: str, expected: str | None) -> None:
    assert providers.canonical_provider(name) == expected


def test_semconv_provider_names() -> None:
    assert providers.semconv_provider("bedrock") == "aws.bedrock"
    assert providers.semconv_provider("openai") == "openai"
    semconv_name = providers.semconv_provider("azure_openai")
    assert providers.canonical_provider(semconv_name) == "azure_openai"
