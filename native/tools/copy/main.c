/* main.c: isthmus-copy's command line (copy.h). `isthmus copy` drives it.
 *
 *   isthmus-copy serve DIR --listen HOST:PORT --job HEX --secret-file FILE [--timeout S]
 *   isthmus-copy put LOCAL HOST:PORT REMOTE --job HEX --secret-file FILE [options]
 *   isthmus-copy put LOCAL... HOST:PORT REMOTE [--files-from LIST] [many-file options]
 *     (several sources, a directory, or a list: batch.c puts them all under REMOTE)
 *   isthmus-copy get HOST:PORT REMOTE LOCAL --job HEX --secret-file FILE [options]
 *     (REMOTE a directory, or a glob, or with many-file options: batch.c fetches every
 *     file under it into the directory LOCAL)
 * options: --transport udp|tcp (default udp), --cc NAME, --window BYTES, --rate BITS/S
 *          (put over udp with bbr: the link's known rate; the sends start there instead
 *          of ramping up, shared among --parallel connections), --timeout S
 *          (idle limit of every wait, default 30), --quiet (no progress lines), --resume
 *          (keep what a failed copy moved, and continue from it when run again).
 * many files: --parallel N (connections, default 4), --files-from LIST (put: paths, one
 *          a line, kept as given under REMOTE), --manifest FILE (JSON), --progress-json.
 * Exit status: 0 copied and verified, 1 the copy failed (the message names the peer),
 * 2 a mistake on the command line.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "copy.h"
#include "sock.h"

static void usage(void)
{
    fprintf(stderr,
            "usage: isthmus-copy serve DIR --listen HOST:PORT --job HEX --secret-file FILE\n"
            "       isthmus-copy put LOCAL HOST:PORT REMOTE --job HEX --secret-file FILE [opts]\n"
            "       isthmus-copy put LOCAL... HOST:PORT REMOTE [--files-from LIST] ... [opts]\n"
            "       isthmus-copy get HOST:PORT REMOTE LOCAL --job HEX --secret-file FILE [opts]\n"
            "       (REMOTE a directory or a glob: every file under it, into the directory LOCAL)\n"
"opts:  --transport udp|tcp --cc NAME --window BYTES --rate BITS/S --timeout S --quiet\n"
            "       --resume\n"
            "       --crypto aead|none (default aead: encrypted and authenticated)\n"
            "many:  --parallel N (default 4) --files-from LIST --manifest FILE --progress-json\n");
    exit(2);
}

static void bad(const char *opt, const char *val, const char *want)
{
    fprintf(stderr, "isthmus-copy: %s %s: %s\n", opt, val, want);
    exit(2);
}

static size_t bytes_arg(const char *opt, const char *v)
{
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    int sh = 0;
    if (end == v || *v == '-')
        bad(opt, v, "expected a number of bytes (suffixes k, m, g: powers of 1024)");
    if (*end == 'k' || *end == 'K')
        sh = 10, end++;
    else if (*end == 'm' || *end == 'M')
        sh = 20, end++;
    else if (*end == 'g' || *end == 'G')
        sh = 30, end++;
    if (*end || x > (1ull << 30) >> sh)
        bad(opt, v, "expected a number of bytes up to 1g (suffixes k, m, g)");
    return (size_t)(x << sh);
}

/* Bits per second with an optional k, m or g (powers of 1000) and "bit": 100m, 100mbit. */
static uint64_t rate_arg(const char *opt, const char *v)
{
    char *end;
    double x = strtod(v, &end);
    double mul = 1;
    if (end != v && (*end == 'k' || *end == 'K'))
        mul = 1e3, end++;
    else if (end != v && (*end == 'm' || *end == 'M'))
        mul = 1e6, end++;
    else if (end != v && (*end == 'g' || *end == 'G'))
        mul = 1e9, end++;
    if (!strcmp(end, "bit"))
        end += 3;
    x *= mul;
    if (end == v || *end || !(x >= 8000 && x <= 4e12))
        bad(opt, v, "expected the link's rate in bits/s, 8kbit..4000gbit (e.g. 100mbit, 10g)");
    return (uint64_t)(x / 8);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *cmd = argv[1];
    int serve = !strcmp(cmd, "serve"), put = !strcmp(cmd, "put"), get = !strcmp(cmd, "get");
    if (!serve && !put && !get)
        usage();
    icp_opts o;
    memset(&o, 0, sizeof o);
    o.udp = 1;
    o.tmo_ms = 30000;
    o.suites = ISM_AUTH_SUITES_AEAD;
    const char *job = NULL, *secret = NULL, *listen = NULL;
    enum { O_LISTEN = 1, O_JOB, O_SECRET, O_TRANSPORT, O_CC, O_WINDOW, O_TIMEOUT, O_QUIET,
           O_RESUME, O_CRYPTO, O_PARALLEL, O_FILES_FROM, O_MANIFEST, O_PROGRESS_JSON, O_RATE };
    int many = 0;
    static const struct option lo[] = {
        {"listen", 1, 0, O_LISTEN},       {"job", 1, 0, O_JOB},   {"secret-file", 1, 0, O_SECRET},
        {"transport", 1, 0, O_TRANSPORT}, {"cc", 1, 0, O_CC},     {"window", 1, 0, O_WINDOW},
        {"timeout", 1, 0, O_TIMEOUT},     {"quiet", 0, 0, O_QUIET}, {"resume", 0, 0, O_RESUME},
        {"crypto", 1, 0, O_CRYPTO},       {"parallel", 1, 0, O_PARALLEL},
        {"files-from", 1, 0, O_FILES_FROM}, {"manifest", 1, 0, O_MANIFEST},
        {"progress-json", 0, 0, O_PROGRESS_JSON}, {"rate", 1, 0, O_RATE}, {0, 0, 0, 0}};
    o.parallel = 4;
    optind = 2;
    int ch;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (ch) {
        case O_LISTEN:
            if (!serve)
                bad("--listen", optarg, "only serve listens");
            listen = optarg;
            break;
        case O_JOB: job = optarg; break;
        case O_SECRET: secret = optarg; break;
        case O_TRANSPORT:
            if (strcmp(optarg, "udp") && strcmp(optarg, "tcp"))
                bad("--transport", optarg, "expected udp or tcp");
            o.udp = !strcmp(optarg, "udp");
            break;
        case O_CC:
            if (!*optarg || strlen(optarg) > 15)
                bad("--cc", optarg, "not a congestion control name");
            o.cc = optarg;
            break;
        case O_WINDOW: o.window = bytes_arg("--window", optarg); break;
        case O_RATE: o.start_rate = rate_arg("--rate", optarg); break;
        case O_TIMEOUT: {
            char *end;
            double s = strtod(optarg, &end);
            if (end == optarg || *end || !(s >= 0.1 && s <= 86400))
                bad("--timeout", optarg, "expected seconds, 0.1 to 86400");
            o.tmo_ms = (int)(s * 1000);
            break;
        }
        case O_QUIET: o.quiet = 1; break;
        case O_CRYPTO:
            if (strcmp(optarg, "aead") && strcmp(optarg, "none"))
                bad("--crypto", optarg, "expected aead (the default) or none");
            o.suites = strcmp(optarg, "none") ? ISM_AUTH_SUITES_AEAD : ISM_AUTH_SUITES_NONE;
            if (o.suites == ISM_AUTH_SUITES_NONE)
                fprintf(stderr, "isthmus-copy: warning: --crypto none: the file's bytes cross "
                                "the network in the clear and unauthenticated after the handshake\n");
            break;
        case O_PARALLEL: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 16)
                bad("--parallel", optarg, "expected 1 to 16 connections (the server runs 16 "
                                          "copies at most)");
            o.parallel = (int)v;
            many = 1;
            break;
        }
        case O_FILES_FROM: o.files_from = optarg; many = 1; break;
        case O_MANIFEST: o.manifest = optarg; many = 1; break;
        case O_PROGRESS_JSON: o.progress_json = 1; many = 1; break;
        case O_RESUME:
            if (serve)
                bad("--resume", "", "is a client option (the server keeps a partial copy when asked)");
            o.resume = 1;
            break;
        default: usage();
        }
    }
    int npos = argc - optind;
    char **pos = argv + optind;
    if (many && serve)
        bad(cmd, "", "--parallel, --files-from, --manifest and --progress-json go with put and get");
    if (get && o.files_from)
        bad("--files-from", o.files_from, "goes with put (a get takes a directory or a glob)");
    if (put && (npos > 3 || (npos == 3 && is_dir(pos[0])) || (npos == 2 && o.files_from)))
        many = 1;
    if (get && npos == 3 && (pos[1][0] == 0 || pos[1][strlen(pos[1]) - 1] == '/' ||
                             strpbrk(pos[1], "*?[")))
        many = 1;
    if (get) {
        if (npos != 3)
            usage();
        many = many ? 2 : 0; /* a get's LOCAL is not moved like a put's sources */
    }
    if (many == 1) {
        if (npos < 2 || (npos == 2 && !o.files_from))
            usage();
        pos += npos - 3; /* the host and the remote path are the last two */
        npos = 3;
    }
    if (npos != (serve ? 1 : 3))
        usage();
    if (o.udp && o.cc && strcmp(o.cc, "bbr") && strcmp(o.cc, "reno"))
        bad("--cc", o.cc, "the UDP transport has bbr and reno");
    if (o.start_rate && (!o.udp || (o.cc && strcmp(o.cc, "bbr")))) {
        fprintf(stderr, "isthmus-copy: --rate needs the UDP transport with bbr (TCP and reno "
                        "ramp up from their initial window)\n");
        return 2;
    }
    if (o.start_rate && !put) {
        fprintf(stderr, "isthmus-copy: --rate goes with put: it sets the starting rate of this "
                        "end's sends (in a get and in serve the server sends, and ramps up as "
                        "usual)\n");
        return 2;
    }
    if (o.start_rate && many == 1)
        o.start_rate /= (uint64_t)o.parallel; /* every connection starts at its share */
    if (!job || !secret) {
        fprintf(stderr, "isthmus-copy: give --job HEX and --secret-file FILE (every connection "
                        "is authenticated with the job secret)\n");
        return 2;
    }
    char err[512], host[256];
    int port = 0;
    const char *hp = serve ? listen : put ? pos[1] : pos[0];
    if (!hp)
        bad("serve", pos[0], "give --listen HOST:PORT");
    if (ism_sock_parse_hostport(hp, host, sizeof host, &port, err, sizeof err) != 0 &&
        !(serve && sscanf(hp, "%255[^:]:0", host) == 1 && strcmp(hp + strlen(host), ":0") == 0))
        bad(serve ? "--listen" : "HOST:PORT", hp, err);
    if (ism_auth_key_load_file(&o.key, job, secret, err, sizeof err) != 0) {
        fprintf(stderr, "isthmus-copy: %s\n", err);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    o.umask = umask(0); /* read once, before any thread: umask(2) only reads by writing */
    umask(o.umask);
    int rc = serve ? icp_serve(pos[0], host, port, &o)
             : many == 1 ? icp_put_many(argv + optind, (int)(pos - (argv + optind)) + 1, hp, pos[2], &o)
             : many == 2 ? icp_get_many(hp, pos[1], pos[2], &o)
             : put ? icp_put(pos[0], hp, pos[2], &o)
                   : icp_get(hp, pos[1], pos[2], &o);
    if (rc == ICP_GET_ISDIR) /* a directory: all of it */
        rc = icp_get_many(hp, pos[1], pos[2], &o);
    ism_auth_key_clear(&o.key);
    return rc;
}
