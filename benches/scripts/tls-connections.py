"""Server-side cost of TLS connections, measured from outside the server process.

Usage (a release build of the user service over TLS, see the README's HTTPS commands):
    TLS_CERT=cert.pem TLS_KEY=key.pem DATABASE_URL=memory BIND=127.0.0.1:18443 \
        target/release/user-service &
    N=2000 python3 benches/scripts/tls-connections.py 18443 <pid> cert.pem

Prints the server's CPU time (utime + stime from /proc/<pid>/stat) per new TLS connection
(TLS 1.3 handshake, no request), and its resident memory (VmRSS) per idle TLS connection,
from 1000 connections held open after their handshake.
"""
import os, socket, ssl, sys, time
port, pid, cafile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ticks = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / ticks
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
ctx = ssl.create_default_context(cafile=cafile)
ctx.set_alpn_protocols(["http/1.1"])
def handshake():
    s = socket.create_connection(("127.0.0.1", port))
    t = ctx.wrap_socket(s, server_hostname="localhost")
    return t
# warm up
for _ in range(50):
    handshake().close()
n = int(os.environ.get("N", "2000"))
c0, t0 = cpu(), time.time()
for _ in range(n):
    t = handshake()
    t.close()
c1, t1 = cpu(), time.time()
print(f"{n} new TLS connections (TLS 1.3, handshake only): server CPU {(c1-c0)*1000/n:.3f} ms each, wall {(t1-t0)*1000/n:.3f} ms each")
time.sleep(1)
r0 = rss()
held = [handshake() for _ in range(1000)]
time.sleep(1)
r1 = rss()
print(f"1000 idle TLS connections: server resident {r0} KiB -> {r1} KiB, {(r1-r0)*1024//1000} bytes each")
for t in held: t.close()
