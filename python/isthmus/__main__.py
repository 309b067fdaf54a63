# isthmus/__main__.py: `python -m isthmus` runs the CLI.
from .cli import main

main(prog_name="isthmus")
