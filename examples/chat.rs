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
//! Without a name the upgrade is refused (401). Messages are text, at most 1 000 characters;
//! a client that cannot keep up with the room is closed (1008) rather than buffered for.

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
    let config = WsConfig {
        max_message_size: 4096,
        ..WsConfig::default()
    };
    ctx.websocket(config, move |mut socket| async move {
        let mut feed = room.subscribe();
        let out = socket.sender();
        loop {
            tokio::select! {
                said = socket.recv() => match said {
                    Some(Message::Text(text)) => {
                        let text: String = text.chars().take(1000).collect();
                        if room.publish(format!("{name}: {text}")).await.is_err() {
                            let _ = out.close(close_code::ERROR, "the room is unavailable").await;
                            break;
                        }
                    }
                    Some(Message::Binary(_)) => {}
                    None => break,
                },
                heard = feed.recv() => match heard {
                    // Never waits: a client that cannot keep up is closed (1008).
                    Ok(line) => {
                        if out.try_send(String::from_utf8_lossy(&line).into_owned()).is_err() {
                            break;
                        }
                    }
                    // Fell behind the room itself: the same.
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

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let redis_url = std::env::var("REDIS_URL").ok().filter(|u| !u.is_empty());
    let (store, room): (Arc<dyn SessionStore>, Broadcast) = match redis_url {
        Some(url) => {
            let redis = RedisConnection::connect(&url, RedisPolicy::default())
                .await
                .map_err(std::io::Error::other)?;
            let room = Broadcast::redis(redis.clone(), "chat:room", 256)
                .await
                .map_err(std::io::Error::other)?;
            (Arc::new(RedisStore::new(redis, "chat:session:")), room)
        }
        None => (Arc::new(MemoryStore::new()), Broadcast::local(256)),
    };
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .get("/", |ctx: &mut Context| {
            ctx.set_header(
                framework::http::header::CONTENT_TYPE,
                framework::http::HeaderValue::from_static("text/html; charset=utf-8"),
            );
            ctx.body_buffer = Some(PAGE.into());
            async { Ok(()) }
        })
        .get("/chat.js", |ctx: &mut Context| {
            ctx.set_header(
                framework::http::header::CONTENT_TYPE,
                framework::http::HeaderValue::from_static("text/javascript; charset=utf-8"),
            );
            ctx.body_buffer = Some(SCRIPT.into());
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
