//! Avatars: one image per account, PNG, JPEG or WebP, at most [`AVATAR_MAX_BYTES`], told by
//! its first bytes (never by what the client says it is).

use framework::body::Bytes;
use sha2::{Digest, Sha256};

/// The largest avatar: 1 MiB.
pub const AVATAR_MAX_BYTES: u64 = 1024 * 1024;

/// The image formats an avatar may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageType {
    /// PNG: `89 50 4E 47 0D 0A 1A 0A` (the PNG specification, section 5.2).
    Png,
    /// JPEG: `FF D8 FF` (a start-of-image marker, then the next marker's first byte).
    Jpeg,
    /// WebP: `RIFF`, a 4-byte size, `WEBP` (RFC 9649, section 2.5).
    Webp,
}

impl ImageType {
    /// The format `bytes` start with, if it is one of these: each format's whole signature, as
    /// its specification writes it. Not through the `infer` crate (0.22), whose matchers are
    /// looser than these: 4 of PNG's 8 signature bytes, and WebP's `WEBP` without the `RIFF`
    /// before it, so `89 50 4E 47` alone, or any 12 bytes ending in `WEBP`, would pass as an
    /// image (the unit test below refuses both).
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Self::Jpeg)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    /// Its media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Webp => "image/webp",
        }
    }

    /// The format of a media type [`ImageType::media_type`] wrote.
    pub fn from_media_type(media: &str) -> Option<Self> {
        [Self::Png, Self::Jpeg, Self::Webp]
            .into_iter()
            .find(|t| t.media_type() == media)
    }
}

/// An account's avatar: the image's bytes, its format and its SHA-256 (its strong ETag is
/// made from it, so a read costs no hashing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Avatar {
    /// The image's format.
    pub image_type: ImageType,
    /// The image.
    pub bytes: Bytes,
    /// SHA-256 of `bytes`.
    pub sha256: [u8; 32],
}

impl Avatar {
    /// The avatar of these bytes; `None` when they are no PNG, JPEG or WebP image.
    pub fn from_image(bytes: Bytes) -> Option<Self> {
        let image_type = ImageType::sniff(&bytes)?;
        let sha256 = Sha256::digest(&bytes).into();
        Some(Self {
            image_type,
            bytes,
            sha256,
        })
    }

    /// Its strong entity tag: `"<size hex>-<128 bits of the SHA-256, base64url>"`.
    pub fn etag(&self) -> http::HeaderValue {
        framework::conditional::strong_etag(self.bytes.len() as u64, &self.sha256)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_told_by_their_first_bytes() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        let jpeg = [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F'];
        let webp = b"RIFF\x24\0\0\0WEBPVP8 ";
        assert_eq!(ImageType::sniff(png), Some(ImageType::Png));
        assert_eq!(ImageType::sniff(&jpeg), Some(ImageType::Jpeg));
        assert_eq!(ImageType::sniff(webp), Some(ImageType::Webp));
        for other in [
            &b""[..],
            b"GIF89a",
            b"<svg xmlns='http://www.w3.org/2000/svg'/>",
            b"RIFF\x24\0\0\0WAVEfmt ",
            b"\x89PNG",
            b"\x89PNG\r\n\x1a\0",
            b"WAVE\x24\0\0\0WEBPVP8 ",
            &[0xFF, 0xD8],
        ] {
            assert_eq!(ImageType::sniff(other), None, "{other:?}");
        }
        for t in [ImageType::Png, ImageType::Jpeg, ImageType::Webp] {
            assert_eq!(ImageType::from_media_type(t.media_type()), Some(t));
        }
        assert_eq!(ImageType::from_media_type("image/gif"), None);
    }

    #[test]
    fn an_avatar_carries_its_digest_and_tag() {
        let bytes = Bytes::from_static(b"\x89PNG\r\n\x1a\nrest");
        let avatar = Avatar::from_image(bytes.clone()).unwrap();
        assert_eq!(avatar.sha256, <[u8; 32]>::from(Sha256::digest(&bytes)));
        assert!(avatar.etag().to_str().unwrap().starts_with("\"c-"));
        assert!(Avatar::from_image(Bytes::from_static(b"text")).is_none());
    }
}
