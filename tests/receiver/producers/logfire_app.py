"""An app traced by Pydantic Logfire with ``send_to_logfire=False`` and an OTLP/HTTP endpoint
(the OTEL_EXPORTER_OTLP_* environment, as Logfire's docs for other backends say); its
``instrument_openai`` traces a real OpenAI client calling the fake provider once whole and
once streamed. argv: <provider base URL> <service name>."""

import sys

import logfire
import openai

provider, service = sys.argv[1:3]
logfire.configure(send_to_logfire=False, service_name=service, console=False)
client = openai.OpenAI(base_url=provider, api_key="test-key")
logfire.instrument_openai(client)
whole = client.chat.completions.create(
    model="gpt-4o", messages=[{"role": "user", "content": "Hello there"}])
stream = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "Stream please"}], stream=True,
    stream_options={"include_usage": True})
text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
logfire.force_flush()
logfire.shutdown()
print(whole.usage.prompt_tokens if whole.usage else None, text)
