"""``python -m docshelf.cli``: the ``docshelf`` command."""

from docshelf.cli import main

main()
