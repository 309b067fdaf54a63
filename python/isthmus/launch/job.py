# isthmus/launch/job.py: turns a layout + program into one launcher process per site (ports
# decided, vendor resolved, environment per the contract in env.py, secret file written) and
# runs them under the supervisor. The command builder is injectable so tests can replace
# the vendor launcher with fake processes.
from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence, TextIO

from ..errors import IsthmusError
from ..paths import Prefix
from . import cpulimit, ports, vendor
from .env import site_env
from .idle import idle_env
from .layout import Layout
from .output import site_tagger
from .secret import Secret, SecretFile, new_job_id
from .ssh import ssh_command
from .supervisor import SiteProcess, Supervisor


@dataclass(frozen=True)
class SiteLaunch:
    """Everything a command builder needs to produce one site's launcher command."""

    layout: Layout
    index: int
    vendor: str
    program: str
    args: tuple[str, ...]
    prefix: Prefix
    env: Mapping[str, str]  # the ISTHMUS_* variables this site's processes get
    workdir: str

    @property
    def site(self):
        return self.layout.sites[self.index]


CommandBuilder = Callable[[SiteLaunch], Sequence[str]]
VendorResolver = Callable[[str], str]


def default_command(launch: SiteLaunch) -> list[str]:
    """mpirun/mpiexec MPMD line for the site, across its nodes when it has several; wrapped
    in ssh for launch = "ssh", whose output the vendor then tags with ranks."""
    site = launch.site
    placement = None
    if site.multi_node:
        placement = vendor.Placement(app_hosts=tuple(site.node_ranks()), hostfile=site.hostfile,
                                     gateway_node=site.gateway_node)
    argv = vendor.build_command(
        launch.vendor,
        ranks=site.ranks,
        gateways=site.gateways,
        program=launch.program,
        args=launch.args,
        gateway_path=str(launch.prefix.gateway),
        export_names=vendor.export_names(launch.env),
        extra_args=site.mpirun_args,
        placement=placement,
        tag_output=site.launcher == "ssh",
    )
    if site.launcher == "ssh":
        assert site.ssh_host
        root_env = vendor.OPENMPI_ROOT_ENV if launch.vendor == "openmpi" else None
        return ssh_command(site.ssh_host, argv, launch.env, launch.workdir, jump=site.ssh_jump,
                           options=site.ssh_options, root_env=root_env)
    return argv


@dataclass(frozen=True)
class SitePlan:
    index: int
    name: str
    vendor: str
    argv: tuple[str, ...]
    isthmus_env: dict[str, str]  # contract variables + passed-through ISTHMUS_* variables
    env: dict[str, str]  # the complete environment of the launcher
    stdin: str  # "inherit", "null" or "secret" (ssh: the secret is written to stdin)


@dataclass(frozen=True)
class JobPlan:
    job_id: str
    layout: Layout
    sites: tuple[SitePlan, ...]


def assign_ports(layout: Layout) -> Layout:
    """Give every site without a port a block of free consecutive ports on its host, and
    check that explicit ports of local sites are not in use (on the address the gateways
    bind, ISTHMUS_GATEWAY_BIND, when that differs from the announced one: behind a port
    forward or a proxy, the announced address is someone else's)."""
    taken: set[int] = set()
    bind = os.environ.get("ISTHMUS_GATEWAY_BIND") or None
    for s in layout.sites:
        if s.port is not None:
            taken.update(range(s.port, s.port + s.gateways))
            if s.launcher == "local":
                busy = ports.check_ports_free(bind or s.host, s.port, s.gateways)
                if busy is not None:
                    raise IsthmusError(
                        f"site {s.name}: gateway port {busy} on {bind or s.host} is already in use; "
                        "choose other ports (--port, or 'gateway' in the site file)"
                    )
    new_sites = []
    for s in layout.sites:
        if s.port is None:
            base = ports.free_port_block(s.host, s.gateways, taken)
            taken.update(range(base, base + s.gateways))
            s = replace(s, port=base)
        new_sites.append(s)
    return layout.with_sites(new_sites).validate()


def cpu_limits(layout: Layout) -> dict[str, float]:
    """Each CPU-limited site's limit in cores, by site name."""
    return {s.name: s.cpu for s in layout.sites if s.cpu is not None}


def cpu_limited(layout: Layout, builder: CommandBuilder | None) -> tuple[CommandBuilder | None,
                                                                         cpulimit.Controller | None]:
    """The command builder that starts each limited site's ranks in its group, and the
    controller the groups are made with (the builder unchanged and None without limits)."""
    limits = cpu_limits(layout)
    if not limits:
        return builder, None
    ctl = cpulimit.find_controller()
    return cpulimit.limited_builder(builder or default_command, ctl, limits), ctl


def resolve_vendors(layout: Layout, resolver: VendorResolver) -> list[str]:
    cache: dict[str, str] = {}
    out = []
    for s in layout.sites:
        if s.mpi not in cache:
            try:
                cache[s.mpi] = resolver(s.mpi)
            except IsthmusError as e:
                if len(layout.sites) > 1 and s.mpi != "auto":
                    raise IsthmusError(f"site {s.name}: {e}") from None
                raise
        out.append(cache[s.mpi])
    return out


def plan_job(
    layout: Layout,
    program: str,
    args: Sequence[str],
    *,
    prefix: Prefix,
    secret_path: str,
    job_id: str | None = None,
    base_env: Mapping[str, str] | None = None,
    stats: bool = False,
    command_builder: CommandBuilder | None = None,
    vendor_resolver: VendorResolver | None = None,
    workdir: str | None = None,
) -> JobPlan:
    """Decide everything about the job without starting anything. Every site must already
    have its port (see assign_ports)."""
    job_id = job_id or new_job_id()
    base = dict(os.environ if base_env is None else base_env)
    if stats:
        base["ISTHMUS_STATS"] = "1"
    base.update(idle_env(layout, base))
    resolver = vendor_resolver or (lambda requested: vendor.resolve(requested, prefix))
    vendors = resolve_vendors(layout, resolver)
    builder = command_builder or default_command
    workdir = workdir or os.getcwd()
    passthrough = {k: v for k, v in base.items() if k.startswith("ISTHMUS_")}

    plans = []
    for i, site in enumerate(layout.sites):
        contract = site_env(
            layout, i, job_id=job_id, secret_path=secret_path, vendor=vendors[i], prefix=str(prefix)
        )
        isthmus_env = {**contract, **{k: v for k, v in passthrough.items() if k not in contract}}
        launch = SiteLaunch(
            layout=layout, index=i, vendor=vendors[i], program=program, args=tuple(args),
            prefix=prefix, env=isthmus_env, workdir=workdir,
        )  # fmt: skip
        argv = tuple(builder(launch))
        env = {**base, **vendor.launcher_env(vendors[i]), **contract}
        if site.launcher in ("ssh", "slurm"):  # the secret goes to the site on stdin
            stdin = "secret"
        else:
            stdin = "inherit" if i == 0 else "null"
        plans.append(
            SitePlan(index=i, name=site.name, vendor=vendors[i], argv=argv,
                     isthmus_env=isthmus_env, env=env, stdin=stdin)  # fmt: skip
        )
    return JobPlan(job_id=job_id, layout=layout, sites=tuple(plans))


def run_job(
    layout: Layout,
    program: str,
    args: Sequence[str],
    *,
    prefix: Prefix,
    secret: Secret | None = None,
    timeout: float | None = None,
    stats: bool = False,
    base_env: Mapping[str, str] | None = None,
    command_builder: CommandBuilder | None = None,
    vendor_resolver: VendorResolver | None = None,
    grace: float = 5.0,
    err: TextIO | None = None,
    job_id: str | None = None,
) -> int:
    """Run the job to completion and return its exit code (0 if every site succeeded, else
    the first failing site's code; 124 on --timeout; 128+N when stopped by signal N)."""
    if timeout is not None and timeout <= 0:
        raise IsthmusError(f"--timeout must be positive, got {timeout:g}")
    layout = assign_ports(layout.validate())
    command_builder, ctl = cpu_limited(layout, command_builder)
    secret = secret or Secret.generate()
    with SecretFile(secret) as secret_file:
        plan = plan_job(
            layout, program, args, prefix=prefix, secret_path=str(secret_file.path),
            job_id=job_id, base_env=base_env, stats=stats, command_builder=command_builder,
            vendor_resolver=vendor_resolver,
        )  # fmt: skip
        secret_line = (secret.reveal() + "\n").encode("ascii")
        procs = []
        if any(p.vendor == "openmpi" and p.stdin != "secret" for p in plan.sites):
            vendor.prepare_openmpi_sessions(plan.sites[0].env)  # (sites on this node)
        for p in plan.sites:
            remote = p.stdin == "secret"
            tagger = (site_tagger(p.name, p.vendor, layout.first_rank(p.index),
                                  layout.sites[p.index].ranks) if remote else None)
            procs.append(SiteProcess(
                name=p.name, argv=p.argv, env=p.env,
                stdin=secret_line if remote else p.stdin, keep_stdin=remote, tagger=tagger,
            ))  # fmt: skip
        groups = (cpulimit.JobGroups(ctl, plan.job_id, cpu_limits(layout)) if ctl is not None
                  else nullcontext())
        with groups:
            return Supervisor(procs, timeout=timeout, grace=grace, job_id=plan.job_id,
                              err=err).run()
