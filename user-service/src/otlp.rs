//! OpenTelemetry export of the request spans over OTLP (feature `otlp`).
//!
//! Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set;
//! then the trace middleware's `request` spans (and any span inside them) are sent to that
//! collector by the OpenTelemetry SDK's batch processor, on its own thread, never on a request's
//! path. The standard variables apply: `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the
//! default, or `http/json`), `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_SCHEDULE_DELAY`,
//! `OTEL_SERVICE_NAME` (default `user-service`). Spans still queued are sent when the service
//! stops (at most 5 s).

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::registry::LookupSpan;

/// Flushes and stops the export when dropped.
pub struct Export(SdkTracerProvider);

impl Drop for Export {
    fn drop(&mut self) {
        if let Err(err) = self.0.shutdown_with_timeout(Duration::from_secs(5)) {
            eprintln!("user-service: flushing the OTLP export failed: {err}");
        }
    }
}

/// The layer that turns spans into OpenTelemetry spans and the export behind it, when an OTLP
/// endpoint is configured.
pub fn layer<S>() -> Result<Option<(impl tracing_subscriber::Layer<S>, Export)>, String>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let configured = [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    if !configured {
        return Ok(None);
    }
    // The specification's default is `http/protobuf`; opentelemetry-otlp's, with both HTTP
    // encodings built in, would be JSON: protobuf unless a variable names the protocol.
    let protocol_named = [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    let builder = opentelemetry_otlp::SpanExporter::builder();
    let exporter = if protocol_named {
        builder.build()
    } else {
        use opentelemetry_otlp::WithExportConfig;
        builder
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build()
    }
    .map_err(|e| format!("OTLP exporter: {e}"))?;
    let name = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "user-service".to_owned());
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(name).build())
        .build();
    let tracer = provider.tracer("user-service");
    let layer = tracing_opentelemetry::layer().with_tracer(tracer);
    Ok(Some((layer, Export(provider))))
}
