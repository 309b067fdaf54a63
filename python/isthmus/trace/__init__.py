# isthmus/trace: traces of cross-site runs (`isthmus run --trace DIR`): preparing the
# folder and the ranks' command (launch.py), reading the per-process record files
# (records.py, reader.py), putting every clock on one time base (clocks.py), and the
# exporters (OTF2 through isthmus-trace-otf2, Paraver, Chrome/Perfetto JSON) and the
# summary report.
