#!/usr/bin/env python3
"""Attacker's probes against a running user service (issue 9's figures), stdlib only.

Start the service first, e.g.
    cargo build --release -p user-service
    DATABASE_URL=memory ./target/release/user-service &
then run
    python3 benches/probes/hardening.py --pid $! slow      # silent, slowloris, stalled body
    python3 benches/probes/hardening.py --pid $! flood     # 30 s of cookieless token requests
    python3 benches/probes/hardening.py guess              # wrong proofs against one token
    python3 benches/probes/hardening.py --pid $! shutdown  # 50 half-sent heads, then SIGTERM
    python3 benches/probes/hardening.py fds                # 1 100 silent connections, then one
                                                           # request (start the service under
                                                           # `ulimit -n 1024` for this one)

Each probe prints one line per figure.
"""

import argparse
import asyncio
import hashlib
import json
import os
import signal
import time

HOST = "127.0.0.1"


def rss_mib(pid):
    if not pid:
        return None
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


async def closed_after(reader, limit):
    """Seconds until the server closes the connection (None if still open after `limit`)."""
    start = time.monotonic()
    try:
        while True:
            data = await asyncio.wait_for(reader.read(65536), limit - (time.monotonic() - start))
            if not data:
                return time.monotonic() - start, b""
            if data.startswith(b"HTTP/1.1"):
                return time.monotonic() - start, data
    except (asyncio.TimeoutError, ValueError):
        return None, b""
    except ConnectionResetError:
        return time.monotonic() - start, b""


async def silent(port):
    reader, writer = await asyncio.open_connection(HOST, port)
    seconds, _ = await closed_after(reader, 90)
    writer.close()
    return seconds


async def slowloris(port, stop):
    reader, writer = await asyncio.open_connection(HOST, port)
    start = time.monotonic()
    writer.write(b"GET /users/v1/me HTTP/1.1\r\nHost: x\r\n")
    try:
        while not stop.is_set():
            await writer.drain()
            await asyncio.sleep(2)
            if reader.at_eof():
                return time.monotonic() - start
            writer.write(b"X")
            try:
                data = await asyncio.wait_for(reader.read(1), 0.01)
                if not data:
                    return time.monotonic() - start
            except asyncio.TimeoutError:
                pass
    except (ConnectionResetError, BrokenPipeError):
        return time.monotonic() - start
    finally:
        writer.close()
    return None


async def stalled_body(port):
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(
        b"POST /users/v1/me HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n{\"acc"
    )
    await writer.drain()
    seconds, data = await closed_after(reader, 90)
    writer.close()
    status = data.split(b" ", 2)[1].decode() if data else "none"
    return seconds, status


async def trickling_body(port):
    """A body sent one byte every 3 s: seconds until the server answers or closes, and the status."""
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(
        b"POST /users/v1/me HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n"
    )
    start = time.monotonic()
    read = asyncio.create_task(closed_after(reader, 90))
    for _ in range(30):
        if read.done():
            break
        try:
            writer.write(b" ")
            await writer.drain()
        except (ConnectionResetError, BrokenPipeError):
            break
        await asyncio.wait([read], timeout=3)
    seconds, data = await read
    writer.close()
    status = data.split(b" ", 2)[1].decode() if data else "none"
    return seconds, status


async def normal_request(port):
    start = time.monotonic()
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(b"GET /users/v1/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    await writer.drain()
    data = await reader.read()
    writer.close()
    return time.monotonic() - start, data.split(b" ", 2)[1].decode()


async def probe_slow(port, _pid):
    stop = asyncio.Event()
    silent_task = asyncio.create_task(silent(port))
    body_task = asyncio.create_task(stalled_body(port))
    trickle_task = asyncio.create_task(trickling_body(port))
    loris = [asyncio.create_task(slowloris(port, stop)) for _ in range(300)]
    await asyncio.sleep(1)
    answered = await normal_request(port)
    print(f"normal request with 300 slowloris connections open: {answered[1]} in {answered[0]*1000:.1f} ms")
    done, _ = await asyncio.wait(loris, timeout=60)
    stop.set()
    closed = [t.result() for t in done if t.result() is not None]
    if closed:
        print(f"slowloris: {len(closed)}/300 closed by the server, after {min(closed):.1f}-{max(closed):.1f} s")
    else:
        print("slowloris: 0/300 closed by the server within 60 s")
    seconds = await silent_task
    print(f"silent connection: {'closed after %.1f s' % seconds if seconds else 'still open after 90 s'}")
    seconds, status = await body_task
    print(f"stalled body: {'answered %s and closed after %.1f s' % (status, seconds) if seconds else 'still open after 90 s'}")
    seconds, status = await trickle_task
    print(f"trickling body (1 byte / 3 s): {'answered %s and closed after %.1f s' % (status, seconds) if seconds else 'still open after 90 s'}")


async def open_or_none(port):
    try:
        return await asyncio.wait_for(asyncio.open_connection(HOST, port), 5)
    except (OSError, asyncio.TimeoutError):
        return None


async def probe_fds(port, _pid, count=1100):
    start = time.monotonic()
    conns = [c for c in await asyncio.gather(*(open_or_none(port) for _ in range(count))) if c]
    print(f"silent connections opened: {len(conns)} of {count} in {time.monotonic() - start:.1f} s")
    try:
        seconds, status = await asyncio.wait_for(normal_request(port), 60)
        print(f"normal request: {status} after {seconds:.1f} s")
    except asyncio.TimeoutError:
        print("normal request: no answer within 60 s")
    for _, writer in conns:
        writer.close()


async def token_client(port, deadline, counts):
    reader, writer = await asyncio.open_connection(HOST, port)
    request = b"GET /users/v1/login HTTP/1.1\r\nHost: x\r\n\r\n"
    while time.monotonic() < deadline:
        writer.write(request)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1].decode()
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        counts[status] = counts.get(status, 0) + 1
    writer.close()


async def probe_flood(port, pid, seconds=30):
    before = rss_mib(pid)
    counts = {}
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(token_client(port, deadline, counts) for _ in range(32)))
    after = rss_mib(pid)
    total = sum(counts.values())
    print(f"token flood, {seconds} s from one IP, 32 connections: {total} answers {dict(sorted(counts.items()))}")
    if before is not None:
        print(f"server RSS: {before:.1f} MiB before, {after:.1f} MiB after")


async def exchange(reader, writer, method, path, body=None, cookie=None):
    payload = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n"
    if cookie:
        head += f"Cookie: {cookie}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    writer.write(head.encode() + b"\r\n" + payload)
    await writer.drain()
    response = await reader.readuntil(b"\r\n\r\n")
    status = response.split(b" ", 2)[1].decode()
    length, set_cookie = 0, None
    for line in response.split(b"\r\n"):
        lower = line.lower()
        if lower.startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        if lower.startswith(b"set-cookie:"):
            set_cookie = line.split(b":", 1)[1].split(b";")[0].strip().decode()
    data = await reader.readexactly(length)
    return status, data, set_cookie


async def probe_guess(port, _pid, attempts=2000):
    reader, writer = await asyncio.open_connection(HOST, port)
    account = f"guess{int(time.time())}"
    digest = hashlib.sha256(b"right").hexdigest()
    status, _, _ = await exchange(reader, writer, "POST", "/users/v1/me", {"account": account, "password": digest})
    assert status == "201", status
    _, data, cookie = await exchange(reader, writer, "GET", "/users/v1/login")
    token = json.loads(data)["token"]
    counts = {}
    start = time.monotonic()
    for i in range(attempts):
        wrong = hashlib.sha256(f"wrong{i}{token}".encode()).hexdigest()
        status, _, new_cookie = await exchange(
            reader, writer, "POST", "/users/v1/login", {"account": account, "password": wrong}, cookie
        )
        cookie = new_cookie or cookie
        counts[status] = counts.get(status, 0) + 1
    elapsed = time.monotonic() - start
    proof = hashlib.sha256((digest + token).encode()).hexdigest()
    status, _, _ = await exchange(reader, writer, "POST", "/users/v1/login", {"account": account, "password": proof}, cookie)
    writer.close()
    print(f"{attempts} wrong proofs against one token in {elapsed:.2f} s: {dict(sorted(counts.items()))}")
    print(f"then the right proof with the same token: {status}")


async def probe_shutdown(port, pid):
    conns = []
    for _ in range(50):
        reader, writer = await asyncio.open_connection(HOST, port)
        writer.write(b"GET /users/v1/me HTTP/1.1\r\nHost: x\r\n")
        await writer.drain()
        conns.append((reader, writer))
    await asyncio.sleep(0.5)
    start = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        if time.monotonic() - start > 60:
            break
        # Reap a child of ours (the service started by this shell is not); poll /proc instead.
        if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break
        await asyncio.sleep(0.01)
    print(f"SIGTERM with 50 half-sent heads: the process exited after {time.monotonic() - start:.2f} s")
    for _, writer in conns:
        writer.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("probe", choices=["slow", "flood", "guess", "shutdown", "fds"])
    parser.add_argument("--port", type=int, default=3000)
    parser.add_argument("--pid", type=int, default=0, help="the service's pid (RSS, SIGTERM)")
    args = parser.parse_args()
    probe = {"slow": probe_slow, "flood": probe_flood, "guess": probe_guess, "shutdown": probe_shutdown, "fds": probe_fds}[args.probe]
    asyncio.run(probe(args.port, args.pid))


if __name__ == "__main__":
    main()
