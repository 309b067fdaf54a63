# isthmus/noise: the OS-noise toolkit's Python side: running the probes (with kernel
# tracing where tracefs is available), loading their run files, analysing detours
# (classes, densities, periods, attribution), reports, and the cost-at-scale model.
