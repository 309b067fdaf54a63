# isthmus/batch/reserve.py: `isthmus submit --reserve`: a Slurm reservation at every Slurm
# site of the job, all from one start (the latest of the sites' expected starts) for the
# job's time limit, each site's request then queued into its own. Only for users who may
# create reservations (Slurm operators); anyone else is told so before anything is
# queued. Every reservation made is deleted on every way out (delete()).
from __future__ import annotations

import math
from typing import Callable, Mapping

from ..errors import IsthmusError
from ..launch.layout import Layout
from .check import Survey
from .slurm import SiteSlurm


class Reservations:
    def __init__(self, job: str, say: Callable[[str], None] = lambda m: None):
        self.job = job
        self.say = say
        self.made: list[tuple[SiteSlurm, str]] = []

    def make(self, layout: Layout, slurms: Mapping[str, SiteSlurm], surveys: Mapping[str, Survey],
             start_in: float, hold: float) -> dict[str, list[str]]:
        """A reservation at each Slurm site from `start_in` seconds from now; the sbatch
        options that use it, by site. Long enough for the job's time limit after the
        longest a site may wait for the others (`hold`)."""
        options = {}
        try:
            for site in layout.sites:
                if site.launcher != "slurm":
                    continue
                assert site.slurm is not None
                sv = surveys[site.name]
                if sv.limit is None:
                    raise IsthmusError(f"{sv.where}: --reserve needs the job's time limit for the "
                                       "reservation's length; give [site.slurm] time (the "
                                       "partition sets none)")
                minutes = math.ceil(sv.limit + hold / 60)
                name = f"isthmus-{self.job}-{site.name}"
                nodes = sv.largest(site.slurm.nodes, site.gateway_node)
                slurms[site.name].reserve(name, start_in, minutes, sv.partition, nodes)
                self.made.append((slurms[site.name], name))
                self.say(f"site {site.name}: reservation {name}: {', '.join(nodes)} from "
                         f"{start_in:.0f} s from now for {minutes} min")
                options[site.name] = [f"--reservation={name}"]
        except BaseException:
            self.delete()
            raise
        return options

    def names(self) -> dict[str, str]:
        """The reservations made, by site (for the job's record)."""
        return {slurm.site.name: name for slurm, name in self.made}

    def delete(self) -> None:
        """Every reservation made (errors said, never raised: this runs on the way out)."""
        for slurm, name in self.made:
            try:
                slurm.unreserve(name)
            except IsthmusError as e:
                self.say(f"warning: {e}")
        self.made.clear()
