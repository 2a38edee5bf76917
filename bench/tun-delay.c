/* A delay line between two TUN devices, for bench/netem-link.sh (this kernel has no netem qdisc).
 *
 * Unlike bench/delay-proxy, which terminates TCP, this forwards the endpoints' own IP packets: the client's
 * and the server's kernels run one TCP connection end to end, with its slow start, its congestion control
 * and its socket buffers, over a path of RTT = 2 x ONE_WAY_MS. Each packet is held ONE_WAY_MS, in order (a
 * fixed delay keeps FIFO order), and dropped with probability LOSS_PERCENT / 100 in each direction, as
 * `tc qdisc add dev X root netem delay ONE_WAY_MS loss LOSS_PERCENT%` on both ends would. No rate limit:
 * the link moves what this loop moves (C, not Python: a Python loop was the link's limit at 80 to 190 MB/s).
 *
 * usage: tun-delay TUN_A TUN_B ONE_WAY_MS LOSS_PERCENT [SEED]
 * Creates both devices (IFF_TUN | IFF_NO_PI) in the caller's network namespace, prints "ready" and runs
 * until killed; the caller moves and configures them (ip link set ... netns, addresses, MTU, up).
 * Built by bench/netem-link.sh with `cc -O2`. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define SLOTS (1u << 18) /* packets held per direction, at most: 2.3 GB of 9000-byte packets */

struct pkt {
    uint64_t due_ns;
    uint32_t len;
    unsigned char *data;
};

struct line {
    int out_fd;
    struct pkt *ring;
    uint32_t head, tail; /* head: next to send; tail: next free */
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int open_tun(const char *name) {
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
    if (fd < 0) { perror("/dev/net/tun"); exit(1); }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) { perror("TUNSETIFF"); exit(1); }
    return fd;
}

/* xorshift64: a seeded, repeatable loss pattern */
static uint64_t rng_state;
static double rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / (double)(1ull << 53);
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: tun-delay TUN_A TUN_B ONE_WAY_MS LOSS_PERCENT [SEED]\n"); return 2; }
    int fd[2] = {open_tun(argv[1]), open_tun(argv[2])};
    uint64_t delay = (uint64_t)(atof(argv[3]) * 1e6);
    double loss = atof(argv[4]) / 100.0;
    rng_state = argc > 5 ? strtoull(argv[5], 0, 10) | 1 : 88172645463325252ull;
    /* line[i] carries what fd[i] reads to fd[1 - i] */
    struct line line[2];
    for (int i = 0; i < 2; i++) {
        line[i].out_fd = fd[1 - i];
        line[i].ring = calloc(SLOTS, sizeof(struct pkt));
        line[i].head = line[i].tail = 0;
    }
    int ep = epoll_create1(0);
    for (int i = 0; i < 2; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &ev);
    }
    printf("ready\n");
    fflush(stdout);
    unsigned char buf[65536];
    for (;;) {
        uint64_t t = now_ns();
        int64_t wait = -1; /* ns until the next packet is due; -1: none held */
        for (int i = 0; i < 2; i++) {
            struct line *l = &line[i];
            if (l->head != l->tail) {
                uint64_t due = l->ring[l->head % SLOTS].due_ns;
                int64_t w = due > t ? (int64_t)(due - t) : 0;
                if (wait < 0 || w < wait) wait = w;
            }
        }
        /* epoll_pwait2: a timeout in nanoseconds (epoll_wait's milliseconds would send in 1 ms bursts) */
        struct timespec ts = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
        struct epoll_event evs[2];
        int n = epoll_pwait2(ep, evs, 2, wait < 0 ? NULL : &ts, NULL);
        for (int e = 0; e < n; e++) {
            int i = (int)evs[e].data.u32;
            struct line *l = &line[i];
            for (int k = 0; k < 256; k++) { /* bounded: the other direction gets its turn */
                ssize_t r = read(fd[i], buf, sizeof buf);
                if (r <= 0) break;
                if (loss > 0 && rnd() < loss) continue;
                if (l->tail - l->head >= SLOTS) continue; /* full: a drop, as a link's queue */
                struct pkt *p = &l->ring[l->tail % SLOTS];
                p->data = malloc((size_t)r);
                memcpy(p->data, buf, (size_t)r);
                p->len = (uint32_t)r;
                p->due_ns = now_ns() + delay;
                l->tail++;
            }
        }
        t = now_ns();
        for (int i = 0; i < 2; i++) {
            struct line *l = &line[i];
            while (l->head != l->tail && l->ring[l->head % SLOTS].due_ns <= t) {
                struct pkt *p = &l->ring[l->head % SLOTS];
                if (write(l->out_fd, p->data, p->len) < 0 && errno != EAGAIN) { /* a drop */ }
                free(p->data);
                l->head++;
            }
        }
    }
}
