# isthmus/whatif: `isthmus whatif`, predicting a traced application's run time on another
# platform (more sites, more ranks, other links) by replaying its trace in SimGrid. The
# engine runs under the interpreter that has SimGrid's module, so this package's
# __init__ and the engine's imports stay stdlib-only.
