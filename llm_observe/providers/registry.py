"""The one provider registry: canonical names, every alias, hosts and response formats.

One table serves the in-process HTTP catch-all (httpx, httpx2, requests) and the REST
API's ``/v1/instrumentation/detect``. ``detect(url, body)`` answers provider, model,
operation and streaming; ``provider_for_url(url)`` answers the provider alone.

Hosts and paths come from each provider's public API reference (OpenAI, Azure OpenAI,
Anthropic, Gemini API, Vertex AI, Mistral, Cohere v1/v2, Groq, DeepSeek, xAI, Together,
OpenRouter, Bedrock runtime, Ollama, Fireworks, Perplexity, Cerebras). Provider names
are short canonical labels; ``SEMCONV_NAMES`` gives the OTel GenAI
``gen_ai.provider.name`` well-known value where the semconv defines one
(https://opentelemetry.io/docs/specs/semconv/registry/attributes/gen-ai/).
"""

from __future__ import annotations

from dataclasses import dataclass

# Operations (GenAI semconv gen_ai.operation.name values) that are LLM calls; anything
# else on a provider host (list models, count tokens, batches) is "other".
CHAT = "chat"
TEXT_COMPLETION = "text_completion"
GENERATE_CONTENT = "generate_content"
EMBEDDINGS = "embeddings"
OTHER = "other"
LLM_OPERATIONS = frozenset({CHAT, TEXT_COMPLETION, GENERATE_CONTENT, EMBEDDINGS})


@dataclass(frozen=True, slots=True)
class Detection:
    """What a request to an LLM provider is: provider, model, operation, streaming.

    ``wire`` names the response format family (``openai``, ``anthropic``, ``gemini``,
    ``cohere``, ``ollama``, ``bedrock``) so callers know how to read the answer.
    """

    provider: str
    model: str | None
    operation: str
    streaming: bool
    wire: str = "openai"

    @property
    def is_llm_call(self) -> bool:
        return self.operation in LLM_OPERATIONS


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    wire: str
    hosts: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()


# Order matters only for suffix matches (most specific first).
PROVIDERS: tuple[Provider, ...] = (
    Provider("openai", "openai", ("api.openai.com",)),
    Provider("azure_openai", "openai", (), (".openai.azure.com", ".cognitiveservices.azure.com")),
    Provider("anthropic", "anthropic", ("api.anthropic.com",)),
    Provider("gemini", "gemini", ("generativelanguage.googleapis.com",)),
    Provider(
        "vertex_ai", "gemini", ("aiplatform.googleapis.com",), ("-aiplatform.googleapis.com",)
    ),
    Provider("mistral", "openai", ("api.mistral.ai", "codestral.mistral.ai")),
    Provider("cohere", "cohere", ("api.cohere.com", "api.cohere.ai")),
    Provider("groq", "openai", ("api.groq.com",)),
    Provider("deepseek", "openai", ("api.deepseek.com",)),
    Provider("xai", "openai", ("api.x.ai",)),
    Provider("together", "openai", ("api.together.xyz", "api.together.ai")),
    Provider("openrouter", "openai", ("openrouter.ai",)),
    Provider("bedrock", "bedrock", (), (".amazonaws.com",)),  # bedrock-runtime.* only, see below
    Provider("ollama", "ollama", ("ollama.com",)),
    Provider("fireworks", "openai", ("api.fireworks.ai",)),
    Provider("perplexity", "openai", ("api.perplexity.ai",)),
    Provider("cerebras", "openai", ("api.cerebras.ai",)),
)
BY_NAME = {p.name: p for p in PROVIDERS}
BY_HOST = {host: p for p in PROVIDERS for host in p.hosts}
SUFFIXES = tuple((s, p) for p in PROVIDERS for s in p.suffixes)
OLLAMA_PORT = 11434

SEMCONV_NAMES: dict[str, str] = {
    "azure_openai": "azure.ai.openai",
    "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "bedrock": "aws.bedrock",
}

# Other spellings of the same providers: GenAI semconv values, LiteLLM provider ids,
# LangChain ls_provider values, OpenLLMetry's capitalised gen_ai.system values and the
# price table's own spellings (``google`` for the Gemini API). Labels and price lookup both
# go through :func:`canonical`, so they can never disagree.
ALIASES: dict[str, str] = {
    **{v: k for k, v in SEMCONV_NAMES.items()},
    "azure": "azure_openai", "azure_ai": "azure_openai", "az.ai.openai": "azure_openai",
    "google": "gemini", "google_genai": "gemini", "google_ai_studio": "gemini",
    "gcp.gen_ai": "gemini",
    "vertex": "vertex_ai", "vertexai": "vertex_ai", "google_vertexai": "vertex_ai",
    "vertex_ai_beta": "vertex_ai", "mistralai": "mistral", "x.ai": "xai", "grok": "xai",
    "together_ai": "together", "togetherai": "together", "fireworks_ai": "fireworks",
    "amazon_bedrock": "bedrock", "bedrock_converse": "bedrock", "aws": "bedrock",
    "ollama_chat": "ollama", "text-completion-openai": "openai", "cohere_chat": "cohere",
    "google-genai": "gemini", "together.ai": "together",
    # Vercel AI SDK provider ids ({provider}.{api}, vercel/ai packages/*/src): the API
    # suffix is dropped by canonical(); these are the ids whose first part is no alias.
    "google.generative-ai": "gemini", "google.vertex": "vertex_ai", "google-vertex": "vertex_ai",
    "amazon-bedrock": "bedrock", "bedrock-mantle": "bedrock",
}


def canonical(name: str) -> str:
    """The canonical name of any provider spelling (semconv, LiteLLM, LangChain,
    OpenLLMetry, the price table); an unknown name is lower-cased and stripped."""
    key = name.strip().lower()
    found = ALIASES.get(key)
    if found is not None or key in BY_NAME:
        return found or key
    # "openai.chat", "anthropic.messages", "google.vertex.chat": a known provider and the
    # API the Vercel AI SDK called; "ibm.watsonx.ai" stays as it is (no known prefix).
    head = key
    while "." in head:
        head = head.rpartition(".")[0]
        found = ALIASES.get(head) or (head if head in BY_NAME else None)
        if found is not None:
            return found
    return key


def canonical_provider(name: str | None) -> str | None:
    """:func:`canonical`, with None (or an empty name) passed through as None."""
    return canonical(name) if name else None


def semconv_provider(name: str) -> str:
    """The ``gen_ai.provider.name`` value for one of our provider names."""
    return SEMCONV_NAMES.get(name, name)


def wire_of(provider: str) -> str:
    """The response format family of a provider (``openai`` for unknown ones)."""
    known = BY_NAME.get(provider)
    return known.wire if known is not None else "openai"


# Model-name prefixes of each vendor's own model families, for spans that name a model but
# no provider (the Langfuse SDK's generations, hand-written spans). Only first-party names:
# an open-weights family (llama, qwen) is served by many hosts, so it gives no answer.
_MODEL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-", "openai"), ("chatgpt-", "openai"), ("o1", "openai"), ("o3", "openai"),
    ("o4", "openai"), ("text-embedding-", "openai"), ("dall-e", "openai"),
    ("claude-", "anthropic"), ("gemini-", "gemini"), ("mistral-", "mistral"),
    ("mixtral-", "mistral"), ("codestral", "mistral"), ("magistral", "mistral"),
    ("command-", "cohere"), ("grok-", "xai"), ("deepseek-", "deepseek"),
)


def provider_of_model(model: str | None) -> str | None:
    """The vendor whose own model family ``model`` belongs to, or None (unknown, or served
    by many). ``openai/gpt-4o``-style prefixes name the provider directly."""
    if not model:
        return None
    name = model.strip().lower()
    if "/" in name:
        head = canonical(name.split("/", 1)[0])
        if head in BY_NAME:
            return head
        name = name.rsplit("/", 1)[1]
    for prefix, provider in _MODEL_PREFIXES:
        if name.startswith(prefix) and (len(prefix) > 2 or name[len(prefix):len(prefix) + 1]
                                        in ("", "-")):
            return provider
    return None
