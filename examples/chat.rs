//! A chat room over WebSocket: a page at `/` asks for a name (kept in the session, the `sid`
//! cookie), then joins `/chat/ws`, where every message goes to everyone in the room. With
//! `REDIS_URL` set, sessions and the room live in Redis (`ws::Broadcast::redis`), so several
//! instances are one room: a message sent to one reaches the clients of all.
//!
//! ```sh
//! cargo run -p examples --example chat                       # http://127.0.0.1:3000/
//! REDIS_URL=redis://127.0.0.1:6379 BIND=127.0.0.1:3001 cargo run -p examples --example chat
//! curl -c jar -H 'content-type: application/json' -d '{"name":"ada"}' http://127.0.0.1:3000/chat/name
//! ```
//!
//! Without a name the upgrade is refused (401). Messages are text, at most 1 000 characters.
//! The room keeps the last 256 messages for its readers, and a sender is paced to stay
//! within it: a burst of 32 goes at once, then 200 messages a second, the rest waiting
//! unread on its connection (TCP slows the client) rather than pushing the room's readers
//! out of its buffer. A reader that falls 256 messages behind the room, or whose connection
//! takes 5 s to accept a message, is closed (1008) rather than buffered for.

use std::sync::Arc;

use framework::http::StatusCode;
use framework::middleware::body_parser::BodyParser;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::middleware::session::{
    MemoryStore, RedisStore, SessionConfig, SessionExt, SessionMiddleware, SessionStore,
};
use framework::redis_connection::{RedisConnection, RedisPolicy};
use framework::ws::{Broadcast, Message, Upgraded, WebSocketExt, WsConfig, close_code};
use framework::{App, Context, Group, HttpError, Result, Validate};
use serde::Deserialize;

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Chat</title><script src="/chat.js" defer></script></head>
<body>
  <form id="join"><input id="name" placeholder="your name" maxlength="20" required>
    <button>Join</button></form>
  <ul id="log"></ul>
  <form id="say" hidden><input id="text" maxlength="1000" required><button>Send</button></form>
</body>
</html>
"#;

const SCRIPT: &str = r#"const log = document.getElementById("log");
const show = (text) => { const li = document.createElement("li"); li.textContent = text; log.append(li); };
document.getElementById("join").addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = document.getElementById("name").value;
  const res = await fetch("/chat/name", {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify({name})});
  if (!res.ok) { show(await res.text()); return; }
  const socket = new WebSocket(`${location.origin.replace("http", "ws")}/chat/ws`);
  socket.onmessage = (event) => show(event.data);
  socket.onclose = (event) => show(`(closed: ${event.code})`);
  document.getElementById("join").hidden = true;
  const say = document.getElementById("say");
  say.hidden = false;
  say.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = document.getElementById("text");
    socket.send(text.value);
    text.value = "";
  });
});
"#;

/// The name a visitor chats under.
#[derive(Deserialize, Validate)]
struct Name {
    #[validate(length(min = 1, max = 20), non_empty)]
    name: String,
}

async fn set_name(ctx: &mut Context) -> Result<&'static str> {
    let Name { name } = ctx.bind()?;
    ctx.session()?.set_str("name", name.trim());
    Ok("ok")
}

/// Joins the room: what the client sends goes to everyone, what anyone sends comes back.
fn join(ctx: &mut Context, room: Broadcast) -> Result<Upgraded> {
    let name = ctx
        .session()?
        .get_str("name")
        .map(str::to_owned)
        .ok_or_else(|| HttpError::with(StatusCode::UNAUTHORIZED, "chat", "choose a name first"))?;
    let config = WsConfig::default().max_message_size(4096);
    ctx.websocket(config, move |mut socket| async move {
        let mut feed = room.subscribe();
        let out = socket.sender();
        let mut pace = Pace::new();
        loop {
            // Decided once a turn: the two branches below must see the same answer.
            let ready = pace.ready();
            tokio::select! {
                // Read the next message only when the pace allows one; meanwhile the room's
                // messages are still delivered, the client's own included.
                said = socket.recv(), if ready => match said {
                    Some(Message::Text(text)) => {
                        pace.spend();
                        let text: String = text.chars().take(1000).collect();
                        if room.publish(format!("{name}: {text}")).await.is_err() {
                            let _ = out.close(close_code::ERROR, "the room is unavailable").await;
                            break;
                        }
                    }
                    Some(Message::Binary(_)) => {}
                    None => break,
                },
                () = tokio::time::sleep_until(pace.next()), if !ready => {}
                heard = feed.recv() => match heard {
                    // Waits for this client's connection, but not for ever.
                    Ok(line) => {
                        let line = String::from_utf8_lossy(&line).into_owned();
                        match tokio::time::timeout(WRITE_DEADLINE, out.send(line)).await {
                            Ok(Ok(())) => {}
                            Ok(Err(_)) => break,
                            Err(_) => {
                                let _ = out.close(close_code::POLICY, "too slow").await;
                                break;
                            }
                        }
                    }
                    // Fell more than the room's buffer behind: closed, not buffered for.
                    Err(_) => {
                        let _ = out.close(close_code::POLICY, "too slow").await;
                        break;
                    }
                },
            }
        }
    })
    .map_err(Into::into)
}

/// Messages the room keeps for its readers.
const ROOM_BUFFER: usize = 256;
/// Messages one client may send at once, before the pace applies: well within the room's
/// buffer, so a burst from a few clients at a time never pushes a reader out of it.
const BURST: u32 = 32;
/// Then one message per this long: 200 a second, far below what a reader takes in.
const EVERY: std::time::Duration = std::time::Duration::from_millis(5);
/// The longest a reader's connection may take to accept the next message.
const WRITE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// One sender's pace: a bucket of [`BURST`] messages, one more every [`EVERY`].
struct Pace {
    tokens: u32,
    since: tokio::time::Instant,
}

impl Pace {
    fn new() -> Self {
        Self {
            tokens: BURST,
            since: tokio::time::Instant::now(),
        }
    }

    /// Whether a message may be read now (the bucket refilled first).
    fn ready(&mut self) -> bool {
        if self.tokens < BURST {
            let earned = self.since.elapsed().as_nanos() / EVERY.as_nanos();
            let earned = u32::try_from(earned).unwrap_or(BURST).min(BURST);
            self.tokens = (self.tokens + earned).min(BURST);
            self.since += EVERY * earned;
        }
        self.tokens > 0
    }

    fn spend(&mut self) {
        if self.tokens == BURST {
            // A full bucket earns nothing more: the refill counts from now.
            self.since = tokio::time::Instant::now();
        }
        self.tokens -= 1;
    }

    /// When the next message may be read.
    fn next(&self) -> tokio::time::Instant {
        self.since + EVERY
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let redis_url = std::env::var("REDIS_URL").ok().filter(|u| !u.is_empty());
    let (store, room): (Arc<dyn SessionStore>, Broadcast) = match redis_url {
        Some(url) => {
            let redis = RedisConnection::connect(&url, RedisPolicy::default())
                .await
                .map_err(std::io::Error::other)?;
            let room = Broadcast::redis(redis.clone(), "chat:room", ROOM_BUFFER)
                .await
                .map_err(std::io::Error::other)?;
            (Arc::new(RedisStore::new(redis, "chat:session:")), room)
        }
        None => (Arc::new(MemoryStore::new()), Broadcast::local(ROOM_BUFFER)),
    };
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .get("/", |ctx: &mut Context| {
            ctx.set_response_header(
                framework::http::header::CONTENT_TYPE,
                framework::http::HeaderValue::from_static("text/html; charset=utf-8"),
            );
            ctx.body_mut().set_bytes(PAGE);
            async { Ok(()) }
        })
        .get("/chat.js", |ctx: &mut Context| {
            ctx.set_response_header(
                framework::http::header::CONTENT_TYPE,
                framework::http::HeaderValue::from_static("text/javascript; charset=utf-8"),
            );
            ctx.body_mut().set_bytes(SCRIPT);
            async { Ok(()) }
        })
        .group(
            Group::new("/chat")
                .use_middleware(SessionMiddleware::new(store, SessionConfig::default()))
                .post("/name", set_name)
                .get("/ws", move |ctx: &mut Context| {
                    let joined = join(ctx, room.clone());
                    async move { joined }
                }),
        )
        .build()
        .expect("valid routes");
    let bind = std::env::var("BIND").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    service.listen(&bind).await
}
