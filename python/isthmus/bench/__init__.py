# isthmus/bench: `isthmus bench`: running isthmus-bench under a vendor MPI or isthmus,
# campaigns from TOML plans, statistics, comparisons, plots and HTML reports.
