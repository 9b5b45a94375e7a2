"""An app traced by the Langfuse SDK: its OpenAI drop-in calls the fake provider once whole and
once streamed; the SDK exports OTLP/HTTP to ``BASE/api/public/otel/v1/traces`` with Basic auth
(public key : secret key). argv: <collector base URL> <provider base URL> <secret key>."""

import sys

from langfuse import Langfuse

base, provider, secret = sys.argv[1:4]
langfuse = Langfuse(public_key="pk-lf-llm-observe", secret_key=secret, host=base)

from langfuse.openai import OpenAI  # noqa: E402  (after the client exists, as its docs do)

client = OpenAI(base_url=provider, api_key="test-key")
whole = client.chat.completions.create(
    model="gpt-4o", messages=[{"role": "user", "content": "Hello there"}])
stream = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "Stream please"}], stream=True,
    stream_options={"include_usage": True})
text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
langfuse.flush()
langfuse.shutdown()
print(whole.usage.prompt_tokens if whole.usage else None, text)
