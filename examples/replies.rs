//! Replies that write their own answer: server-sent events resuming from `Last-Event-ID`,
//! NDJSON, redirects (one that only goes to a path on this site), a file as a download and
//! bytes under a name, with ranges and conditional requests.
//!
//! ```sh
//! cargo run -p examples --example replies
//! curl -N http://127.0.0.1:3000/events                              # three events, 0.5 s apart
//! curl -N -H 'last-event-id: 7' http://127.0.0.1:3000/events        # from 8 on
//! curl http://127.0.0.1:3000/changes                                # one JSON value per line
//! curl -i 'http://127.0.0.1:3000/go?next=/changes'                  # 303 to /changes
//! curl -i 'http://127.0.0.1:3000/go?next=//evil.example'            # 400
//! curl -i http://127.0.0.1:3000/download                            # attachment; filename*=UTF-8''…
//! curl -i -H 'range: bytes=0-9' http://127.0.0.1:3000/download      # 206
//! curl -i http://127.0.0.1:3000/export.csv                          # bytes under a name
//! ```

use std::time::Duration;

use framework::body::{StreamExt, stream};
use framework::reply::{Attachment, Event, JsonLines, LastEventId, NamedFile, Redirect, Sse};
use framework::{App, Context, HttpError, Result};

/// Three events after the client's last one, half a second apart; a browser's `EventSource`
/// reconnects and goes on from where it was.
async fn events(ctx: &mut Context) -> Result<Sse> {
    let from = LastEventId::of(ctx)
        .parse::<u64>()
        .map_or(0, |last| last + 1);
    let events = stream::iter(from..from + 3).then(|i| async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        Ok::<_, HttpError>(
            Event::new()
                .event("tick")?
                .id(i.to_string())?
                .data(format!("tick {i}")),
        )
    });
    // Ends at graceful shutdown instead of holding it up.
    Ok(Sse::from_try_stream(events.take_until(ctx.shutdown())))
}

#[derive(serde::Serialize)]
struct Change {
    id: u32,
    text: &'static str,
}

async fn changes(_ctx: &mut Context) -> Result<JsonLines<Change>> {
    let changes = [
        Change {
            id: 1,
            text: "created",
        },
        Change {
            id: 2,
            text: "renamed",
        },
    ];
    Ok(JsonLines::new(stream::iter(changes)))
}

/// Back to `?next=`, which came from the client: on this site only.
async fn go(ctx: &mut Context) -> Result<Redirect> {
    let next = ctx.query("next").unwrap_or("/".into()).into_owned();
    Ok(Redirect::local(next)?)
}

/// A page that moved for good.
async fn old(_ctx: &mut Context) -> Result<Redirect> {
    Ok(Redirect::permanent("/events")?)
}

/// A file from disk as a download under another name, streamed.
async fn download(_ctx: &mut Context) -> Result<NamedFile> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/static/index.html");
    Ok(NamedFile::open(path).await?.file_name("Übersicht.html"))
}

/// Bytes made by the handler, saved as a file.
async fn export(_ctx: &mut Context) -> Result<Attachment> {
    Ok(Attachment::new(
        "id,text\n1,created\n2,renamed\n",
        "changes.csv",
    ))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let service = App::new()
        .get("/events", events)
        .get("/changes", changes)
        .get("/go", go)
        .get("/old", old)
        .get("/download", download)
        .get("/export.csv", export)
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}
