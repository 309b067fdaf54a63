/* paths.c: the addresses at which a site's gateways can be reached, and which of them
 * each link dials.
 *
 * A site may be reachable over several paths (a research network and the public
 * internet, say): ISTHMUS_GATEWAY_ADDRS gives each site's list as "host:port|host:port",
 * the first the primary. A link that the dialing side cannot (re)build over its path
 * after GW_PATH_TRIES attempts in a row moves to the next one, within the link's outage
 * budget, and the session layer resends what was not acknowledged as after any
 * reconnection. On a backup path it checks the primary every ISTHMUS_PATH_RETURN_S
 * seconds with a bare TCP connect (nothing is sent: the peer's listener sees a
 * connection that closes at once, and does not log it); when that succeeds, the link is
 * taken down and rebuilt over the primary (0 keeps it where it is). The log says every
 * move, and --stats the bytes each path carried.
 *
 * A site that may only dial out (ISTHMUS_SITE_DIALOUT: behind NAT, or whose firewall
 * grants no inbound port) dials every link it has, whatever the usual order (the smaller
 * site and gateway dials); two such sites cannot be joined, which `isthmus run` refuses.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/knobs.h"
#include "../wan/sock.h"
#include "gateway.h"

#define GW_PATH_TRIES 2

static void bad(const char *what, const char *value, const char *why)
{
    fprintf(stderr, "isthmus-gateway: %s=%s: %s\n", what, value, why);
    exit(2);
}

void gw_paths_parse(const char *addrs, const char *dialout)
{
    gw.site_paths = calloc((size_t)gw.lay.nsites, sizeof *gw.site_paths);
    gw.site_npaths = calloc((size_t)gw.lay.nsites, sizeof *gw.site_npaths);
    gw.site_dialout = calloc((size_t)gw.lay.nsites, sizeof *gw.site_dialout);
    char *copy = strdup(addrs), *save = NULL;
    int s = 0;
    for (char *site = strtok_r(copy, ",", &save); site; site = strtok_r(NULL, ",", &save), s++) {
        if (s >= gw.lay.nsites)
            bad("ISTHMUS_GATEWAY_ADDRS", addrs, "lists more sites than ISTHMUS_SITE_NAMES");
        char *save2 = NULL;
        for (char *hp = strtok_r(site, "|", &save2); hp; hp = strtok_r(NULL, "|", &save2)) {
            if (gw.site_npaths[s] == GW_MAX_PATHS)
                bad("ISTHMUS_GATEWAY_ADDRS", addrs, "more than 4 paths for one site");
            gw_path *p = &gw.site_paths[s][gw.site_npaths[s]];
            char host[256], err[256];
            if (ism_sock_parse_hostport(hp, host, sizeof host, &p->port, err, sizeof err))
                bad("ISTHMUS_GATEWAY_ADDRS", addrs, err);
            p->host = strdup(host);
            gw.site_npaths[s]++;
        }
        if (gw.site_npaths[s] == 0)
            bad("ISTHMUS_GATEWAY_ADDRS", addrs, "a site without an address");
    }
    if (s != gw.lay.nsites)
        bad("ISTHMUS_GATEWAY_ADDRS", addrs, "does not list every site");
    free(copy);
    if (dialout && *dialout) {
        copy = strdup(dialout);
        s = 0;
        for (char *v = strtok_r(copy, ",", &save); v; v = strtok_r(NULL, ",", &save), s++) {
            if (s >= gw.lay.nsites || (strcmp(v, "0") && strcmp(v, "1")))
                bad("ISTHMUS_SITE_DIALOUT", dialout, "expected 0 or 1 for each site");
            gw.site_dialout[s] = v[0] == '1';
        }
        free(copy);
        if (s != gw.lay.nsites)
            bad("ISTHMUS_SITE_DIALOUT", dialout, "expected 0 or 1 for each site");
    }
    gw.path_return_ms = (int64_t)(ism_knob_or_exit(ISM_K_PATH_RETURN_S, 30, 2) * 1000);
}

int gw_paths_dials(int s1, int g1, int s2, int g2)
{
    if (gw.site_dialout[s1] != gw.site_dialout[s2])
        return gw.site_dialout[s1];
    return s1 < s2 || (s1 == s2 && g1 < g2);
}

const gw_path *gw_path_of(const gw_link *l) { return &gw.site_paths[l->site][l->path]; }

static void account(gw_link *l)
{
    l->path_tx[l->path] += l->tx_bytes - l->path_tx_mark;
    l->path_rx[l->path] += l->rx_bytes - l->path_rx_mark;
    l->path_tx_mark = l->tx_bytes;
    l->path_rx_mark = l->rx_bytes;
}

static void move_to(gw_link *l, int path, int64_t now, const char *why)
{
    account(l);
    const gw_path *from = gw_path_of(l), *to = &gw.site_paths[l->site][path];
    gw_log("link to site %s gateway %d: %s; from path %d (%s:%d) to path %d (%s:%d)",
           gw.lay.site_names[l->site], l->gw, why, l->path + 1, from->host, from->port + l->gw,
           path + 1, to->host, to->port + l->gw);
    l->path = path;
    l->path_fails = 0;
    l->path_since_ms = now;
    l->path_moves++;
}

void gw_path_failed(gw_link *l, int64_t now)
{
    int n = gw.site_npaths[l->site];
    if (n < 2 || ++l->path_fails < GW_PATH_TRIES)
        return;
    move_to(l, (l->path + 1) % n, now, "cannot reach it over this path");
}

void gw_path_up(gw_link *l, int64_t now)
{
    l->path_fails = 0;
    if (l->path_since_ms == 0)
        l->path_since_ms = now;
    l->path_tx_mark = l->tx_bytes;
    l->path_rx_mark = l->rx_bytes;
    l->probe_next_ms = now + gw.path_return_ms;
}

void gw_paths_tick(gw_link *l, int64_t now)
{
    if (!l->connector || l->path == 0 || gw.path_return_ms <= 0 || l->state != GW_LINK_UP ||
        l->probing || now < l->probe_next_ms)
        return;
    struct sockaddr_in sa;
    char err[256];
    const gw_path *p = &gw.site_paths[l->site][0];
    l->probe_next_ms = now + gw.path_return_ms;
    if (ism_sock_resolve4(p->host, p->port + l->gw, &sa, err, sizeof err) == 0) {
        l->probing = 1;
        gw_setup_probe(l, &sa, now);
    }
}

void gw_path_probed(gw_link *l, int reachable)
{
    l->probing = 0;
    if (!reachable || l->path == 0 || l->state == GW_LINK_DOWN)
        return;
    int64_t now = ism_now_ms();
    move_to(l, 0, now, "the primary path answers again");
    gw_link_down(l, "moving back to the primary path");
    l->next_dial_ms = now;
}

void gw_path_report(gw_link *l, char *buf, size_t n)
{
    buf[0] = 0;
    int np = gw.site_npaths[l->site];
    if (np < 2)
        return;
    account(l);
    size_t used = 0;
    used += (size_t)snprintf(buf, n, "now path %d, %d moves;", l->path + 1, l->path_moves);
    for (int i = 0; i < np && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, " path %d (%s:%d) sent %llu bytes, "
                                 "received %llu;", i + 1, gw.site_paths[l->site][i].host,
                                 gw.site_paths[l->site][i].port + l->gw,
                                 (unsigned long long)l->path_tx[i],
                                 (unsigned long long)l->path_rx[i]);
}
