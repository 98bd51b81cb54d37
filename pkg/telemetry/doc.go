// Package telemetry sets up what every sitebus process reports about itself:
// structured logs (log/slog) that carry the trace of the message being
// handled, OpenTelemetry tracing exported over OTLP when the standard
// OTEL_EXPORTER_OTLP_* variables ask for it, and Prometheus registration.
package telemetry
