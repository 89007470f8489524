use super::{Event, lines};
use std::time::Duration;

/// Without `keep_alive`, a quiet stream sends its comment after 15 s (on a clock the test
/// moves), and not before.
#[tokio::test(start_paused = true)]
async fn the_default_keep_alive_is_a_comment_every_15_seconds() {
    use http_body_util::BodyExt;
    let mut body = super::Sse::new(futures_util::stream::pending::<Event>())
        .into_body()
        .into_inner();
    let early = tokio::time::timeout(Duration::from_millis(14_990), body.frame()).await;
    assert!(early.is_err(), "nothing before 15 s");
    let frame = tokio::time::timeout(Duration::from_millis(20), body.frame())
        .await
        .expect("a comment at 15 s")
        .expect("a frame")
        .expect("no error");
    assert_eq!(frame.into_data().unwrap(), super::KEEP_ALIVE_COMMENT);
    let next = tokio::time::timeout(Duration::from_secs(15), body.frame())
        .await
        .expect("another 15 s later");
    assert!(next.is_some());
}

fn wire(event: &Event) -> String {
    String::from_utf8(event.to_bytes().to_vec()).unwrap()
}

#[test]
fn line_breaks_of_every_kind_split_data() {
    for (data, expected) in [
        ("one", "data: one\n\n"),
        ("a\nb", "data: a\ndata: b\n\n"),
        ("a\r\nb", "data: a\ndata: b\n\n"),
        ("a\rb", "data: a\ndata: b\n\n"),
        ("a\n\rb", "data: a\ndata: \ndata: b\n\n"),
        ("a\r\n\r\nb", "data: a\ndata: \ndata: b\n\n"),
        ("trailing\n", "data: trailing\ndata: \n\n"),
        ("", "data: \n\n"),
        (" leading space", "data:  leading space\n\n"),
        (
            "data: x\n\nevent: y",
            "data: data: x\ndata: \ndata: event: y\n\n",
        ),
    ] {
        assert_eq!(wire(&Event::new().data(data)), expected, "{data:?}");
    }
}

#[test]
fn the_lines_are_what_a_client_reads() {
    let split: Vec<&str> = lines("a\r\nb\rc\nd\r\n").collect();
    assert_eq!(split, ["a", "b", "c", "d", ""]);
    assert_eq!(lines("").collect::<Vec<_>>(), [""]);
}

#[test]
fn event_and_id_refuse_line_breaks_and_nul() {
    for bad in ["a\nevent: admin", "a\r", "\r\nid: 9", "x\n"] {
        let err = Event::new().event(bad).unwrap_err();
        assert_eq!(
            (err.status().as_u16(), err.category()),
            (500, "framework-sse")
        );
        assert!(err.message().contains("line break"), "{err}");
        assert!(Event::new().id(bad).is_err());
    }
    let err = Event::new().id("a\0b").unwrap_err();
    assert!(err.message().contains("NUL"), "{err}");
    // NUL is fine in a type, as the format allows.
    assert!(Event::new().event("a\0b").is_ok());
}

#[test]
fn fields_in_order_comments_split_and_retry_in_milliseconds() {
    let event = Event::new()
        .comment("one\ntwo")
        .comment("")
        .event("e")
        .unwrap()
        .id("")
        .unwrap()
        .retry(Duration::from_secs(3))
        .data("d");
    assert_eq!(
        wire(&event),
        ": one\n: two\n:\nevent: e\nid: \nretry: 3000\ndata: d\n\n"
    );
    // Set again: replaced.
    let event = Event::new().data("a").data("b").retry(Duration::ZERO);
    assert_eq!(wire(&event), "retry: 0\ndata: b\n\n");
    assert_eq!(wire(&Event::new()), "\n");
}

#[test]
fn json_data_is_one_line() {
    let event = Event::new()
        .json_data(&serde_json::json!({"text": "two\nlines"}))
        .unwrap();
    assert_eq!(wire(&event), "data: {\"text\":\"two\\nlines\"}\n\n");
    let mut bad = std::collections::BTreeMap::new();
    bad.insert((1, 2), 3);
    let err = Event::new().json_data(&bad).unwrap_err();
    assert_eq!(err.category(), "framework-sse");
}
