//! Log formats: parsed once into parts, rendered per request into one reused buffer.

use std::fmt::Write;
use std::net::IpAddr;

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, FixedOffset};
use http::HeaderName;

use super::LogRecord;

/// `{remote} {when-iso} "{method} {uri} {proto}" {status} {size-human} "{referer}" "{userAgent}"`
pub const LOGGER_COMBINED: &str = r#"{remote} {when-iso} "{method} {uri} {proto}" {status} {size-human} "{referer}" "{userAgent}""#;
/// `{remote} {when-iso} "{method} {uri} {proto}" {status} {size-human}`
pub const LOGGER_COMMON: &str =
    r#"{remote} {when-iso} "{method} {uri} {proto}" {status} {size-human}"#;
/// `{remote} {method} {uri} {proto} {status} {size-human} - {latency-ms} ms`
pub const LOGGER_SHORT: &str =
    "{remote} {method} {uri} {proto} {status} {size-human} - {latency-ms} ms";
/// `{method} {url} {status} {size-human} - {latency-ms} ms`
pub const LOGGER_TINY: &str = "{method} {url} {status} {size-human} - {latency-ms} ms";

/// One piece of a compiled format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Text(Box<str>),
    Host,
    Method,
    Path,
    Proto,
    Query,
    Remote,
    RealIp,
    ClientIp,
    Scheme,
    Uri,
    Referer,
    UserAgent,
    When,
    WhenIso,
    WhenUtcIso,
    WhenUnix,
    WhenIsoMs,
    WhenUtcIsoMs,
    Size,
    SizeHuman,
    Status,
    Latency,
    LatencyMs,
    PayloadSize,
    PayloadSizeHuman,
    RequestId,
    TraceId,
    SpanId,
    /// A value captured from the request or the context: index into the record's captures.
    Captured(usize),
    Unknown,
}

/// What a captured part reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Capture {
    Cookie(String),
    RequestHeader(HeaderName),
    ResponseHeader(HeaderName),
    Value(String),
}

/// A compiled format.
#[derive(Debug, Clone)]
pub(crate) struct Format {
    pub(crate) parts: Vec<Part>,
    pub(crate) captures: Vec<Capture>,
    /// True when a `when*` tag is used: the wall clock is read only then.
    pub(crate) uses_time: bool,
}

impl Format {
    /// Parses `{tag}`s out of `template`. An unknown tag renders `-`; a `{` without its `}` is
    /// text. `$NAME` tags are read from the environment here, once.
    pub(crate) fn compile(template: &str) -> Self {
        let mut parts = Vec::new();
        let mut captures = Vec::new();
        let mut text = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                break;
            };
            text.push_str(&rest[..open]);
            let tag = &rest[open + 1..open + close];
            rest = &rest[open + close + 1..];
            let part = match tag {
                "host" => Part::Host,
                "method" => Part::Method,
                "path" => Part::Path,
                "proto" => Part::Proto,
                "query" => Part::Query,
                "remote" => Part::Remote,
                "real-ip" => Part::RealIp,
                "client-ip" => Part::ClientIp,
                "scheme" => Part::Scheme,
                "uri" | "url" => Part::Uri,
                "referer" => Part::Referer,
                "userAgent" => Part::UserAgent,
                "when" => Part::When,
                "when-iso" => Part::WhenIso,
                "when-utc-iso" => Part::WhenUtcIso,
                "when-unix" => Part::WhenUnix,
                "when-iso-ms" => Part::WhenIsoMs,
                "when-utc-iso-ms" => Part::WhenUtcIsoMs,
                "size" => Part::Size,
                "size-human" => Part::SizeHuman,
                "status" => Part::Status,
                "latency" => Part::Latency,
                "latency-ms" => Part::LatencyMs,
                "payload-size" => Part::PayloadSize,
                "payload-size-human" => Part::PayloadSizeHuman,
                "request-id" => Part::RequestId,
                "trace-id" => Part::TraceId,
                "span-id" => Part::SpanId,
                _ => {
                    let capture = if let Some(name) = tag.strip_prefix('~') {
                        Some(Capture::Cookie(name.to_owned()))
                    } else if let Some(name) = tag.strip_prefix('>') {
                        HeaderName::from_bytes(name.as_bytes())
                            .ok()
                            .map(Capture::RequestHeader)
                    } else if let Some(name) = tag.strip_prefix('<') {
                        HeaderName::from_bytes(name.as_bytes())
                            .ok()
                            .map(Capture::ResponseHeader)
                    } else if let Some(key) = tag.strip_prefix(':') {
                        Some(Capture::Value(key.to_owned()))
                    } else if let Some(name) = tag.strip_prefix('$') {
                        text.push_str(&std::env::var(name).unwrap_or_else(|_| "-".into()));
                        continue;
                    } else {
                        None
                    };
                    match capture {
                        Some(c) => {
                            captures.push(c);
                            Part::Captured(captures.len() - 1)
                        }
                        None => Part::Unknown,
                    }
                }
            };
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text).into()));
            }
            parts.push(part);
        }
        text.push_str(rest);
        if !text.is_empty() {
            parts.push(Part::Text(text.into()));
        }
        let uses_time = parts.iter().any(|p| {
            matches!(
                p,
                Part::When
                    | Part::WhenIso
                    | Part::WhenUtcIso
                    | Part::WhenUnix
                    | Part::WhenIsoMs
                    | Part::WhenUtcIsoMs
            )
        });
        Self {
            parts,
            captures,
            uses_time,
        }
    }

    /// Writes the line for `record` into `out`.
    pub(crate) fn render(&self, record: &LogRecord, out: &mut String) {
        for part in &self.parts {
            // Writing into a String cannot fail.
            let _ = render_part(part, record, out);
        }
    }
}

fn or_dash(out: &mut String, value: Option<&str>) {
    match value {
        Some(v) if !v.is_empty() => out.push_str(v),
        _ => out.push('-'),
    }
}

/// `<n>B` below 1024, else `x.xxKB` / `x.xxMB` (factor 1024).
pub(crate) fn human_size(out: &mut String, size: u64) -> std::fmt::Result {
    const KIB: f64 = 1024.0;
    if size < 1024 {
        digits(out, size, 1);
        out.push('B');
        Ok(())
    } else if (size as f64) < KIB * KIB {
        write!(out, "{:.2}KB", size as f64 / KIB)
    } else {
        write!(out, "{:.2}MB", size as f64 / KIB / KIB)
    }
}

/// True for addresses that route on the public internet.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_unspecified()
                || v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64 // 100.64/10 CGNAT
                || v4.octets()[0] >= 240)
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link local
                || (first == 0x2001 && v6.segments()[1] == 0x0db8)) // documentation
                && v6.to_ipv4_mapped().is_none_or(|v4| is_public(IpAddr::V4(v4)))
        }
    }
}

/// Appends `n` in decimal, zero-padded to `width` digits: what `write!("{n:0width$}")` does,
/// without the formatting machinery (it is most of a line's cost otherwise).
fn digits(out: &mut String, n: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let start = i.min(buf.len() - width.min(buf.len()));
    // ASCII digits only.
    out.push_str(std::str::from_utf8(&buf[start..]).unwrap_or("0"));
}

/// The time formats, as chrono's items: each pattern read once, the first time it is used,
/// not at every line (chrono's `format` parses its pattern on every call). Outside everyday
/// dates they print what chrono prints (a clock of your own can give them): a year before 0
/// or after 9999 with its sign, `when-unix` before 1970 negative, a leap second as `60`, an
/// offset with seconds rounded to the minute.
struct DateFormats {
    /// RFC 1123 with the zone's offset: `Sun, 22 Nov 2026 11:00:00 +0100`.
    when: Vec<Item<'static>>,
    /// `2026-11-22T11:00:00+01:00`.
    iso: Vec<Item<'static>>,
    /// `2026-11-22T11:00:00.251+01:00`.
    iso_ms: Vec<Item<'static>>,
    /// `2026-11-22T10:00:00Z`.
    utc_iso: Vec<Item<'static>>,
    /// `2026-11-22T10:00:00.251Z`.
    utc_iso_ms: Vec<Item<'static>>,
    /// Seconds since the Unix epoch.
    unix: Vec<Item<'static>>,
}

static DATE_FORMATS: std::sync::LazyLock<DateFormats> = std::sync::LazyLock::new(|| {
    let items = |pattern: &str| {
        StrftimeItems::new(pattern)
            .parse_to_owned()
            .unwrap_or_default()
    };
    DateFormats {
        when: items("%a, %d %b %Y %H:%M:%S %z"),
        iso: items("%Y-%m-%dT%H:%M:%S%:z"),
        iso_ms: items("%Y-%m-%dT%H:%M:%S%.3f%:z"),
        utc_iso: items("%Y-%m-%dT%H:%M:%SZ"),
        utc_iso_ms: items("%Y-%m-%dT%H:%M:%S%.3fZ"),
        unix: items("%s"),
    }
});

fn when(out: &mut String, part: &Part, local: &DateTime<FixedOffset>) -> std::fmt::Result {
    let formats = &*DATE_FORMATS;
    let (time, items) = match part {
        Part::When => (*local, &formats.when),
        Part::WhenIso => (*local, &formats.iso),
        Part::WhenIsoMs => (*local, &formats.iso_ms),
        Part::WhenUtcIso => (local.to_utc().fixed_offset(), &formats.utc_iso),
        Part::WhenUtcIsoMs => (local.to_utc().fixed_offset(), &formats.utc_iso_ms),
        _ => (*local, &formats.unix),
    };
    write!(out, "{}", time.format_with_items(items.iter()))
}

fn render_part(part: &Part, r: &LogRecord, out: &mut String) -> std::fmt::Result {
    match part {
        Part::Text(text) => out.push_str(text),
        Part::Host => or_dash(out, r.host.as_ref().and_then(|h| h.to_str().ok())),
        Part::Method => out.push_str(r.request.method.as_str()),
        Part::Path => out.push_str(r.request.uri.path()),
        Part::Proto => out.push_str(match r.request.version {
            http::Version::HTTP_09 => "HTTP/0.9",
            http::Version::HTTP_10 => "HTTP/1.0",
            http::Version::HTTP_2 => "HTTP/2.0",
            http::Version::HTTP_3 => "HTTP/3.0",
            _ => "HTTP/1.1",
        }),
        Part::Query => or_dash(out, r.request.uri.query()),
        Part::Remote if r.request.unix_peer.is_some() => {
            if let Some(peer) = &r.request.unix_peer {
                write!(out, "{peer}")?;
            }
        }
        Part::Remote => {
            match r.request.remote_addr {
                std::net::SocketAddr::V4(v4) => write!(out, "{}", v4.ip())?,
                std::net::SocketAddr::V6(v6) => write!(out, "[{}]", v6.ip())?,
            }
            out.push(':');
            digits(out, u64::from(r.request.remote_addr.port()), 1);
        }
        Part::RealIp => write!(out, "{}", r.request.real_ip)?,
        Part::ClientIp if is_public(r.request.real_ip) => write!(out, "{}", r.request.real_ip)?,
        Part::ClientIp => out.push('-'),
        Part::Scheme => out.push_str(if r.https { "HTTPS" } else { "HTTP" }),
        Part::Uri => out.push_str(r.request.uri.path_and_query().map_or("/", |p| p.as_str())),
        Part::Referer => or_dash(out, r.referer.as_ref().and_then(|h| h.to_str().ok())),
        Part::UserAgent => or_dash(out, r.user_agent.as_ref().and_then(|h| h.to_str().ok())),
        Part::When
        | Part::WhenIso
        | Part::WhenUtcIso
        | Part::WhenUnix
        | Part::WhenIsoMs
        | Part::WhenUtcIsoMs => match &r.when {
            Some(time) => when(out, part, time)?,
            None => out.push('-'),
        },
        Part::Size => match r.size {
            Some(size) => digits(out, size, 1),
            None => out.push('-'),
        },
        Part::SizeHuman => match r.size {
            Some(size) => human_size(out, size)?,
            None => out.push('-'),
        },
        Part::Status => digits(out, u64::from(r.status.as_u16()), 3),
        Part::Latency => write!(out, "{:?}", r.latency)?,
        Part::LatencyMs => write!(out, "{}", r.latency.as_millis())?,
        Part::PayloadSize => write!(out, "{}", r.payload_size)?,
        Part::PayloadSizeHuman => human_size(out, r.payload_size as u64)?,
        Part::RequestId => or_dash(out, r.request.request_id.to_str().ok()),
        Part::TraceId => match &r.trace {
            Some(trace) => out.push_str(&trace.trace_id()),
            None => out.push('-'),
        },
        Part::SpanId => match &r.trace {
            Some(trace) => out.push_str(&trace.span_id()),
            None => out.push('-'),
        },
        Part::Captured(i) => or_dash(out, r.captured.get(*i).and_then(|v| v.as_deref())),
        Part::Unknown => out.push('-'),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_tags_and_text() {
        let f = Format::compile("a {method} {nope} {>x-id} {~sid} {<etag} {:user} {unclosed");
        assert_eq!(f.parts[0], Part::Text("a ".into()));
        assert_eq!(f.parts[1], Part::Method);
        assert!(f.parts.contains(&Part::Unknown));
        assert_eq!(f.captures.len(), 4);
        assert_eq!(f.parts.last(), Some(&Part::Text(" {unclosed".into())));
    }

    #[test]
    fn padded_digits() {
        let show = |n, w| {
            let mut s = String::new();
            digits(&mut s, n, w);
            s
        };
        assert_eq!(show(0, 1), "0");
        assert_eq!(show(7, 2), "07");
        assert_eq!(show(2026, 4), "2026");
        assert_eq!(show(5, 3), "005");
        assert_eq!(show(123_456, 2), "123456");
        assert_eq!(show(u64::MAX, 1), u64::MAX.to_string());
    }

    #[test]
    fn sizes() {
        let show = |n| {
            let mut s = String::new();
            human_size(&mut s, n).unwrap();
            s
        };
        assert_eq!(show(0), "0B");
        assert_eq!(show(1023), "1023B");
        assert_eq!(show(1024), "1.00KB");
        assert_eq!(show(1536), "1.50KB");
        assert_eq!(show(3 * 1024 * 1024), "3.00MB");
    }

    #[test]
    fn public_addresses() {
        for ip in ["8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "10.1.2.3",
            "192.168.0.1",
            "172.16.0.1",
            "127.0.0.1",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
