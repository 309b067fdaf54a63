#!/bin/sh
# /usr/bin/isthmus of the Debian package: the CLI from /usr/lib/isthmus/python with
# Debian's python3 and its python3-* packages; the native prefix is the package's own.
export PYTHONPATH="/usr/lib/isthmus/python${PYTHONPATH:+:$PYTHONPATH}"
export ISTHMUS_PREFIX="${ISTHMUS_PREFIX:-/usr/lib/isthmus}"
exec /usr/bin/python3 -m isthmus "$@"
