//! `/users/v1/me/avatar` and `/users/v1/avatar/{account}`: the logged-in user uploads an
//! avatar, anyone reads it.

use std::sync::Arc;

use framework::middleware::session::SessionExt;
use framework::multipart::{Multipart, MultipartLimits, MultipartParts, PartSpec};
use framework::representation::Representation;
use framework::{Context, FromState, HttpError, Result, controller};
use http::{HeaderValue, StatusCode};
use serde::Serialize;

use crate::avatar::{AVATAR_MAX_BYTES, Avatar};
use crate::controllers::user::{SESSION_ACCOUNT, no_store};
use crate::params::AccountName;
use crate::store::{CATEGORY, UserStore};

/// The name of the upload's one part.
pub const AVATAR_PART: &str = "avatar";

/// `Cache-Control` of an avatar: any cache may keep it for a minute, then revalidates it by
/// its ETag (a 304 while it has not changed). A new avatar shows everywhere within a minute;
/// the login page asks for its own with the new tag in the query, so it shows at once.
pub const AVATAR_CACHE_CONTROL: &str = "public, max-age=60";

/// Room for what surrounds the image in the form: the boundary lines and the part's headers.
const FORM_OVERHEAD: u64 = 16 * 1024;

/// The upload form: one part, `avatar`, the image.
pub struct AvatarForm;

impl MultipartParts for AvatarForm {
    const PARTS: &'static [PartSpec] = &[PartSpec::file(AVATAR_PART)
        .content_type("image/png, image/jpeg, image/webp")
        .description(
            "The image: PNG, JPEG or WebP (told by its bytes, not by its Content-Type), at \
             most 1 MiB.",
        )];
    /// One part of at most [`AVATAR_MAX_BYTES`], sent as a file or as a plain field.
    const LIMITS: Option<MultipartLimits> = Some(
        MultipartLimits::DEFAULT
            .parts(1)
            .field_size(AVATAR_MAX_BYTES)
            .file_size(AVATAR_MAX_BYTES)
            .total_size(AVATAR_MAX_BYTES + FORM_OVERHEAD)
            .header_size(8 * 1024),
    );
}

/// Answer of an upload: what was stored.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvatarInfo {
    /// The account the avatar belongs to.
    pub account: String,
    /// The image's media type, as its bytes tell it.
    pub content_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its strong entity tag, as `GET /users/v1/avatar/{account}` sends it.
    pub etag: String,
}

fn error(status: StatusCode, message: &'static str) -> framework::Error {
    HttpError::with(status, CATEGORY, message).into()
}

/// Avatar endpoints; share the user store.
#[derive(FromState)]
pub struct AvatarController {
    store: Arc<dyn UserStore>,
}

#[controller(prefix = "/users")]
impl AvatarController {
    /// Upload the logged-in user's avatar.
    ///
    /// A `multipart/form-data` body with one part, `avatar`: a PNG, JPEG or WebP image of at
    /// most 1 MiB, replacing any earlier avatar. 401 without a login; 413 for a larger image
    /// or a second part; 415 for an image of another format (its bytes decide, not its
    /// `Content-Type`); 507 when the memory store has no room (`MEMORY_AVATAR_BYTES`).
    #[put("/v1/me/avatar", middleware(csrf, session), errors(401, 507))]
    pub async fn upload(
        &self,
        mut form: Multipart<AvatarForm>,
        ctx: &mut Context,
    ) -> Result<AvatarInfo> {
        no_store(ctx);
        let Some(account) = ctx.session()?.get_str(SESSION_ACCOUNT).map(str::to_owned) else {
            return Err(error(StatusCode::UNAUTHORIZED, "log in to set an avatar"));
        };
        let Some(part) = form.next_part().await? else {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "the form has no avatar part",
            ));
        };
        if part.name() != AVATAR_PART {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "the image goes in a part named avatar",
            ));
        }
        let bytes = part.bytes().await?;
        // Read to the closing boundary: a truncated form is not stored, a second part is a
        // 413 (the one-part limit).
        if form.next_part().await?.is_some() {
            return Err(error(StatusCode::BAD_REQUEST, "send the avatar part only"));
        }
        let Some(avatar) = Avatar::from_image(bytes) else {
            return Err(error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the avatar must be a PNG, JPEG or WebP image",
            ));
        };
        self.store.set_avatar(&account, &avatar).await?;
        Ok(AvatarInfo {
            account,
            content_type: avatar.image_type.media_type().to_owned(),
            size: avatar.bytes.len() as u64,
            etag: avatar.etag().to_str().unwrap_or_default().to_owned(),
        })
    }

    /// An account's avatar: the image (PNG, JPEG or WebP, by its `Content-Type`).
    ///
    /// With a strong `ETag` and `Cache-Control: public, max-age=60`: `If-None-Match` gives 304,
    /// one `Range` gives 206 (416 past the end), `If-Match` that fails 412. 404 when the
    /// account has no avatar (or does not exist).
    #[get("/v1/avatar/{account}", errors(404, 412, 416))]
    pub async fn avatar(&self, account: AccountName, ctx: &mut Context) -> Result {
        let Some(avatar) = self.store.avatar(account.as_str()).await? else {
            return Err(error(StatusCode::NOT_FOUND, "no avatar for this account"));
        };
        let representation = Representation {
            content_type: HeaderValue::from_static(avatar.image_type.media_type()),
            size: avatar.bytes.len() as u64,
            etag: avatar.etag(),
            last_modified: None,
            cache_control: Some(HeaderValue::from_static(AVATAR_CACHE_CONTROL)),
            encoding: None,
        };
        representation.serve(ctx, avatar.bytes, CATEGORY)?;
        Ok(())
    }
}
