"""An app traced by the Langfuse SDK: its OpenAI drop-in calls the fake provider once whole and
once streamed; the SDK exports OTLP/HTTP to ``BASE/api/public/otel/v1/traces`` with Basic auth
(public key : secret key). argv: <collector base URL> <provider base URL> <secret key>."""

import sys

from langfuse import Langfuse

base, provider, secret = sys.argv[1:4]
langfuse = Langfuse(public_key="pk-lf-llm-observe", secret_key=secret, host=base)

from chat_calls import whole_and_streamed  # noqa: E402  (this directory: sys.path[0])
from langfuse.openai import OpenAI  # noqa: E402  (after the client exists, as its docs do)

client = OpenAI(base_url=provider, api_key="test-key")
prompt_tokens, text = whole_and_streamed(client)
langfuse.flush()
langfuse.shutdown()
print(prompt_tokens, text)
