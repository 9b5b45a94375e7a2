// The Vercel AI SDK calling an OpenAI-compatible server (the tests' fake provider), traced
// with @opentelemetry/sdk-node and exported over OTLP/HTTP to llm-observe. Used by
// tests/receiver/test_http_vercel.py. argv: <url of /v1/traces> <json|proto> <service>
// <provider base URL> <v7|v6>. v7: `ai` 7 with the @ai-sdk/otel integration (GenAI
// semconv spans); v6: `ai` 6 with experimental_telemetry (its ai.* spans).
import { NodeSDK } from "@opentelemetry/sdk-node";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";

const [url, protocol, service, baseURL, major] = process.argv.slice(2);
const Exporter = protocol === "json" ? JsonExporter : ProtoExporter;
const sdk = new NodeSDK({
  serviceName: service,
  traceExporter: new Exporter({ url }),
  autoDetectResources: false,
  instrumentations: [],
});
sdk.start();

let ai, createOpenAI, telemetry;
if (major === "v6") {
  ai = await import("ai-v6");
  ({ createOpenAI } = await import("ai-sdk-openai-v3"));
  telemetry = { experimental_telemetry: { isEnabled: true, functionId: "checkout" } };
} else {
  ai = await import("ai");
  ({ createOpenAI } = await import("@ai-sdk/openai"));
  const { OpenTelemetry } = await import("@ai-sdk/otel");
  ai.registerTelemetry(new OpenTelemetry());
  telemetry = { telemetry: { functionId: "checkout" } };
}
const openai = createOpenAI({ baseURL, apiKey: "test-key" });

// one call as a whole answer, one streamed (time to first chunk)
const generated = await ai.generateText({
  model: openai.chat("gpt-4o"), prompt: "Hello there", ...telemetry });
const streamed = ai.streamText({
  model: openai.chat("gpt-4o-mini"), prompt: "Stream please", ...telemetry });
let text = "";
for await (const part of streamed.textStream) text += part;
const usage = await streamed.usage;

await sdk.shutdown(); // flushes the batch processor through the exporter
console.log(JSON.stringify({
  generate: { input: generated.usage.inputTokens, output: generated.usage.outputTokens },
  stream: { input: usage.inputTokens, output: usage.outputTokens, text },
}));
