#!/usr/bin/env python3
"""What a long poll holds, by owner: heaptrack's live ("leaked") bytes of a `courier bench --scenario
longpoll` run killed while every poll waits, grouped by the first frame of each backtrace (from the
allocation up) that names an owner, per request in flight and per connection.

Why a script: heaptrack's own report merges by the allocator's immediate caller, which for Rust is a
`RawVec` or `Box` frame; the owner is a few frames up. The rules below name the owners found for HTTP/3
(docs/src/http3.md, "What an HTTP/3 long poll holds"); anything unnamed is listed with `-v`.

    heaptrack_print -f RUN.zst -l 1 -m 0 -p 0 -a 0 -T 0 -n 1000000 -s 1000000 > RUN.leaks
    bench/heap-by-owner.py RUN.leaks REQUESTS CONNECTIONS [-s: top sites per owner] [-v: unnamed]

bench/heaptrack-longpoll.sh does both.
"""
import collections
import re
import subprocess
import sys

RULES = [
    ('quinn: endpoint receive buffer (one per endpoint)', r'RecvState::new'),
    ('courier: HTTP/3 request future, boxed (Http3::send)', r'transport::http3::Http3::send'),
    ('courier: deadline table (proto/h3/deadline)', r'Deadlines::keep|Deadlines::leave|deadline::Timer'),
    ('bench: slot future + FuturesUnordered node', r'bench::closed::run_held'),
    ('bench: other', r'courier::bench::'),
    ('quinn-proto: stream Recv box', r'recv::Recv::new|get_or_insert_recv'),
    ('quinn-proto: crypto stream', r'read_crypto'),
    ('quinn-proto: Recv assembler heap', r'Recv::ingest'),
    ('quinn-proto: stream map', r'StreamsState::insert'),
    ('quinn-proto: stream queues and sets', r'stream_recv_freed|received_ack_of|on_stream_frame|'
     r'SendStream::write_chunks|Chunks::finalize|PendingStreamsQueue'),
    ('quinn: blocked readers\' wakers', r'RecvStream::poll_read_generic'),
    ('quinn: transmit buffer', r'drive_transmit|Connection::poll_transmit'),
    ('quinn-proto: sent packets', r'PacketSpace::sent|finish_and_track'),
    ('quinn: connection state', r'ConnectionRef::new|Connecting::new'),
    ('quinn: endpoint->connection channel (tokio mpsc blocks)', r'ConnectionSet::insert|tokio::sync::mpsc'),
    ('rustls and the TLS session', r'rustls::|rustls\.\.|start_session'),
    ('tokio: tasks', r'runtime::task::core::Cell'),
    ('courier: HTTP/3 connection (handle, driver, kept heads)', r'proto::h3::|transport::http3|connect::quic'),
    ('quinn-proto: other', r'quinn_proto::'),
    ('quinn: other', r'quinn::'),
    ('courier: other', r'courier::'),
]
RULES = [(name, re.compile(rx)) for name, rx in RULES]
# Frames that name no owner: the allocator, std's collections, core.
GENERIC = re.compile(r'^(<?_?\$?L?T?\$?(alloc|core|std|hashbrown)\b|<?(alloc|core|std|hashbrown)::|__rustc'
                     r'|_\$LT\$courier\.\.alloc|<std::alloc)')
# Frames passed over for the one above: the assembler serves a stream and the crypto stream alike.
PASS = re.compile(r'Assembler::insert')
UNITS = {'': 1, 'K': 1e3, 'M': 1e6, 'G': 1e9}


def backtraces(path):
    """(frames leaf first, bytes) of each record of `heaptrack_print -l 1 -m 0`, names demangled
    (Rust's v0 symbols, which heaptrack leaves as they are, by binutils' `c++filt`)."""
    rows = []
    for line in open(path):
        m = re.match(r'^(\d+(?:\.\d+)?)([KMG]?)B? leaked over \d+ calls from', line)
        if m:
            rows.append([[], float(m.group(1)) * UNITS[m.group(2)]])
        elif rows and line.startswith('  ') and not line.startswith('    '):
            rows[-1][0].append(line.strip())
    names = sorted({f for frames, _ in rows for f in frames})
    out = subprocess.run(['c++filt'], input='\n'.join(names), capture_output=True, text=True).stdout
    plain = {n: re.sub(r'\[[0-9a-f]{16}\]', '', d) for n, d in zip(names, out.split('\n'))}
    return [([plain.get(f, f) for f in frames], size) for frames, size in rows]


def main():
    path, requests, connections = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    owners, sites, unnamed = collections.Counter(), collections.defaultdict(collections.Counter), collections.Counter()
    for frames, size in backtraces(path):
        owner = next((name for f in frames if not PASS.search(f) for name, rx in RULES if rx.search(f)), None)
        if owner is None:
            owners['unnamed'] += size
            unnamed[' <- '.join(frames[:6])[:300]] += size
            continue
        owners[owner] += size
        named = [re.sub(r'::h[0-9a-f]{16}$', '', f) for f in frames if not GENERIC.search(f)][:3]
        sites[owner][' <- '.join(f[:90] for f in named)] += size
    total = sum(owners.values())
    print(f'{"owner":60} {"B/request":>10} {"B/connection":>13}')
    print(f'{"all":60} {total / requests:10.0f} {total / connections:13.0f}')
    for owner, size in owners.most_common():
        print(f'{owner:60} {size / requests:10.1f} {size / connections:13.0f}')
        if '-s' in sys.argv[4:]:
            for site, s in sites[owner].most_common(4):
                print(f'    {s / requests:8.1f}  {site}')
    if '-v' in sys.argv[4:]:
        for frames, size in unnamed.most_common(15):
            print(f'{size:10.0f}  {frames}')


if __name__ == '__main__':
    main()
