# isthmus/__init__.py: the isthmus launcher package (runs one MPI job across several sites).
__version__ = "0.1.0"
