//! The cookie jar over a real socket: every attribute as the browser receives it, prefixes
//! refused, removal, the typed argument, signed and private cookies, tampering and key
//! rotation.

mod common;

use framework::cookies::CookiesExt;
use framework::cookies::time::{Duration, OffsetDateTime};
use framework::cookies::{Cookie, CookieKeys, Cookies, Key, SameSite};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, FromState, Result, Service, controller};

/// Every attribute on one cookie, and `SameSite=None` (which the crate sends `Secure`) on
/// another.
async fn attributes(ctx: &mut Context) -> Result<&'static str> {
    let cookies = ctx.cookies();
    cookies.add(
        Cookie::build(("all", "v"))
            .secure(true)
            .http_only(true)
            .same_site(SameSite::Strict)
            .partitioned(true)
            .max_age(Duration::seconds(3600))
            .expires(OffsetDateTime::from_unix_timestamp(1_893_456_000).unwrap())
            .domain("example.com")
            .path("/p"),
    )?;
    cookies.add(Cookie::build(("lax", "1")).same_site(SameSite::Lax))?;
    cookies.add(Cookie::build(("open", "1")).same_site(SameSite::None))?;
    cookies.add(Cookie::new("text", "a b;c,d%"))?;
    Ok("ok")
}

/// Adds the cookie the query names, for the prefix rules.
async fn prefixed(ctx: &mut Context) -> Result<&'static str> {
    let case = ctx.query("case").unwrap_or_default().into_owned();
    let cookie = match case.as_str() {
        "host-ok" => Cookie::build(("__Host-a", "1")).secure(true).path("/"),
        "host-insecure" => Cookie::build(("__Host-a", "1")).path("/"),
        "host-path" => Cookie::build(("__Host-a", "1")).secure(true).path("/x"),
        "host-domain" => Cookie::build(("__Host-a", "1"))
            .secure(true)
            .path("/")
            .domain("example.com"),
        "secure-ok" => Cookie::build(("__Secure-b", "1")).secure(true),
        "secure-insecure" => Cookie::build(("__Secure-b", "1")),
        _ => Cookie::build(("plain", "1")),
    };
    ctx.cookies().add(cookie)?;
    Ok("ok")
}

async fn remove(ctx: &mut Context) -> Result<&'static str> {
    ctx.cookies().remove(Cookie::build("theme").path("/"))?;
    Ok("removed")
}

async fn sealed_set(ctx: &mut Context) -> Result<&'static str> {
    let cookies = ctx.cookies();
    cookies
        .signed()?
        .add(Cookie::build(("signed", "ann; admin=no")).path("/"))?;
    cookies
        .signed()?
        .add(Cookie::build(("role", "user")).path("/"))?;
    cookies
        .private()?
        .add(Cookie::build(("private", "secret 42")).path("/"))?;
    Ok("sealed")
}

async fn sealed_get(ctx: &mut Context) -> Result<String> {
    let cookies = ctx.cookies();
    let signed = cookies.signed()?.value("signed");
    let private = cookies.private()?.value("private");
    let role = cookies.signed()?.value("role");
    let admin = cookies.signed()?.value("admin");
    Ok(format!(
        "signed={} private={} role={} admin={}",
        signed.as_deref().unwrap_or("-"),
        private.as_deref().unwrap_or("-"),
        role.as_deref().unwrap_or("-"),
        admin.as_deref().unwrap_or("-"),
    ))
}

/// The signed cookie the query's `name` names, or `-`.
async fn signed_read(ctx: &mut Context) -> Result<String> {
    let name = ctx.query("name").unwrap_or_default().into_owned();
    let value = ctx.cookies().signed()?.value(&name);
    Ok(value.unwrap_or_else(|| "-".to_owned()))
}

/// The jar as a controller argument beside `#[cookie]`.
#[derive(FromState)]
struct Theme;

#[controller(prefix = "/typed")]
impl Theme {
    #[get("/")]
    async fn swap(
        &self,
        #[cookie("theme")] theme: Option<String>,
        cookies: &mut Cookies,
    ) -> Result<String> {
        let seen = theme.unwrap_or_else(|| "-".to_owned());
        let jar = cookies.value("theme").unwrap_or("-").to_owned();
        cookies.add(Cookie::build(("theme", "dark blue")).path("/"))?;
        Ok(format!("{seen}|{jar}"))
    }
}

fn service(keys: Option<CookieKeys>) -> Service {
    let mut app = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/attributes", attributes)
        .get("/prefixed", prefixed)
        .get("/remove", remove)
        .get("/sealed/set", sealed_set)
        .get("/sealed/get", sealed_get)
        .get("/sealed/read", signed_read)
        .mount_controllers();
    if let Some(keys) = keys {
        app = app.with_state(keys);
    }
    app.build().unwrap()
}

/// `GET path` with the `Cookie` header given, over a raw socket.
async fn get_with(server: &common::Running, path: &str, cookie: &str) -> common::RawResponse {
    let cookie = if cookie.is_empty() {
        String::new()
    } else {
        format!("Cookie: {cookie}\r\n")
    };
    common::raw_request(
        server.addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\n{cookie}Connection: close\r\n\r\n"),
    )
    .await
}

/// Every `Set-Cookie` of the answer, in order.
fn set_cookies(answer: &common::RawResponse) -> Vec<String> {
    answer
        .head
        .lines()
        .filter_map(|line| line.strip_prefix("set-cookie: "))
        .map(str::to_owned)
        .collect()
}

/// The `name=value` pairs of the answer's cookies, as a browser sends them back.
fn echo(answer: &common::RawResponse) -> String {
    set_cookies(answer)
        .iter()
        .map(|c| c.split(';').next().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("; ")
}

#[tokio::test]
async fn every_attribute_reaches_the_client_one_header_per_cookie() {
    let server = common::start(service(None)).await;
    let answer = get_with(&server, "/attributes", "").await;
    assert_eq!(answer.status, 200, "{}", answer.head);
    let mut sent = set_cookies(&answer);
    sent.sort();
    assert_eq!(
        sent,
        [
            "all=v; HttpOnly; SameSite=Strict; Partitioned; Secure; Path=/p; \
             Domain=example.com; Max-Age=3600; Expires=Tue, 01 Jan 2030 00:00:00 GMT",
            "lax=1; SameSite=Lax",
            "open=1; SameSite=None; Secure",
            "text=a%20b%3Bc%2Cd%25",
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn prefixes_are_checked_when_a_cookie_is_added() {
    let server = common::start(service(None)).await;
    for (case, expected) in [
        ("host-ok", Some("__Host-a=1; Secure; Path=/")),
        ("secure-ok", Some("__Secure-b=1; Secure")),
        ("host-insecure", None),
        ("host-path", None),
        ("host-domain", None),
        ("secure-insecure", None),
    ] {
        let answer = get_with(&server, &format!("/prefixed?case={case}"), "").await;
        match expected {
            Some(cookie) => {
                assert_eq!(answer.status, 200, "{case}: {}", answer.head);
                assert_eq!(set_cookies(&answer), [cookie], "{case}");
            }
            None => {
                assert_eq!(answer.status, 500, "{case}: {}", answer.head);
                assert!(set_cookies(&answer).is_empty(), "{case}: nothing set");
                let body = answer.text();
                assert!(body.contains("framework-cookie"), "{case}: {body}");
            }
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn a_removal_is_the_cookie_expired_with_its_path() {
    let server = common::start(service(None)).await;
    for cookie in ["theme=dark", ""] {
        let answer = get_with(&server, "/remove", cookie).await;
        assert_eq!(answer.status, 200);
        let sent = set_cookies(&answer);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert!(
            sent[0].starts_with("theme=; Path=/; Max-Age=0; Expires="),
            "{sent:?}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn the_typed_argument_reads_and_sets_percent_decoded() {
    let server = common::start(service(None)).await;
    let first = get_with(&server, "/typed", "").await;
    assert_eq!(first.text(), "-|-");
    assert_eq!(set_cookies(&first), ["theme=dark%20blue; Path=/"]);
    let again = get_with(&server, "/typed", &echo(&first)).await;
    assert_eq!(again.text(), "dark blue|dark blue");
    server.stop().await;
}

#[tokio::test]
async fn signed_and_private_cookies_round_trip_and_refuse_tampering() {
    let keys = CookieKeys::generate();
    let server = common::start(service(Some(keys))).await;
    let set = get_with(&server, "/sealed/set", "").await;
    assert_eq!(set.status, 200, "{}", set.head);
    let jar = echo(&set);
    assert!(
        jar.contains("ann%3B%20admin%3Dno"),
        "signed stays readable: {jar}"
    );
    assert!(!jar.contains("secret"), "private is encrypted: {jar}");
    let read = get_with(&server, "/sealed/get", &jar).await;
    assert_eq!(
        read.text(),
        "signed=ann; admin=no private=secret 42 role=user admin=-"
    );

    let value = |name: &str| {
        let pair = jar
            .split("; ")
            .find(|c| c.starts_with(&format!("{name}=")))
            .unwrap();
        pair[name.len() + 1..].to_owned()
    };
    let (signed, role, private) = (value("signed"), value("role"), value("private"));
    let forged = signed.replace("admin%3Dno", "admin%3Dyes");
    let cut = &private[..private.len() - 2];
    for cookie in [
        // The signed value changed, the private one cut short.
        format!("signed={forged}; private={cut}"),
        // Each moved to the other kind's name.
        format!("signed={private}; private={signed}"),
        "signed=x; private=y".to_owned(),
    ] {
        let read = get_with(&server, "/sealed/get", &cookie).await;
        assert_eq!(read.status, 200, "{cookie}");
        assert_eq!(read.text(), "signed=- private=- role=- admin=-", "{cookie}");
    }
    // A signed cookie is bound to its name: moved to a name it was not signed for, two signed
    // cookies swapped, the same value under a name that differs in case, or cut short. The
    // untouched cookie beside them still reads.
    let truncated = [&role[..role.len() - 1], &role[..44], &role[..43]];
    let mut cases = vec![
        ("admin", format!("admin={role}")),
        ("signed", format!("signed={role}; role={signed}")),
        ("role", format!("signed={role}; role={signed}")),
        ("Role", format!("Role={role}")),
        ("ROLE", format!("ROLE={role}")),
        ("Signed", format!("Signed={signed}")),
    ];
    cases.extend(truncated.map(|cut| ("role", format!("role={cut}"))));
    for (name, cookie) in cases {
        let read = get_with(&server, &format!("/sealed/read?name={name}"), &cookie).await;
        assert_eq!(read.status, 200, "{cookie}");
        assert_eq!(read.text(), "-", "{name} from {cookie}");
    }
    let read = get_with(&server, "/sealed/read?name=role", &format!("role={role}")).await;
    assert_eq!(read.text(), "user");
    server.stop().await;
}

#[tokio::test]
async fn sealed_cookies_without_keys_are_a_clear_500() {
    let server = common::start(service(None)).await;
    let answer = get_with(&server, "/sealed/set", "").await;
    assert_eq!(answer.status, 500);
    assert!(
        answer.text().contains("framework-cookie"),
        "{}",
        answer.text()
    );
    server.stop().await;
}

#[tokio::test]
async fn a_rotated_key_still_reads_and_the_new_one_writes() {
    let old = Key::generate();
    let new = Key::generate();
    let before = common::start(service(Some(CookieKeys::new(old.clone())))).await;
    let during = common::start(service(Some(CookieKeys::rotated(
        new.clone(),
        [old.clone()],
    ))))
    .await;
    let after = common::start(service(Some(CookieKeys::new(new)))).await;

    let made_before = echo(&get_with(&before, "/sealed/set", "").await);
    let expected = "signed=ann; admin=no private=secret 42 role=user admin=-";
    assert_eq!(
        get_with(&during, "/sealed/get", &made_before).await.text(),
        expected
    );
    assert_eq!(
        get_with(&after, "/sealed/get", &made_before).await.text(),
        "signed=- private=- role=- admin=-",
        "the old key is gone"
    );
    let made_during = echo(&get_with(&during, "/sealed/set", "").await);
    assert_eq!(
        get_with(&after, "/sealed/get", &made_during).await.text(),
        expected
    );
    assert_eq!(
        get_with(&before, "/sealed/get", &made_during).await.text(),
        "signed=- private=- role=- admin=-",
        "written under the new key"
    );
    for server in [before, during, after] {
        server.stop().await;
    }
}
