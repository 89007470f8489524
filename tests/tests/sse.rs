//! Server-sent events and NDJSON over real sockets: the framing of every field (multi-line
//! data in LF, CRLF and CR, comments, retry, ids, types), field injection refused, keep-alive
//! comments on time, `Last-Event-ID`, the end of a stream at graceful shutdown, and
//! newline-delimited JSON with a value that cannot be written.

mod common;

use std::time::{Duration, Instant};

use framework::body::{StreamExt, stream};
use framework::reply::{Event, JsonLines, LastEventId, Sse};
use framework::{App, Context, HttpError, Result, Service};
use tokio::sync::mpsc;

/// One event of each shape, and the comments.
async fn framing(_ctx: &mut Context) -> Result<Sse> {
    let events = vec![
        Event::new().data("plain"),
        Event::new().data("lf\nsecond"),
        Event::new().data("crlf\r\nsecond\r\n"),
        Event::new().data("cr\rsecond"),
        Event::new()
            .event("update")?
            .id("7")?
            .retry(Duration::from_millis(1500))
            .comment("a note\r\nover two lines")
            .data("with fields"),
        // What an attacker would put in data: it stays data.
        Event::new().data("x\n\nevent: admin\nid: 666\ndata: injected"),
        Event::new().comment("comment only"),
    ];
    Ok(Sse::new(stream::iter(events)))
}

/// The whole stream of [`framing`], as a client receives it.
const FRAMED: &str = "data: plain\n\n\
data: lf\ndata: second\n\n\
data: crlf\ndata: second\ndata: \n\n\
data: cr\ndata: second\n\n\
: a note\n: over two lines\nevent: update\nid: 7\nretry: 1500\ndata: with fields\n\n\
data: x\ndata: \ndata: event: admin\ndata: id: 666\ndata: data: injected\n\n\
: comment only\n\n";

/// An `id` chosen by the handler with a line break in it, refused before anything is sent.
async fn injected_id(ctx: &mut Context) -> Result<Sse> {
    let id = ctx.query("id").unwrap_or_default().into_owned();
    let first = Event::new().id(id)?.data("never sent");
    Ok(Sse::new(stream::iter([first])))
}

/// `items`, each after a pause, as a live stream's come: what was sent before a failure has
/// left the server by then.
fn live<T>(items: impl IntoIterator<Item = T>) -> impl framework::body::Stream<Item = T> {
    stream::iter(items).then(|item| async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        item
    })
}

/// The second event's type has a line break: the stream ends after the first.
async fn injected_later(_ctx: &mut Context) -> Result<Sse> {
    let events = live(["fine", "bad\nevent: admin"]).map(|kind| -> Result<Event, HttpError> {
        Ok(Event::new().event(kind)?.data(format!("of type {kind}")))
    });
    Ok(Sse::from_try_stream(events))
}

/// Events the test sends through a channel, with a keep-alive of 100 ms.
struct Feed(tokio::sync::Mutex<Option<mpsc::Receiver<&'static str>>>);

async fn fed(ctx: &mut Context) -> Result<Sse> {
    let rx = ctx.state().require::<Feed>()?.0.lock().await.take();
    let rx = rx.ok_or_else(|| HttpError::new("feed taken"))?;
    let events = stream::unfold(rx, |mut rx| async move {
        let data = rx.recv().await?;
        Some((Event::new().data(data), rx))
    });
    Ok(Sse::new(events).keep_alive(Duration::from_millis(100)))
}

/// An endless quiet stream without keep-alive.
async fn silent(_ctx: &mut Context) -> Result<Sse> {
    Ok(Sse::new(stream::pending()).keep_alive(Duration::ZERO))
}

/// Three events after the client's `Last-Event-ID`.
async fn resume(ctx: &mut Context) -> Result<Sse> {
    let last = LastEventId::of(ctx);
    let from = if last.is_empty() {
        0
    } else {
        last.parse::<u64>()
            .map_err(|_| HttpError::new("bad Last-Event-ID"))?
            + 1
    };
    let events = stream::iter(from..from + 3).map(|i| -> Result<Event, HttpError> {
        Ok(Event::new().id(i.to_string())?.data(i.to_string()))
    });
    Ok(Sse::from_try_stream(events))
}

/// An event every 20 ms until the server begins to shut down.
async fn until_shutdown(ctx: &mut Context) -> Result<Sse> {
    let ticks = stream::unfold(0u64, |i| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Some((Event::new().data(i.to_string()), i + 1))
    });
    Ok(Sse::new(ticks.take_until(ctx.shutdown())))
}

#[derive(serde::Serialize)]
struct Row {
    id: u32,
    text: &'static str,
}

async fn rows(_ctx: &mut Context) -> Result<JsonLines<Row>> {
    let rows = [
        Row { id: 1, text: "one" },
        Row {
            id: 2,
            text: "two\nlines",
        },
    ];
    Ok(JsonLines::new(stream::iter(rows)))
}

/// The second value is a map with keys JSON cannot have.
async fn bad_rows(
    _ctx: &mut Context,
) -> Result<JsonLines<std::collections::BTreeMap<(u8, u8), u8>>> {
    let good = std::collections::BTreeMap::new();
    let bad = std::collections::BTreeMap::from([((1, 2), 3)]);
    Ok(JsonLines::new(live([good, bad])))
}

fn service(feed: mpsc::Receiver<&'static str>) -> Service {
    App::new()
        .with_state(Feed(tokio::sync::Mutex::new(Some(feed))))
        .get("/framing", framing)
        .get("/injected-id", injected_id)
        .get("/injected-later", injected_later)
        .get("/fed", fed)
        .get("/silent", silent)
        .get("/resume", resume)
        .get("/until-shutdown", until_shutdown)
        .get("/rows", rows)
        .get("/bad-rows", bad_rows)
        .build()
        .unwrap()
}

/// Reads the body chunk by chunk until it ends, fails or `deadline` passes: the text read,
/// and whether it ended cleanly (`Some(true)`), failed (`Some(false)`) or is still open.
async fn read_until(res: &mut reqwest::Response, deadline: Duration) -> (String, Option<bool>) {
    let until = tokio::time::Instant::now() + deadline;
    let mut text = String::new();
    loop {
        match tokio::time::timeout_at(until, res.chunk()).await {
            Err(_) => return (text, None),
            Ok(Ok(Some(chunk))) => text.push_str(std::str::from_utf8(&chunk).unwrap()),
            Ok(Ok(None)) => return (text, Some(true)),
            Ok(Err(_)) => return (text, Some(false)),
        }
    }
}

#[tokio::test]
async fn every_field_is_framed_and_data_cannot_inject_fields() {
    let server = common::start(service(mpsc::channel(1).1)).await;
    let res = reqwest::get(server.url("/framing")).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    assert_eq!(res.headers()["cache-control"], "no-cache");
    assert_eq!(res.text().await.unwrap(), FRAMED);
}

#[tokio::test]
async fn an_id_or_type_with_a_line_break_is_refused() {
    let server = common::start(service(mpsc::channel(1).1)).await;
    // Before the stream: the handler's error, answered by the error handler.
    for id in ["1%0Aevent:%20admin", "1%0D%0Aretry:%201", "1%0D", "a%00b"] {
        let res = common::browser()
            .get(server.url(&format!("/injected-id?id={id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 500, "{id}");
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(body["category"], "framework-sse", "{id}");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("an event's id cannot hold"),
            "{body}"
        );
    }
    // In the stream: the first event goes out, then the connection is cut; the refused
    // type is never written.
    let mut res = reqwest::get(server.url("/injected-later")).await.unwrap();
    assert_eq!(res.status(), 200);
    let (text, ended) = read_until(&mut res, Duration::from_secs(5)).await;
    assert_eq!(text, "event: fine\ndata: of type fine\n\n");
    assert_eq!(
        ended,
        Some(false),
        "the body fails, it does not end as if complete"
    );
}

#[tokio::test]
async fn keep_alive_comments_come_while_the_stream_is_quiet() {
    let (tx, rx) = mpsc::channel(8);
    let server = common::start(service(rx)).await;
    let mut res = reqwest::get(server.url("/fed")).await.unwrap();
    assert_eq!(res.status(), 200);
    // Quiet: a comment every 100 ms.
    let started = Instant::now();
    let (text, ended) = read_until(&mut res, Duration::from_millis(550)).await;
    assert_eq!(ended, None);
    let comments = text.matches(":\n\n").count();
    assert_eq!(
        text,
        ":\n\n".repeat(comments),
        "only keep-alive comments: {text:?}"
    );
    assert!(
        (4..=6).contains(&comments),
        "{comments} comments in {:?}",
        started.elapsed()
    );
    // Busy: an event every 30 ms leaves no room for one after the first event (one may
    // still come before it).
    let feeder = tokio::spawn(async move {
        for _ in 0..12 {
            tx.send("tick").await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        tx
    });
    let (text, _) = read_until(&mut res, Duration::from_millis(350)).await;
    let _tx = feeder.await.unwrap();
    let busy = &text[text.find("data: tick\n\n").expect("events arrive")..];
    assert!(busy.matches("data: tick\n\n").count() >= 8, "{text:?}");
    assert!(
        !busy.contains(":\n\n"),
        "no keep-alive between events: {text:?}"
    );
    // Without keep-alive, nothing at all.
    let mut res = reqwest::get(server.url("/silent")).await.unwrap();
    let (text, ended) = read_until(&mut res, Duration::from_millis(300)).await;
    assert_eq!((text.as_str(), ended), ("", None));
}

#[tokio::test]
async fn last_event_id_resumes_the_stream() {
    let server = common::start(service(mpsc::channel(1).1)).await;
    let client = reqwest::Client::new();
    let first = client.get(server.url("/resume")).send().await.unwrap();
    assert_eq!(
        first.text().await.unwrap(),
        "id: 0\ndata: 0\n\nid: 1\ndata: 1\n\nid: 2\ndata: 2\n\n"
    );
    let again = client
        .get(server.url("/resume"))
        .header("last-event-id", "41")
        .send()
        .await
        .unwrap();
    assert_eq!(
        again.text().await.unwrap(),
        "id: 42\ndata: 42\n\nid: 43\ndata: 43\n\nid: 44\ndata: 44\n\n"
    );
    let bad = client
        .get(server.url("/resume"))
        .header("last-event-id", "x")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn a_stream_taken_until_shutdown_ends_cleanly_when_the_server_drains() {
    let mut server = common::start(service(mpsc::channel(1).1)).await;
    let mut res = reqwest::get(server.url("/until-shutdown")).await.unwrap();
    let (text, ended) = read_until(&mut res, Duration::from_millis(120)).await;
    assert_eq!(ended, None);
    assert!(text.starts_with("data: 0\n\n"), "{text:?}");
    let started = Instant::now();
    let stopped = server.signal_shutdown();
    let (rest, ended) = read_until(&mut res, Duration::from_secs(5)).await;
    assert_eq!(ended, Some(true), "a complete body: {rest:?}");
    assert!(
        rest.is_empty() || rest.ends_with("\n\n"),
        "whole events: {rest:?}"
    );
    tokio::time::timeout(Duration::from_secs(5), stopped)
        .await
        .expect("the server stops")
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn json_lines_are_one_value_per_line_and_a_bad_value_cuts_the_body() {
    let server = common::start(service(mpsc::channel(1).1)).await;
    let res = reqwest::get(server.url("/rows")).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/x-ndjson");
    let text = res.text().await.unwrap();
    assert_eq!(
        text,
        "{\"id\":1,\"text\":\"one\"}\n{\"id\":2,\"text\":\"two\\nlines\"}\n"
    );
    for line in text.lines() {
        let _: serde_json::Value = serde_json::from_str(line).unwrap();
    }
    let mut res = reqwest::get(server.url("/bad-rows")).await.unwrap();
    let (text, ended) = read_until(&mut res, Duration::from_secs(5)).await;
    assert_eq!((text.as_str(), ended), ("{}\n", Some(false)));
}
