# isthmus/errors.py: the one exception type for problems the user can fix (bad options,
# bad site file, missing native build, wrong binary). The CLI prints it as "isthmus: <msg>".


class IsthmusError(Exception):
    """A user-facing error. str(err) is the message without the "isthmus: " prefix."""

    exit_code = 2
