# isthmus/linkprobe: measuring a link between two sites: `isthmus link probe` (RTT and
# throughput against window, streams and congestion control; table, JSON lines, plot)
# and `isthmus link watch` (a long-running monitor with Prometheus metrics and a log).
# The measurements themselves are made by the C tool isthmus-linkprobe.
