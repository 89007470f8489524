//! The jwt middleware over a real socket: valid, missing, wrong, expired, not yet valid,
//! malformed, `alg: none`, another algorithm, tampered payload, `exp` as a string, cookie and
//! passthrough; the issuer's renewal.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::jwt::{Algorithm, EncodingKey};
use framework::middleware::jwt::{Jwt, JwtConfig, JwtIssuer, Verified, claims};
use framework::middleware::responder::Responder;
use framework::{App, Context, Group, Result};
use jsonwebtoken::Header;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const SECRET: &[u8] = b"test secret, long enough for HS256";

#[derive(Debug, Serialize, Deserialize)]
struct User {
    sub: String,
}

async fn me(ctx: &mut Context) -> Result<String> {
    Ok(claims::<User>(ctx).map_or_else(|| "anonymous".to_owned(), |u| u.sub.clone()))
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn sign(alg: Algorithm, claims: &Value) -> String {
    jsonwebtoken::encode(&Header::new(alg), claims, &EncodingKey::from_secret(SECRET)).unwrap()
}

fn service() -> framework::Service {
    let strict = Jwt::<User>::new(JwtConfig::hs256(SECRET).cookie("jwt"));
    let open = Jwt::<User>::new(JwtConfig::hs256(SECRET).passthrough(true));
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .group(Group::new("/api").use_middleware(strict).get("/me", me))
        .group(Group::new("/public").use_middleware(open).get("/me", me))
        .build()
        .unwrap()
}

#[tokio::test]
async fn every_case() {
    let server = common::start(service()).await;
    let client = common::browser();
    let call = |path: &'static str, auth: Option<String>| {
        let mut req = client.get(server.url(path));
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        async move {
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let text = res.text().await.unwrap();
            (status, text)
        }
    };
    // The challenge of a 401 (RFC 6750 section 3).
    let challenge = |path: &'static str, auth: Option<String>| {
        let mut req = client.get(server.url(path));
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        async move {
            let res = req.send().await.unwrap();
            res.headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap().to_owned())
        }
    };
    let valid = sign(
        Algorithm::HS256,
        &json!({"sub": "alice", "exp": now() + 60}),
    );
    assert_eq!(
        call("/api/me", Some(format!("Bearer {valid}"))).await,
        (200, "alice".into())
    );
    assert_eq!(
        call("/api/me", Some(format!("bearer {valid}"))).await.0,
        200
    );

    let header_none = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(json!({"sub": "alice", "exp": now() + 60}).to_string());
    let none_token = format!("{header_none}.{payload}.");
    let mut parts: Vec<&str> = valid.split('.').collect();
    let evil_payload =
        URL_SAFE_NO_PAD.encode(json!({"sub": "admin", "exp": now() + 60}).to_string());
    parts[1] = &evil_payload;
    let tampered = parts.join(".");
    let cases: Vec<(&str, Option<String>, &str)> = vec![
        ("missing", None, "token is missing"),
        ("empty bearer", Some("Bearer ".into()), "token is missing"),
        (
            "other scheme",
            Some(format!("Basic {valid}")),
            "token is missing",
        ),
        (
            "garbage",
            Some("Bearer not.a.token".into()),
            "token is invalid",
        ),
        ("one part", Some("Bearer abc".into()), "token is invalid"),
        (
            "wrong secret",
            Some(format!(
                "Bearer {}",
                jsonwebtoken::encode(
                    &Header::new(Algorithm::HS256),
                    &json!({"sub": "alice", "exp": now() + 60}),
                    &EncodingKey::from_secret(b"another secret entirely, also long"),
                )
                .unwrap()
            )),
            "token is invalid",
        ),
        (
            "expired",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::HS256, &json!({"sub": "a", "exp": now() - 10}))
            )),
            "token has expired",
        ),
        (
            "not yet valid",
            Some(format!(
                "Bearer {}",
                sign(
                    Algorithm::HS256,
                    &json!({"sub": "a", "exp": now() + 600, "nbf": now() + 300})
                )
            )),
            "token is not valid yet",
        ),
        (
            "alg none",
            Some(format!("Bearer {none_token}")),
            "token is invalid",
        ),
        (
            "other algorithm",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::HS384, &json!({"sub": "a", "exp": now() + 60}))
            )),
            "token is invalid",
        ),
        (
            "tampered payload",
            Some(format!("Bearer {tampered}")),
            "token is invalid",
        ),
        (
            "exp as a string",
            Some(format!(
                "Bearer {}",
                sign(
                    Algorithm::HS256,
                    &json!({"sub": "a", "exp": (now() + 60).to_string()})
                )
            )),
            "token is invalid",
        ),
        (
            "no exp",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::HS256, &json!({"sub": "a"}))
            )),
            "token is invalid",
        ),
        (
            // RFC 7519 section 4.1.4: not accepted on or after exp.
            "exp equal to now",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::HS256, &json!({"sub": "a", "exp": now()}))
            )),
            "token has expired",
        ),
        (
            // RFC 7515 section 4.1.11: an extension nobody here understands.
            "unknown crit",
            Some(format!(
                "Bearer {}",
                jsonwebtoken::encode(
                    &Header {
                        crit: Some(vec!["urn:example:must-understand".into()]),
                        ..Header::new(Algorithm::HS256)
                    },
                    &json!({"sub": "a", "exp": now() + 60, "urn:example:must-understand": 1}),
                    &EncodingKey::from_secret(SECRET)
                )
                .unwrap()
            )),
            "token is invalid",
        ),
    ];
    for (name, auth, message) in cases {
        let token_text = auth.clone().unwrap_or_default();
        // No token at all: a bare challenge; a token refused: `invalid_token` and why.
        let expected = if message == "token is missing" && !token_text.starts_with("Bearer") {
            "Bearer".to_owned()
        } else {
            format!(r#"Bearer error="invalid_token", error_description="{message}""#)
        };
        assert_eq!(
            challenge("/api/me", auth.clone()).await.as_deref(),
            Some(expected.as_str()),
            "{name}"
        );
        let (status, text) = call("/api/me", auth).await;
        assert_eq!(status, 401, "{name}: {text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["category"], "framework-jwt", "{name}");
        assert_eq!(body["message"], message, "{name}");
        let token = token_text
            .trim_start_matches("Bearer ")
            .trim_start_matches("Basic ");
        if token.len() > 8 {
            assert!(!text.contains(token), "{name}: the answer echoes the token");
        }
    }
    // The query string is never read.
    let res = client
        .get(server.url(&format!("/api/me?token={valid}&access_token={valid}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    // The cookie is.
    let res = client
        .get(server.url("/api/me"))
        .header("cookie", format!("jwt={valid}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "alice");
    // Passthrough: anonymous without a token, refused with a bad one.
    assert_eq!(call("/public/me", None).await, (200, "anonymous".into()));
    assert_eq!(
        call("/public/me", Some(format!("Bearer {valid}"))).await,
        (200, "alice".into())
    );
    assert_eq!(call("/public/me", Some("Bearer bad".into())).await.0, 401);
    server.stop().await;
}

#[tokio::test]
async fn issuer_signs_and_renews() {
    let issuer = JwtIssuer::hs256(SECRET, Duration::from_secs(3600));
    let token = issuer.issue(&User { sub: "bob".into() }).unwrap();
    let jwt = Jwt::<User>::new(JwtConfig::hs256(SECRET));
    let verified = jwt.verify(&token).unwrap();
    assert_eq!(verified.claims.sub, "bob");
    assert!(
        issuer.renew(&verified).unwrap().is_none(),
        "fresh tokens are kept"
    );
    let closing = Verified {
        claims: User { sub: "bob".into() },
        exp: u64::try_from(now()).unwrap() + 60,
    };
    let renewed = issuer
        .renew(&closing)
        .unwrap()
        .expect("renewed near expiry");
    assert!(jwt.verify(&renewed).unwrap().exp > closing.exp);
}

#[test]
fn leeway_moves_the_expiry_by_its_seconds() {
    let jwt = Jwt::<User>::new(JwtConfig::hs256(SECRET).leeway(std::time::Duration::from_secs(30)));
    let token = |exp: i64| sign(Algorithm::HS256, &json!({"sub": "a", "exp": exp}));
    assert!(jwt.verify(&token(now() - 10)).is_ok(), "within the leeway");
    // exp + leeway equal to now: expired, as exp equal to now is without leeway.
    assert!(jwt.verify(&token(now() - 30)).is_err());
    assert!(jwt.verify(&token(now() - 31)).is_err());
}
