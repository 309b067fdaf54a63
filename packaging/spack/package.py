# packaging/spack/package.py: a Spack recipe for isthmus (copy it into a Spack repo as
# packages/isthmus/package.py). Variants:
#   openmpi / mpich  build the backend for that vendor MPI (at least one); Spack then
#                    provides it through pkg-config (ompi-c.pc, mpich.pc)
#   transport        the default WAN transport of jobs started from this install (tcp or
#                    udp); both transports are always built, as they need nothing extra
# See docs/deploy.md for how this recipe was checked.
from spack.package import *


class Isthmus(CMakePackage):
    """Run unmodified MPI programs across several clusters as one MPI job: each site runs
    its own vendor MPI, gateways join the sites over authenticated, encrypted links."""

    homepage = "https://example.invalid/isthmus"  # no public home yet: set your site's
    git = "https://example.invalid/isthmus.git"  # mirror of the repository here

    version("main", branch="main")

    variant("openmpi", default=True, description="Build the Open MPI backend")
    variant("mpich", default=False, description="Build the MPICH backend")
    variant("transport", default="tcp", values=("tcp", "udp"), multi=False,
            description="Default WAN transport of jobs (both are always built)")
    conflicts("~openmpi~mpich", msg="isthmus needs at least one vendor MPI backend")

    depends_on("c", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("openssl@3:")
    depends_on("openmpi", when="+openmpi")
    depends_on("mpich", when="+mpich")
    depends_on("python@3.11:", type="run")
    depends_on("py-click@8.1:", type="run")
    depends_on("py-rich@13:", type="run")
    depends_on("py-pyelftools@0.29:", type="run")
    depends_on("py-numpy@1.24:", type="run")
    depends_on("openssh", type="run")

    def cmake_args(self):
        vendors = [v for v in ("openmpi", "mpich") if self.spec.satisfies(f"+{v}")]
        return [self.define("ISM_WITH_VENDORS", ";".join(vendors))]

    @run_after("install")
    def install_cli(self):
        # the command line: the Python package beside the native prefix, and a launcher
        python_dir = join_path(self.prefix, "python")
        install_tree(join_path(self.stage.source_path, "python", "isthmus"),
                     join_path(python_dir, "isthmus"))
        with open(join_path(self.prefix.bin, "isthmus"), "w") as f:
            f.write("#!/bin/sh\n"
                    f'export PYTHONPATH="{python_dir}${{PYTHONPATH:+:$PYTHONPATH}}"\n'
                    f'export ISTHMUS_PREFIX="${{ISTHMUS_PREFIX:-{self.prefix}}}"\n'
                    f'exec "{self.spec["python"].command.path}" -m isthmus "$@"\n')
        set_executable(join_path(self.prefix.bin, "isthmus"))

    def setup_run_environment(self, env):
        env.set("ISTHMUS_PREFIX", self.prefix)
        env.prepend_path("PKG_CONFIG_PATH", self.prefix.lib.pkgconfig)
        env.prepend_path("CMAKE_PREFIX_PATH", self.prefix)
        if self.spec.variants["transport"].value == "udp":
            env.set("ISTHMUS_WAN_TRANSPORT", "udp")
