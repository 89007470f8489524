use http_body::Frame;

use super::*;

/// A file body comes in chunks of at most 64 KiB, never whole: a 200 000-byte reader gives
/// four frames, of 64 KiB but the last, and exactly its bytes.
#[tokio::test]
async fn a_reader_body_comes_in_chunks_of_64_kib() {
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut body =
        BodyStream::from_reader(std::io::Cursor::new(bytes.clone()), 200_000).into_inner();
    let mut sizes = Vec::new();
    let mut all = Vec::new();
    while let Some(frame) = http_body_util::BodyExt::frame(&mut body).await {
        let data = frame.unwrap().into_data().unwrap();
        sizes.push(data.len());
        all.extend_from_slice(&data);
    }
    assert_eq!(
        sizes,
        [READ_CHUNK, READ_CHUNK, READ_CHUNK, 200_000 - 3 * READ_CHUNK]
    );
    assert_eq!(READ_CHUNK, 64 * 1024);
    assert_eq!(all, bytes);
}

fn chunked(chunks: &'static [&'static [u8]]) -> RequestBody {
    let stream = futures_util::stream::iter(
        chunks
            .iter()
            .map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c))),
    );
    RequestBody::from_body(http_body_util::StreamBody::new(
        futures_util::TryStreamExt::map_ok(stream, Frame::data),
    ))
}

/// A wrapped body is read up to its limit exactly; one byte more is too large.
#[tokio::test]
async fn a_wrapped_body_is_read_up_to_its_limit_and_no_further() {
    let body = chunked(&[b"0123", b"4567"]);
    assert!(matches!(body, RequestBody::Stream(_)));
    assert!(body.has_data());
    let read = body
        .read_limited(8)
        .await
        .expect("8 bytes fit a limit of 8");
    assert_eq!(read, Bytes::from_static(b"01234567"));
    let over = chunked(&[b"0123", b"45678"]).read_limited(8).await;
    assert!(matches!(over, Err(ReadError::TooLarge)), "{over:?}");
}

/// A body in one frame is that frame's bytes, not a copy; frames after it are joined in
/// order, with empty frames and trailers left out.
#[tokio::test]
async fn one_frame_is_kept_as_it_came_and_more_are_joined() {
    static ONE: &[u8] = b"{\"a\":1}";
    static FRAMES: &[&[u8]] = &[ONE];
    let read = chunked(FRAMES).read_limited(100).await.expect("fits");
    assert_eq!(read.as_ptr(), ONE.as_ptr(), "the frame itself, not a copy");
    let joined = chunked(&[b"", b"ab", b"", b"cd", b"e"])
        .read_limited(5)
        .await
        .expect("5 bytes fit a limit of 5");
    assert_eq!(joined, Bytes::from_static(b"abcde"));
    let frames = futures_util::stream::iter([
        Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(b"xy"))),
        Ok(Frame::trailers(http::HeaderMap::new())),
    ]);
    let with_trailers = RequestBody::from_body(http_body_util::StreamBody::new(frames))
        .read_limited(2)
        .await
        .expect("trailers are not bytes of the body");
    assert_eq!(with_trailers, Bytes::from_static(b"xy"));
}

/// A wrapping body's own length limit (tower-http's `RequestBodyLimit` wraps the body in
/// `Limited`) is too large, not an i/o failure.
#[tokio::test]
async fn a_wrapping_limit_is_too_large() {
    let limited = http_body_util::Limited::new(RequestBody::Full(Bytes::from_static(b"12345")), 4);
    let read = RequestBody::from_body(limited).read_limited(100).await;
    assert!(matches!(read, Err(ReadError::TooLarge)), "{read:?}");
}

/// A request body stays one as it is; an ended body of another type is empty.
#[test]
fn from_body_keeps_a_request_body_and_empties_an_ended_one() {
    let same = RequestBody::from_body(RequestBody::Full(Bytes::from_static(b"x")));
    assert!(matches!(same, RequestBody::Full(b) if b == "x"));
    let ended = RequestBody::from_body(http_body_util::Empty::<Bytes>::new());
    assert!(matches!(ended, RequestBody::Empty));
}
