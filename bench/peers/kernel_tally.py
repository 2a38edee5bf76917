#!/usr/bin/env python3
"""One row of kernel.sh's table, for one client.

argv: client, requests of the counted run, "user_s sys_s voluntary_switches" (/usr/bin/time),
perf stat's CSV of the counted run, requests of the recorded run; stdin: the recorded run's
`perf script -F comm,event,trace`. Every thread of the client counts (their names vary:
tokio's workers, h2load's), /usr/bin/time's and taskset's events do not.
"""
import re
import sys

client, n = sys.argv[1], int(sys.argv[2])
user, system, sleeps = (float(x) for x in sys.argv[3].split())
counts = {}
for line in open(sys.argv[4]):
    parts = line.strip().split(",")
    if len(parts) > 3 and parts[0].replace(".", "").isdigit():
        counts[parts[2].split(":")[-1]] = float(parts[0])
n_rec = int(sys.argv[5])


def count(*names):
    return sum(counts.get(f"sys_enter_{name}", 0.0) for name in names) / n


READS = {"read", "recvfrom"}
WRITES = {"write", "writev", "sendto", "sendmsg"}
reads = writes = pkts = acks = read_bytes = write_bytes = 0
exit_re = re.compile(r"sys_exit_(\w+): (0x[0-9a-f]+|-?\d+)")
for line in sys.stdin:
    fields = line.split(None, 1)
    if len(fields) < 2 or fields[0] in ("time", "taskset"):
        continue
    rest = fields[1]
    if "net:net_dev_xmit" in rest:
        pkts += 1
        # IPv4 and TCP with timestamps, no payload
        if " len=66 " in rest:
            acks += 1
        continue
    m = exit_re.search(rest)
    if not m:
        continue
    # perf prints the return value in hex, an error (EAGAIN) as a 64-bit two's complement
    ret = int(m.group(2), 16) if m.group(2).startswith("0x") else int(m.group(2))
    if ret >= 1 << 63:
        continue
    if m.group(1) in READS:
        reads += 1
        read_bytes += ret
    elif m.group(1) in WRITES:
        writes += 1
        write_bytes += ret
print(
    f"{client:<10} {n:>8} {user / n * 1e6:6.2f} {system / n * 1e6:6.2f} {(user + system) / n * 1e6:6.2f} | "
    f"{counts.get('sys_enter', 0.0) / n:5.2f} {count(*READS):5.2f} {count(*WRITES):5.2f} "
    f"{count('epoll_wait'):5.2f} {sleeps / n:6.3f} | "
    f"{read_bytes / max(reads, 1):6.0f} {write_bytes / max(writes, 1):6.0f} "
    f"{pkts / n_rec:5.2f} {acks / n_rec:5.2f}"
)
