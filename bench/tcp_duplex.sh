#!/bin/bash
# bench/tcp_duplex.sh: raw TCP in both directions at once between two emulated sites, no
# MPI and no gateway: the duplex rate the link emulator itself gives, to compare with
# isthmus-bench bibw through the gateways. Run inside `isthmus link emulate`, which names
# the namespaces in ISTHMUS_LINK_JOB:
#   isthmus link emulate --sites 2 --link delay=10ms,rate=100mbit -- bench/tcp_duplex.sh [MiB]
set -eu
n=$(( ${1:-32} * 1048576 ))
A=ism-$ISTHMUS_LINK_JOB-A
B=ism-$ISTHMUS_LINK_JOB-B
py=$(mktemp --suffix=.py)
trap 'rm -f "$py"' EXIT
cat > "$py" <<'PY'
import socket, sys, time, threading
mode, host, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def pump(s):
    buf = b"x" * (1 << 20); left = n
    while left > 0:
        left -= s.send(buf[:min(len(buf), left)])
def drain(s):
    got = 0
    while got < n:
        d = s.recv(1 << 20)
        if not d:
            break
        got += len(d)
if mode == "serve":
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port)); ls.listen(1); s, _ = ls.accept()
else:
    s = socket.create_connection((host, port))
t0 = time.time()
th = threading.Thread(target=drain, args=(s,)); th.start(); pump(s); th.join()
print(f"{mode}: {n / (time.time() - t0) / 1e6:.2f} MB/s each way")
PY
ip netns exec "$A" python3 "$py" serve 10.77.0.1 45000 "$n" &
sleep 1
ip netns exec "$B" python3 "$py" connect 10.77.0.1 45000 "$n"
wait
