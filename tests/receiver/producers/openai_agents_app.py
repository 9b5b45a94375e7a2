"""An OpenAI Agents SDK agent with one tool, traced by OpenInference's or OpenLLMetry's
openai-agents instrumentation and exported over OTLP/gRPC; run by
tests/receiver/test_openai_agents_e2e.py with the interpreter of its own venv
(scripts/install_backends.sh: the SDK's websockets pin would downgrade ours). The model is
on Chat Completions or the Responses API at the fake provider: a tool call, then the answer.
argv: <provider base URL> <OTLP gRPC endpoint> <tool result> <user input>
[producer: openinference | openllmetry] [api: chat | responses] [client: the OpenAI client
instrumented too, by the same project, each call then described twice].
Prints the number of spans it exported, then the final answer."""

import sys

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
)
from openai import AsyncOpenAI
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider_url, endpoint, result, question = sys.argv[1:5]
options = sys.argv[5:]
producer = "openllmetry" if "openllmetry" in options else "openinference"
api = "responses" if "responses" in options else "chat"
with_client = "client" in options
if producer == "openinference":
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
else:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor


class Count(SpanProcessor):
    ended = 0

    def on_end(self, span: object) -> None:
        Count.ended += 1


tracer_provider = TracerProvider(resource=Resource.create({"service.name": "agents-sdk"}))
tracer_provider.add_span_processor(Count())
tracer_provider.add_span_processor(
    SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=10)))
OpenAIAgentsInstrumentor().instrument(tracer_provider=tracer_provider)
if with_client:
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)


@function_tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return result


client = AsyncOpenAI(base_url=provider_url, api_key="test-key")
model = (OpenAIResponsesModel(model="gpt-4o", openai_client=client) if api == "responses"
         else OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client))
agent = Agent(name="support", instructions="Answer briefly.", tools=[lookup_order],
              model=model)
answer = Runner.run_sync(agent, question).final_output
tracer_provider.shutdown()
print(Count.ended)
print(answer)
