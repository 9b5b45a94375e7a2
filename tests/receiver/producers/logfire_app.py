"""An app traced by Pydantic Logfire with ``send_to_logfire=False`` and an OTLP/HTTP endpoint
(the OTEL_EXPORTER_OTLP_* environment, as Logfire's docs for other backends say); its
``instrument_openai`` traces a real OpenAI client calling the fake provider once whole and
once streamed. argv: <provider base URL> <service name>."""

import sys

import logfire
import openai
from chat_calls import whole_and_streamed  # (this directory: the script's sys.path[0])

provider, service = sys.argv[1:3]
logfire.configure(send_to_logfire=False, service_name=service, console=False)
client = openai.OpenAI(base_url=provider, api_key="test-key")
logfire.instrument_openai(client)
prompt_tokens, text = whole_and_streamed(client)
logfire.force_flush()
logfire.shutdown()
print(prompt_tokens, text)
