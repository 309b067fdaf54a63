#!/bin/bash
# bench/tcp_pingpong.sh: raw TCP ping-pong between two emulated sites, no MPI and no
# gateway: the one-way time of 8 B, 64 KiB and 256 KiB messages under a congestion control
# (first argument, default bbr), to compare with what the gateways get. Run inside
# `isthmus link emulate`, which names the namespaces in ISTHMUS_LINK_JOB:
#   isthmus link emulate --sites 2 --link delay=10ms,rate=100mbit -- bench/tcp_pingpong.sh cubic
set -eu
cc=${1:-bbr}
A=ism-$ISTHMUS_LINK_JOB-A
B=ism-$ISTHMUS_LINK_JOB-B
py=$(mktemp --suffix=.py)
trap 'rm -f "$py"' EXIT
cat > "$py" <<'PY'
import socket, statistics, sys, time
mode, host, port, cc = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].encode()
sizes, trips = [8, 65536, 262144], 30
def recvn(s, n):
    b = bytearray()
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise SystemExit("peer closed")
        b += d
    return b
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc)
if mode == "serve":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port)); s.listen(1); s, _ = s.accept()
else:
    s.connect((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for n in sizes:
    t = []
    for _ in range(trips):
        if mode == "serve":
            s.sendall(recvn(s, n))
        else:
            t0 = time.perf_counter(); s.sendall(b"x" * n); recvn(s, n)
            t.append((time.perf_counter() - t0) / 2)
    if t:  # the first 5 trips warm the connection up
        print(f"{cc.decode()} {n} B: one-way median {statistics.median(t[5:]) * 1e3:.2f} ms, "
              f"min {min(t) * 1e3:.2f} ms")
PY
ip netns exec "$A" python3 "$py" serve 10.77.0.1 45001 "$cc" &
sleep 1
ip netns exec "$B" python3 "$py" connect 10.77.0.1 45001 "$cc"
wait
