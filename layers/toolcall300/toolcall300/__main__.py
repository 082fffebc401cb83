"""``python -m toolcall300``: the same CLI as the ``toolcall300`` console script."""

from toolcall300.cli import main

if __name__ == "__main__":
    main()
