"""An OpenAI Agents SDK agent with one tool, traced by openinference-instrumentation-
openai-agents and exported over OTLP/gRPC; run by tests/receiver/test_openai_agents_e2e.py
with the interpreter of its own venv (scripts/install_backends.sh: the SDK's websockets pin
would downgrade ours). The model is on Chat Completions at the fake provider: a tool call,
then the answer. argv: <provider base URL> <OTLP gRPC endpoint> <tool result> <user input>
[client: the OpenAI client instrumented too, each call then described twice].
Prints the number of spans it exported, then the final answer."""

import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider_url, endpoint, result, question = sys.argv[1:5]
with_client = sys.argv[5:] == ["client"]


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
    from openinference.instrumentation.openai import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)


@function_tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return result


client = AsyncOpenAI(base_url=provider_url, api_key="test-key")
agent = Agent(name="support", instructions="Answer briefly.", tools=[lookup_order],
              model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client))
answer = Runner.run_sync(agent, question).final_output
tracer_provider.shutdown()
print(Count.ended)
print(answer)
