// Register, log in, show the current user and their avatar, and upload one, against the user
// service's API.
// The password is hashed here (WebCrypto): registration sends sha256(password), login sends
// sha256(sha256(password) + token) with a one-time token bound to the session cookie `sid`.
"use strict";

const $ = (id) => document.getElementById(id);

async function sha256Hex(text) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// One API call; a non-2xx answer throws the service's message.
async function call(method, path, body) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.message || `${res.status} ${res.statusText}`);
  return data;
}

// The largest avatar the service takes (it checks too: 413 above).
const AVATAR_MAX_BYTES = 1024 * 1024;

// Shows the avatar of `account`; `version` (the upload's ETag) makes the browser fetch the new
// image at once instead of its cached copy. An account without one shows none (404).
function showAvatar(account, version) {
  const img = $("avatar");
  let src = `/users/v1/avatar/${encodeURIComponent(account)}`;
  if (version) src += `?v=${encodeURIComponent(version)}`;
  img.onload = () => { img.hidden = false; };
  img.onerror = () => { img.hidden = true; };
  img.src = src;
}

// PUT the chosen file as the multipart form's `avatar` part.
async function uploadAvatar() {
  const file = $("avatar-file").files[0];
  if (!file) throw new Error("choose an image first");
  if (file.size > AVATAR_MAX_BYTES) throw new Error("the image is larger than 1 MiB");
  const form = new FormData();
  form.append("avatar", file);
  const res = await fetch("/users/v1/me/avatar", {
    method: "PUT",
    headers: { accept: "application/json" },
    credentials: "same-origin",
    body: form,
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.message || `${res.status} ${res.statusText}`);
  $("avatar-file").value = "";
  showAvatar(data.account, data.etag);
  say("Avatar saved.");
}

function say(status, error) {
  $("status").textContent = status || "";
  $("error").textContent = error || "";
}

async function showCurrentUser() {
  const me = await call("GET", "/users/v1/me");
  const signedIn = me.name !== "";
  $("who").textContent = me.name;
  $("signed-in").hidden = !signedIn;
  $("credentials").hidden = signedIn;
  if (signedIn) showAvatar(me.name);
}

function credentials() {
  const account = $("account").value.trim();
  const password = $("password").value;
  if (!account || !password) throw new Error("enter an account and a password");
  return { account, password };
}

async function register() {
  const { account, password } = credentials();
  await call("POST", "/users/v1/me", { account, password: await sha256Hex(password) });
  say(`Registered ${account}. You can log in now.`);
}

async function login() {
  const { account, password } = credentials();
  const { token } = await call("GET", "/users/v1/login");
  const digest = await sha256Hex(password);
  await call("POST", "/users/v1/login", { account, password: await sha256Hex(digest + token) });
  $("password").value = "";
  say("");
  await showCurrentUser();
}

// Runs `action` with the buttons disabled, showing its error.
async function busy(action) {
  const buttons = document.querySelectorAll("button");
  buttons.forEach((b) => { b.disabled = true; });
  say("");
  try {
    await action();
  } catch (e) {
    say("", e.message);
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  if (!window.crypto || !crypto.subtle) {
    say("", "This page needs WebCrypto: open it over HTTPS or on localhost.");
    return;
  }
  $("credentials").addEventListener("submit", (e) => {
    e.preventDefault();
    busy(login);
  });
  $("register").addEventListener("click", () => busy(register));
  $("avatar-form").addEventListener("submit", (e) => {
    e.preventDefault();
    busy(uploadAvatar);
  });
  busy(showCurrentUser);
});
