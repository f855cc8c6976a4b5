"""`python -m commands`: the same as the `swecl` console script."""

from commands.cli import main

main()
