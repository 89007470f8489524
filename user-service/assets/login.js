// Register, log in and show the current user, against the user service's JSON API.
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
  busy(showCurrentUser);
});
