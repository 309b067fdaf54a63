/* main.c: isthmus-linkprobe's command line: `serve`, `rtt` and `tput` (see probe.h).
 * Every connection is authenticated with a job id and secret (--job, --secret-file, as
 * the gateways are), so a probe server never acts on a stranger's bytes. Results are one
 * JSON line on stdout; mistakes exit 2 with the option named. `isthmus link probe`
 * drives it. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "sock.h"

static void usage(void)
{
    fprintf(stderr,
            "usage: isthmus-linkprobe serve --listen HOST:PORT --job HEX --secret-file FILE\n"
            "       isthmus-linkprobe rtt  --connect HOST:PORT --job HEX --secret-file FILE\n"
            "                              [--size BYTES] [--count N] [--warmup N] [--interval-us US]\n"
            "       isthmus-linkprobe tput --connect HOST:PORT --job HEX --secret-file FILE\n"
            "                              [--streams N] [--window BYTES] [--cc NAME]\n"
            "                              [--duration S] [--omit S]\n");
    exit(2);
}

static void bad(const char *opt, const char *val, const char *want)
{
    fprintf(stderr, "isthmus-linkprobe: %s %s: %s\n", opt, val, want);
    exit(2);
}

static unsigned long long bytes_arg(const char *opt, const char *v, unsigned long long max)
{
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v)
        bad(opt, v, "expected a number of bytes (suffixes k, m, g: powers of 1024)");
    if (*end == 'k' || *end == 'K')
        x <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        x <<= 20, end++;
    else if (*end == 'g' || *end == 'G')
        x <<= 30, end++;
    if (*end || x > max)
        bad(opt, v, "expected a number of bytes within range (suffixes k, m, g)");
    return x;
}

static double seconds_arg(const char *opt, const char *v, double max)
{
    char *end;
    double x = strtod(v, &end);
    if (*end || !(x >= 0 && x <= max))
        bad(opt, v, "expected seconds");
    return x;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *cmd = argv[1];
    if (strcmp(cmd, "serve") && strcmp(cmd, "rtt") && strcmp(cmd, "tput"))
        usage();
    lp_opts o;
    memset(&o, 0, sizeof o);
    o.size = 8;
    o.count = 1000;
    o.warmup = 10;
    o.streams = 1;
    o.duration = 5;
    const char *job = NULL, *secret = NULL, *addr = NULL;
    static const struct option opts[] = {
        {"listen", required_argument, 0, 'l'},  {"connect", required_argument, 0, 'c'},
        {"job", required_argument, 0, 'j'},     {"secret-file", required_argument, 0, 'f'},
        {"size", required_argument, 0, 's'},    {"count", required_argument, 0, 'n'},
        {"warmup", required_argument, 0, 'w'},  {"interval-us", required_argument, 0, 'i'},
        {"streams", required_argument, 0, 'P'}, {"window", required_argument, 0, 'W'},
        {"cc", required_argument, 0, 'C'},      {"duration", required_argument, 0, 't'},
        {"omit", required_argument, 0, 'O'},    {0, 0, 0, 0}};
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
        case 'c':
            addr = optarg;
            break;
        case 'j':
            job = optarg;
            break;
        case 'f':
            secret = optarg;
            break;
        case 's':
            o.size = (uint32_t)bytes_arg("--size", optarg, LP_MAX_SIZE);
            if (!o.size)
                bad("--size", optarg, "must be at least 1");
            break;
        case 'n':
            o.count = atoi(optarg);
            if (o.count < 1 || o.count > 10000000)
                bad("--count", optarg, "expected 1..10000000");
            break;
        case 'w':
            o.warmup = atoi(optarg);
            if (o.warmup < 0 || o.warmup > 1000000)
                bad("--warmup", optarg, "expected 0..1000000");
            break;
        case 'i':
            o.interval_us = atoi(optarg);
            if (o.interval_us < 0)
                bad("--interval-us", optarg, "expected >= 0");
            break;
        case 'P':
            o.streams = atoi(optarg);
            if (o.streams < 1 || o.streams > LP_MAX_STREAMS)
                bad("--streams", optarg, "expected 1..64");
            break;
        case 'W':
            o.window = (uint32_t)bytes_arg("--window", optarg, LP_MAX_WINDOW);
            break;
        case 'C':
            if (strlen(optarg) >= sizeof o.cc || !*optarg)
                bad("--cc", optarg, "not a congestion control name");
            strcpy(o.cc, optarg);
            break;
        case 't':
            o.duration = seconds_arg("--duration", optarg, 3600);
            if (o.duration <= 0)
                bad("--duration", optarg, "must be positive");
            break;
        case 'O':
            o.omit = seconds_arg("--omit", optarg, 3600);
            break;
        default:
            usage();
        }
    }
    if (optind != argc)
        usage();
    if (!addr)
        fprintf(stderr, "isthmus-linkprobe %s: give %s HOST:PORT\n", cmd,
                strcmp(cmd, "serve") ? "--connect" : "--listen"),
            exit(2);
    if (!job || !secret)
        fprintf(stderr, "isthmus-linkprobe: give --job HEX and --secret-file FILE (the probe "
                        "authenticates like the gateways)\n"),
            exit(2);
    char err[512];
    if (ism_sock_parse_hostport(addr, o.host, sizeof o.host, &o.port, err, sizeof err) &&
        !(strcmp(cmd, "serve") == 0 && sscanf(addr, "%255[^:]:0", o.host) == 1 && !(o.port = 0)))
        fprintf(stderr, "isthmus-linkprobe: %s: %s\n", addr, err), exit(2);
    if (ism_auth_key_load_file(&o.key, job, secret, err, sizeof err))
        fprintf(stderr, "isthmus-linkprobe: %s\n", err), exit(2);
    if (o.omit >= o.duration && !strcmp(cmd, "tput"))
        bad("--omit", "", "must be shorter than --duration");
    if (!strcmp(cmd, "serve"))
        return lp_serve(o.host, o.port, &o.key);
    return !strcmp(cmd, "rtt") ? lp_rtt(&o) : lp_tput(&o);
}
