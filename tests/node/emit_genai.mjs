// Emits GenAI-semconv chat spans with @opentelemetry/sdk-node through the OTLP/HTTP
// exporter the environment names, then flushes and exits. Used by
// tests/receiver/test_http_node.py; argv: <url of /v1/traces> <json|proto> <service>.
import { trace, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";

const [url, protocol, service] = process.argv.slice(2);
const Exporter = protocol === "json" ? JsonExporter : ProtoExporter;
const sdk = new NodeSDK({
  serviceName: service,
  traceExporter: new Exporter({ url }),
  autoDetectResources: false,
  instrumentations: [],
});
sdk.start();

const tracer = trace.getTracer("llm-observe-node-e2e", "1.0.0");
const t0 = Date.now() - 5_000;
const calls = [
  { model: "gpt-4o", input: 120, output: 30, ms: 1200, ttftS: 0.25 },
  { model: "gpt-4o", input: 80, output: 20, ms: 900, ttftS: 0.1 },
  { model: "gpt-4o-mini", input: 1000, output: 5, ms: 400, error: "RateLimitError" },
];
calls.forEach((c, i) => {
  const start = t0 + i * 1500;
  const span = tracer.startSpan(`chat ${c.model}`, {
    kind: SpanKind.CLIENT,
    startTime: start,
    attributes: {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": c.model,
      "gen_ai.response.model": c.model,
      "gen_ai.usage.input_tokens": c.input,
      "gen_ai.usage.output_tokens": c.output,
      "gen_ai.response.finish_reasons": [c.error ? "error" : "stop"],
      ...(c.ttftS === undefined ? {} : { "gen_ai.response.time_to_first_chunk": c.ttftS }),
      ...(c.error ? { "error.type": c.error } : {}),
    },
  });
  if (c.error) span.setStatus({ code: SpanStatusCode.ERROR, message: c.error });
  span.end(start + c.ms);
});
// a plain span beside them: passed through, never counted
tracer.startSpan("GET /checkout", { startTime: t0 }).end(t0 + 5000);

await sdk.shutdown(); // flushes the batch processor through the exporter
console.log(`sent ${calls.length + 1} spans as ${protocol}`);
